"""Decoding single images to the configured geometry, and bad image files."""

import io

import numpy as np
from PIL import Image
import pytest

from components.image_example_gen import image_folder
from components.image_example_gen.errors import InputDataError
from records import features


def _encode(pixels, fmt='PNG', mode=None):
  buffer = io.BytesIO()
  Image.fromarray(pixels, mode).save(buffer, fmt)
  return buffer.getvalue()


def test_png_keeps_pixels_when_geometry_matches():
  pixels = np.arange(28 * 28, dtype=np.uint32).reshape(28, 28).astype(np.uint8)
  raw = image_folder.decode_image('a/b/0.png', _encode(pixels),
                                  features.MNIST_GEOMETRY)
  np.testing.assert_array_equal(np.frombuffer(raw, np.uint8).reshape(28, 28),
                                pixels)


def test_jpeg_rgb_resized_to_grey():
  pixels = np.full((40, 50, 3), 200, dtype=np.uint8)
  raw = image_folder.decode_image('x/y/1.JPEG', _encode(pixels, 'JPEG'),
                                  features.ImageGeometry(28, 28, 1))
  grey = np.frombuffer(raw, np.uint8)
  assert grey.size == 28 * 28
  assert abs(int(grey.mean()) - 200) <= 2


def test_grey_to_rgb_and_other_size():
  pixels = np.full((10, 10), 7, dtype=np.uint8)
  geometry = features.ImageGeometry(16, 12, 3)
  raw = image_folder.decode_image('p.png', _encode(pixels), geometry)
  assert np.frombuffer(raw, np.uint8).reshape(16, 12, 3).max() == 7


def test_zero_byte_file():
  with pytest.raises(InputDataError, match=r'^d/c/empty.png: empty file \(0 bytes\)'):
    image_folder.decode_image('d/c/empty.png', b'', features.MNIST_GEOMETRY)


def test_corrupt_image():
  data = _encode(np.zeros((28, 28), np.uint8))
  with pytest.raises(InputDataError, match=r'^d/c/bad.png: cannot decode image'):
    image_folder.decode_image('d/c/bad.png', data[:len(data) // 2],
                              features.MNIST_GEOMETRY)


def test_garbage_with_image_extension():
  with pytest.raises(InputDataError, match=r'^d/c/x.jpg: cannot decode image'):
    image_folder.decode_image('d/c/x.jpg', b'not an image at all',
                              features.MNIST_GEOMETRY)


def test_non_image_file():
  with pytest.raises(InputDataError, match=r'^d/c/notes.txt: not an image file'):
    image_folder.decode_image('d/c/notes.txt', b'hello',
                              features.MNIST_GEOMETRY)


def test_class_names_are_the_sorted_union_over_splits(tmp_path):
  for split, names in {'train': ['b', 'a'], 'eval': ['c', 'a']}.items():
    for name in names:
      (tmp_path / split / name).mkdir(parents=True)
  patterns = [str(tmp_path / s / '*' / '*') for s in ('train', 'eval')]
  assert image_folder.discover_class_names(patterns) == ['a', 'b', 'c']


def test_empty_class_folder(tmp_path):
  (tmp_path / 'train' / 'a').mkdir(parents=True)
  (tmp_path / 'train' / 'a' / '0.png').write_bytes(b'x')
  (tmp_path / 'train' / 'b').mkdir()
  with pytest.raises(InputDataError, match=r"train/b: class folder 'b' holds no images"):
    image_folder.check_split(str(tmp_path / 'train' / '*' / '*'), ['a', 'b'])


def test_missing_split(tmp_path):
  with pytest.raises(InputDataError, match=r'eval: no class folders found'):
    image_folder.check_split(str(tmp_path / 'eval' / '*' / '*'), ['a'])
