"""Reading the files behind artifacts, on local disk or any TF filesystem.

Local paths are read with the standard library, so that subcommands which
only need a small proto stay free of TensorFlow's start-up time; other URIs
(gs://, s3://, hdfs://) go through tf.io.gfile.
"""

import dataclasses
import glob as glob_lib
import os
from typing import List


def _remote(path: str) -> bool:
  return '://' in path


def _gfile():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile


@dataclasses.dataclass(frozen=True)
class FileInfo:
  path: str
  size: int
  mtime: float  # Seconds since the epoch.


def exists(path: str) -> bool:
  return _gfile().exists(path) if _remote(path) else os.path.exists(path)


def read_bytes(path: str) -> bytes:
  if _remote(path):
    with _gfile().GFile(path, 'rb') as f:
      return f.read()
  with open(path, 'rb') as f:
    return f.read()


def glob(pattern: str) -> List[str]:
  if _remote(pattern):
    return sorted(_gfile().glob(pattern))
  return sorted(glob_lib.glob(pattern))


def stat(path: str) -> FileInfo:
  if _remote(path):
    info = _gfile().stat(path)
    return FileInfo(path, info.length, info.mtime_nsec / 1e9)
  info = os.stat(path)
  return FileInfo(path, info.st_size, info.st_mtime)
