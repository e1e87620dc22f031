"""The served model's interface by name: its signatures and their outputs.

modules/training/export.py exports them. This module is light to import, for
clients such as the predict tool.
"""

import json
import os
from typing import Any, Dict

SERVING_SIGNATURE = 'serving_default'
IMAGES_SIGNATURE = 'serve_images'
IMAGE_BYTES_SIGNATURE = 'serve_image_bytes'
PROBABILITIES = 'probabilities'
CLASSES = 'classes'
CLASS_NAMES = 'class_names'
# The serving model's assets.extra: class names and how it was trained.
EXTRA_DIR = 'assets.extra'
# In assets.extra: what was trained, and why (modules/trainer.py).
TRAINING_PLAN_FILE = 'training_plan.json'
# The TensorFlow Lite files beside the SavedModel (modules/training/export.py).
TFLITE_DIR = 'tflite'
TFLITE_FILES = {'float32': 'model_float32.tflite',
                'dynamic_range': 'model_dynamic_range.tflite'}
TFLITE_RESULTS_FILE = 'tflite.json'
# The files serve_image_bytes takes (what tf.io.decode_image reads), by
# their first bytes.
IMAGE_FILE_MAGIC = {b'\x89PNG': 'PNG', b'\xff\xd8\xff': 'JPEG', b'GIF8': 'GIF',
                    b'BM': 'BMP'}


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
