"""Reading artifact files, on local disk or any TensorFlow filesystem.

Local paths are read with the standard library, so that a reader which only
needs a small file stays free of TensorFlow's start-up time; other URIs
(gs://, s3://, hdfs://) go through tf.io.gfile.
"""

import collections
import glob as glob_lib
import os
from typing import Iterator, List

FileInfo = collections.namedtuple('FileInfo', 'path size mtime')


def _gfile(path: str):
  if '://' not in path:
    return None
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile


def exists(path: str) -> bool:
  """Whether `path` exists."""
  gfile = _gfile(path)
  return gfile.exists(path) if gfile else os.path.exists(path)


def read_bytes(path: str) -> bytes:
  """The whole of the file `path`."""
  gfile = _gfile(path)
  with gfile.GFile(path, 'rb') if gfile else open(path, 'rb') as f:
    return f.read()


def open_text(path: str):
  """`path` opened for reading as UTF-8 text, as the csv module wants it."""
  gfile = _gfile(path)
  if gfile:
    return gfile.GFile(path)
  return open(path, newline='', encoding='utf-8')


def glob(pattern: str) -> List[str]:
  """The paths matching `pattern`, sorted."""
  gfile = _gfile(pattern)
  return sorted(gfile.glob(pattern) if gfile else glob_lib.glob(pattern))


def iglob(pattern: str) -> Iterator[str]:
  """The paths matching `pattern`, unsorted; locally one at a time (a
  folder of a million files is not held in memory)."""
  gfile = _gfile(pattern)
  return iter(gfile.glob(pattern)) if gfile else glob_lib.iglob(pattern)


def stat(path: str) -> FileInfo:
  """Size in bytes, modification time in seconds since the epoch."""
  gfile = _gfile(path)
  if gfile:
    info = gfile.stat(path)
    return FileInfo(path, info.length, info.mtime_nsec / 1e9)
  info = os.stat(path)
  return FileInfo(path, info.st_size, info.st_mtime)
