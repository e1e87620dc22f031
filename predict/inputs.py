"""The images to predict, read in batches.

Paths stream from files, folders and globs; WebP, TIFF, HEIF and AVIF files
are converted as ImageExampleGen converts them. Why and how: docs/serving.md.
"""

import dataclasses
import glob
import io
import os
from typing import Iterable, Iterator, List, Optional

from PIL import Image, UnidentifiedImageError

from records import image_conversion
from records import serving_model

IMAGE_EXTENSIONS = image_conversion.IMAGE_EXTENSIONS
# HEIF files' major brands (ISO/IEC 23008-12): HEVC images and sequences.
_HEIF_BRANDS = (b'heic', b'heix', b'heim', b'heis', b'hevc', b'hevx', b'mif1',
                b'msf1')
# AVIF files' major brands (AV1 Image File Format): images and sequences.
_AVIF_BRANDS = (b'avif', b'avis')
# Formats converted here, by their first bytes.
_CONVERTED = {'WebP': lambda data: (data.startswith(b'RIFF') and
                                    data[8:12] == b'WEBP'),
              'TIFF': lambda data: data.startswith((b'II*\x00', b'MM\x00*',
                                                    b'II+\x00', b'MM\x00+')),
              'HEIF': lambda data: (data[4:8] == b'ftyp' and
                                    data[8:12] in _HEIF_BRANDS),
              'AVIF': lambda data: (data[4:8] == b'ftyp' and
                                    data[8:12] in _AVIF_BRANDS)}
_FORMATS = ', '.join((*serving_model.IMAGE_FILE_MAGIC.values(), *_CONVERTED))
# Modes converted to grey; others to RGB. The model makes grey of RGB by
# Pillow's formula, so either way it sees the pixels Pillow would make (but
# for a YCbCr TIFF file: within a level).
_GREY_MODES = ('1', 'L', 'LA', 'La', 'I', 'I;16', 'I;16B', 'I;16L', 'I;16N',
               'F')


@dataclasses.dataclass
class Item:
  """One input path, with its bytes or why it could not be read."""
  path: str
  data: Optional[bytes] = None
  error: Optional[str] = None


def _hidden(name: str) -> bool:
  return name.startswith('.')


def _walk(folder: str) -> Iterator[str]:
  for root, dirs, files in os.walk(folder):
    dirs[:] = sorted(d for d in dirs if not _hidden(d))
    for name in sorted(files):
      if not _hidden(name) and name.lower().endswith(IMAGE_EXTENSIONS):
        yield os.path.join(root, name)


def paths(arguments: Iterable[str]) -> Iterator[Item]:
  """Yields an Item for each image path of the arguments, in order.

  An argument that names nothing gives an Item with an error.

  Args:
    arguments: image files, folders (walked, hidden entries skipped, image
      extensions only) or glob patterns (** recurses), as on the command
      line.
  """
  for argument in arguments:
    if os.path.isdir(argument):
      yield from (Item(path) for path in _walk(argument))
    elif os.path.isfile(argument):
      yield Item(argument)
    elif glob.has_magic(argument):
      matched = False
      for path in glob.iglob(argument, recursive=True):
        if os.path.isdir(path):
          continue
        matched = True
        yield Item(path)
      if not matched:
        yield Item(argument, error='the pattern matches no file')
    else:
      yield Item(argument, error='no such file or folder')


def check(data: bytes) -> Optional[str]:
  """Returns why `data` is not an image file the tool predicts, or None.

  Only the first bytes are checked. A damaged file of a known format fails
  later.
  """
  if not data:
    return 'empty file (0 bytes)'
  if not (any(map(data.startswith, serving_model.IMAGE_FILE_MAGIC)) or
          any(test(data) for test in _CONVERTED.values())):
    return f'not an image file ({_FORMATS})'
  return None


def converted(data: bytes) -> bytes:
  """Returns `data` as a file the model decodes.

  That is `data` itself, or for a WebP, TIFF, HEIF or AVIF file, a PNG file
  converted as ImageExampleGen converts images.

  Args:
    data: the bytes of an image file that check() accepts.

  Raises:
    OSError, SyntaxError, ValueError, Image.DecompressionBombError: Pillow
      cannot decode it.
  """
  if not any(test(data) for test in _CONVERTED.values()):
    return data
  with Image.open(io.BytesIO(data)) as image:
    image = image_conversion.convert(
        image, 'L' if image.mode in _GREY_MODES else 'RGB')
  buffer = io.BytesIO()
  image.save(buffer, 'PNG', compress_level=1)
  return buffer.getvalue()


def read(item: Item) -> Item:
  """Reads `item`'s file into its data, or sets its error; returns `item`."""
  if item.error is None:
    try:
      with open(item.path, 'rb') as f:
        item.data = f.read()
    except OSError as e:
      item.error = f'cannot read: {e.strerror or e}'
    else:
      item.error = check(item.data)
    if item.error is None:
      try:
        item.data = converted(item.data)
      except UnidentifiedImageError:  # Its message names a buffer.
        item.error = 'cannot decode it: damaged beyond recognition'
      except (OSError, SyntaxError, ValueError,
              Image.DecompressionBombError) as e:
        item.error = f'cannot decode it: {e}'
  return item


def batches(items: Iterable[Item], size: int) -> Iterator[List[Item]]:
  """Yields the items read, `size` at a time, so memory holds one batch."""
  batch = []
  for item in items:
    batch.append(read(item))
    if len(batch) == size:
      yield batch
      batch = []
  if batch:
    yield batch
