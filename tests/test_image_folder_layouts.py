"""Image folders as people have them, through the ImageExampleGen executor:
class folders with no train/eval split, spans of them, too few classes, a
class missing from train, images too big to decode, and the geometry chosen
from the images' headers when no option sets it."""

import json
import os
import struct
import zlib

import numpy as np
from PIL import Image
import pytest

from components.image_example_gen import folder_layout
from components.image_example_gen import geometry_choice
from components.image_example_gen import image_folder
from components.image_example_gen import console_lines
from components.image_example_gen.component import default_input_config
from components.image_example_gen.component import ImageExampleGen
from components.image_example_gen.errors import InputDataError
from components.image_example_gen.options import ImageExampleGenOptions
from records import features
from tests import artifacts
from tests import examples_io
from tests.absl_lines import absl_lines

CLASSES = ('cat', 'dog', 'fish')


def _write_classes(directory, per_class=10, size=(12, 10), mode='RGB',
                   classes=CLASSES, sizes=None):
  """<directory>/<class>/<n>.png: no split folders."""
  rng = np.random.default_rng(0)
  for c, name in enumerate(classes):
    os.makedirs(os.path.join(directory, name), exist_ok=True)
    for i in range(per_class):
      width, height = sizes[i % len(sizes)] if sizes else size
      shape = (height, width) + ((3,) if mode == 'RGB' else ())
      pixels = (rng.integers(0, 30, size=shape) + 60 * c).astype(np.uint8)
      Image.fromarray(pixels, mode).save(
          os.path.join(directory, name, f'{i}.png'))


def _options(**kwargs):
  return ImageExampleGenOptions(
      **{'input_format': 'images', 'num_shards': 1, 'eval_percent': 20,
         **kwargs})


def _run(data, out, options, **configs):
  # The lines ImageExampleGen shows on the console besides progress.
  with absl_lines(console_lines.NOTICE_LINE) as notices:
    examples = artifacts.run_example_gen(data, out, options, **configs)
  return examples, notices


def _labels(examples, split):
  return sorted(r['label'] for r in examples_io.read_split(examples.uri, split))


def test_class_folders_without_splits_are_split_by_path(tmp_path):
  data = tmp_path / 'in'
  _write_classes(str(data), per_class=20)
  (data / 'dog' / '.DS_Store').write_bytes(b'\0')
  # As on Kubeflow, where no driver ran and the executor finds the layout.
  examples, notices = _run(data, tmp_path / 'out', _options())
  assert json.loads(examples.split_names) == ['train', 'eval']
  files = image_folder.list_split(str(data / '*' / '*'))[0]
  want = folder_layout.partition(
      files, str(data), folder_layout.output_config(
          folder_layout.CLASSES, 20).split_config)
  for split in ('train', 'eval'):
    assert _labels(examples, split) == sorted(
        CLASSES.index(os.path.basename(os.path.dirname(p)))
        for p in want[split])
  assert 0 < len(want['eval']) < len(want['train'])
  assert notices[0] == (
      f'ImageExampleGen: 3 classes (cat, dog, fish); train: '
      f'{len(want["train"])} images, eval: {len(want["eval"])} images; no '
      'train/eval folders: split by a hash of each image\'s path')
  assert examples.get_int_custom_property(features.OS_FILES_PROPERTY) == 1


def test_the_path_hash_keeps_every_image_in_its_split_as_images_are_added():
  config = folder_layout.output_config(folder_layout.CLASSES, 20).split_config
  paths = [f'/data/c{c}/{i}.png' for c in range(3) for i in range(200)]
  before = folder_layout.partition(paths[::2], '/data', config)
  after = folder_layout.partition(paths, '/data', config)
  for split, split_paths in before.items():
    assert set(split_paths) <= set(after[split])
  # Relative paths: the same split wherever the folder is.
  moved = folder_layout.partition(
      [p.replace('/data', '/elsewhere/photos') for p in paths],
      '/elsewhere/photos', config)
  assert [p.replace('/elsewhere/photos', '/data') for p in moved['eval']
          ] == after['eval']
  assert 0.15 < len(after['eval']) / len(paths) < 0.25


def test_the_component_configures_the_layout_it_finds(tmp_path):
  _write_classes(str(tmp_path / 'flat'), per_class=1)
  flat = ImageExampleGen(str(tmp_path / 'flat'), ImageExampleGenOptions(
      input_format='images', num_shards=1, eval_percent=15)).exec_properties
  assert [s['pattern'] for s in json.loads(flat['input_config'])['splits']
          ] == ['*/*']
  assert {s['name']: s['hash_buckets'] for s in json.loads(
      flat['output_config'])['split_config']['splits']} == {
          'train': 85, 'eval': 15}
  split = ImageExampleGen(str(tmp_path / 'none'), ImageExampleGenOptions(
      input_format='images', num_shards=1, eval_percent=15)).exec_properties
  assert [s['pattern'] for s in json.loads(split['input_config'])['splits']
          ] == ['train/*/*', 'eval/*/*']


def test_spans_of_class_folders(tmp_path):
  data = tmp_path / 'in'
  _write_classes(str(data / 'span-1'), per_class=3)
  _write_classes(str(data / 'span-2'), per_class=10)
  examples, _ = _run(data, tmp_path / 'out', _options(),
                     input_config=default_input_config('images', 'span-{SPAN}'))
  assert examples.get_int_custom_property('span') == 2
  assert len(_labels(examples, 'train')) + len(_labels(examples, 'eval')) == 30
  # The component sees the same layout through the span folders.
  config = ImageExampleGen(str(data), ImageExampleGenOptions(
      input_format='images', num_shards=1, eval_percent=20),
                           'span-{SPAN}').exec_properties
  assert [s['pattern'] for s in json.loads(config['input_config'])['splits']
          ] == ['span-{SPAN}/*/*']


@pytest.mark.parametrize('layout', ['empty', 'loose images',
                                    'spans without --span-dir-pattern'])
def test_neither_layout_names_both(tmp_path, layout):
  data = tmp_path / 'in'
  data.mkdir()
  if layout == 'loose images':
    Image.new('L', (4, 4)).save(data / 'a.png')
  elif layout.startswith('spans'):
    _write_classes(str(data / 'span-1'), per_class=1)
  with pytest.raises(InputDataError) as raised:
    _run(data, tmp_path / 'out', _options())
  assert str(raised.value) == (
      f'{data}: neither layout of image folders found: expected '
      f'{data}/train/<class>/<image> and {data}/eval/<class>/<image> (and '
      f'optionally {data}/validation/<class>/<image>), or '
      f'{data}/<class>/<image> (split into train and eval by a hash of each '
      'path)')


def test_one_class_stops_before_anything_is_written(tmp_path):
  data = tmp_path / 'in'
  _write_classes(str(data), classes=('cat',))
  with pytest.raises(InputDataError, match=r'/in: 1 class folder found '
                     r'\(cat\): a classifier needs at least two'):
    _run(data, tmp_path / 'out', _options())
  assert not os.path.exists(tmp_path / 'out' / 'Split-train')


def test_a_class_in_eval_and_not_in_train_is_named(tmp_path):
  data = tmp_path / 'in'
  _write_classes(str(data / 'train'), classes=('cat', 'dog'), per_class=2)
  _write_classes(str(data / 'eval'), classes=('cat', 'dog', 'fish'),
                 per_class=1)
  with pytest.raises(InputDataError) as raised:
    _run(data, tmp_path / 'out', _options())
  assert str(raised.value) == (
      f"{data}/eval/fish: class 'fish' has images in split 'eval' but none "
      "in split 'train': the model could not learn it")


def _png_header(width, height):
  """A PNG file of a header only: it claims width x height pixels."""
  def chunk(kind, body):
    return (struct.pack('>I', len(body)) + kind + body +
            struct.pack('>I', zlib.crc32(kind + body)))
  return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack(
      '>IIBBBBB', width, height, 8, 2, 0, 0, 0)) + chunk(b'IEND', b''))


@pytest.mark.parametrize('width, height, limit', [
    (100_000, 100_000, None),  # Over twice Pillow's own limit.
    (40, 30, 1000),  # Over ours, under twice it (Pillow's warning).
    (40, 30, 500),  # Over twice ours.
])
def test_too_many_pixels_are_refused_before_decoding(width, height, limit):
  data = (_png_header(width, height) if width > 1000 else
          _encode_png(width, height))
  with pytest.raises(InputDataError) as raised:
    image_folder.decode_image('big.png', data,
                              features.ImageGeometry(8, 8, 1), limit)
  message = str(raised.value)
  assert message.startswith('big.png: the image claims ')
  assert f'{width * height:,} pixels, more than the limit of' in message
  assert 'refused before decoding' in message


def _encode_png(width, height, mode='RGB'):
  import io  # pylint: disable=g-import-not-at-top
  buffer = io.BytesIO()
  Image.new(mode, (width, height), 'red').save(buffer, 'PNG')
  return buffer.getvalue()


def test_images_too_big_are_skipped_and_listed(tmp_path):
  data = tmp_path / 'in'
  _write_classes(str(data / 'train'), per_class=2, size=(8, 8))
  _write_classes(str(data / 'eval'), per_class=1, size=(8, 8))
  big = data / 'train' / 'dog' / 'big.png'
  big.write_bytes(_encode_png(40, 30))
  bomb = data / 'eval' / 'cat' / 'bomb.png'
  bomb.write_bytes(_png_header(100_000, 100_000))
  examples, _ = _run(data, tmp_path / 'out', _options(
      skip_bad_images=True, max_image_pixels=1000,
      geometry=features.ImageGeometry(8, 8, 3)))
  listed = json.loads(examples.get_string_custom_property(
      features.SKIPPED_IMAGES_LIST_PROPERTY))
  assert [(s['split'], s['path']) for s in listed] == [
      ('eval', str(bomb)), ('train', str(big))]
  assert all('more than the limit of 1,000' in s['reason'] for s in listed)
  assert len(_labels(examples, 'train')) == 6


def test_geometry_is_chosen_from_the_headers(tmp_path):
  data = tmp_path / 'in'
  _write_classes(str(data), size=(12, 10))
  examples, notices = _run(data, tmp_path / 'out', _options(
      infer_size=True, infer_channels=True))
  assert features.ImageGeometry.from_dict({
      key: examples.get_int_custom_property(key)
      for key in features.GEOMETRY_PROPERTIES}) == features.ImageGeometry(
          10, 12, 3)
  assert examples_io.read_split(examples.uri, 'train')[0]['image'].shape == (
      10, 12, 3)
  chosen = examples.get_string_custom_property(geometry_choice.CHOICE_PROPERTY)
  assert chosen == ('size and channels chosen from the headers of 30 images '
                    '(1 distinct size, colour)')
  assert notices[1] == (f'ImageExampleGen: images converted to 10x12x3: '
                        f'{chosen}; --image-size and --channels set them')


def test_geometry_of_mixed_grey_images_and_what_options_pin(tmp_path):
  files = {'train': []}
  sizes = [(300, 400), (500, 260), (1000, 800)]
  for i, size in enumerate(sizes):
    path = str(tmp_path / 'cat' / f'{i}.png')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.new('L', size).save(path)
    files['train'].append(path)
  given = features.ImageGeometry(28, 28, 1)
  # Sizes differ: a square of at most MAX_SIDE; grey stays grey.
  assert geometry_choice.choose(files, given, True, True, None, False)[0] == (
      features.ImageGeometry(224, 224, 1))
  # What the options set is kept.
  assert geometry_choice.choose(files, given, False, True, None, False)[0] == (
      given)
  assert geometry_choice.choose(files, features.ImageGeometry(28, 28, 3),
                                True, False, None, False)[0] == (
                                    features.ImageGeometry(224, 224, 3))
  # One size bigger than MAX_SIDE: scaled to fit, its aspect kept.
  one = {'train': files['train'][2:]}
  assert geometry_choice.choose(one, given, True, True, None, False)[0] == (
      features.ImageGeometry(179, 224, 1))


def test_a_sampled_image_that_cannot_be_read_is_named_or_skipped(tmp_path):
  files = {'train': []}
  for name, data in (('ok.png', _encode_png(6, 4)),
                     ('broken.png', b'\x89PNG\r\n\x1a\n broken'),
                     ('empty.jpg', b'')):
    (tmp_path / name).write_bytes(data)
    files['train'].append(str(tmp_path / name))
  given = features.ImageGeometry(28, 28, 1)
  with pytest.raises(InputDataError, match=r'/broken.png: cannot decode'):
    geometry_choice.choose(files, given, True, True, None, False)
  assert geometry_choice.choose(files, given, True, True, None, True)[0] == (
      features.ImageGeometry(4, 6, 3))
