"""The `serve_image_bytes` signature (image files in, class names out) and
the TensorFlow Lite files beside the SavedModel, on tiny models trained by
the Trainer's run_fn."""

import io
import json
import os
import struct
import zlib

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image, PngImagePlugin

from components.image_example_gen import image_folder
from modules.training import export
from predict import inputs as predict_inputs
from records import decode
from records import features
from records import serving_model
from tests import datasets
from tests import tiny_models

GREY = features.MNIST_GEOMETRY
RGB = features.ImageGeometry(16, 16, 3)


@pytest.fixture(scope='module')
def grey(grey_model):
  path, written = grey_model  # tests/tiny_models.py: shared, read only.
  return path, tf.saved_model.load(path), written['t10k']


@pytest.fixture(scope='module')
def rgb(tmp_path_factory):
  path, written = tiny_models.train(tmp_path_factory.mktemp('rgb'), RGB)
  return path, tf.saved_model.load(path), written['t10k']


def _file(pixels, format_, **options):
  if isinstance(pixels, Image.Image):
    image = pixels
  else:
    array = np.asarray(pixels)
    image = Image.fromarray(array[..., 0] if array.ndim == 3 and
                            array.shape[2] == 1 else array)
  if format_ == 'HEIF':  # Pillow reads HEIF (pi-heif), libheif writes it.
    return datasets.heic_file(np.asarray(image.convert('RGB')))
  buffer = io.BytesIO()
  image.save(buffer, format_, **options)
  return buffer.getvalue()


def _as_example_gen_converts(data, geometry):
  """The pixels ImageExampleGen makes of an image file, for `geometry`."""
  return np.frombuffer(image_folder.decode_image('image.png', data, geometry),
                       np.uint8).reshape(geometry.shape)


def _serve(model, signature, **inputs):
  out = model.signatures[signature](**{k: tf.constant(v)
                                       for k, v in inputs.items()})
  return {k: v.numpy() for k, v in out.items()}


def _smooth(height, width, channels, seed=0):
  """A photo-like image: smooth shading, an edge, some noise."""
  rng = np.random.default_rng(seed)
  y, x = np.mgrid[0:height, 0:width]
  image = np.stack([128 + 80 * np.sin(x / (width / 7) + c) *
                    np.cos(y / (height / 5)) for c in range(channels)], -1)
  image += rng.normal(0, 20, image.shape)
  image[height // 3:height // 2, width // 4:width // 2] = 250
  return np.clip(image, 0, 255).astype(np.uint8)


_TRANSPARENT = np.dstack([_smooth(30, 30, 3), _smooth(30, 30, 1, seed=1)])


_FILES = [
    ('colour JPEG', _file(_smooth(60, 45, 3), 'JPEG')),
    ('grey JPEG', _file(_smooth(28, 28, 1), 'JPEG')),
    ('grey PNG of the trained size', _file(_smooth(28, 28, 1), 'PNG')),
    ('grey PNG, larger, odd size', _file(_smooth(101, 37, 1), 'PNG')),
    ('smaller PNG', _file(_smooth(9, 13, 3), 'PNG')),
    ('RGBA PNG', _file(Image.fromarray(_TRANSPARENT, 'RGBA'), 'PNG')),
    ('grey + alpha PNG', _file(Image.fromarray(
        _TRANSPARENT[..., 2:], 'LA'), 'PNG')),
    ('palette PNG', _file(Image.fromarray(_smooth(40, 40, 3)).convert('P'),
                          'PNG')),
    ('16-bit PNG', _file(_smooth(28, 28, 1)[..., 0].astype(np.uint16) * 257,
                         'PNG')),
    ('GIF', _file(Image.fromarray(_smooth(40, 40, 3)).convert('P'), 'GIF')),
    ('BMP', _file(_smooth(33, 20, 3), 'BMP')),
]


@pytest.mark.parametrize('geometry', [GREY, RGB], ids=str)
@pytest.mark.parametrize('name,data', [pytest.param(*case, id=case[0])
                                       for case in _FILES])
def test_files_become_the_pixels_example_gen_trains_on(geometry, name, data):
  served = decode.decode_files(tf.constant([data]), geometry).numpy()[0]
  converted = _as_example_gen_converts(data, geometry)
  assert served.shape == converted.shape == geometry.shape
  difference = np.abs(served.astype(int) - converted.astype(int))
  # Pillow shrinks in two steps (reducing_gap), TensorFlow in one, and they
  # round differently: a few levels on a few pixels.
  assert difference.max() <= 3, name
  assert difference.mean() < 0.5, name


def test_png_files_agree_with_serve_images(grey):
  path, model, (images, _) = grey
  names = features.read_class_names(
      os.path.join(path, 'assets.extra', features.CLASS_NAMES_FILE))
  files = [_file(image, 'PNG') for image in images]
  by_files = _serve(model, serving_model.IMAGE_BYTES_SIGNATURE,
                    image_bytes=files)
  by_pixels = _serve(model, serving_model.IMAGES_SIGNATURE, images=images)
  np.testing.assert_array_equal(by_files['classes'], by_pixels['classes'])
  np.testing.assert_allclose(by_files['probabilities'],
                             by_pixels['probabilities'], atol=1e-5)
  assert [n.decode() for n in by_files['class_names']] == [
      names[c] for c in by_files['classes']]
  # The other signatures name the classes too.
  np.testing.assert_array_equal(by_pixels['class_names'],
                                by_files['class_names'])


@pytest.mark.parametrize('model_fixture,files', [
    pytest.param('grey', [_file(_smooth(28, 28, 3, seed=s), 'JPEG')
                          for s in range(4)], id='colour JPEG to grey'),
    pytest.param('grey', [_file(_smooth(90, 61, 1, seed=s), 'PNG')
                          for s in range(4)], id='larger odd-size PNG'),
    pytest.param('rgb', [_file(_smooth(16, 16, 1, seed=s), 'PNG')
                         for s in range(4)], id='grey PNG to colour'),
    pytest.param('rgb', [_file(_smooth(45, 70, 3, seed=s), 'JPEG')
                         for s in range(4)], id='larger colour JPEG'),
])
def test_other_modes_and_sizes_are_classified_as_converted_for_training(
    request, model_fixture, files):
  path, model, _ = request.getfixturevalue(model_fixture)
  geometry = GREY if model_fixture == 'grey' else RGB
  by_files = _serve(model, serving_model.IMAGE_BYTES_SIGNATURE,
                    image_bytes=files)
  converted = np.stack([_as_example_gen_converts(f, geometry) for f in files])
  by_pixels = _serve(model, serving_model.IMAGES_SIGNATURE, images=converted)
  # Pillow and TensorFlow resize a few levels apart on a few pixels: the
  # probabilities stay close, and the classes agree wherever the two best
  # are not near a tie (these images are none of the classes).
  np.testing.assert_allclose(by_files['probabilities'],
                             by_pixels['probabilities'], atol=0.02)
  best, second = np.sort(by_pixels['probabilities'], axis=1).T[::-1][:2]
  clear = best - second > 0.05
  np.testing.assert_array_equal(by_files['classes'][clear],
                                by_pixels['classes'][clear])


def test_a_file_that_is_not_an_image_rejects_the_request(grey):
  _, model, (images, _) = grey
  good = [_file(image, 'PNG') for image in images[:3]]
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'(?s)batch position.*\b2\b.*is not a PNG, JPEG, '
                           r'GIF, BMP file'):
    _serve(model, serving_model.IMAGE_BYTES_SIGNATURE,
           image_bytes=good[:2] + [b'not an image'] + good[2:])
  with pytest.raises(tf.errors.InvalidArgumentError):
    _serve(model, serving_model.IMAGE_BYTES_SIGNATURE,
           image_bytes=[good[0][:40]])  # A PNG cut short.
  # And the model goes on answering.
  out = _serve(model, serving_model.IMAGE_BYTES_SIGNATURE, image_bytes=good)
  assert out['classes'].shape == (3,)


@pytest.mark.parametrize('model_fixture', ['grey', 'rgb'])
def test_tflite_files_answer_as_serve_images(request, model_fixture):
  path, model, (images, labels) = request.getfixturevalue(model_fixture)
  directory = os.path.join(path, serving_model.TFLITE_DIR)
  with open(os.path.join(directory, serving_model.TFLITE_RESULTS_FILE)) as f:
    results = json.load(f)
  assert features.read_class_names(os.path.join(
      directory, features.CLASS_NAMES_FILE)) == features.read_class_names(
          os.path.join(path, 'assets.extra', features.CLASS_NAMES_FILE))
  pixels = images.reshape(len(images), *images.shape[1:3], -1)
  by_model = _serve(model, serving_model.IMAGES_SIGNATURE, images=pixels)
  assert results['eval_records'] == len(labels)
  assert results['saved_model_accuracy'] == pytest.approx(
      (by_model['classes'] == labels).mean())
  for kind, name in serving_model.TFLITE_FILES.items():
    entry = results['models'][kind]
    path_ = os.path.join(directory, name)
    assert entry['file'] == name
    assert entry['bytes'] == os.path.getsize(path_)
    interpreter = tf.lite.Interpreter(model_path=path_)
    [details] = interpreter.get_input_details()
    assert details['dtype'] == np.uint8
    # A signature, as a SavedModel's conversion gives it: callers may run
    # the file through interpreter.get_signature_runner().
    assert interpreter.get_signature_list() == {
        'serving_default': {'inputs': ['images'], 'outputs': ['output_0']}}
    with open(path_, 'rb') as f:
      probabilities = export.tflite_probabilities(f.read(), pixels)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1, rtol=1e-4)
    if kind == 'float32':
      np.testing.assert_allclose(probabilities, by_model['probabilities'],
                                 atol=1e-4)
    assert entry['accuracy'] == pytest.approx(
        (probabilities.argmax(axis=1) == labels).mean())
    # Quantised weights may tip a near tie (one record in 60 is 1.7%):
    # the classes agree wherever the SavedModel's answer is clear.
    best, second = np.sort(by_model['probabilities'], axis=1).T[::-1][:2]
    clear = best - second > 0.05
    np.testing.assert_array_equal(probabilities.argmax(axis=1)[clear],
                                  by_model['classes'][clear])
  quantised, full = (results['models'][k]['bytes']
                     for k in ('dynamic_range', 'float32'))
  assert quantised < full / 2


def test_tflite_batches_give_each_image_its_own_answer(grey):
  # More images than a batch, and not a multiple of it: a last, smaller
  # batch.
  path, model, (images, _) = grey
  pixels = images.reshape(len(images), *images.shape[1:3], -1)
  count = 2 * export.TFLITE_BATCH + 3  # pylint: disable=protected-access
  pixels = np.resize(pixels, (count, *pixels.shape[1:]))
  with open(os.path.join(path, serving_model.TFLITE_DIR,
                         serving_model.TFLITE_FILES['float32']), 'rb') as f:
    probabilities = export.tflite_probabilities(f.read(), pixels)
  assert probabilities.shape == (count, 10)
  np.testing.assert_allclose(
      probabilities,
      _serve(model, serving_model.IMAGES_SIGNATURE,
             images=pixels)['probabilities'],
      atol=1e-4)


# EXIF orientation. A portrait stored as landscape pixels plus a tag; not
# square, so that each orientation gives other pixels after resizing.
_PORTRAIT = _smooth(40, 25, 3, seed=2)
_ORIENTATION = 0x0112


def _exif(orientation, endian='<'):
  exif = Image.Exif()
  exif[_ORIENTATION] = orientation
  exif.endian = endian
  return exif.tobytes()


def _decode(files, geometry):
  return decode.decode_files(tf.constant(files), geometry).numpy()


def _assert_close(served, converted, name):
  assert served.shape == converted.shape, name
  difference = np.abs(served.astype(int) - converted.astype(int))
  assert difference.max() <= 3, name
  assert difference.mean() < 0.5, name


@pytest.mark.parametrize('geometry', [GREY, RGB], ids=str)
@pytest.mark.parametrize('format_', ['JPEG', 'PNG'])
@pytest.mark.parametrize('endian', ['<', '>'], ids=['II', 'MM'])
def test_files_are_turned_upright_as_example_gen_turns_them(
    geometry, format_, endian):
  files = [_file(_PORTRAIT, format_, exif=_exif(orientation, endian),
                 quality=95) for orientation in range(1, 9)]
  assert all((b'MM\x00*' if endian == '>' else b'II*\x00') in f
             for f in files)
  served = _decode(files, geometry)
  converted = [_as_example_gen_converts(f, geometry) for f in files]
  for orientation, (by_model, by_pillow) in enumerate(zip(served, converted),
                                                      start=1):
    _assert_close(by_model, by_pillow, f'orientation {orientation}')
  # Each orientation is another picture: the test can tell them apart.
  assert len({c.tobytes() for c in converted}) == 8


def _tiff(entries, endian='<', extra=b'', head=None):
  """EXIF data: a TIFF header, IFD0 of (tag, type, count, 4 value bytes)
  entries, then `extra` (at offset 8 + 2 + 12 * len(entries) + 4)."""
  body = struct.pack(endian + 'H', len(entries))
  for tag, type_, count, value in entries:
    body += struct.pack(endian + 'HHL', tag, type_, count) + value
  head = head or ((b'II*\x00' if endian == '<' else b'MM\x00*') +
                  struct.pack(endian + 'L', 8))
  return head + body + struct.pack(endian + 'L', 0) + extra


def _short(value, endian='<'):
  return struct.pack(endian + 'H', value) + b'\x00\x00'


def _extra_at(entries):
  return struct.pack('<L', 8 + 2 + 12 * entries + 4)


# EXIF as cameras and tools get it wrong, and how Pillow reads it: the
# orientation if it honours one; None if it raises (ImageExampleGen then
# refuses the file; serve_image_bytes reads it unrotated).
_MALFORMED = {
    'orientation as LONG': (_tiff([(_ORIENTATION, 4, 1,
                                    struct.pack('<L', 6))]), 6),
    'orientation as RATIONAL 12/2': (_tiff(
        [(_ORIENTATION, 5, 1, _extra_at(1))],
        extra=struct.pack('<LL', 12, 2)), 6),
    'orientation as RATIONAL 13/2': (_tiff(
        [(_ORIENTATION, 5, 1, _extra_at(1))],
        extra=struct.pack('<LL', 13, 2)), 1),
    'orientation as BYTE': (_tiff([(_ORIENTATION, 1, 1, b'\x06\0\0\0')]), 1),
    'orientation out of range': (_tiff([(_ORIENTATION, 3, 1, _short(9))]), 1),
    'three values, the first counts': (_tiff(
        [(_ORIENTATION, 3, 3, _extra_at(1))],
        extra=struct.pack('<HHH', 8, 4, 5)), 8),
    'unknown type, then a good entry': (_tiff(
        [(_ORIENTATION, 99, 1, _short(3)), (_ORIENTATION, 3, 1, _short(6))]),
                                        6),
    'two entries, the first counts': (_tiff(
        [(_ORIENTATION, 3, 1, _short(3)), (_ORIENTATION, 3, 1, _short(6))]),
                                      3),
    'a value past the end before it': (_tiff(
        [(0x010E, 2, 20, struct.pack('<L', 999)),
         (_ORIENTATION, 3, 1, _short(6))]), 1),
    'a value past the end after it': (_tiff(
        [(_ORIENTATION, 3, 1, _short(6)),
         (0x010E, 2, 20, struct.pack('<L', 999))]), 6),
    'IFD0 past the end': (_tiff([(_ORIENTATION, 3, 1, _short(6))],
                                head=b'II*\x00' + struct.pack('<L', 5000)),
                          1),
    'cut in an entry': (_tiff([(0x010F, 3, 1, _short(1)),
                               (_ORIENTATION, 3, 1, _short(6))])[:27], 1),
    'not a TIFF header': (b'XX*\x00' + _tiff(
        [(_ORIENTATION, 3, 1, _short(6))])[4:], None),
    'a BigTIFF header': (b'II+\x00' + _tiff(
        [(_ORIENTATION, 3, 1, _short(6))])[4:], None),
    'shorter than a header': (b'II*\x00\x08', None),
}


def _with_exif_data(pixels, format_, data):
  """A file with `data` as its EXIF, written as Pillow does not write it."""
  if format_ == 'JPEG':
    plain = _file(pixels, 'JPEG', quality=95)
    segment = b'Exif\x00\x00' + data
    return (plain[:2] + b'\xff\xe1' + struct.pack('>H', len(segment) + 2) +
            segment + plain[2:])
  plain = _file(pixels, 'PNG')
  first_data = plain.index(b'IDAT') - 4
  return plain[:first_data] + _chunk(b'eXIf', data) + plain[first_data:]


def _chunk(kind, data):
  """A PNG chunk."""
  return (struct.pack('>L', len(data)) + kind + data +
          struct.pack('>L', zlib.crc32(kind + data)))


@pytest.mark.filterwarnings('ignore:.*(EXIF|Tag|tag|Truncated).*:UserWarning')
@pytest.mark.parametrize('format_', ['JPEG', 'PNG'])
@pytest.mark.parametrize('name', list(_MALFORMED))
def test_malformed_exif_is_read_where_pillow_reads_it(format_, name):
  data, orientation = _MALFORMED[name]
  file = _with_exif_data(_PORTRAIT, format_, data)
  served = _decode([file], RGB)[0]
  unrotated = _decode([_file(_PORTRAIT, format_, quality=95)], RGB)[0]
  if orientation is None:
    # Pillow raises: ImageExampleGen refuses the file, but for a JPEG file
    # whose opening caught the error and reads it unrotated.
    _assert_close(served, unrotated, name)
    if format_ == 'PNG':
      with pytest.raises(image_folder.InputDataError, match='cannot decode'):
        _as_example_gen_converts(file, RGB)
      return
  upright = _as_example_gen_converts(file, RGB)
  _assert_close(served, upright, name)
  if orientation not in (None, 1):
    assert np.abs(upright.astype(int) - unrotated).mean() > 10, name


def _pillow_orientation(data):
  """The orientation ImageExampleGen applies; 1 where Pillow raises."""
  try:
    with Image.open(io.BytesIO(data)) as image:
      image.load()
      orientation = image.getexif().get(_ORIENTATION, 1)
  except Exception:  # pylint: disable=broad-except
    return 1  # Whatever Pillow raises (struct.error too): no orientation.
  return orientation if orientation in range(2, 9) else 1


@pytest.mark.filterwarnings('ignore:.*(EXIF|Tag|tag|Truncated).*:UserWarning')
def test_damaged_exif_is_read_as_pillow_reads_it():
  """Seeded random damage to EXIF data, read by the graph and by Pillow."""
  readers = {
      format_: tf.function(
          lambda data, read=read: decode.orientation_of(read(data)))
      for format_, read in (('JPEG', decode.jpeg_metadata),
                            ('PNG', decode.png_metadata))}
  rng = np.random.default_rng(35)
  pixels = np.zeros((4, 3, 3), np.uint8)
  sources = [_exif(6)[6:], _exif(8, '>')[6:], _MALFORMED[
      'orientation as RATIONAL 12/2'][0], _MALFORMED[
          'a value past the end after it'][0]]
  disagree, rotated = [], 0
  for i in range(160):
    data = bytearray(sources[i % len(sources)])
    for _ in range(rng.integers(1, 4)):
      data[rng.integers(len(data))] = rng.integers(256)
    if rng.random() < 0.3:
      data = data[:rng.integers(len(data))]
    for format_, read in readers.items():
      file = _with_exif_data(pixels, format_, bytes(data))
      expected = _pillow_orientation(file)
      got = int(read(tf.constant(file)))
      rotated += expected != 1
      if (got if got in range(2, 9) else 1) != expected:
        disagree.append((format_, bytes(data).hex(), expected, got))
  assert not disagree
  assert rotated > 30  # The damage leaves many orientations to read.


def test_xmp_orientation_counts_where_exif_has_none():
  xmp = b'<x:xmpmeta><rdf:Description tiff:Orientation="8"/></x:xmpmeta>'
  plain = _file(_PORTRAIT, 'JPEG', quality=95)
  segment = b'http://ns.adobe.com/xap/1.0/\x00' + xmp
  jpeg = (plain[:2] + b'\xff\xe1' + struct.pack('>H', len(segment) + 2) +
          segment + plain[2:])
  png = _file(_PORTRAIT, 'PNG', pnginfo=_xmp_text(xmp))
  for file in (jpeg, png):
    assert _pillow_orientation(file) == 8
    _assert_close(_decode([file], RGB)[0],
                  _as_example_gen_converts(file, RGB), 'XMP')


@pytest.mark.parametrize('split', [None, 64], ids=['one', 'many'])
def test_exif_after_the_image_data_counts_as_in_pillow(split):
  """eXIf chunks before and after the image data, in one chunk or in many
  of one size (as libpng writes them): the last one counts."""
  plain = _file(_PORTRAIT, 'PNG')
  start, end = plain.index(b'IDAT') - 4, plain.index(b'IEND') - 4
  image_data = plain[start:end]
  if split:
    compressed = image_data[8:-4]
    image_data = b''.join(_chunk(b'IDAT', compressed[i:i + split])
                          for i in range(0, len(compressed), split))
    assert image_data.count(b'IDAT') > 10
  file = (plain[:start] + _chunk(b'eXIf', _exif(3)[6:]) + image_data +
          _chunk(b'eXIf', _exif(6)[6:]) + plain[end:])
  assert _pillow_orientation(file) == 6
  _assert_close(_decode([file], RGB)[0], _as_example_gen_converts(file, RGB),
                'eXIf after IDAT')


def _xmp_text(xmp):
  info = PngImagePlugin.PngInfo()
  info.add_itxt('XML:com.adobe.xmp', xmp.decode())
  return info


def test_webp_tiff_heif_and_avif_files_are_refused_with_what_to_do():
  files = [_file(_PORTRAIT, 'WEBP'), _file(_PORTRAIT, 'TIFF'),
           _file(_PORTRAIT, 'HEIF'), _file(_PORTRAIT, 'AVIF')]
  for file in files:
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match='convert WebP, TIFF, HEIF and AVIF files to PNG'):
      _decode([file], RGB)


# The files of every format image folders may hold, as the predict command
# sends them to the model. (name, image, Pillow format, save options).
_ROTATED = {'exif': _exif(6)}
_FOLDER_FILES = [
    ('photo.png', _PORTRAIT, 'PNG', _ROTATED),
    ('grey+alpha.png', Image.fromarray(_TRANSPARENT[..., 2:], 'LA'), 'PNG',
     {}),
    ('photo.jpg', _PORTRAIT, 'JPEG', dict(_ROTATED, quality=95)),
    ('grey.jpeg', _smooth(40, 25, 1), 'JPEG', {'quality': 95}),
    ('photo.bmp', _PORTRAIT, 'BMP', {}),
    ('palette.gif', Image.fromarray(_PORTRAIT).convert('P'), 'GIF', {}),
    ('photo.webp', _PORTRAIT, 'WEBP', dict(_ROTATED, lossless=True)),
    ('lossy.webp', _PORTRAIT, 'WEBP', {'quality': 80}),
    ('rgba.webp', Image.fromarray(_TRANSPARENT, 'RGBA'), 'WEBP',
     {'lossless': True}),
    ('photo.tif', _PORTRAIT, 'TIFF', _ROTATED),
    ('16-bit.tiff', _smooth(40, 25, 1)[..., 0].astype(np.uint16) * 257,
     'TIFF', {}),
    ('cmyk.tiff', Image.fromarray(_PORTRAIT).convert('CMYK'), 'TIFF', {}),
    ('rgba.tiff', Image.fromarray(_TRANSPARENT, 'RGBA'), 'TIFF', {}),
    ('photo.heic', _PORTRAIT, 'HEIF', {}),
    ('grey.heif', _smooth(40, 25, 1), 'HEIF', {}),
    # Pillow writes the rotation as AVIF's own (irot), as phones do.
    ('photo.avif', _PORTRAIT, 'AVIF', _ROTATED),
    ('grey.avif', _smooth(40, 25, 1), 'AVIF', {}),
    # A JPEG as a browser on Windows saves it.
    ('saved.jfif', _PORTRAIT, 'JPEG', _ROTATED),
]


def test_the_cases_cover_every_format_of_image_folders():
  assert {os.path.splitext(name)[1] for name, *_ in _FOLDER_FILES} == set(
      image_folder.IMAGE_EXTENSIONS)


@pytest.mark.parametrize('geometry', [GREY, RGB], ids=str)
@pytest.mark.parametrize('name,image,format_,options',
                         [pytest.param(*case, id=case[0])
                          for case in _FOLDER_FILES])
def test_predict_sends_every_folder_format_as_example_gen_converts_it(
    tmp_path, geometry, name, image, format_, options):
  data = _file(image, format_, **options)
  path = tmp_path / name
  path.write_bytes(data)
  item = predict_inputs.read(predict_inputs.Item(str(path)))
  assert item.error is None
  served = _decode([item.data], geometry)[0]
  _assert_close(served, _as_example_gen_converts(data, geometry), name)
