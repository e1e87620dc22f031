"""The ImageExampleGen executor through a real Beam pipeline."""

import argparse
import glob
import json
import os
import unicodedata

import numpy as np
import pytest
import tensorflow as tf
from tfx.proto import example_gen_pb2
from tfx.types import standard_component_specs
from tfx.utils import proto_utils

from components.image_example_gen import folder_layout
from components.image_example_gen import idx
from components.image_example_gen import image_folder
from components.image_example_gen.component import default_input_config
from components.image_example_gen.component import ImageExampleGen
from components.image_example_gen import console_lines
from components.image_example_gen.errors import InputDataError
from components.image_example_gen.options import ImageExampleGenOptions
from components.image_example_gen.span_pattern import check_span_dir_pattern
from pipeline.knobs import DataConfig, parse_span_dir_pattern  # pylint: disable=g-multiple-import
from records import features
from runs import flags
from tests import artifacts
from tests import datasets
from tests import examples_io
from tests.absl_lines import absl_lines

NUM_SHARDS = DataConfig().num_shards

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
  monkeypatch.setattr(idx, 'CHUNK_BYTES', 7 * 8 * 6 * 3)  # 7 images.
  geometry = features.ImageGeometry(8, 6, 3)
  written = datasets.write_idx_dataset(
      str(tmp_path / 'in'), {'train': 30, 't10k': 9}, geometry, compress=False,
      num_classes=4)
  examples = run_executor(
      tmp_path / 'in', tmp_path / 'out',
      ImageExampleGenOptions(class_names=['a', 'b', 'c', 'd'],
                             num_shards=NUM_SHARDS))
  records = examples_io.read_split(examples.uri, 'train')
  assert sorted(r['image'].tobytes() for r in records) == sorted(
      i.tobytes() for i in written['train'][0])
  assert records[0]['image'].shape == (8, 6, 3)
  # The files' geometry, not the options' (MNIST's by default), goes on
  # the artifact for Transform and Trainer.
  assert {key: examples.get_int_custom_property(key)
          for key in features.GEOMETRY_PROPERTIES} == geometry.to_dict()


def test_idx_splits_of_different_geometries(tmp_path):
  datasets.write_idx_dataset(str(tmp_path / 'in'), {'train': 4})
  datasets.write_idx_dataset(str(tmp_path / 'in'), {'t10k': 4},
                             features.ImageGeometry(32, 32, 1))
  with pytest.raises(InputDataError, match=r'train-images-idx3-ubyte.gz, .*'
                     r't10k-images-idx3-ubyte.gz: the splits hold images of '
                     r'different geometries \(28x28x1, 32x32x1'):
    run_executor(tmp_path / 'in', tmp_path / 'out',
                 ImageExampleGenOptions(num_shards=1))


def _hash_split(pattern, train_buckets):
  """One input split 'all' hashed into train (train_buckets) and eval (1)."""
  return dict(
      input_config=example_gen_pb2.Input(splits=[
          example_gen_pb2.Input.Split(name='all', pattern=pattern)]),
      output_config=example_gen_pb2.Output(
          split_config=example_gen_pb2.SplitConfig(splits=[
              example_gen_pb2.SplitConfig.Split(
                  name='train', hash_buckets=train_buckets),
              example_gen_pb2.SplitConfig.Split(name='eval',
                                                hash_buckets=1)])))


def test_output_config_hash_splits_one_input(tmp_path):
  written = datasets.write_idx_dataset(str(tmp_path / 'in'), {'train': 80})
  examples = run_executor(
      tmp_path / 'in', tmp_path / 'out',
      ImageExampleGenOptions(num_shards=2),
      **_hash_split('train-*', train_buckets=3))
  assert json.loads(examples.split_names) == ['train', 'eval']
  splits = {split: examples_io.read_split(examples.uri, split)
            for split in ('train', 'eval')}
  assert all(len(examples_io.split_files(examples.uri, split)) == 2
             for split in splits)
  assert len(splits['train']) > len(splits['eval']) > 0
  images, _ = written['train']
  assert sorted(r['image'].tobytes() for records in splits.values()
                for r in records) == sorted(i[..., None].tobytes()
                                            for i in images)


def test_output_config_hash_splits_an_image_folder_by_path(tmp_path):
  data = tmp_path / 'in'
  datasets.write_image_folder(str(data), per_class={'train': 6})
  bad = str(data / 'train' / 'dog' / '1.jpg')
  with open(bad, 'wb'):
    pass
  config = _hash_split('train/*/*', train_buckets=2)
  examples = run_executor(
      data, tmp_path / 'out',
      ImageExampleGenOptions(input_format='images', num_shards=2,
                             skip_bad_images=True), **config)
  # Each image where TFX's hash buckets put its path below train/.
  want = folder_layout.partition(
      image_folder.list_split(str(data / 'train' / '*' / '*'))[0],
      str(data / 'train'), config['output_config'].split_config)
  assert all(want.values())
  names = ['cat', 'dog', 'fish']
  for split, paths in want.items():
    assert sorted(r['label'] for r in examples_io.read_split(
        examples.uri, split)) == sorted(
            image_folder.label_of(p, names) for p in paths if p != bad)
  listed = json.loads(examples.get_string_custom_property(
      features.SKIPPED_IMAGES_LIST_PROPERTY))
  assert [(s['split'], s['path']) for s in listed] == [
      ('train' if bad in want['train'] else 'eval', bad)]


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
  assert {key: examples.get_int_custom_property(key)
          for key in features.GEOMETRY_PROPERTIES} == {
              'image_height': 20, 'image_width': 16, 'image_channels': 3}
  assert sorted(r['label'] for r in train) == [0] * 4 + [1] * 4 + [2] * 4
  assert train[0]['image'].shape == (20, 16, 3)
  # Each class was drawn 60 grey levels brighter than the one before.
  mean = {r['label']: r['image'].mean() for r in train}
  assert mean[0] < mean[1] < mean[2]


def _shard_bytes(examples_uri, split):
  """{shard file name: its bytes}."""
  return {os.path.basename(path): open(path, 'rb').read()
          for path in examples_io.split_files(examples_uri, split)}


def _shard_labels(shard_path):
  return [tf.train.Example.FromString(raw.numpy()).features.feature[
      features.LABEL_KEY].int64_list.value[0]
          for raw in tf.data.TFRecordDataset(shard_path,
                                             compression_type='GZIP')]


def test_image_folder_shards_hold_every_image_once_mixed_and_reproducibly(
    tmp_path, monkeypatch):
  geometry = features.ImageGeometry(12, 10, 3)
  # Lists of 4 records: a shard of 6 is written in two, the second short.
  monkeypatch.setattr(idx, 'CHUNK_BYTES', 4 * geometry.num_bytes)
  assert image_folder.records_per_write(geometry) == 4
  data = tmp_path / 'in'
  datasets.write_image_folder(str(data), per_class={'train': 6, 'eval': 1})
  options = ImageExampleGenOptions(input_format='images', geometry=geometry,
                                   num_shards=3)
  first = run_executor(data, tmp_path / 'a', options)
  again = run_executor(data, tmp_path / 'b', options)

  shards = _shard_bytes(first.uri, 'train')
  assert sorted(shards) == [
      f'data_tfrecord-0000{i}-of-00003.gz' for i in range(3)]
  # The same input gives the same files, byte for byte.
  assert _shard_bytes(again.uri, 'train') == shards
  assert _shard_bytes(again.uri, 'eval') == _shard_bytes(first.uri, 'eval')
  # Every image exactly once: the decoded files, as a multiset.
  want = sorted(
      (image_folder.label_of(path, ['cat', 'dog', 'fish']),
       image_folder.decode_image(path, open(path, 'rb').read(), geometry))
      for path in glob.glob(str(data / 'train' / '*' / '*')))
  got = sorted((r['label'], r['image'].tobytes())
               for r in examples_io.read_split(first.uri, 'train'))
  assert got == want
  # Each shard holds 6 images of more than one class (in sorted order
  # each would hold one class folder).
  per_shard = [_shard_labels(path)
               for path in examples_io.split_files(first.uri, 'train')]
  assert [len(labels) for labels in per_shard] == [6, 6, 6]
  assert all(len(set(labels)) > 1 for labels in per_shard), per_shard


def test_shard_plan_is_fixed_whatever_the_listing_order():
  paths = [f'/in/train/{c}/{i}.png' for c in 'abcd' for i in range(10)]
  plan = image_folder.shard_paths(paths, 4)
  assert plan == image_folder.shard_paths(paths[::-1], 4)
  assert sorted(p for shard in plan for p in shard) == sorted(paths)
  assert [len(shard) for shard in plan] == [10] * 4
  # More shards than images: the extra shards are empty, none is lost.
  few = image_folder.shard_paths(paths[:2], 3)
  assert [len(shard) for shard in few] == [1, 1, 0]
  assert sorted(p for shard in few for p in shard) == paths[:2]


def test_os_files_are_left_out_and_listed(tmp_path):
  data = tmp_path / 'in'
  datasets.write_image_folder(str(data))
  litter = [data / 'train' / 'cat' / '.DS_Store',
            data / 'train' / 'dog' / '._0.png',  # macOS AppleDouble.
            data / 'eval' / 'fish' / 'Thumbs.db',
            data / 'eval' / 'fish' / 'desktop.ini',
            data / 'train' / '.ipynb_checkpoints' / '0.png',
            # Sidecars: Google Takeout, Lightroom, an iPhone's edits.
            data / 'train' / 'cat' / '0.png.json',
            data / 'train' / 'dog' / '1.xmp',
            data / 'eval' / 'fish' / 'IMG_0001.AAE',
            # A Live Photo's video beside its image (train/cat/0.png).
            data / 'train' / 'cat' / '0.MOV']
  for path in litter:
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b'\x00\x05\x16\x07 not an image')
  examples = run_executor(data, tmp_path / 'out', ImageExampleGenOptions(
      input_format='images', num_shards=2))
  assert len(examples_io.read_split(examples.uri, 'train')) == 12
  assert len(examples_io.read_split(examples.uri, 'eval')) == 6
  assert features.decode_class_names(examples.get_string_custom_property(
      features.CLASS_NAMES_PROPERTY)) == ['cat', 'dog', 'fish']
  assert examples.get_int_custom_property(features.OS_FILES_PROPERTY) == 9
  listed = json.loads(examples.get_string_custom_property(
      features.OS_FILES_LIST_PROPERTY))
  assert sorted((s['split'], s['path']) for s in listed) == sorted(
      (path.relative_to(data).parts[0], str(path)) for path in litter)
  with open(os.path.join(examples.uri, features.OS_FILES_FILE)) as f:
    assert json.load(f) == listed


def test_a_zip_made_on_a_mac_gives_no_macosx_class(tmp_path):
  # macOS puts a __MACOSX/ folder of AppleDouble files in the zips it makes:
  # unpacked beside the split folders, or beside the class folders.
  data = tmp_path / 'in'
  datasets.write_image_folder(str(data))
  for path in (data / '__MACOSX' / 'train' / 'cat' / '._0.png',
               data / 'train' / '__MACOSX' / 'dog' / '._1.png'):
    path.parent.mkdir(parents=True)
    path.write_bytes(b'\x00\x05\x16\x07 not an image')
  examples = run_executor(data, tmp_path / 'out', ImageExampleGenOptions(
      input_format='images', num_shards=2))
  assert features.decode_class_names(examples.get_string_custom_property(
      features.CLASS_NAMES_PROPERTY)) == ['cat', 'dog', 'fish']
  assert len(examples_io.read_split(examples.uri, 'train')) == 12
  assert len(examples_io.read_split(examples.uri, 'eval')) == 6
  listed = json.loads(examples.get_string_custom_property(
      features.OS_FILES_LIST_PROPERTY))
  assert [s['path'] for s in listed] == [
      str(data / 'train' / '__MACOSX' / 'dog')]


def test_an_accented_class_is_one_class_in_either_unicode_form(tmp_path):
  # macOS may write 'café' decomposed (NFD), Linux composed (NFC): a train/
  # unzipped from a Mac and an eval/ made on Linux name one class.
  composed = unicodedata.normalize('NFC', 'café')
  decomposed = unicodedata.normalize('NFD', 'café')
  data = tmp_path / 'in'
  datasets.write_image_folder(str(data), classes=(decomposed, 'thé'),
                              per_class={'train': 4})
  datasets.write_image_folder(str(data), classes=(composed, 'thé'),
                              per_class={'eval': 2})
  for given in (None, [decomposed, 'thé']):
    examples = run_executor(data, tmp_path / f'out-{given is None}',
                            ImageExampleGenOptions(input_format='images',
                                                   num_shards=1,
                                                   class_names=given))
    assert features.decode_class_names(examples.get_string_custom_property(
        features.CLASS_NAMES_PROPERTY)) == [composed, 'thé']
    for split, count in (('train', 4), ('eval', 2)):
      labels = [r['label'] for r in examples_io.read_split(examples.uri, split)]
      assert sorted(labels) == [0] * count + [1] * count


def test_image_folder_without_os_files_says_none(tmp_path):
  datasets.write_image_folder(str(tmp_path / 'in'), per_class={'train': 1,
                                                               'eval': 1})
  examples = run_executor(tmp_path / 'in', tmp_path / 'out',
                          ImageExampleGenOptions(input_format='images',
                                                 num_shards=1))
  assert examples.get_int_custom_property(features.OS_FILES_PROPERTY) == 0
  assert not os.path.exists(os.path.join(examples.uri, features.OS_FILES_FILE))


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
    labels = idx.read_all(idx.validate(labels_path)).copy()
    if damage == 'count':
      labels = labels[:-1]
    else:
      labels[3] = 12
    idx.write(labels_path, labels)
  with pytest.raises(InputDataError, match=message):
    run_executor(data, tmp_path / 'out',
                 ImageExampleGenOptions(class_names=[str(i) for i in range(10)],
                                        num_shards=NUM_SHARDS))


def test_empty_split(tmp_path):
  data = str(tmp_path / 'in')
  datasets.write_idx_dataset(data, {'train': 0, 't10k': 5})
  with pytest.raises(InputDataError, match='train-images-idx3-ubyte.gz: the split holds no images'):
    run_executor(data, tmp_path / 'out', ImageExampleGenOptions(
        class_names=['0', '1', '2', '3', '4'], num_shards=NUM_SHARDS))


def test_split_without_files(tmp_path):
  data = str(tmp_path / 'in')
  datasets.write_idx_dataset(data, {'train': 5})
  with pytest.raises(InputDataError, match=r't10k-\*: no files match'):
    run_executor(data, tmp_path / 'out',
                 ImageExampleGenOptions(num_shards=NUM_SHARDS))


def test_corrupt_image_in_a_worker_names_the_file_and_leaves_no_shard(
    tmp_path):
  data = tmp_path / 'in'
  datasets.write_image_folder(str(data))
  bad = data / 'train' / 'dog' / '1.jpg'
  bad.write_bytes(b'\xff\xd8\xff garbage')
  with pytest.raises(InputDataError,
                     match=r'train/dog/1.jpg: cannot decode image'):
    run_executor(data, tmp_path / 'out', ImageExampleGenOptions(
        input_format='images', num_shards=3))
  plan = image_folder.shard_paths(
      image_folder.list_split(str(data / 'train' / '*' / '*'))[0], 3)
  bad_shard, = [i for i, paths in enumerate(plan) if str(bad) in paths]
  written = [os.path.relpath(os.path.join(root, name), tmp_path / 'out')
             for root, _, names in os.walk(tmp_path / 'out')
             for name in names]
  # Neither the failed shard nor any temporary file is left behind.
  assert not [w for w in written if '.temp-' in w or
              w == f'Split-train/data_tfrecord-0000{bad_shard}-of-00003.gz'
              ], written


def test_options_round_trip():
  options = ImageExampleGenOptions(
      input_format='images', class_names=['x', 'y'],
      geometry=features.ImageGeometry(32, 30, 3), num_shards=3,
      skip_bad_images=True, image_encoding='jpeg')
  auto = ImageExampleGenOptions(num_shards=1, image_encoding='auto',
                                png_min_pixels=5000)
  for options in (options, auto):
    exec_properties = {standard_component_specs.CUSTOM_CONFIG_KEY:
                       proto_utils.proto_to_json(options.to_custom_config())}
    assert ImageExampleGenOptions.from_exec_properties(
        exec_properties) == options
  exec_properties = {standard_component_specs.CUSTOM_CONFIG_KEY:
                     proto_utils.proto_to_json(options.to_custom_config())}
  assert ImageExampleGenOptions.from_exec_properties(exec_properties) == options
  with pytest.raises(ValueError, match='input_format'):
    ImageExampleGenOptions(input_format='csv', num_shards=1)
  with pytest.raises(ValueError, match='image_encoding'):
    ImageExampleGenOptions(image_encoding='gif', num_shards=1)
  # The default number of shards is written once, in the pipeline's knobs.
  np.testing.assert_equal(NUM_SHARDS, 16)


def test_auto_encoding_follows_the_image_size(tmp_path):
  # IDX files: the size is known only once their headers are read. 28x28
  # is at the threshold: PNG files, and the artifact says so.
  datasets.write_idx_dataset(str(tmp_path / 'in'), {'train': 6, 't10k': 2})
  examples = run_executor(
      tmp_path / 'in', tmp_path / 'out',
      ImageExampleGenOptions(num_shards=1, image_encoding='auto',
                             png_min_pixels=28 * 28))
  assert examples.get_string_custom_property(
      features.IMAGE_ENCODING_PROPERTY) == 'png'
  [shard] = examples_io.split_files(examples.uri, 'eval')
  for record in tf.data.TFRecordDataset(shard, compression_type='GZIP'):
    image = tf.train.Example.FromString(record.numpy()).features.feature[
        features.IMAGE_KEY].bytes_list.value[0]
    assert image.startswith(b'\x89PNG\r\n\x1a\n')


def test_auto_encoding_needs_its_threshold():
  with pytest.raises(ValueError, match='png_min_pixels'):
    ImageExampleGenOptions(num_shards=1, image_encoding='auto')
  geometry = features.ImageGeometry(96, 96, 3)
  assert features.resolve_encoding('auto', geometry, 96 * 96) == 'png'
  assert features.resolve_encoding('auto', geometry, 96 * 96 + 1) == 'raw'
  assert features.resolve_encoding('jpeg', geometry, None) == 'jpeg'
  # The pipeline's default and threshold are written once, in its knobs.
  parser = argparse.ArgumentParser()
  flags.add_flags(parser, 'data', 'data')
  assert flags.knobs_from_args(parser.parse_args([])).data.image_encoding == (
      DataConfig().image_encoding)


def test_num_shards_is_required():
  with pytest.raises(TypeError, match='num_shards'):
    ImageExampleGenOptions()  # pylint: disable=no-value-for-parameter
  assert ImageExampleGen('data', ImageExampleGenOptions(
      num_shards=3)).exec_properties[
      standard_component_specs.CUSTOM_CONFIG_KEY]
  with pytest.raises(ValueError, match='needs its custom_config'):
    ImageExampleGenOptions.from_exec_properties({})


def test_span_dir_pattern_has_one_check():
  assert check_span_dir_pattern('span-{SPAN}') == 'span-{SPAN}'
  assert [split.pattern for split in default_input_config(
      'idx', 'span-{SPAN}/').splits] == ['span-{SPAN}/train-*',
                                          'span-{SPAN}/t10k-*']
  for bad in ('span', 'a/span-{SPAN}'):
    message = ('span_dir_pattern must be one folder name containing {SPAN}, '
               f'e.g. span-{{SPAN}}; got {bad!r}')
    with pytest.raises(ValueError) as raised:
      check_span_dir_pattern(bad)
    assert str(raised.value) == message
    with pytest.raises(ValueError) as raised:
      default_input_config('images', bad)
    assert str(raised.value) == message
    # The flag says it its own way.
    with pytest.raises(ValueError) as raised:
      parse_span_dir_pattern(bad)
    assert str(raised.value) == (
        f'expected one folder name with {{SPAN}} in it, e.g. span-{{SPAN}}, '
        f'got {bad!r}')


def test_skip_bad_images_records_what_it_skipped(tmp_path):
  data = tmp_path / 'in'
  datasets.write_image_folder(str(data))
  (data / 'train' / 'dog' / '1.jpg').write_bytes(b'\xff\xd8\xff garbage')
  (data / 'eval' / 'cat' / '0.png').write_bytes(b'')
  examples = run_executor(data, tmp_path / 'out', ImageExampleGenOptions(
      input_format='images', skip_bad_images=True,
      num_shards=NUM_SHARDS))
  assert len(examples_io.read_split(examples.uri, 'train')) == 11
  assert len(examples_io.read_split(examples.uri, 'eval')) == 5
  want = [
      {'split': 'eval', 'path': str(data / 'eval' / 'cat' / '0.png'),
       'reason': 'empty file (0 bytes)'},
      {'split': 'train', 'path': str(data / 'train' / 'dog' / '1.jpg'),
       'reason': 'cannot decode image: not an image format Pillow reads'},
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
        input_format='images', skip_bad_images=True,
        num_shards=NUM_SHARDS))


def test_skip_bad_images_is_for_image_folders():
  with pytest.raises(ValueError, match='skip_bad_images applies to image folders'):
    ImageExampleGenOptions(input_format='idx', skip_bad_images=True,
                           num_shards=1)


@pytest.mark.parametrize('layout', ['idx', 'images'])
def test_progress_lines_name_the_split_and_count_its_images(
    tmp_path, monkeypatch, layout):
  # A line at every count, as on an input that takes long.
  monkeypatch.setattr(console_lines, 'INTERVAL_SECONDS', 0)
  monkeypatch.setattr(idx, 'CHUNK_BYTES', 10 * 28 * 28)  # 10 images.
  if layout == 'idx':
    datasets.write_idx_dataset(str(tmp_path / 'in'), {'train': 30, 't10k': 20})
    options = ImageExampleGenOptions(num_shards=1)
    last = {'train-images-idx3-ubyte.gz: 30 of 30',
            't10k-images-idx3-ubyte.gz: 20 of 20'}
  else:
    datasets.write_image_folder(str(tmp_path / 'in'))
    options = ImageExampleGenOptions(input_format='images', num_shards=1)
    last = {'train: 12 of 12', 'eval: 6 of 6'}
  with absl_lines(console_lines.PROGRESS_LINE) as lines:
    run_executor(tmp_path / 'in', tmp_path / 'out', options)
  assert {f'ImageExampleGen: {l} images read (100%)' for l in last} <= set(
      lines), lines
  assert all(' of ' in l and l.endswith('%)') for l in lines)
