"""Signatures of shards of Examples, written to files in a work folder.

A Beam DoFn reads a group of shards a batch at a time, so memory holds one
batch. Why and how: docs/data-checks.md#what-it-costs.
"""

import concurrent.futures
import io
import itertools
import os
from typing import Dict, List, Tuple

import numpy as np
import tensorflow as tf
import threadpoolctl

from components.data_checks import alignment
from components.data_checks import image_signatures
from records import decode
from records import features
from records import shards

BATCH_SIZE = 4096
SMALL_SUFFIX = '.npz'
# The per-image arrays written batch by batch, each to a file of its own
# (the suffix), for the executor to join into one memmap each.
THUMBNAILS, FRAMED, DETAILS = '.thumbnails', '.framed', '.details'
# The small arrays' entry of the sources: read on its own, for the few
# records the results name.
SOURCE = 'source'
_ORDER_KEY = np.dtype((np.float16, (image_signatures.BANDS,)))
_DTYPES = {'digest': np.uint64, 'phash': np.uint64, 'order_key': _ORDER_KEY,
           'framed_phash': np.uint64, 'framed_order_key': _ORDER_KEY,
           'framed': bool,
           'scores': image_signatures.SCORE_DTYPE, 'label': np.int32,
           SOURCE: np.bytes_}
# tf.data reads ahead while numpy works on the batch before.
_PREFETCH = 2
# Shards are read in groups of at least this many bytes: setting up a
# tf.data reader costs about as much as reading 3,000 MNIST records.
GROUP_BYTES = 64 * 2**20


def per_image_arrays(geometry: features.ImageGeometry
                     ) -> Dict[str, Tuple[type, int]]:
  """The per-image arrays' (dtype, values a row), by file suffix."""
  thumbnail = image_signatures.THUMB * image_signatures.THUMB
  height, width = alignment.detail_shape(geometry.height, geometry.width)
  return {THUMBNAILS: (np.int8, thumbnail), FRAMED: (np.int8, thumbnail),
          DETAILS: (np.uint8, height * width * geometry.channels)}


def work_path(work_dir: str, shard_number: int, suffix: str) -> str:
  """Returns a shard's file of the small arrays (SMALL_SUFFIX) or of one of
  the per-image arrays (THUMBNAILS, FRAMED, DETAILS).

  Args:
    work_dir: the folder of the shards' work files.
    shard_number: the shard's number over all splits (groups).
    suffix: SMALL_SUFFIX, THUMBNAILS, FRAMED or DETAILS.
  """
  return os.path.join(work_dir, f'{shard_number:06d}{suffix}')


def read_small(work_dir: str, shard_number: int, names=None
               ) -> Dict[str, np.ndarray]:
  """Reads the small arrays `write_shard` wrote for a shard, but the sources.

  Args:
    work_dir: the folder of the shards' work files.
    shard_number: the shard's number over all splits (groups).
    names: the arrays to read; None reads all of them.

  Returns:
    {name: array}, one entry per record of the shard in each.
  """
  with tf.io.gfile.GFile(work_path(work_dir, shard_number, SMALL_SUFFIX),
                         'rb') as f:
    with np.load(io.BytesIO(f.read())) as arrays:
      return {name: arrays[name] for name in names or arrays.files
              if name != SOURCE}


def read_sources(work_dir: str, shard_number: int) -> np.ndarray:
  """Reads the sources (bytes) of a shard's records, in order."""
  with tf.io.gfile.GFile(work_path(work_dir, shard_number, SMALL_SUFFIX),
                         'rb') as f:
    with np.load(io.BytesIO(f.read())) as arrays:
      return arrays[SOURCE]


def groups(paths: List[str], at_least: int = 1) -> List[List[Tuple[int, str]]]:
  """Numbers the shards and groups neighbours into GROUP_BYTES or more, or
  into `at_least` groups (for as many workers) where the shards are fewer
  bytes than that.

  Args:
    paths: the shards of every split, in order.
    at_least: the groups wanted (workers) where the shards are small; no
      group is ever empty, so there may be fewer.

  Returns:
    The groups, in order, each of (shard number, path): the number is the
    shard's index in `paths`.
  """
  sizes = [tf.io.gfile.stat(path).length for path in paths]
  most = min(GROUP_BYTES, max(1, sum(sizes) // max(1, at_least)))
  found, group, size = [], [], 0
  for number, path in enumerate(paths):
    group.append((number, path))
    size += sizes[number]
    if size >= most:
      found.append(group)
      group, size = [], 0
  return found + [group] if group else found


def _batches(paths: List[str], geometry: features.ImageGeometry,
             encoding: str):
  """Yields (index in `paths`, uint8 [B, H, W, C] images, labels [B],
  sources [B]) of the shards, in order; no batch spans two shards.

  tf.data parses and decodes the next batches on its own threads while
  numpy works on this one.
  """
  spec = {key: tf.io.FixedLenFeature([], tf.int64)
          for key in (features.HEIGHT_KEY, features.WIDTH_KEY,
                      features.CHANNELS_KEY, features.LABEL_KEY)}
  spec[features.IMAGE_KEY] = tf.io.FixedLenFeature([], tf.string)
  # Examples written before records named their source read as ''.
  spec[features.SOURCE_KEY] = tf.io.FixedLenFeature([], tf.string, b'')

  # Traced once a group, without AutoGraph: straight-line code.
  @tf.autograph.experimental.do_not_convert
  def parse(index: tf.Tensor, serialized: tf.Tensor):
    parsed = tf.io.parse_example(serialized, spec)
    return (index, decode.decode_images(parsed, geometry, encoding),
            parsed[features.LABEL_KEY], parsed[features.SOURCE_KEY])

  for index, images, labels, sources in shards.without_autotuning(
      shards.numbered_batches(paths, BATCH_SIZE).map(parse).prefetch(
          _PREFETCH)):
    yield (int(index), images.numpy(), labels.numpy(),
           sources.numpy().astype(np.bytes_))


class _ShardWriter:
  """Writes one shard's signatures: thumbnails, framed thumbnails and
  details batch by batch, the rest at the end."""

  def __init__(self, work_dir: str, shard_number: int):
    self._small_path = work_path(work_dir, shard_number, SMALL_SUFFIX)
    self._files = {suffix: tf.io.gfile.GFile(
        work_path(work_dir, shard_number, suffix), 'wb')
                   for suffix in (THUMBNAILS, FRAMED, DETAILS)}
    self._small: Dict[str, list] = {name: [] for name in _DTYPES}

  def add(self, images: np.ndarray, labels: np.ndarray, sources: np.ndarray,
          pool: concurrent.futures.Executor) -> None:
    """Writes a batch's signatures; its frames are found on `pool`'s thread
    while this one computes the others: numpy leaves the GIL in both, so
    they take two cores."""
    framing = pool.submit(alignment.frames, images)
    result = image_signatures.compute(images)
    framed = framing.result()
    for suffix, array in ((THUMBNAILS, result.thumbnail),
                          (FRAMED, framed.thumbnail),
                          (DETAILS, framed.detail)):
      self._files[suffix].write(array.tobytes())
    for name in ('digest', 'phash', 'order_key', 'scores'):
      self._small[name].append(getattr(result, name))
    self._small['framed_phash'].append(framed.phash)
    self._small['framed_order_key'].append(framed.order_key)
    self._small['framed'].append(framed.framed)
    self._small['label'].append(labels.astype(np.int32))
    self._small[SOURCE].append(sources)

  def close(self) -> None:
    for file in self._files.values():
      file.close()
    arrays = {name: (np.concatenate(parts) if parts else
                     np.zeros(0, _DTYPES[name]))
              for name, parts in self._small.items()}
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    with tf.io.gfile.GFile(self._small_path, 'wb') as f:
      f.write(buffer.getvalue())


def write_shards(group: List[Tuple[int, str]], work_dir: str,
                 geometry: features.ImageGeometry, encoding: str) -> None:
  """Writes the signatures of a group of (shard number, path).

  Args:
    group: one of `groups`.
    work_dir: the folder of the shards' work files.
    geometry: the records' image geometry.
    encoding: the records' image encoding, one of features.IMAGE_ENCODINGS.

  Raises:
    ValueError: a record cannot be read as an image of `geometry`, naming
      the file.
  """
  # numpy's BLAS on one thread: its other threads wait for work by
  # spinning, half as much CPU again for no less wall time (BENCHMARKS.md).
  with threadpoolctl.threadpool_limits(1, user_api='blas'):
    _write_shards(group, work_dir, geometry, encoding)


def _write_shards(group: List[Tuple[int, str]], work_dir: str,
                  geometry: features.ImageGeometry, encoding: str) -> None:
  """write_shards' work, BLAS limited."""
  paths = [path for _, path in group]
  current = 0  # The shard being read: a reading error is in it or after.
  written = set()
  try:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
      for current, batches in itertools.groupby(
          _batches(paths, geometry, encoding), key=lambda batch: batch[0]):
        writer = _ShardWriter(work_dir, group[current][0])
        for _, images, labels, sources in batches:
          writer.add(images, labels, sources, pool)
        writer.close()
        written.add(current)
  except (tf.errors.InvalidArgumentError, tf.errors.DataLossError):
    for path in paths[current:]:  # Which file: each read on its own.
      try:
        for _ in _batches([path], geometry, encoding):
          pass
      except (tf.errors.InvalidArgumentError, tf.errors.DataLossError) as e:
        raise ValueError(f'{path}: cannot read its records as images of '
                         f'{geometry}: {e.message.splitlines()[0]}') from None
    raise
  for index, (number, _) in enumerate(group):
    if index not in written:  # A shard without a record.
      _ShardWriter(work_dir, number).close()
