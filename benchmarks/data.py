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
    n = max(1, int(len(labels) * fraction))
    for kind, array in (('images-idx3', images), ('labels-idx1', labels)):
      idx.write(os.path.join(out_dir, f'{SPLIT_PREFIXES[split]}-{kind}-ubyte.gz'),
                array[:n])
    total += n
  return total


def count(data_dir: str) -> int:
  return sum(len(labels) for _, labels in load(data_dir).values())


def bytes_on_disk(pattern: str) -> int:
  """Bytes of the files `pattern` matches, and of those under the
  directories it matches."""
  paths = glob.glob(pattern)
  paths += [os.path.join(folder, name) for top in paths
            for folder, _, names in os.walk(top) for name in names]
  return sum(os.path.getsize(p) for p in paths if os.path.isfile(p))
