"""The images to predict: paths from files, folders and globs, as a
generator (nothing is listed or loaded ahead), read in batches.

A folder is searched recursively for IMAGE_EXTENSIONS (any case), hidden
files and folders left out; a file named on the command line is tried
whatever its name; a glob is expanded lazily (`**` spans folders).
"""

import dataclasses
import glob
import os
from typing import Iterable, Iterator, List, Optional

from modules import signatures

# The names of the files serve_image_bytes decodes.
IMAGE_EXTENSIONS = ('.png', '.jpg', '.jpeg', '.gif', '.bmp')
_MAGIC = signatures.IMAGE_FILE_MAGIC


@dataclasses.dataclass
class Item:
  """One input: its bytes, or why it could not be read."""
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
  """Each argument's image paths, in order; an argument that names nothing
  is an Item with an error."""
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
  """Why `data` is not an image file the model decodes, or None. Cheap: the
  first bytes only; a damaged file of a known format fails in the model."""
  if not data:
    return 'empty file (0 bytes)'
  if not any(data.startswith(magic) for magic in _MAGIC):
    return f'not an image file ({", ".join(_MAGIC.values())})'
  return None


def read(item: Item) -> Item:
  if item.error is None:
    try:
      with open(item.path, 'rb') as f:
        item.data = f.read()
    except OSError as e:
      item.error = f'cannot read: {e.strerror or e}'
    else:
      item.error = check(item.data)
  return item


def batches(items: Iterable[Item], size: int) -> Iterator[List[Item]]:
  """Items read, `size` at a time: one batch's bytes in memory at once."""
  batch = []
  for item in items:
    batch.append(read(item))
    if len(batch) == size:
      yield batch
      batch = []
  if batch:
    yield batch
