"""The report's thumbnails read back the right records: by their place
('shard file:index'), by their source, and for LabelCheck's rows of either
form, across several shards of a split."""

import json

import numpy as np
import pytest
import tensorflow as tf

from inspector import images
from inspector import labels
from metadata import queries
from metadata.store import InspectError
from records import features

GEOMETRY = features.ImageGeometry(height=4, width=3, channels=1)
# Records per shard: the shards differ, so that positions over the split
# differ from indices in a shard; more than a scan batch in the last.
SHARD_SIZES = (5, 9, images.SCAN_BATCH + 7)


def _pixels(shard, index, split='train'):
  """Every record's own image: its shard and index in two pixels, and its
  split in a third."""
  image = np.zeros(GEOMETRY.shape, np.uint8)
  image[0, 0, 0], image[0, 1, 0] = shard, index % 251
  image[0, 2, 0] = index // 251
  image[1, 0, 0] = 0 if split == 'train' else 1
  return image


def _shard(number):
  return f'data_tfrecord-{number:05d}-of-{len(SHARD_SIZES):05d}.gz'


@pytest.fixture(scope='module')
def examples(tmp_path_factory):
  """An Examples artifact with a train split in three gzipped shards; each
  record's source is 'img-<shard>-<index>', its label index % 10; and an
  eval split of two shards named as train's first two."""
  root = tmp_path_factory.mktemp('examples')
  options = tf.io.TFRecordOptions(compression_type='GZIP')
  for split, sizes in (('train', SHARD_SIZES), ('eval', SHARD_SIZES[:2])):
    (root / f'Split-{split}').mkdir()
    for number, size in enumerate(sizes):
      with tf.io.TFRecordWriter(str(root / f'Split-{split}' / _shard(number)),
                                options) as writer:
        for index in range(size):
          writer.write(features.make_example(
              _pixels(number, index, split).tobytes(), GEOMETRY, index % 10,
              source=f'{split}-img-{number}-{index}' if split == 'eval'
              else f'img-{number}-{index}'))
  return queries.Artifact(
      id=1, type='Examples', uri=str(root), state='LIVE', created_ms=0,
      properties={'split_names': json.dumps(['train', 'eval']),
                  'file_format': 'tfrecords_gzip'})


def test_records_are_read_back_by_their_place(examples):
  wanted = [(0, 0), (0, 4), (2, 3), (2, images.SCAN_BATCH + 6),
            (2, images.SCAN_BATCH - 1)]
  names = [f'{_shard(s)}:{i}' for s, i in wanted]
  found = images.records_in(examples, {'train': names})['train']
  assert set(found) == set(names)
  for (shard, index), name in zip(wanted, names):
    np.testing.assert_array_equal(found[name], _pixels(shard, index))


def test_records_are_read_back_by_their_source(examples):
  wanted = [(1, 8), (2, 0), (2, images.SCAN_BATCH + 2)]
  found = images.records_with_sources(
      examples, 'train', [f'img-{s}-{i}' for s, i in wanted] + ['elsewhere'])
  assert set(found) == {f'img-{s}-{i}' for s, i in wanted}
  for shard, index in wanted:
    np.testing.assert_array_equal(found[f'img-{shard}-{index}'],
                                  _pixels(shard, index))


def test_suspects_of_either_row_form_get_their_images(examples):
  # LabelCheck's rows name the place; rows of runs before it did, only
  # the source.
  rows = [{'source': 'img-0-2', 'record': f'{_shard(0)}:2'},
          {'source': 'img-2-11', 'record': f'{_shard(2)}:11'},
          {'source': 'img-1-3'}]
  found = labels.images_at(examples, 'train', rows)
  assert set(found) == {'img-0-2', 'img-2-11', 'img-1-3'}
  np.testing.assert_array_equal(found['img-2-11'], _pixels(2, 11))
  np.testing.assert_array_equal(found['img-1-3'], _pixels(1, 3))


def test_the_records_of_several_splits_are_read_in_one_pass(examples):
  # The same shard file name in two splits: each split's own record.
  found = images.records_in(examples, {'train': [f'{_shard(1)}:4'],
                                       'eval': [f'{_shard(1)}:4',
                                                f'{_shard(0)}:2']})
  np.testing.assert_array_equal(found['train'][f'{_shard(1)}:4'],
                                _pixels(1, 4))
  np.testing.assert_array_equal(found['eval'][f'{_shard(1)}:4'],
                                _pixels(1, 4, 'eval'))
  assert set(found['eval']) == {f'{_shard(1)}:4', f'{_shard(0)}:2'}
  rows = [{'split': 'train', 'source': 'img-0-1', 'record': f'{_shard(0)}:1'},
          {'split': 'eval', 'source': 'eval-img-0-1',
           'record': f'{_shard(0)}:1'},
          {'split': 'eval', 'source': 'eval-img-1-2'}]
  pictures = labels.images_in(examples, rows)
  assert {split: set(found) for split, found in pictures.items()} == {
      'train': {'img-0-1'}, 'eval': {'eval-img-0-1', 'eval-img-1-2'}}
  np.testing.assert_array_equal(pictures['eval']['eval-img-1-2'],
                                _pixels(1, 2, 'eval'))


def test_a_missing_shard_is_named(examples):
  with pytest.raises(InspectError, match='gone.gz is missing'):
    images.records_in(examples, {'train': ['gone.gz:3']})


def test_label_counts_read_every_shard(examples):
  # The class balance of runs whose DataChecks did not count the labels.
  expected = {}
  for size in SHARD_SIZES:
    for index in range(size):
      expected[index % 10] = expected.get(index % 10, 0) + 1
  assert images.label_counts(examples, 'train') == expected
