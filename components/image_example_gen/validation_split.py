"""The validation split, carved from the training data by a stable hash.

A record goes to the validation split by sha256 of a salted key, modulo
100: the image's path under its split's folder, or an IDX image's pixels.
"""

import hashlib
from typing import Dict, List, Sequence

import numpy as np

from records import features

_SALT = b'validation/'


def chosen(key: bytes, percent: int) -> bool:
  """Whether the record of `key` goes to the validation split."""
  digest = hashlib.sha256(_SALT + key).digest()
  return int.from_bytes(digest[:8], 'big') % 100 < percent


def mask(keys: Sequence[bytes], percent: int) -> np.ndarray:
  """`chosen` of each key, as a bool array."""
  return np.fromiter((chosen(key, percent) for key in keys), bool, len(keys))


def carve(files: Dict[str, List[str]], keys: Dict[str, bytes],
          percent: int) -> Dict[str, List[str]]:
  """{split: files} with validation taken out of train by `keys`' hashes.

  Args:
    files: {split: files}, with a train split.
    keys: {path: the bytes hashed} of each train file.
    percent: the share of train, from 0 to 100, to take out.
  """
  train, validation = [], []
  for path in files[features.TRAIN_SPLIT]:
    (validation if chosen(keys[path], percent) else train).append(path)
  return {features.TRAIN_SPLIT: train, features.VALIDATION_SPLIT: validation,
          **{name: f for name, f in files.items()
             if name != features.TRAIN_SPLIT}}
