"""MNIST made N times larger, every copy under small random deformations.

The command's help is _HELP. Why and how:
docs/input-data.md#datasets-to-try.
"""

import argparse
import collections
import os
import shutil
import struct
import sys
from typing import Iterator, Optional, Sequence, Tuple

from isal import igzip_threaded
import numpy as np
from PIL import Image
import tensorflow as tf
import tqdm

from components.image_example_gen import idx
from data import mnist

# The command's --help text.
_HELP = """MNIST made N times larger, in the spirit of infiMNIST / MNIST8M (Loosli,
Canu & Bottou, 2007): every copy of the training set is the original
images under small random deformations.

  python -m data.scaled_mnist --copies 100 --out DIR [--source MNIST_DIR] [--seed S]

writes DIR/train-images-idx3-ubyte.gz and DIR/train-labels-idx1-ubyte.gz
(N x 60,000 images; copy 0 is the training set unchanged, copies 1..N-1
deformed) and DIR/t10k-*.gz, the official test set unchanged, so that
`local_runner.py --data-dir DIR` reads it as MNIST and evaluates on the
number papers quote. `--format images` writes the same images as PNG files
in DIR/train/<label>/ and DIR/eval/<label>/ instead (for small N: one file
per image).

Each deformed image is one affine map of its original, about the image
centre: a rotation of at most MAX_ROTATION_DEGREES, a scale within
1 +- MAX_SCALE_CHANGE (per axis, so also a slight stretch), and a shift of
at most MAX_SHIFT_PIXELS per axis, resampled bilinearly, out-of-image
pixels black. No elastic distortion: per image it costs a smoothed random
field, several times the affine map's time, and the goal here is volume
with realistic variety, not a better classifier.

Deterministic: the parameters of copy c, block b come from a generator
seeded with (seed, c, b). Streaming: blocks of BLOCK_IMAGES images are
deformed (one TensorFlow op per block, on every core) and written in order
through one gzip stream (ISA-L, level 1, in a thread of its own), so memory
holds the originals and a block or two.
"""

# Where data/mnist.py's downloads go: the same directory as
# pipeline/constants.py's MNIST_DIR (data/ may not import pipeline/; a test
# checks that they agree).
DEFAULT_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              'downloads', 'mnist')

MAX_ROTATION_DEGREES = 10.0
MAX_SCALE_CHANGE = 0.1  # Scale factors within [0.9, 1.1], per axis.
MAX_SHIFT_PIXELS = 2.0
# Images per unit of work: memory holds a block or two at a time.
BLOCK_IMAGES = 10_000
GZIP_LEVEL = 1

TRAIN, TEST = 'train', 't10k'
_IMAGES = '{}-images-idx3-ubyte.gz'
_LABELS = '{}-labels-idx1-ubyte.gz'

# One block's deformation parameters, arrays of one value per image.
Deformation = collections.namedtuple(
    'Deformation', 'rotation scale_y scale_x shift_y shift_x')


def deformation(seed: int, copy: int, block: int, count: int) -> Deformation:
  """The parameters of `count` images of `block` of `copy` (radians,
  factors, pixels): uniform within the bounds above.

  Args:
    seed: the dataset's seed.
    copy: the copy of the training set, from 1 (copy 0 is not deformed).
    block: the block's number within the copy, of BLOCK_IMAGES images.
    count: images in the block.
  """
  rng = np.random.default_rng([seed, copy, block])
  rotation = np.deg2rad(MAX_ROTATION_DEGREES)
  return Deformation(
      rotation=rng.uniform(-rotation, rotation, count),
      scale_y=rng.uniform(1 - MAX_SCALE_CHANGE, 1 + MAX_SCALE_CHANGE, count),
      scale_x=rng.uniform(1 - MAX_SCALE_CHANGE, 1 + MAX_SCALE_CHANGE, count),
      shift_y=rng.uniform(-MAX_SHIFT_PIXELS, MAX_SHIFT_PIXELS, count),
      shift_x=rng.uniform(-MAX_SHIFT_PIXELS, MAX_SHIFT_PIXELS, count))


def deform(images: np.ndarray, params: Deformation) -> np.ndarray:
  """Each image (uint8, count x height x width) under its affine map.

  The output pixel at p (from the centre) shows the input at
  S^-1 R^-1 (p - shift): the image rotated by `rotation`, scaled by the
  scales, then shifted; bilinear, rounded to the nearest level. One
  TensorFlow op for the whole block (ImageProjectiveTransformV3: a
  transform per image, on every core), faster than Pillow's affine
  transform per image or scipy.ndimage.map_coordinates on the block.
  """
  _, height, width = images.shape
  cy, cx = (height - 1) / 2, (width - 1) / 2  # Pixel centres are integers.
  cos, sin = np.cos(params.rotation), np.sin(params.rotation)
  # Output (x, y) -> input (a x + b y + c, d x + e y + f).
  a, b = cos / params.scale_x, sin / params.scale_x
  d, e = -sin / params.scale_y, cos / params.scale_y
  ox, oy = cx + params.shift_x, cy + params.shift_y
  c = cx - a * ox - b * oy
  f = cy - d * ox - e * oy
  zero = np.zeros_like(a)
  transforms = np.stack([a, b, c, d, e, f, zero, zero], axis=1)
  out = tf.raw_ops.ImageProjectiveTransformV3(
      images=tf.cast(images[..., None], tf.float32),
      transforms=tf.constant(transforms, tf.float32),
      output_shape=[height, width], fill_value=0.0,
      interpolation='BILINEAR', fill_mode='CONSTANT')
  return np.rint(out.numpy()[..., 0]).clip(0, 255).astype(np.uint8)


def _blocks(images: np.ndarray, copies: int, seed: int) -> Iterator[np.ndarray]:
  """The training images of every copy, a block at a time, in order."""
  for copy in range(copies):
    for start in range(0, len(images), BLOCK_IMAGES):
      block = images[start:start + BLOCK_IMAGES]
      yield block if copy == 0 else deform(
          block, deformation(seed, copy, start // BLOCK_IMAGES, len(block)))


def _idx_header(dtype_code: int, shape: Sequence[int]) -> bytes:
  return (struct.pack('>HBB', 0, dtype_code, len(shape)) +
          struct.pack(f'>{len(shape)}I', *shape))


def _write_atomically(path: str, chunks: Iterator[bytes]) -> None:
  """Gzips `chunks` into `path` (in a thread of its own, beside the
  deformations), renamed into place once complete."""
  partial = path + '.part'
  with igzip_threaded.open(partial, 'wb', compresslevel=GZIP_LEVEL,
                           threads=1) as out:
    for chunk in chunks:
      out.write(chunk)
  os.replace(partial, path)


def _read_split(source: str, prefix: str) -> Tuple[np.ndarray, np.ndarray]:
  return tuple(
      idx.read_all(idx.validate(os.path.join(source, name.format(prefix))))
      for name in (_IMAGES, _LABELS))


def _source_files(source: str) -> str:
  if mnist.missing_files(source):
    print(f'MNIST is missing from {source}; downloading it.')
    mnist.download(source)
  return source


def write_idx(out: str, copies: int, source: str = DEFAULT_SOURCE,
              seed: int = 0, progress: bool = True) -> int:
  """Writes the scaled dataset as gzipped IDX files; returns the number of
  training images.

  Args:
    out: the dataset folder, made if missing.
    copies: copies of MNIST's training set, 1 or more; all but the first
      deformed. The test set is copied as it is.
    source: the folder of MNIST's four .gz files, downloaded if missing.
    seed: the same seed writes the same bytes.
    progress: show a progress bar.

  Raises:
    ValueError: `copies` is less than 1.
  """
  if copies < 1:
    raise ValueError(f'copies must be at least 1, got {copies}')
  images, labels = _read_split(_source_files(source), TRAIN)
  os.makedirs(out, exist_ok=True)
  total = copies * len(images)
  bar = tqdm.tqdm(total=total, unit=' images', unit_scale=True, desc='train',
                  disable=not progress)

  def image_bytes() -> Iterator[bytes]:
    yield _idx_header(0x08, (total,) + images.shape[1:])
    for block in _blocks(images, copies, seed):
      bar.update(len(block))
      yield block.tobytes()

  _write_atomically(os.path.join(out, _IMAGES.format(TRAIN)), image_bytes())
  bar.close()
  _write_atomically(
      os.path.join(out, _LABELS.format(TRAIN)),
      iter([_idx_header(0x08, (total,))] + [labels.tobytes()] * copies))
  for name in (_IMAGES.format(TEST), _LABELS.format(TEST)):
    shutil.copyfile(os.path.join(source, name), os.path.join(out, name))
  return total


def write_images(out: str, copies: int, source: str = DEFAULT_SOURCE,
                 seed: int = 0, eval_count: Optional[int] = None) -> int:
  """The same training images as PNG files in out/train/<label>/<n>.png,
  and the test set's first `eval_count` (all by default) in
  out/eval/<label>/; returns the number of training images.

  Args:
    out: the dataset folder.
    copies: copies of MNIST's training set; all but the first deformed.
    source: the folder of MNIST's four .gz files, downloaded if missing.
    seed: the same seed writes the same images.
    eval_count: test images written at most; None: all.
  """
  source = _source_files(source)
  train_images, train_labels = _read_split(source, TRAIN)
  number = 0
  for block in _blocks(train_images, copies, seed):
    for image in block:
      _save_png(out, 'train', train_labels[number % len(train_labels)],
                number, image)
      number += 1
  test_images, test_labels = _read_split(source, TEST)
  for n, (image, label) in enumerate(zip(test_images[:eval_count],
                                         test_labels[:eval_count])):
    _save_png(out, 'eval', label, n, image)
  return number


def _save_png(out: str, split: str, label: int, number: int,
              image: np.ndarray) -> None:
  folder = os.path.join(out, split, str(int(label)))
  os.makedirs(folder, exist_ok=True)
  Image.fromarray(image).save(os.path.join(folder, f'{number:08d}.png'))


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(
      description=_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--copies', type=int, required=True,
                      help='Copies of the training set (N x 60,000 images).')
  parser.add_argument('--out', required=True, help='Dataset directory.')
  parser.add_argument('--source', default=DEFAULT_SOURCE,
                      help='Directory of the four MNIST .gz files, downloaded '
                      '(checksums verified) when missing (default: '
                      '%(default)s).')
  parser.add_argument('--seed', type=int, default=0,
                      help='Same seed, same bytes (default: %(default)s).')
  parser.add_argument('--format', choices=('idx', 'images'), default='idx',
                      help='Gzipped IDX files, or PNG files in class folders '
                      '(default: %(default)s).')
  args = parser.parse_args(argv)
  if args.copies < 1:
    parser.error('--copies must be at least 1')
  if args.format == 'idx':
    total = write_idx(args.out, args.copies, args.source, args.seed)
  else:
    total = write_images(args.out, args.copies, args.source, args.seed)
  print(f'{total:,} training images ({args.copies} x MNIST) and the MNIST '
        f'test set in {args.out}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
