"""Finding and loading the served model to predict with."""

import os
from typing import List

from pipeline import constants
from records import features
from records import serving_model

# Where a pipeline run pushes its models: OUT/<this>/<version>/.
SERVING_MODEL_DIR = constants.SERVING_MODEL_DIR_NAME

EXPECTED = ('a SavedModel folder (holding saved_model.pb), a folder of '
            'pushed versions (<version>/saved_model.pb), or a pipeline '
            f'output directory (OUT/{SERVING_MODEL_DIR}/<version>/)')


class ModelNotFound(Exception):
  """No served model where the user pointed, or one without image input."""


def _newest_version(directory: str) -> str:
  version = serving_model.newest(
      os.listdir(directory), lambda v: os.path.isfile(
          os.path.join(directory, v, serving_model.SAVED_MODEL_FILE)))
  return os.path.join(directory, version) if version else ''


def locate(path: str) -> str:
  """Returns the SavedModel folder `path` means.

  That is `path` itself, its newest pushed version, or the newest version
  its pipeline output pushed.

  Args:
    path: the --model folder: a SavedModel, a folder of pushed versions, or
      a pipeline output directory.

  Raises:
    ModelNotFound: `path` holds no served model.
  """
  if not os.path.isdir(path):
    raise ModelNotFound(f'{path}: no such folder; expected {EXPECTED}')
  if os.path.isfile(os.path.join(path, serving_model.SAVED_MODEL_FILE)):
    return path
  for directory in (path, os.path.join(path, SERVING_MODEL_DIR)):
    if os.path.isdir(directory):
      newest = _newest_version(directory)
      if newest:
        return newest
  raise ModelNotFound(f'{path}: no served model in it; expected {EXPECTED}')


class Model:
  """A served model's `serve_image_bytes` signature and class names."""

  def __init__(self, path: str):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    self.path = path
    loaded = tf.saved_model.load(path)
    if serving_model.IMAGE_BYTES_SIGNATURE not in loaded.signatures:
      raise ModelNotFound(
          f'{path}: the model has no {serving_model.IMAGE_BYTES_SIGNATURE} '
          f'signature (it has {", ".join(sorted(loaded.signatures))}): it '
          'was exported before image files could be served; train it again')
    self._loaded = loaded  # Keeps the signature's variables alive.
    self._serve = loaded.signatures[serving_model.IMAGE_BYTES_SIGNATURE]
    self._tf = tf
    self.class_names: List[str] = features.read_class_names(
        os.path.join(path, serving_model.EXTRA_DIR, features.CLASS_NAMES_FILE))

  def probabilities(self, files: List[bytes]):
    """Returns the class probabilities of image files, float32 [files, classes].

    Args:
      files: the image files' bytes, one batch.

    Raises:
      tf.errors.InvalidArgumentError: a file cannot be decoded.
    """
    out = self._serve(image_bytes=self._tf.constant(files, self._tf.string))
    return out[serving_model.PROBABILITIES].numpy()
