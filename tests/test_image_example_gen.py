"""The ImageExampleGen executor through a real Beam pipeline."""

import json
import logging
import os

import numpy as np
import pytest
from tfx.types import standard_component_specs
from tfx.utils import proto_utils

from components.image_example_gen import executor
from components.image_example_gen import progress
from components.image_example_gen.errors import InputDataError
from components.image_example_gen.options import ImageExampleGenOptions
from records import features
from tests import artifacts
from tests import datasets
from tests import examples_io

run_executor = artifacts.run_example_gen


def test_idx_to_examples(tmp_path):
  written = datasets.write_idx_dataset(str(tmp_path / 'in'))
  examples = run_executor(tmp_path / 'in', tmp_path / 'out',
                          ImageExampleGenOptions(num_shards=8))

  assert json.loads(examples.split_names) == ['train', 'eval']
  assert len(examples_io.split_files(examples.uri, 'train')) == 8
  for split, prefix in (('train', 'train'), ('eval', 't10k')):
    records = examples_io.read_split(examples.uri, split)
    images, labels = written[prefix]
    assert len(records) == len(labels)
    # Beam shuffles records: compare as sets of (label, pixels).
    got = sorted((r['label'], r['image'].tobytes()) for r in records)
    want = sorted((int(l), i[..., None].tobytes()) for i, l in zip(images, labels))
    assert got == want
    assert {(r['height'], r['width'], r['channels']) for r in records} == {(28, 28, 1)}

  names = [str(i) for i in range(10)]
  assert features.decode_class_names(examples.get_string_custom_property(
      features.CLASS_NAMES_PROPERTY)) == names
  with open(os.path.join(examples.uri, features.CLASS_NAMES_FILE)) as f:
    assert f.read().split() == names
  assert examples.get_string_custom_property('file_format') == 'tfrecords_gzip'


def test_idx_uncompressed_rgb_and_chunking(tmp_path, monkeypatch):
  monkeypatch.setattr(executor, '_IDX_RECORDS_PER_CHUNK', 7)
  geometry = features.ImageGeometry(8, 6, 3)
  written = datasets.write_idx_dataset(
      str(tmp_path / 'in'), {'train': 30, 't10k': 9}, geometry, compress=False,
      num_classes=4)
  examples = run_executor(
      tmp_path / 'in', tmp_path / 'out',
      ImageExampleGenOptions(class_names=['a', 'b', 'c', 'd']))
  records = examples_io.read_split(examples.uri, 'train')
  assert sorted(r['image'].tobytes() for r in records) == sorted(
      i.tobytes() for i in written['train'][0])
  assert records[0]['image'].shape == (8, 6, 3)


def test_image_folder_png_and_jpeg(tmp_path):
  datasets.write_image_folder(str(tmp_path / 'in'))
  examples = run_executor(
      tmp_path / 'in', tmp_path / 'out',
      ImageExampleGenOptions(input_format='images',
                             geometry=features.ImageGeometry(20, 16, 3),
                             num_shards=4))
  assert features.decode_class_names(examples.get_string_custom_property(
      features.CLASS_NAMES_PROPERTY)) == ['cat', 'dog', 'fish']
  train = examples_io.read_split(examples.uri, 'train')
  assert len(train) == 12 and len(examples_io.read_split(examples.uri, 'eval')) == 6
  assert sorted(r['label'] for r in train) == [0] * 4 + [1] * 4 + [2] * 4
  assert train[0]['image'].shape == (20, 16, 3)
  # Each class was drawn 60 grey levels brighter than the one before.
  mean = {r['label']: r['image'].mean() for r in train}
  assert mean[0] < mean[1] < mean[2]


@pytest.mark.parametrize('damage, message', [
    ('truncate', r'train-images-idx3-ubyte.gz: corrupt or truncated gzip data'),
    ('magic', r'train-images-idx3-ubyte.gz: not an IDX file: bad magic number'),
    ('count', r'train-images-idx3-ubyte.gz: holds 40 images but .*train-labels-idx1-ubyte.gz holds 39 labels'),
    ('label', r'train-labels-idx1-ubyte.gz: 1 labels outside the class range 0..9 \(first: label 12 of record 3\)'),
])
def test_bad_idx_input_names_the_file(tmp_path, damage, message):
  data = str(tmp_path / 'in')
  datasets.write_idx_dataset(data)
  images = os.path.join(data, 'train-images-idx3-ubyte.gz')
  labels_path = os.path.join(data, 'train-labels-idx1-ubyte.gz')
  if damage == 'truncate':
    raw = open(images, 'rb').read()
    open(images, 'wb').write(raw[:len(raw) - 200])
  elif damage == 'magic':
    import gzip
    raw = gzip.decompress(open(images, 'rb').read())
    open(images, 'wb').write(gzip.compress(b'\x00\x00\x07\x03' + raw[4:]))
  elif damage in ('count', 'label'):
    from components.image_example_gen import idx
    labels = idx.read_all(idx.validate(labels_path)).copy()
    if damage == 'count':
      labels = labels[:-1]
    else:
      labels[3] = 12
    idx.write(labels_path, labels)
  with pytest.raises(InputDataError, match=message):
    run_executor(data, tmp_path / 'out',
                 ImageExampleGenOptions(class_names=[str(i) for i in range(10)]))


def test_empty_split(tmp_path):
  data = str(tmp_path / 'in')
  datasets.write_idx_dataset(data, {'train': 0, 't10k': 5})
  with pytest.raises(InputDataError, match='train-images-idx3-ubyte.gz: the split holds no images'):
    run_executor(data, tmp_path / 'out', ImageExampleGenOptions(
        class_names=['0', '1', '2', '3', '4']))


def test_split_without_files(tmp_path):
  data = str(tmp_path / 'in')
  datasets.write_idx_dataset(data, {'train': 5})
  with pytest.raises(InputDataError, match=r't10k-\*: no files match'):
    run_executor(data, tmp_path / 'out', ImageExampleGenOptions())


def test_corrupt_image_in_a_worker_names_the_file(tmp_path):
  data = tmp_path / 'in'
  datasets.write_image_folder(str(data))
  (data / 'train' / 'dog' / '1.jpg').write_bytes(b'\xff\xd8\xff garbage')
  with pytest.raises(Exception, match=r'train/dog/1.jpg: cannot decode image'):
    run_executor(data, tmp_path / 'out',
                 ImageExampleGenOptions(input_format='images'))


def test_options_round_trip():
  options = ImageExampleGenOptions(
      input_format='images', class_names=['x', 'y'],
      geometry=features.ImageGeometry(32, 30, 3), num_shards=3,
      skip_bad_images=True)
  exec_properties = {standard_component_specs.CUSTOM_CONFIG_KEY:
                     proto_utils.proto_to_json(options.to_custom_config())}
  assert ImageExampleGenOptions.from_exec_properties(exec_properties) == options
  with pytest.raises(ValueError, match='input_format'):
    ImageExampleGenOptions(input_format='csv')
  np.testing.assert_equal(ImageExampleGenOptions().num_shards, 16)


def test_skip_bad_images_records_what_it_skipped(tmp_path):
  data = tmp_path / 'in'
  datasets.write_image_folder(str(data))
  (data / 'train' / 'dog' / '1.jpg').write_bytes(b'\xff\xd8\xff garbage')
  (data / 'eval' / 'cat' / '0.png').write_bytes(b'')
  examples = run_executor(data, tmp_path / 'out', ImageExampleGenOptions(
      input_format='images', skip_bad_images=True))
  assert len(examples_io.read_split(examples.uri, 'train')) == 11
  assert len(examples_io.read_split(examples.uri, 'eval')) == 5
  want = [
      {'split': 'eval', 'path': str(data / 'eval' / 'cat' / '0.png'),
       'reason': 'empty file (0 bytes)'},
      {'split': 'train', 'path': str(data / 'train' / 'dog' / '1.jpg'),
       'reason': 'cannot decode image: not a PNG or JPEG image'},
  ]
  listed = json.loads(examples.get_string_custom_property(
      features.SKIPPED_IMAGES_LIST_PROPERTY))
  with open(os.path.join(examples.uri, features.SKIPPED_IMAGES_FILE)) as f:
    assert json.load(f) == listed
  assert examples.get_int_custom_property(features.SKIPPED_IMAGES_PROPERTY) == 2
  assert [s['split'] for s in listed] == ['eval', 'train']
  for got, expected in zip(listed, want):
    assert got['path'] == expected['path']
    assert got['reason'].startswith(expected['reason'])
  # Only the splits and the records of what happened are left behind.
  assert sorted(os.listdir(examples.uri)) == [
      'Split-eval', 'Split-train', features.CLASS_NAMES_FILE,
      features.SKIPPED_IMAGES_FILE]


def test_skip_bad_images_still_fails_a_split_left_empty(tmp_path):
  data = tmp_path / 'in'
  datasets.write_image_folder(str(data), per_class={'train': 2, 'eval': 1})
  for image in (data / 'eval').glob('*/*'):
    image.write_bytes(b'')
  with pytest.raises(InputDataError,
                     match=r"/eval: all 3 images of split 'eval' are unreadable"):
    run_executor(data, tmp_path / 'out', ImageExampleGenOptions(
        input_format='images', skip_bad_images=True))


def test_skip_bad_images_is_for_image_folders():
  with pytest.raises(ValueError, match='skip_bad_images applies to image folders'):
    ImageExampleGenOptions(input_format='idx', skip_bad_images=True)


class _ProgressLines(logging.Handler):

  def __init__(self):
    super().__init__(level=logging.INFO)
    self.lines = []

  def emit(self, record):
    if record.msg == progress.PROGRESS_LINE:
      self.lines.append(record.getMessage())


@pytest.mark.parametrize('layout', ['idx', 'images'])
def test_progress_lines_name_the_split_and_count_its_images(
    tmp_path, monkeypatch, layout):
  # A line at every count, as on an input that takes long.
  monkeypatch.setattr(progress, 'INTERVAL_SECONDS', 0)
  monkeypatch.setattr(executor, '_IDX_RECORDS_PER_CHUNK', 10)
  if layout == 'idx':
    datasets.write_idx_dataset(str(tmp_path / 'in'), {'train': 30, 't10k': 20})
    options = ImageExampleGenOptions(num_shards=1)
    last = {'train-images-idx3-ubyte.gz: 30 of 30',
            't10k-images-idx3-ubyte.gz: 20 of 20'}
  else:
    datasets.write_image_folder(str(tmp_path / 'in'))
    options = ImageExampleGenOptions(input_format='images', num_shards=1)
    last = {'train/*/*: 12 of 12', 'eval/*/*: 6 of 6'}
  lines = _ProgressLines()
  logger = logging.getLogger('absl')
  level = logger.level
  logger.setLevel(logging.INFO)
  logger.addHandler(lines)
  try:
    run_executor(tmp_path / 'in', tmp_path / 'out', options)
  finally:
    logger.removeHandler(lines)
    logger.setLevel(level)
  assert {f'ImageExampleGen: {l} images read (100%)' for l in last} <= set(
      lines.lines), lines.lines
  assert all(' of ' in l and l.endswith('%)') for l in lines.lines)
