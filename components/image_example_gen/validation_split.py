"""The validation split, carved from the training data by a stable hash.

Early stopping, the epoch kept and the Tuner's scores are choices made on
data: made on the eval split, the Evaluator's accuracy there would be
optimistic. ImageExampleGen therefore writes a third split, VALIDATION,
which makes them, and the eval split makes none.

Unless the data gives one (a validation/ folder beside train/ and eval/),
VALIDATION takes `percent` of the training records, chosen by a hash of
each record's key: the image's path relative to its split's folder
(<class>/<image>) for image folders, the image's pixels for IDX files (so
that exact copies of an image land in the same split). The hash is
sha256 of the key after a fixed prefix (independent of the eval split's
hash of the same path, folder_layout.partition), modulo 100: the same
record lands in the same split on every run, runner and machine.
"""

import hashlib
from typing import Dict, List, Sequence

import numpy as np

SPLIT = 'validation'
TRAIN = 'train'
_SALT = b'validation/'


def chosen(key: bytes, percent: int) -> bool:
  """Whether the record of `key` goes to VALIDATION."""
  digest = hashlib.sha256(_SALT + key).digest()
  return int.from_bytes(digest[:8], 'big') % 100 < percent


def mask(keys: Sequence[bytes], percent: int) -> np.ndarray:
  """`chosen` of each key, as a bool array."""
  return np.fromiter((chosen(key, percent) for key in keys), bool, len(keys))


def carve(files: Dict[str, List[str]], keys: Dict[str, bytes],
          percent: int) -> Dict[str, List[str]]:
  """{split: files} with VALIDATION taken out of TRAIN's files by their
  `keys`, the splits in order train, validation, then the others."""
  train, validation = [], []
  for path in files[TRAIN]:
    (validation if chosen(keys[path], percent) else train).append(path)
  return {TRAIN: train, SPLIT: validation,
          **{name: f for name, f in files.items() if name != TRAIN}}
