"""Signatures of one shard of Examples, written to files in a work folder.

A Beam DoFn gets a shard's path and reads it with tf.data in batches.
Memory holds one batch of images, and the shard's compact signatures and
sources. The sources (records/features.py) say which input each record came
from, and are read in the same parse. The thumbnails go to a file of their
own, batch by batch, for the executor to join into one memmap. The work
folder may be on any filesystem TensorFlow knows.
"""

import io
import os
from typing import Dict, Tuple

import numpy as np
import tensorflow as tf

from components.data_checks import signatures
from records import decode
from records import features

BATCH_SIZE = 4096
THUMBNAILS_SUFFIX = '.thumbnails'
SMALL_SUFFIX = '.npz'
# The small arrays' entry of the sources: read on its own, for the few
# records the results name.
SOURCE = 'source'
_DTYPES = {'digest': np.uint64, 'phash': np.uint64, 'ahash': np.uint64,
           'scores': signatures.SCORE_DTYPE, 'label': np.int32,
           SOURCE: np.bytes_}
# tf.data reads ahead while numpy works on the batch before.
_PREFETCH = 2


def work_paths(work_dir: str, shard_number: int) -> Tuple[str, str]:
  """Returns the (thumbnails file, small arrays file) of a shard."""
  stem = os.path.join(work_dir, f'{shard_number:06d}')
  return stem + THUMBNAILS_SUFFIX, stem + SMALL_SUFFIX


def read_small(work_dir: str, shard_number: int, names=None
               ) -> Dict[str, np.ndarray]:
  """Reads the small arrays `write_shard` wrote for a shard, but the sources.

  Only those in `names` are read, if given.
  """
  with tf.io.gfile.GFile(work_paths(work_dir, shard_number)[1], 'rb') as f:
    with np.load(io.BytesIO(f.read())) as arrays:
      return {name: arrays[name] for name in names or arrays.files
              if name != SOURCE}


def read_sources(work_dir: str, shard_number: int) -> np.ndarray:
  """Reads the sources (bytes) of a shard's records, in order."""
  with tf.io.gfile.GFile(work_paths(work_dir, shard_number)[1], 'rb') as f:
    with np.load(io.BytesIO(f.read())) as arrays:
      return arrays[SOURCE]


def _batches(path: str, geometry: features.ImageGeometry, encoding: str):
  """Yields (uint8 [B, H, W, C] images, labels [B], sources [B]) of the shard.

  Batches are parsed eagerly, since a traced tf.data map would be traced
  again for every shard.
  """
  spec = {key: tf.io.FixedLenFeature([], tf.int64)
          for key in (features.HEIGHT_KEY, features.WIDTH_KEY,
                      features.CHANNELS_KEY, features.LABEL_KEY)}
  spec[features.IMAGE_KEY] = tf.io.FixedLenFeature([], tf.string)
  # Examples written before records named their source read as ''.
  spec[features.SOURCE_KEY] = tf.io.FixedLenFeature([], tf.string, b'')
  compression = 'GZIP' if path.endswith('.gz') else ''
  dataset = tf.data.TFRecordDataset(path, compression_type=compression)
  for serialized in dataset.batch(BATCH_SIZE).prefetch(_PREFETCH):
    parsed = tf.io.parse_example(serialized, spec)
    labels = parsed[features.LABEL_KEY].numpy()
    sources = parsed[features.SOURCE_KEY].numpy().astype(np.bytes_)
    if encoding != 'raw':
      yield (decode.decode_images(parsed, geometry, encoding).numpy(),
             labels, sources)
      continue
    sizes = [parsed[key].numpy() for key in (
        features.HEIGHT_KEY, features.WIDTH_KEY, features.CHANNELS_KEY)]
    lengths = tf.strings.length(parsed[features.IMAGE_KEY]).numpy()
    if (any((size != expected).any()
            for size, expected in zip(sizes, geometry.shape)) or
        (lengths != geometry.num_bytes).any()):
      raise ValueError(f'{path}: records whose images are not raw pixels '
                       f'of the Examples\' geometry {geometry}')
    # In TensorFlow, without a Python bytes object per image.
    pixels = tf.io.decode_raw(parsed[features.IMAGE_KEY], tf.uint8).numpy()
    yield pixels.reshape(len(pixels), *geometry.shape), labels, sources


def write_shard(shard_number: int, path: str, work_dir: str,
                geometry: features.ImageGeometry, encoding: str) -> int:
  """Writes the signatures of shard `path`; returns its record count.

  Raises:
    ValueError: a record cannot be read as an image of `geometry`, naming
      the file.
  """
  thumbnails_path, small_path = work_paths(work_dir, shard_number)
  small: Dict[str, list] = {name: [] for name in _DTYPES}
  try:
    with tf.io.gfile.GFile(thumbnails_path, 'wb') as thumbnails:
      for images, labels, sources in _batches(path, geometry, encoding):
        result = signatures.compute(images)
        thumbnails.write(result.thumbnail.tobytes())
        for name in ('digest', 'phash', 'ahash', 'scores'):
          small[name].append(getattr(result, name))
        small['label'].append(labels.astype(np.int32))
        small[SOURCE].append(sources)
  except (tf.errors.InvalidArgumentError, tf.errors.DataLossError) as e:
    raise ValueError(f'{path}: cannot read its records as images of '
                     f'{geometry}: {e.message.splitlines()[0]}') from None
  arrays = {name: (np.concatenate(parts) if parts else
                   np.zeros(0, _DTYPES[name]))
            for name, parts in small.items()}
  buffer = io.BytesIO()
  np.savez(buffer, **arrays)
  with tf.io.gfile.GFile(small_path, 'wb') as f:
    f.write(buffer.getvalue())
  return len(arrays['label'])
