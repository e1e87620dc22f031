"""Reading folders of labelled images: <split>/<class_name>/<image>.

Labels are indices into the sorted class names. Hidden files and the files
operating systems leave beside images (`is_os_file`) are left out and listed;
any other file that is not an image stops the run.
"""

import io
import os
import re
import struct
from typing import Iterable, List, Optional, Sequence, Tuple
import warnings

import numpy as np
from PIL import Image, UnidentifiedImageError
import tensorflow as tf

from components.image_example_gen.errors import InputDataError
from records import features
from records import image_conversion

IMAGE_EXTENSIONS = image_conversion.IMAGE_EXTENSIONS
# Files Windows writes into folders of pictures (thumbnail caches, folder
# settings), compared case-insensitively. Hidden dot-files need no list.
OS_FILE_NAMES = ('thumbs.db', 'ehthumbs.db', 'desktop.ini')
_PIL_MODES = {1: 'L', 3: 'RGB'}
TRANSPARENT_BACKGROUND = image_conversion.TRANSPARENT_BACKGROUND

# Pillow warns of an image over Image.MAX_IMAGE_PIXELS: as an error, open_image
# refuses it naming the file, never an unnamed warning line.
warnings.filterwarnings('error', category=Image.DecompressionBombWarning)
# The limit of `max_pixels` None: Pillow's own default.
PILLOW_MAX_PIXELS = Image.MAX_IMAGE_PIXELS


def _is_os_name(path: str) -> bool:
  name = os.path.basename(path.rstrip('/'))
  return name.startswith('.') or name.lower() in OS_FILE_NAMES


def is_os_file(path: str) -> bool:
  """Whether `path` is a hidden or OS metadata file, or in a hidden folder."""
  return _is_os_name(path) or _is_os_name(os.path.dirname(path.rstrip('/')))


def class_dirs(split_pattern: str) -> List[str]:
  """The class folders of one split (<split>/*/*), hidden folders apart."""
  parent_pattern = os.path.dirname(split_pattern)
  return sorted(d for d in tf.io.gfile.glob(parent_pattern)
                if tf.io.gfile.isdir(d) and not _is_os_name(d))


def list_split(split_pattern: str) -> Tuple[List[str], List[str]]:
  """(image candidates, OS files) of a split's class folders, each sorted."""
  files, os_files = [], []
  for path in sorted(tf.io.gfile.glob(split_pattern)):
    (os_files if is_os_file(path) else files).append(path)
  return files, os_files


def discover_class_names(split_patterns: Iterable[str]) -> List[str]:
  """Sorted union of the class folder names over all splits."""
  names = set()
  for pattern in split_patterns:
    names.update(os.path.basename(d.rstrip('/')) for d in class_dirs(pattern))
  return sorted(names)


def check_split(split_pattern: str, class_names: Sequence[str]) -> List[str]:
  """A split's sorted image candidates; fails on a missing split, an empty or
  unknown class folder."""
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
    candidates = [e for e in entries if not _is_os_name(e)]
    if not candidates:
      raise InputDataError(d, f'class folder {name!r} holds no images')
  return list_split(split_pattern)[0]


def label_of(path: str, class_names: Sequence[str]) -> int:
  """The label of an image: the index of its class folder's name."""
  return class_names.index(os.path.basename(os.path.dirname(path)))


def check_file(path: str, size: int) -> None:
  """Refuses a file of `size` bytes that cannot be an image by name or size."""
  if not path.lower().endswith(IMAGE_EXTENSIONS):
    raise InputDataError(
        path, f'not an image file (expected one of {", ".join(IMAGE_EXTENSIONS)}, '
        'in any case)')
  if not size:
    raise InputDataError(path, 'empty file (0 bytes)')


def _too_many_pixels(pixels: str, max_pixels: Optional[int]) -> str:
  return (f'the image claims {pixels} pixels, more than the limit of '
          f'{max_pixels:,}: refused before decoding (a decompression bomb, '
          f'or an image that big on purpose: raise max_image_pixels)')


def open_image(path: str, data, max_pixels: Optional[int]) -> Image.Image:
  """Opens `data` (bytes or a file object) with Pillow, reading the header only.

  Raises:
    InputDataError: over `max_pixels` pixels (None: Pillow's limit), or not an
      image Pillow reads.
  """
  # Process-wide, but one run sets one value in all its workers.
  Image.MAX_IMAGE_PIXELS = max_pixels or PILLOW_MAX_PIXELS
  stream = io.BytesIO(data) if isinstance(data, bytes) else data
  try:
    image = Image.open(stream)
  except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
    claimed = re.search(r'\((\d+) pixels\)', str(e))
    raise InputDataError(path, _too_many_pixels(
        f'{int(claimed.group(1)):,}' if claimed else 'too many',
        Image.MAX_IMAGE_PIXELS)) from e
  except UnidentifiedImageError as e:
    # PIL's own message names only its in-memory buffer.
    raise InputDataError(path, 'cannot decode image: not an image format '
                         'Pillow reads, or damaged beyond recognition') from e
  except (OSError, SyntaxError, ValueError) as e:
    raise InputDataError(path, f'cannot decode image: {e}') from e
  width, height = image.size
  if width * height > Image.MAX_IMAGE_PIXELS:
    image.close()
    raise InputDataError(path, _too_many_pixels(
        f'{width}x{height} = {width * height:,}', Image.MAX_IMAGE_PIXELS))
  return image


def decode_image(path: str, data: bytes,
                 geometry: features.ImageGeometry,
                 max_pixels: Optional[int] = None) -> bytes:
  """Decodes an image file to raw uint8 pixels in `geometry`.

  An image claiming more than `max_pixels` pixels is refused before it is
  decoded; records/image_conversion.py converts the rest.
  """
  check_file(path, len(data))
  with open_image(path, data, max_pixels) as image:
    try:
      image = image_conversion.convert(image, _PIL_MODES[geometry.channels])
      if image.size != (geometry.width, geometry.height):
        image = image.resize((geometry.width, geometry.height),
                             Image.Resampling.BILINEAR, reducing_gap=3.0)
      pixels = np.asarray(image, dtype=np.uint8)
    except (Image.DecompressionBombError,  # A later frame's size.
            Image.DecompressionBombWarning, OSError, SyntaxError, ValueError,
            struct.error) as e:  # struct.error: EXIF shorter than its header.
      raise InputDataError(path, f'cannot decode image: {e}') from e
  return pixels.tobytes()
