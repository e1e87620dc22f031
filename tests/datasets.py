"""Tiny datasets the tests write themselves, in the real on-disk formats."""

import os
import shutil
import subprocess
import tempfile
from typing import Dict, Sequence

import numpy as np
from PIL import Image
import pytest

from components.image_example_gen import idx
from records import features


def images_and_labels(count: int, geometry=features.MNIST_GEOMETRY,
                      num_classes: int = 10, seed: int = 0,
                      learnable: bool = True):
  """Random images whose mean brightness encodes the label (learnable);
  with learnable=False the labels are shuffled: no model can beat chance."""
  rng = np.random.default_rng(seed)
  labels = (np.arange(count) % num_classes).astype(np.uint8)
  shape = (count, geometry.height, geometry.width)
  if geometry.channels != 1:
    shape += (geometry.channels,)
  # Brightness bands 25 apart, noise 20 wide: the classes do not overlap.
  noise = rng.integers(0, 20, size=shape)
  level = (labels.astype(np.int64) * 25).reshape((count,) + (1,) * (len(shape) - 1))
  images = (noise + level).clip(0, 255).astype(np.uint8)
  # Stretched to the full grey range like MNIST's: one black, one white pixel.
  if count:
    flat = images.reshape(count, -1)
    flat[:, 0], flat[:, -1] = 0, 255
  if not learnable:
    labels = rng.permutation(labels)
  return images, labels


def write_idx_dataset(directory: str, counts: Dict[str, int] = None,
                      geometry=features.MNIST_GEOMETRY, compress: bool = True,
                      num_classes: int = 10,
                      learnable: bool = True) -> Dict[str, np.ndarray]:
  """Writes MNIST-layout files (train-*, t10k-*) and returns the images."""
  counts = counts or {'train': 40, 't10k': 20}
  os.makedirs(directory, exist_ok=True)
  suffix = '.gz' if compress else ''
  ndim = 3 if geometry.channels == 1 else 4
  written = {}
  for seed, (prefix, count) in enumerate(counts.items()):
    images, labels = images_and_labels(count, geometry, num_classes, seed,
                                       learnable)
    idx.write(os.path.join(directory, f'{prefix}-images-idx{ndim}-ubyte{suffix}'),
              images, compress)
    idx.write(os.path.join(directory, f'{prefix}-labels-idx1-ubyte{suffix}'),
              labels, compress)
    written[prefix] = (images, labels)
  return written


def write_image_folder(directory: str,
                       classes: Sequence[str] = ('cat', 'dog', 'fish'),
                       per_class: Dict[str, int] = None,
                       size=(32, 24), mode: str = 'RGB') -> None:
  """<directory>/<split>/<class>/<n>.png|.jpg, alternating PNG and JPEG."""
  per_class = per_class or {'train': 4, 'eval': 2}
  rng = np.random.default_rng(1)
  for split, count in per_class.items():
    for c, name in enumerate(classes):
      class_dir = os.path.join(directory, split, name)
      os.makedirs(class_dir, exist_ok=True)
      for i in range(count):
        shape = (size[1], size[0]) + ((3,) if mode == 'RGB' else ())
        pixels = (rng.integers(0, 30, size=shape) + 60 * c).astype(np.uint8)
        ext = 'png' if i % 2 == 0 else 'jpg'
        Image.fromarray(pixels, mode).save(os.path.join(class_dir, f'{i}.{ext}'))


def heic_file(pixels: np.ndarray) -> bytes:
  """A lossless HEIC file of uint8 [H, W, 3] pixels, as libheif's heif-enc
  writes it (Debian's libheif-examples, which .ci/run installs)."""
  if not shutil.which('heif-enc'):  # The test is skipped, saying why.
    pytest.skip('heif-enc is missing: apt-get install libheif-examples')
  with tempfile.TemporaryDirectory() as tmp:
    source, heic = os.path.join(tmp, 'in.png'), os.path.join(tmp, 'out.heic')
    Image.fromarray(pixels).save(source)
    subprocess.run(['heif-enc', '-L', '-p', 'chroma=444',
                    '--matrix_coefficients=0', '-o', heic, source],
                   check=True, capture_output=True)
    with open(heic, 'rb') as f:
      return f.read()
