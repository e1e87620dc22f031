"""Reading folders of labelled images: <split>/<class_name>/<image>.png|jpg|jpeg.

Labels are indices into the sorted class names, so the same folder names give
the same labels in every split and every run.
"""

import io
import os
from typing import Iterable, List, Sequence

import numpy as np
from PIL import Image, UnidentifiedImageError
import tensorflow as tf

from components.image_example_gen.errors import InputDataError
from records import features

IMAGE_EXTENSIONS = ('.png', '.jpg', '.jpeg')
_PIL_MODES = {1: 'L', 3: 'RGB'}


def class_dirs(split_pattern: str) -> List[str]:
  """The class folders of one split, where `split_pattern` is <split>/*/*."""
  parent_pattern = os.path.dirname(split_pattern)
  return sorted(d for d in tf.io.gfile.glob(parent_pattern)
                if tf.io.gfile.isdir(d))


def discover_class_names(split_patterns: Iterable[str]) -> List[str]:
  """Sorted union of the class folder names over all splits."""
  names = set()
  for pattern in split_patterns:
    names.update(os.path.basename(d.rstrip('/')) for d in class_dirs(pattern))
  return sorted(names)


def check_split(split_pattern: str, class_names: Sequence[str]) -> int:
  """Fails early on a missing split, an empty or unknown class folder.

  Returns:
    The number of files in the split's class folders (for progress).
  """
  split_dir = os.path.dirname(os.path.dirname(split_pattern))
  dirs = class_dirs(split_pattern)
  if not dirs and tf.io.gfile.isdir(split_dir):
    try:
      tf.io.gfile.listdir(split_dir)
    except tf.errors.OpError as e:
      raise InputDataError(split_dir, f'cannot read the split folder: '
                           f'{e.message}') from e
  if not dirs:
    raise InputDataError(
        split_dir, 'no class folders found (expected '
        f'{split_dir}/<class_name>/<image>{"|".join(IMAGE_EXTENSIONS)})')
  files = 0
  for d in dirs:
    name = os.path.basename(d.rstrip('/'))
    if name not in class_names:
      raise InputDataError(
          d, f'class folder {name!r} is not one of the configured class '
          f'names {list(class_names)}')
    try:
      entries = tf.io.gfile.listdir(d)
    except tf.errors.OpError as e:
      # Globbing skips folders it cannot read without a word: say it here.
      raise InputDataError(d, f'cannot read class folder {name!r}: '
                           f'{e.message}') from e
    if not entries:
      raise InputDataError(d, f'class folder {name!r} holds no images')
    files += len(entries)
  return files


def label_of(path: str, class_names: Sequence[str]) -> int:
  return class_names.index(os.path.basename(os.path.dirname(path)))


def decode_image(path: str, data: bytes,
                 geometry: features.ImageGeometry) -> bytes:
  """Decodes an image file to raw uint8 pixels in `geometry`."""
  if not path.lower().endswith(IMAGE_EXTENSIONS):
    raise InputDataError(
        path, f'not an image file (expected one of {", ".join(IMAGE_EXTENSIONS)})')
  if not data:
    raise InputDataError(path, 'empty file (0 bytes)')
  try:
    with Image.open(io.BytesIO(data)) as image:
      image = image.convert(_PIL_MODES[geometry.channels])
      if image.size != (geometry.width, geometry.height):
        image = image.resize((geometry.width, geometry.height),
                             Image.Resampling.BILINEAR, reducing_gap=3.0)
      pixels = np.asarray(image, dtype=np.uint8)
  except UnidentifiedImageError as e:
    # PIL's own message names only its in-memory buffer.
    raise InputDataError(path, 'cannot decode image: not a PNG or JPEG image, '
                         'or damaged beyond recognition') from e
  except (OSError, SyntaxError, ValueError) as e:
    raise InputDataError(path, f'cannot decode image: {e}') from e
  return pixels.tobytes()
