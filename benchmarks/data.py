"""The benchmarks' input: MNIST's IDX files, whole or a subset."""

import glob
import os
from typing import Dict, Tuple

import numpy as np

from components.image_example_gen import idx

# IDX file prefix of each split (ExampleGen's default input config).
SPLIT_PREFIXES = {'train': 'train', 'eval': 't10k'}


def load_split(data_dir: str, prefix: str) -> Tuple[np.ndarray, np.ndarray]:
  """(images, labels) of the `prefix`-* IDX files in `data_dir`."""
  images = labels = None
  for path in sorted(glob.glob(os.path.join(data_dir, f'{prefix}-*'))):
    header = idx.validate(path)
    if len(header.shape) == 1:
      labels = idx.read_all(header)
    else:
      images = idx.read_all(header)
  if images is None or labels is None:
    raise SystemExit(f'error: {data_dir}: no {prefix}-* IDX images and '
                     'labels files (MNIST layout expected)')
  return images, labels


def load(data_dir: str) -> Dict[str, Tuple[np.ndarray, np.ndarray]]:
  return {split: load_split(data_dir, prefix)
          for split, prefix in SPLIT_PREFIXES.items()}


def write_subset(data_dir: str, out_dir: str, fraction: float) -> int:
  """The first `fraction` of each split as gzipped IDX files in `out_dir`;
  returns the number of examples written."""
  os.makedirs(out_dir, exist_ok=True)
  total = 0
  for split, (images, labels) in load(data_dir).items():
    prefix = SPLIT_PREFIXES[split]
    n = max(1, int(len(labels) * fraction))
    idx.write(os.path.join(out_dir, f'{prefix}-images-idx3-ubyte.gz'),
              images[:n])
    idx.write(os.path.join(out_dir, f'{prefix}-labels-idx1-ubyte.gz'),
              labels[:n])
    total += n
  return total


def count(data_dir: str) -> int:
  return sum(len(labels) for _, labels in load(data_dir).values())


def bytes_on_disk(directory: str) -> int:
  return sum(os.path.getsize(os.path.join(root, name))
             for root, _, names in os.walk(directory) for name in names)
