"""The served model as its readers see it: which folders of a serving
directory are versions, its signatures and outputs by name, its
training_plan.json, and where it came from. Light to import (the predict
tool reads it). Why and how: docs/serving.md.
"""

import json
import os
import re
from typing import Any, Callable, Dict, Iterable, Optional

# A version folder of a serving directory holds the SavedModel; TF Serving
# loads only folders named by digits.
SAVED_MODEL_FILE = 'saved_model.pb'
_VERSION = re.compile('[0-9]+')
# The signatures and their outputs (modules/training/export.py exports them).
SERVING_SIGNATURE = 'serving_default'
IMAGES_SIGNATURE = 'serve_images'
IMAGE_BYTES_SIGNATURE = 'serve_image_bytes'
PROBABILITIES = 'probabilities'
CLASSES = 'classes'
CLASS_NAMES = 'class_names'
# The files serve_image_bytes takes (what tf.io.decode_image reads), by
# their first bytes.
IMAGE_FILE_MAGIC = {b'\x89PNG': 'PNG', b'\xff\xd8\xff': 'JPEG', b'GIF8': 'GIF',
                    b'BM': 'BMP'}
# The serving model's assets.extra: class names and how it was trained.
EXTRA_DIR = 'assets.extra'
# In assets.extra: what was trained, and why (modules/trainer.py).
TRAINING_PLAN_FILE = 'training_plan.json'
# The TensorFlow Lite files beside the SavedModel (modules/training/export.py).
TFLITE_DIR = 'tflite'
TFLITE_FILES = {'float32': 'model_float32.tflite',
                'dynamic_range': 'model_dynamic_range.tflite'}
TFLITE_RESULTS_FILE = 'tflite.json'
# A PushedModel's custom properties: TFX's Pusher's, and the push-once
# Pusher's mark of a model that was already served.
PUSHED_PROPERTY = 'pushed'
PUSHED_DESTINATION_PROPERTY = 'pushed_destination'
PUSHED_VERSION_PROPERTY = 'pushed_version'
ALREADY_SERVED_PROPERTY = 'already_served'
# ServedModel's Model artifact property: the served version's path, '' when
# nothing was served.
SERVED_FROM_PROPERTY = 'served_from'
# The served model a Trainer started from ('' from scratch): an entry of
# its training_plan.json, and a property of its Model artifact.
WARM_START_FROM = 'warm_start_from'


def is_version(name: str) -> bool:
  """Whether `name` is a version folder's name: digits only."""
  return bool(_VERSION.fullmatch(name))


def newest(names: Iterable[str],
           holds_saved_model: Callable[[str], bool]) -> Optional[str]:
  """Returns the highest numbered name whose folder holds a SavedModel.

  Names not all digits (a push still copying, or left by a killed one) and
  folders without saved_model.pb (copied last) are not versions.

  Args:
    names: a serving directory's entries (a trailing '/' is ignored).
    holds_saved_model: whether the entry of that name holds saved_model.pb.

  Returns:
    The version, None if there is none.
  """
  versions = sorted((name for name in (n.rstrip('/') for n in names)
                     if is_version(name)), key=int, reverse=True)
  return next((v for v in versions if holds_saved_model(v)), None)


def read_training_plan(serving_model_dir: str) -> Dict[str, Any]:
  """Returns the training plan a serving model was exported with.

  Args:
    serving_model_dir: the SavedModel's folder, on any TensorFlow filesystem.

  Raises:
    FileNotFoundError: the model has no training plan.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  path = os.path.join(serving_model_dir, EXTRA_DIR, TRAINING_PLAN_FILE)
  if not tf.io.gfile.exists(path):
    raise FileNotFoundError(f'{path}: no training plan')
  with tf.io.gfile.GFile(path) as f:
    return json.load(f)
