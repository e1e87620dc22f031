"""The `serve_image_bytes` signature (image files in, class names out) and
the TensorFlow Lite files beside the SavedModel, on tiny models trained by
the Trainer's run_fn."""

import io
import json
import os

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from components.image_example_gen import image_folder
from modules import image_files
from modules import tflite_export
from modules import trainer
from records import features
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
  array = np.asarray(pixels, np.uint8)
  image = Image.fromarray(array[..., 0] if array.ndim == 3 and
                          array.shape[2] == 1 else array)
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
  served = image_files.decode_files(tf.constant([data]), geometry).numpy()[0]
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
  by_files = _serve(model, trainer.IMAGE_BYTES_SIGNATURE, image_bytes=files)
  by_pixels = _serve(model, trainer.IMAGES_SIGNATURE, images=images)
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
  by_files = _serve(model, trainer.IMAGE_BYTES_SIGNATURE, image_bytes=files)
  converted = np.stack([_as_example_gen_converts(f, geometry) for f in files])
  by_pixels = _serve(model, trainer.IMAGES_SIGNATURE, images=converted)
  np.testing.assert_array_equal(by_files['classes'], by_pixels['classes'])


def test_a_file_that_is_not_an_image_rejects_the_request(grey):
  _, model, (images, _) = grey
  good = [_file(image, 'PNG') for image in images[:3]]
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'(?s)batch position.*\b2\b.*is not a PNG, JPEG, '
                           r'GIF, BMP file'):
    _serve(model, trainer.IMAGE_BYTES_SIGNATURE,
           image_bytes=good[:2] + [b'not an image'] + good[2:])
  with pytest.raises(tf.errors.InvalidArgumentError):
    _serve(model, trainer.IMAGE_BYTES_SIGNATURE,
           image_bytes=[good[0][:40]])  # A PNG cut short.
  # And the model goes on answering.
  out = _serve(model, trainer.IMAGE_BYTES_SIGNATURE, image_bytes=good)
  assert out['classes'].shape == (3,)


@pytest.mark.parametrize('model_fixture', ['grey', 'rgb'])
def test_tflite_files_answer_as_serve_images(request, model_fixture):
  path, model, (images, labels) = request.getfixturevalue(model_fixture)
  directory = os.path.join(path, tflite_export.TFLITE_DIR)
  with open(os.path.join(directory, tflite_export.RESULTS_FILE)) as f:
    results = json.load(f)
  assert features.read_class_names(os.path.join(
      directory, features.CLASS_NAMES_FILE)) == features.read_class_names(
          os.path.join(path, 'assets.extra', features.CLASS_NAMES_FILE))
  pixels = images.reshape(len(images), *images.shape[1:3], -1)
  by_model = _serve(model, trainer.IMAGES_SIGNATURE, images=pixels)
  assert results['eval_records'] == len(labels)
  assert results['saved_model_accuracy'] == pytest.approx(
      (by_model['classes'] == labels).mean())
  for kind, name in tflite_export.FILES.items():
    entry = results['models'][kind]
    path_ = os.path.join(directory, name)
    assert entry['file'] == name
    assert entry['bytes'] == os.path.getsize(path_)
    interpreter = tf.lite.Interpreter(model_path=path_)
    [details] = interpreter.get_input_details()
    assert details['dtype'] == np.uint8
    with open(path_, 'rb') as f:
      probabilities = tflite_export.tflite_probabilities(f.read(), pixels)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1, rtol=1e-4)
    if kind == 'float32':
      np.testing.assert_allclose(probabilities, by_model['probabilities'],
                                 atol=1e-4)
    assert entry['accuracy'] == pytest.approx(
        (probabilities.argmax(axis=1) == labels).mean())
    assert abs(entry['accuracy'] - results['saved_model_accuracy']) <= 0.005
  quantised, full = (results['models'][k]['bytes']
                     for k in ('dynamic_range', 'float32'))
  assert quantised < full / 2
