"""Every record says which input it came from: the `source` feature, from
IDX files (file name and index) and from image folders (the path as laid
out), and read back by records/shards.py."""

import json
import os

import pytest
import tensorflow as tf
from tfx.proto import example_gen_pb2

from components.image_example_gen import folder_layout
from components.image_example_gen.component import default_input_config
from components.image_example_gen.options import ImageExampleGenOptions
from records import features
from records import shards
from tests import artifacts
from tests import datasets
from tests import examples_io

CLASSES = ('cat', 'dog', 'fish')


def _split_uri(examples, split):
  return os.path.join(examples.uri, f'Split-{split}')


def _by_source(examples):
  """{source: (split, record)} over every split; each source once."""
  found = {}
  for split in json.loads(examples.split_names):
    for record in examples_io.read_split(examples.uri, split):
      assert record['source'] not in found, record['source']
      found[record['source']] = (split, record)
  return found


@pytest.mark.parametrize('validation_percent', [None, 30])
def test_idx_records_name_their_file_and_index(tmp_path, validation_percent):
  written = datasets.write_idx_dataset(str(tmp_path / 'in'),
                                       {'train': 50, 't10k': 20})
  examples = artifacts.run_example_gen(
      tmp_path / 'in', tmp_path / 'out',
      ImageExampleGenOptions(num_shards=3,
                             validation_percent=validation_percent))
  found = _by_source(examples)
  want_splits = {'train': {'train', 'validation'}, 't10k': {'eval'}}
  assert len(found) == 70
  for prefix, (images, labels) in written.items():
    for index, (image, label) in enumerate(zip(images, labels)):
      split, record = found[f'{prefix}-images-idx3-ubyte.gz:{index}']
      assert split in want_splits[prefix]
      # The index is the image's place in its file.
      assert record['image'].tobytes() == image.tobytes()
      assert record['label'] == label
  if validation_percent:
    assert {split for split, _ in found.values()} == {
        'train', 'validation', 'eval'}


def test_idx_hash_split_records_name_their_index(tmp_path):
  # One input split hashed into train and eval by TFX's own code.
  written = datasets.write_idx_dataset(str(tmp_path / 'in'), {'train': 40})
  split = example_gen_pb2.SplitConfig.Split
  examples = artifacts.run_example_gen(
      tmp_path / 'in', tmp_path / 'out', ImageExampleGenOptions(num_shards=2),
      input_config=example_gen_pb2.Input(splits=[
          example_gen_pb2.Input.Split(name='all', pattern='train-*')]),
      output_config=example_gen_pb2.Output(
          split_config=example_gen_pb2.SplitConfig(splits=[
              split(name='train', hash_buckets=3),
              split(name='eval', hash_buckets=1)])))
  found = _by_source(examples)
  images, _ = written['train']
  assert sorted(found) == sorted(f'train-images-idx3-ubyte.gz:{i}'
                                 for i in range(40))
  for index, image in enumerate(images):
    _, record = found[f'train-images-idx3-ubyte.gz:{index}']
    assert record['image'].tobytes() == image.tobytes()


def _image_files(directory):
  """Every image file under `directory`, relative to it, '/'-separated."""
  return sorted(
      os.path.relpath(os.path.join(root, name), directory).replace(os.sep, '/')
      for root, _, names in os.walk(directory) for name in names)


def _folder_options(**kwargs):
  return ImageExampleGenOptions(
      **{'input_format': 'images', 'num_shards': 2,
         'geometry': features.ImageGeometry(24, 32, 3), **kwargs})


def _check_folder_sources(examples, data, splits_of_folder):
  """Each image file under `data` is one record, its source the file's path
  relative to `data`, its label its class folder's, its split the one its
  folder gives (splits_of_folder: {top folder or None: allowed splits})."""
  found = _by_source(examples)
  assert sorted(found) == _image_files(data)
  for source, (split, record) in found.items():
    parts = source.split('/')
    assert record['label'] == CLASSES.index(parts[-2])
    top = parts[-3] if len(parts) >= 3 else None
    assert split in splits_of_folder[top], (source, split)


@pytest.mark.parametrize('layout', [folder_layout.SPLITS,
                                    folder_layout.SPLITS_WITH_VALIDATION])
def test_image_folder_records_name_their_path(tmp_path, layout):
  data = tmp_path / 'in'
  per_class = {'train': 4, 'eval': 2}
  if layout == folder_layout.SPLITS_WITH_VALIDATION:
    per_class['validation'] = 1
  datasets.write_image_folder(str(data), CLASSES, per_class)
  examples = artifacts.run_example_gen(
      data, tmp_path / 'out', _folder_options(validation_percent=25),
      input_config=default_input_config('images', layout=layout))
  # Carved or given, validation's images keep their train/ or validation/
  # path.
  _check_folder_sources(examples, data, {
      'train': {'train', 'validation'}, 'validation': {'validation'},
      'eval': {'eval'}})
  assert 'validation' in json.loads(examples.split_names)


def test_class_folders_records_name_their_path(tmp_path):
  data = tmp_path / 'in'
  datasets.write_image_folder(str(data), CLASSES, {'all': 6})
  for name in CLASSES:  # <class>/<image>: no split folder.
    os.rename(data / 'all' / name, data / name)
  os.rmdir(data / 'all')
  examples = artifacts.run_example_gen(
      data, tmp_path / 'out', _folder_options(eval_percent=30))
  _check_folder_sources(examples, data, {None: {'train', 'eval'}})


def test_span_records_name_the_span_folder(tmp_path):
  data = tmp_path / 'in'
  for span in (1, 2):
    datasets.write_image_folder(str(data / f'span-{span}'), CLASSES,
                                {'train': 2, 'eval': 1})
  examples = artifacts.run_example_gen(
      data, tmp_path / 'out', _folder_options(),
      input_config=default_input_config('images', 'span-{SPAN}'))
  assert examples.get_int_custom_property('span') == 2
  found = _by_source(examples)
  assert sorted(found) == sorted(f'span-2/{path}' for path in
                                 _image_files(data / 'span-2'))


def test_read_sources_gives_each_records_source_and_label_in_order(tmp_path):
  written = datasets.write_idx_dataset(str(tmp_path / 'in'),
                                       {'train': 30, 't10k': 10})
  examples = artifacts.run_example_gen(tmp_path / 'in', tmp_path / 'out',
                                       ImageExampleGenOptions(num_shards=3))
  uri = _split_uri(examples, 'eval')
  read = list(shards.read_sources(uri))
  # In the order of the shards and their records.
  files = sorted(tf.io.gfile.glob(os.path.join(uri, '*.gz')))
  in_order = [tf.train.Example.FromString(r.numpy()).features.feature[
      features.SOURCE_KEY].bytes_list.value[0].decode()
              for r in tf.data.TFRecordDataset(files, 'GZIP')]
  assert [source for source, _ in read] == in_order
  _, labels = written['t10k']
  assert sorted(read) == sorted((f't10k-images-idx3-ubyte.gz:{i}', int(label))
                                for i, label in enumerate(labels))
  with pytest.raises(FileNotFoundError, match='no gzipped TFRecord shards'):
    list(shards.read_sources(str(tmp_path / 'nothing')))
