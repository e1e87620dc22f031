"""Folders of labelled images, <split>/<class_name>/<image>, to Examples.

Why and how: docs/input-data.md#image-folders---input-format-images.
"""

import concurrent.futures
import io
import json
import os
import re
import struct
import unicodedata
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple
import warnings

from absl import logging
import numpy as np
from PIL import ExifTags, Image, UnidentifiedImageError
import tensorflow as tf
from tfx.types import standard_artifacts

from components.image_example_gen import idx
from components.image_example_gen import console_lines
from components.image_example_gen import tfrecord_sink
from components.image_example_gen.errors import InputDataError
from records import features
from records import image_conversion

IMAGE_EXTENSIONS = image_conversion.IMAGE_EXTENSIONS
# Files Windows writes into folders of pictures (thumbnail caches, folder
# settings), and the folder of AppleDouble files that macOS puts in the zips
# it makes, compared case-insensitively. Hidden dot-files need no list.
OS_FILE_NAMES = ('thumbs.db', 'ehthumbs.db', 'desktop.ini', '__macosx')
# Metadata that photo apps write beside each image: Google Takeout's JSON,
# Lightroom's and darktable's XMP, the edits of an iPhone photo (AAE).
SIDECAR_EXTENSIONS = ('.json', '.xmp', '.aae')
# The video half of a Live Photo (an iPhone's .mov) or of a motion photo
# (Google Takeout's .mp4): left out where an image of the same name is
# beside it, a sidecar too.
COMPANION_VIDEO_EXTENSIONS = ('.mov', '.mp4')
_PIL_MODES = {1: 'L', 3: 'RGB'}
# Pillow resizes in two steps: a whole-factor reduction while the image
# stays this many times the target, then bilinear. A JPEG is decoded already
# reduced to that size where its format allows (1/2, 1/4 or 1/8).
_REDUCING_GAP = 3.0
# EXIF orientations that turn an image a quarter: its stored width is its
# upright height.
_QUARTER_TURNS = (5, 6, 7, 8)

# Pillow warns of an image over Image.MAX_IMAGE_PIXELS: as an error, open_image
# refuses it naming the file, never an unnamed warning line.
warnings.filterwarnings('error', category=Image.DecompressionBombWarning)
# The limit of `max_pixels` None: Pillow's own default.
PILLOW_MAX_PIXELS = Image.MAX_IMAGE_PIXELS
# Seeds the order the images are dealt into shards in: fixed, so that the
# same files give the same shards in every run.
_ORDER_SEED = 0
# Where the workers list skipped images, inside the Examples artifact's folder.
_SKIPPED_DIR = '.skipped'
# Files listed in ML Metadata; the file next to the splits has all.
_MAX_LISTED = 100


def _is_os_name(path: str) -> bool:
  name = os.path.basename(path.rstrip('/'))
  return (name.startswith('.') or name.lower() in OS_FILE_NAMES or
          name.lower().endswith(SIDECAR_EXTENSIONS))


def is_os_file(path: str) -> bool:
  """Whether `path` is a hidden, OS or sidecar metadata file, or in a hidden
  or OS folder (sort_out leaves out companion videos too)."""
  return _is_os_name(path) or _is_os_name(os.path.dirname(path.rstrip('/')))


def class_name(folder: str) -> str:
  """The class a class folder (or a class name given) names: its name in
  Unicode NFC, so that the forms macOS and Linux may write an accented name
  in (NFD, NFC) name one class."""
  return unicodedata.normalize('NFC', os.path.basename(folder.rstrip('/')))


def class_dirs(split_pattern: str) -> List[str]:
  """The class folders of one split (<split>/*/*), hidden folders apart."""
  parent_pattern = os.path.dirname(split_pattern)
  return sorted(d for d in tf.io.gfile.glob(parent_pattern)
                if tf.io.gfile.isdir(d) and not _is_os_name(d))


def list_split(split_pattern: str) -> Tuple[List[str], List[str]]:
  """(image candidates, files left out) of a split's class folders, each
  sorted."""
  return sort_out(sorted(tf.io.gfile.glob(split_pattern)))


def sort_out(paths: Sequence[str]) -> Tuple[List[str], List[str]]:
  """(image candidates, files left out) of `paths`: hidden, OS and sidecar
  files, and videos beside an image of their name (companion videos)."""
  stems = {os.path.splitext(path)[0].lower() for path in paths
           if path.lower().endswith(IMAGE_EXTENSIONS)}
  files, left_out = [], []
  for path in paths:
    companion = (path.lower().endswith(COMPANION_VIDEO_EXTENSIONS) and
                 os.path.splitext(path)[0].lower() in stems)
    (left_out if companion or is_os_file(path) else files).append(path)
  return files, left_out


def discover_class_names(split_patterns: Iterable[str]) -> List[str]:
  """Sorted union of the class folder names over all splits."""
  names = set()
  for pattern in split_patterns:
    names.update(class_name(d) for d in class_dirs(pattern))
  return sorted(names)


def check_split(split_pattern: str, class_names: Sequence[str]) -> List[str]:
  """A split's sorted image candidates; fails on a missing split, an empty or
  unknown class folder.

  Args:
    split_pattern: the split's files, '<split folder>/*/*'.
    class_names: the classes a class folder may be named.

  Raises:
    InputDataError: no class folder, or one that is unknown, empty or
      unreadable.
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
  for d in dirs:
    name = class_name(d)
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
  return class_names.index(class_name(os.path.dirname(path)))


def unreadable(path: str, error: Exception) -> InputDataError:
  """The error of a file that could not be read, naming a folder as such."""
  if tf.io.gfile.isdir(path):
    return InputDataError(
        path, 'a folder inside a class folder: images are read from the class '
        'folder itself, not from folders within it; move its images up into '
        'the class folder, or remove it')
  return InputDataError(path, f'cannot read file: {error}')


def check_file(path: str, size: int) -> None:
  """Refuses a file of `size` bytes that cannot be an image by name or size.

  Raises:
    InputDataError: a folder, no IMAGE_EXTENSIONS ending, or 0 bytes.
  """
  if not path.lower().endswith(IMAGE_EXTENSIONS):
    if tf.io.gfile.isdir(path):
      raise unreadable(path, IsADirectoryError(path))
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

  Args:
    path: the file's path, for messages.
    data: its bytes, or a file object.
    max_pixels: the most pixels (width x height) accepted; None: Pillow's
      limit.

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

  Args:
    path: the file's path, for its extension and messages.
    data: the file's bytes.
    geometry: the size and channels the image is resized and converted to.
    max_pixels: the most pixels accepted; None: Pillow's limit.

  Raises:
    InputDataError: the file is not an image, too large, or cannot be
      decoded.
  """
  check_file(path, len(data))
  with open_image(path, data, max_pixels) as image:
    try:
      _decode_reduced(image, geometry)
      image = image_conversion.convert(image, _PIL_MODES[geometry.channels])
      if image.size != (geometry.width, geometry.height):
        image = image.resize((geometry.width, geometry.height),
                             Image.Resampling.BILINEAR,
                             reducing_gap=_REDUCING_GAP)
      pixels = np.asarray(image, dtype=np.uint8)
    except (Image.DecompressionBombError,  # A later frame's size.
            Image.DecompressionBombWarning, OSError, SyntaxError, ValueError,
            struct.error) as e:  # struct.error: EXIF shorter than its header.
      raise InputDataError(path, f'cannot decode image: {e}') from e
  return pixels.tobytes()


def _decode_reduced(image: Image.Image,
                    geometry: features.ImageGeometry) -> None:
  """Has a JPEG decode at the smallest of 1/2, 1/4 or 1/8 of its size that
  stays _REDUCING_GAP times `geometry` (Pillow's draft, as its thumbnail
  uses it): decoding is most of a large photo's cost, and the reduction
  would come next anyway."""
  wanted = _REDUCING_GAP * 2  # A half-size decode, at least.
  if (image.format != 'JPEG' or
      min(image.size) < wanted * min(geometry.width, geometry.height)):
    return
  width, height = geometry.width, geometry.height
  if image.getexif().get(ExifTags.Base.Orientation) in _QUARTER_TURNS:
    width, height = height, width  # The draft is of the stored pixels.
  image.draft(None, (int(width * _REDUCING_GAP), int(height * _REDUCING_GAP)))


def shard_paths(files: Sequence[str], num_shards: int) -> List[List[str]]:
  """Deals `files` into `num_shards` even groups in a fixed-seed order.

  The shards mix the classes, so the Trainer's interleaved reads see every
  class, and the same files give the same shards, byte for byte.
  """
  paths = sorted(files)
  order = np.random.default_rng(_ORDER_SEED).permutation(len(paths))
  return [[paths[i] for i in group]
          for group in np.array_split(order, num_shards)]


def records_per_write(geometry: features.ImageGeometry) -> int:
  """The most records a worker decodes and writes at once."""
  return max(1, min(tfrecord_sink.RECORDS_PER_WRITE,
                    idx.CHUNK_BYTES // geometry.num_bytes))


class Decoder:
  """tfrecord_sink.WriteShards' source of image files, a shard's work its
  paths; with `skip_bad`, an unreadable image is listed, not raised."""

  def __init__(self, label: str, count: int, class_names: Sequence[str],
               geometry: features.ImageGeometry, skip_bad: bool,
               encoding: str, input_base: str, max_pixels: Optional[int]):
    """Makes the source of one output split.

    Args:
      label: the split's name in progress lines.
      count: the split's images, for progress lines.
      class_names: label i's class folder name.
      geometry: what every image is converted to.
      skip_bad: list an unreadable image in place of raising.
      encoding: the records' image encoding (features.IMAGE_ENCODINGS).
      input_base: sources are paths relative to it.
      max_pixels: images claiming more are refused before decoding.
    """
    self._class_names = list(class_names)
    self._geometry = geometry
    self._skip_bad = skip_bad
    self._encoding = encoding
    self._input_base = input_base
    self._max_pixels = max_pixels
    self._per_write = records_per_write(geometry)
    self._progress = console_lines.SplitProgress(label, count)

  def _example(self, path: str) -> bytes:
    try:
      with tf.io.gfile.GFile(path, 'rb') as f:
        data = f.read()
    except (IOError, tf.errors.OpError) as e:
      raise unreadable(path, e) from e
    return features.make_example(
        decode_image(path, data, self._geometry, self._max_pixels),
        self._geometry, label_of(path, self._class_names), self._encoding,
        source=os.path.relpath(path, self._input_base).replace(os.sep, '/'))

  def _example_or_error(self, path: str):
    try:
      return self._example(path)
    except InputDataError as e:
      return e

  def batches(self, paths: Sequence[str], skipped: List[dict]
              ) -> Iterator[Tuple[List[bytes]]]:
    """Yields the Examples of `paths`, records_per_write at a time, in order.

    The files of a batch are read and decoded on a thread a core: Pillow
    and TensorFlow's file reads free the GIL.

    Args:
      paths: a shard's image files.
      skipped: {'path', 'reason'} of each unreadable image is appended to
        it, with skip_bad.

    Yields:
      (Examples,) of each batch that holds any.

    Raises:
      InputDataError: an image cannot be read, without skip_bad.
    """
    with concurrent.futures.ThreadPoolExecutor(
        len(os.sched_getaffinity(0))) as pool:
      for start in range(0, len(paths), self._per_write):
        batch = []
        for found in pool.map(self._example_or_error,
                              paths[start:start + self._per_write]):
          self._progress.add(1)
          if isinstance(found, InputDataError):
            if not self._skip_bad:
              pool.shutdown(cancel_futures=True)  # The batch's rest: unread.
              raise found
            skipped.append({'path': found.path, 'reason': found.problem})
          else:
            batch.append(found)
        if batch:
          yield (batch,)

  def close(self) -> None:
    """Nothing to close."""


def skipped_files(examples_uri: str, split_names) -> Dict[str, str]:
  """{split name: the file Beam writes its skipped images to}."""
  return {name: os.path.join(examples_uri, _SKIPPED_DIR, f'{name}.jsonl')
          for name in split_names}


def record_skipped(examples: standard_artifacts.Examples,
                   split_files: Dict[str, List[str]],
                   skipped: Dict[str, str]) -> None:
  """Gathers what the workers skipped (`skipped_files`) onto `examples`.

  The list goes to features.SKIPPED_IMAGES_FILE and custom properties; the
  workers' files are deleted.

  Args:
    examples: the Examples written.
    split_files: {split name: its image files}.
    skipped: {split name: its workers' file}, as `skipped_files` gives.

  Raises:
    InputDataError: every image of a split was skipped.
  """
  listed = []
  for name, images in split_files.items():
    lines = []
    if tf.io.gfile.exists(skipped[name]):
      with tf.io.gfile.GFile(skipped[name]) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    if lines and len(lines) == len(images):
      # Nothing left to learn from: an empty split, whatever the option says.
      raise InputDataError(
          os.path.commonpath(images),
          f'all {len(lines)} images of split {name!r} are unreadable '
          f'(first: {lines[0]["path"]}: {lines[0]["reason"]})')
    listed += [{'split': name, **line} for line in lines]
  tf.io.gfile.rmtree(os.path.join(examples.uri, _SKIPPED_DIR))
  listed.sort(key=lambda s: (s['split'], s['path']))
  if listed:
    logging.warning('Skipped %d unreadable images, e.g. %s: %s', len(listed),
                    listed[0]['path'], listed[0]['reason'])
  with tf.io.gfile.GFile(
      os.path.join(examples.uri, features.SKIPPED_IMAGES_FILE), 'w') as f:
    json.dump(listed, f, indent=1)
  examples.set_int_custom_property(features.SKIPPED_IMAGES_PROPERTY,
                                   len(listed))
  examples.set_string_custom_property(
      features.SKIPPED_IMAGES_LIST_PROPERTY, json.dumps(listed[:_MAX_LISTED]))


def record_os_files(examples: standard_artifacts.Examples,
                    split_patterns: Iterable[Tuple[str, str]]) -> None:
  """Lists the files left out of each (split name, pattern) on `examples`:
  list_split's hidden, OS and sidecar files."""
  left_out = [{'split': name, 'path': path}
              for name, pattern in sorted(split_patterns)
              for path in list_split(pattern)[1]]
  examples.set_int_custom_property(features.OS_FILES_PROPERTY, len(left_out))
  examples.set_string_custom_property(features.OS_FILES_LIST_PROPERTY,
                                      json.dumps(left_out[:_MAX_LISTED]))
  if left_out:
    logging.info('Left out %d hidden, OS or sidecar files, e.g. %s',
                 len(left_out), left_out[0]['path'])
    with tf.io.gfile.GFile(
        os.path.join(examples.uri, features.OS_FILES_FILE), 'w') as f:
      json.dump(left_out, f, indent=1)
