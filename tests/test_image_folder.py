"""Decoding single images to the configured geometry, and bad image files."""

import io
import re

import numpy as np
from PIL import ExifTags, Image
import pytest

from components.image_example_gen import image_folder
from components.image_example_gen.errors import InputDataError
from records import features
from records import image_conversion
from tests import datasets


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


def test_an_iphone_photo_in_heic_is_read_as_its_pixels():
  rng = np.random.default_rng(0)
  pixels = rng.integers(0, 256, (20, 24, 3), dtype=np.uint8)
  data = datasets.heic_file(pixels)
  assert data[4:12] == b'ftypheic'
  geometry = features.ImageGeometry(20, 24, 3)
  decoded = image_folder.decode_image('d/c/IMG_0001.HEIC', data, geometry)
  # Lossless, but for libheif's rounding of its colour conversion.
  difference = np.frombuffer(decoded, np.uint8).reshape(20, 24, 3).astype(
      int) - pixels
  assert np.abs(difference).max() <= 1


def test_an_avif_photo_is_read_upright_as_its_pixels():
  # Smooth, as photos are: AV1 codes noise coarsely, even at quality 100.
  y, x = np.mgrid[0:20, 0:24]
  pixels = np.stack([x * 10, y * 12, (x + y) * 5], -1).astype(np.uint8)
  turned = np.asarray(Image.fromarray(pixels).transpose(
      Image.Transpose.ROTATE_270))
  for orientation, expected in ((1, pixels), (6, turned)):
    exif = Image.Exif()
    exif[ExifTags.Base.Orientation] = orientation
    buffer = io.BytesIO()
    # Pillow writes the rotation as the AVIF box phones write (irot).
    Image.fromarray(pixels).save(buffer, 'AVIF', quality=100,
                                 subsampling='4:4:4', exif=exif)
    data = buffer.getvalue()
    assert data[4:12] == b'ftypavif'
    assert (b'irot' in data) == (orientation == 6)
    geometry = features.ImageGeometry(*expected.shape)
    decoded = np.frombuffer(image_folder.decode_image(
        'd/c/photo.AVIF', data, geometry), np.uint8).reshape(expected.shape)
    assert np.abs(decoded.astype(int) - expected).max() <= 3, orientation


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


# Every format Pillow reads, and upper-case extensions: (name, Pillow format,
# whether it keeps pixels exactly).
FORMATS = [('a.png', 'PNG', True), ('b.JPG', 'JPEG', False),
           ('c.jpeg', 'JPEG', False), ('d.bmp', 'BMP', True),
           ('e.GIF', 'GIF', True), ('f.webp', 'WEBP', False),
           ('g.tif', 'TIFF', True), ('h.TIFF', 'TIFF', True)]


@pytest.mark.parametrize('name, fmt, exact', FORMATS)
def test_every_common_format_is_read(name, fmt, exact):
  # Four flat quadrants: survives lossy codecs within a few levels.
  pixels = np.zeros((16, 16), np.uint8)
  pixels[:8, 8:], pixels[8:, :8], pixels[8:, 8:] = 80, 160, 240
  raw = image_folder.decode_image(f'd/c/{name}', _encode(pixels, fmt),
                                  features.ImageGeometry(16, 16, 1))
  got = np.frombuffer(raw, np.uint8).reshape(16, 16)
  if exact:
    np.testing.assert_array_equal(got, pixels)
  else:
    assert np.abs(got.astype(int) - pixels).mean() < 4


def test_gif_reads_the_first_frame():
  frames = [Image.fromarray(np.full((8, 8), value, np.uint8), 'L')
            for value in (50, 200)]
  buffer = io.BytesIO()
  frames[0].save(buffer, 'GIF', save_all=True, append_images=frames[1:])
  raw = image_folder.decode_image('d/c/anim.gif', buffer.getvalue(),
                                  features.ImageGeometry(8, 8, 1))
  assert set(np.frombuffer(raw, np.uint8)) == {50}


def test_exif_orientation_is_applied():
  # Stored landscape, left half white: a camera held upright, whose EXIF
  # Orientation 6 says "rotate 90 degrees clockwise to show".
  pixels = np.zeros((16, 32), np.uint8)
  pixels[:, :16] = 255
  exif = Image.Exif()
  exif[0x0112] = 6  # Orientation.
  buffer = io.BytesIO()
  Image.fromarray(pixels, 'L').save(buffer, 'JPEG', exif=exif, quality=95)
  raw = image_folder.decode_image('d/c/portrait.jpg', buffer.getvalue(),
                                  features.ImageGeometry(32, 16, 1))
  shown = np.frombuffer(raw, np.uint8).reshape(32, 16)
  # Rotated: the white half is now the top half, not the left one.
  assert shown[:14].mean() > 240 and shown[18:].mean() < 15


def _full_decode(data, geometry):
  """The image Pillow decodes whole, upright, then resizes as ImageExampleGen
  does."""
  with Image.open(io.BytesIO(data)) as image:
    image = image_conversion.convert(image, 'RGB')
    return np.asarray(image.resize((geometry.width, geometry.height),
                                   Image.Resampling.BILINEAR,
                                   reducing_gap=3.0))


@pytest.mark.parametrize('orientation', [None, 6])
def test_a_large_jpeg_decoded_reduced_matches_the_whole_decode(orientation):
  # A phone photo is decoded at a fraction of its size when the geometry
  # asks far fewer pixels; the result is the whole decode's, upright, up to
  # a grey level or two.
  rng = np.random.default_rng(0)
  upright = np.zeros((1200, 1600, 3), np.uint8)
  upright[:, :800] = (230, 40, 40)  # The left half red, the rest noise.
  upright[:, 800:] = rng.integers(0, 256, (1200, 800, 3))
  upright = np.asarray(Image.fromarray(upright).resize((400, 300)).resize(
      (1600, 1200)))  # Smooth, as photos are.
  exif = Image.Exif()
  stored = Image.fromarray(upright)
  if orientation:
    exif[0x0112] = orientation
    stored = stored.transpose(Image.Transpose.ROTATE_90)
  buffer = io.BytesIO()
  stored.save(buffer, 'JPEG', exif=exif, quality=90)
  geometry = features.ImageGeometry(90, 120, 3)
  raw = image_folder.decode_image('d/c/phone.jpg', buffer.getvalue(),
                                  geometry)
  decoded = np.frombuffer(raw, np.uint8).reshape(90, 120, 3).astype(int)
  whole = _full_decode(buffer.getvalue(), geometry).astype(int)
  assert np.abs(decoded - whole).mean() < 1.0
  assert decoded[:, :55, 0].mean() > 200 and decoded[:, :55, 1].mean() < 80


def test_transparency_is_composited_on_white():
  rgba = np.zeros((4, 4, 4), np.uint8)
  rgba[..., 0] = 255  # Red...
  rgba[:, :2, 3] = 255  # ...opaque on the left, transparent on the right.
  raw = image_folder.decode_image('d/c/icon.png', _encode(rgba, 'PNG', 'RGBA'),
                                  features.ImageGeometry(4, 4, 3))
  got = np.frombuffer(raw, np.uint8).reshape(4, 4, 3)
  assert (got[:, :2] == (255, 0, 0)).all()
  assert (got[:, 2:] == features.TRANSPARENT_BACKGROUND).all()


def test_palette_and_16_bit_grey_are_converted():
  palette = Image.fromarray(np.full((4, 4, 3), (0, 0, 255), np.uint8)).convert(
      'P', palette=Image.Palette.ADAPTIVE, colors=4)
  buffer = io.BytesIO()
  palette.save(buffer, 'PNG')
  raw = image_folder.decode_image('d/c/p.png', buffer.getvalue(),
                                  features.ImageGeometry(4, 4, 3))
  assert (np.frombuffer(raw, np.uint8).reshape(4, 4, 3) == (0, 0, 255)).all()
  deep = np.full((4, 4), 40000, np.uint16)
  raw = image_folder.decode_image('d/c/deep.png', _encode(deep),
                                  features.ImageGeometry(4, 4, 1))
  assert set(np.frombuffer(raw, np.uint8)) == {40000 >> 8}


def test_32_bit_images_keep_their_high_bits_or_are_refused():
  # A 32-bit integer TIFF of 16-bit values (a scientific camera's): its 8
  # high bits of 16, clipped; a float TIFF says no range: refused, named.
  deep = np.array([[-5, 0], [40000, 70000]], np.int32)
  raw = image_folder.decode_image('d/c/deep.tif', _encode(deep, 'TIFF'),
                                  features.ImageGeometry(2, 2, 1))
  assert np.frombuffer(raw, np.uint8).tolist() == [0, 0, 40000 >> 8, 255]
  unit = np.full((2, 2), 0.5, np.float32)
  with pytest.raises(InputDataError, match=r'd/c/unit\.tif: .*floating-point '
                     'pixels'):
    image_folder.decode_image('d/c/unit.tif', _encode(unit, 'TIFF'),
                              features.ImageGeometry(2, 2, 1))


def test_a_video_is_left_out_only_beside_an_image_of_its_name():
  # A Live Photo's .MOV or a motion photo's .mp4 goes with its image; a
  # video alone stays, to stop the run as a file that is not an image.
  files, left_out = image_folder.sort_out([
      'c/IMG_1.HEIC', 'c/IMG_1.MOV', 'c/PXL_2.jpg', 'c/pxl_2.mp4',
      'c/clip.mp4', 'd/IMG_1.MOV', 'c/.DS_Store'])
  assert files == ['c/IMG_1.HEIC', 'c/PXL_2.jpg', 'c/clip.mp4', 'd/IMG_1.MOV']
  assert left_out == ['c/IMG_1.MOV', 'c/pxl_2.mp4', 'c/.DS_Store']


def test_a_jfif_file_is_read_as_the_jpeg_it_is():
  # Browsers on Windows save JPEGs as .jfif.
  jpeg = _encode(np.full((8, 8, 3), (200, 40, 10), np.uint8), 'JPEG')
  geometry = features.ImageGeometry(8, 8, 3)
  assert image_folder.decode_image('d/c/saved.JFIF', jpeg, geometry) == (
      image_folder.decode_image('d/c/saved.jpg', jpeg, geometry))


def test_a_folder_inside_a_class_folder_is_named_as_one(tmp_path):
  # Refused as a folder, not as a file that is not an image; one named like
  # an image, when reading it fails.
  def message(nested):
    return f'^{re.escape(str(nested))}: a folder inside a class folder'
  for name in ('2019', 'old.jpg'):
    nested = tmp_path / 'train' / 'cat' / name
    nested.mkdir(parents=True)
    assert re.match(message(nested), str(image_folder.unreadable(
        str(nested), IsADirectoryError(str(nested)))))
  year = tmp_path / 'train' / 'cat' / '2019'
  with pytest.raises(InputDataError, match=message(year)):
    image_folder.check_file(str(year), 4096)
  assert str(image_folder.unreadable('d/c/gone.png', OSError('no such file'))
             ) == 'd/c/gone.png: cannot read file: no such file'


@pytest.mark.parametrize('path, is_os_file', [
    ('train/cat/.DS_Store', True), ('train/cat/._0.png', True),
    ('train/cat/Thumbs.db', True), ('train/cat/thumbs.db', True),
    ('train/cat/desktop.ini', True), ('train/cat/.hidden.png', True),
    ('train/.ipynb_checkpoints/0.png', True), ('train/cat/0.png', False),
    ('train/cat/notes.txt', False), ('train/cat/Thumbs.db.png', False),
    ('train/__MACOSX/cat', True), ('__MACOSX/train', True),
    ('train/cat/0.jpg.json', True), ('train/cat/0.XMP', True),
    ('train/cat/IMG_0001.AAE', True), ('train/cat/0.json.png', False)])
def test_os_files_are_recognised(path, is_os_file):
  assert image_folder.is_os_file(path) == is_os_file


def test_a_class_folder_of_os_files_only_holds_no_images(tmp_path):
  (tmp_path / 'train' / 'a').mkdir(parents=True)
  (tmp_path / 'train' / 'a' / '0.png').write_bytes(b'x')
  (tmp_path / 'train' / 'b').mkdir()
  (tmp_path / 'train' / 'b' / '.DS_Store').write_bytes(b'x')
  (tmp_path / 'train' / '.ipynb_checkpoints').mkdir()
  pattern = str(tmp_path / 'train' / '*' / '*')
  assert image_folder.discover_class_names([pattern]) == ['a', 'b']
  with pytest.raises(InputDataError, match=r"train/b: class folder 'b' holds no images"):
    image_folder.check_split(pattern, ['a', 'b'])
