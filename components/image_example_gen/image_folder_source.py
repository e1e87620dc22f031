"""Image-folder splits into Beam: <split>/<class_name>/<image> to Examples.

The executor lists and checks the files before any worker starts
(folder_plan.py). The shards mix the classes: the sorted paths are dealt in a
fixed-seed random order, so the Trainer's interleaved reads see every class,
and the same files give the same shards, byte for byte.
"""

import os
from typing import Iterator, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from components.image_example_gen import idx_source
from components.image_example_gen import image_folder
from components.image_example_gen import progress
from components.image_example_gen import tfrecord_sink
from components.image_example_gen.errors import InputDataError
from records import features

# Seeds the order the images are dealt into shards in: fixed, so that the
# same files give the same shards in every run.
_ORDER_SEED = 0


def shard_paths(files: Sequence[str], num_shards: int) -> List[List[str]]:
  """Deals `files` into `num_shards` even groups in a fixed-seed order."""
  paths = sorted(files)
  order = np.random.default_rng(_ORDER_SEED).permutation(len(paths))
  return [[paths[i] for i in group]
          for group in np.array_split(order, num_shards)]


def records_per_write(geometry: features.ImageGeometry) -> int:
  """The most records a worker decodes and writes at once."""
  return max(1, min(tfrecord_sink.RECORDS_PER_WRITE,
                    idx_source.CHUNK_BYTES // geometry.num_bytes))


def source_of(path: str, input_base: str) -> str:
  """An image's `source` feature: its path under the input base."""
  return os.path.relpath(path, input_base).replace(os.sep, '/')


class Decoder:
  """Image files to Examples: tfrecord_sink.WriteShards' source, a shard's work
  its paths; with `skip_bad`, an unreadable image is listed, not raised."""

  def __init__(self, label: str, count: int, class_names: Sequence[str],
               geometry: features.ImageGeometry, skip_bad: bool,
               encoding: str, input_base: str, max_pixels: Optional[int]):
    self._class_names = list(class_names)
    self._geometry = geometry
    self._skip_bad = skip_bad
    self._encoding = encoding
    self._input_base = input_base
    self._max_pixels = max_pixels
    self._per_write = records_per_write(geometry)
    self._progress = progress.SplitProgress(label, count)

  def _example(self, path: str) -> bytes:
    try:
      with tf.io.gfile.GFile(path, 'rb') as f:
        data = f.read()
    except (IOError, tf.errors.OpError) as e:
      raise InputDataError(path, f'cannot read file: {e}') from e
    return features.make_example(
        image_folder.decode_image(path, data, self._geometry,
                                  self._max_pixels),
        self._geometry, image_folder.label_of(path, self._class_names),
        self._encoding, source=source_of(path, self._input_base))

  def batches(self, paths: Sequence[str], skipped: List[dict]
              ) -> Iterator[Tuple[List[bytes]]]:
    """Yields the Examples of `paths`, records_per_write at a time."""
    batch = []
    for path in paths:
      try:
        batch.append(self._example(path))
      except InputDataError as e:
        if not self._skip_bad:
          raise
        skipped.append({'path': e.path, 'reason': e.problem})
      finally:
        self._progress.add(1)
      if len(batch) == self._per_write:
        yield (batch,)
        batch = []
    if batch:
      yield (batch,)

  def close(self) -> None:
    """Nothing to close."""
