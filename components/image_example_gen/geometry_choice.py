"""The geometry image folders are converted to, chosen from a sample of headers.

Why and how: docs/input-data.md#the-geometry-when-no-flag-sets-it.
"""

import collections
import os
from typing import Dict, List, Optional, Sequence, Tuple

from PIL import ExifTags
import tensorflow as tf

from components.image_example_gen import image_folder
from components.image_example_gen.errors import InputDataError
from records import features

SAMPLE_SIZE = 300
# Photos' usual input size for a CNN (ImageNet models'): larger inputs cost
# memory and time that a first model of a photo folder rarely needs.
MAX_SIDE = 224
CHOICE_PROPERTY = features.GEOMETRY_CHOICE_PROPERTY
GIVEN = features.GEOMETRY_GIVEN
_GREY_MODES = ('1', 'L', 'LA', 'La', 'I', 'I;16', 'I;16B', 'I;16L', 'F')
# EXIF orientations that turn the image a quarter (width and height swap).
_TRANSPOSED = (5, 6, 7, 8)


def sample(files: Dict[str, List[str]], size: int = SAMPLE_SIZE) -> List[str]:
  """At most `size` of the files, spread evenly over every class and split."""
  by_class = collections.defaultdict(list)
  for split_files in files.values():
    for path in split_files:
      by_class[os.path.dirname(path)].append(path)
  per_class = max(1, size // max(1, len(by_class)))
  chosen = []
  for folder in sorted(by_class):
    paths = sorted(by_class[folder])
    step = max(1, len(paths) / per_class)
    chosen += [paths[int(i * step)] for i in range(min(per_class, len(paths)))]
  return chosen[:size]


def _header(path: str, max_pixels: Optional[int]) -> Tuple[Tuple[int, int],
                                                          bool]:
  """((width, height) upright, in colour?) from the file's header."""
  # Read whole: GFile answers Pillow's reads past the end with TF's errors.
  try:
    image_folder.check_file(path, tf.io.gfile.stat(path).length)
    with tf.io.gfile.GFile(path, 'rb') as f:
      data = f.read()
  except tf.errors.OpError as e:
    raise image_folder.unreadable(path, e) from e
  with image_folder.open_image(path, data, max_pixels) as image:
    width, height = image.size
    try:
      orientation = image.getexif().get(ExifTags.Base.Orientation)
    except (OSError, SyntaxError, ValueError):
      orientation = None
    if orientation in _TRANSPOSED:
      width, height = height, width
    colour = image.mode not in _GREY_MODES and not (
        image.mode == 'P' and _grey_palette(image))
    return (width, height), colour


def _grey_palette(image) -> bool:
  colours = image.getpalette() or []
  triples = zip(colours[0::3], colours[1::3], colours[2::3])
  return all(r == g == b for r, g, b in triples)


def _size(sizes: Sequence[Tuple[int, int]]) -> Tuple[int, int]:
  if len(set(sizes)) == 1:
    width, height = sizes[0]
    scale = min(1.0, MAX_SIDE / max(width, height))
    return max(1, round(height * scale)), max(1, round(width * scale))
  shorter = sorted(min(size) for size in sizes)
  side = min(MAX_SIDE, shorter[len(shorter) // 2])
  return side, side


def choose(files: Dict[str, List[str]], given: features.ImageGeometry,
           infer_size: bool, infer_channels: bool,
           max_pixels: Optional[int], skip_bad: bool
           ) -> Tuple[features.ImageGeometry, str]:
  """Chooses the geometry of `files` ({split: images}) from their headers.

  Args:
    files: {split: image files}; a sample of them is read (`sample`).
    given: the configured geometry, whatever is not inferred.
    infer_size: whether the height and width come from the headers: the
      one size all share, else the median shorter side, square, both at
      most MAX_SIDE.
    infer_channels: whether the channels do: 3 if any image is in colour.
    max_pixels: the most pixels an image may have; None: Pillow's limit.
    skip_bad: whether unreadable images are left out of the sample.

  Returns:
    (the geometry, GIVEN or how it was chosen).

  Raises:
    InputDataError: an image of the sample cannot be read, unless
      `skip_bad`.
  """
  if not (infer_size or infer_channels):
    return given, GIVEN
  sizes, colours = [], []
  for path in sample(files):
    try:
      size, colour = _header(path, max_pixels)
    except InputDataError:
      if not skip_bad:
        raise
      continue
    sizes.append(size)
    colours.append(colour)
  if not sizes:
    return given, GIVEN  # Nothing readable: the conversion says so.
  height, width = _size(sizes) if infer_size else (given.height, given.width)
  channels = (3 if any(colours) else 1) if infer_channels else given.channels
  geometry = features.ImageGeometry(height, width, channels)
  inferred = [what for what, inferred in (('size', infer_size),
                                          ('channels', infer_channels))
              if inferred]
  distinct = len(set(sizes))
  return geometry, (
      f'{" and ".join(inferred)} chosen from the headers of {len(sizes)} '
      f'images ({distinct} distinct size{"s" if distinct > 1 else ""}, '
      f'{"colour" if any(colours) else "all grey"})')
