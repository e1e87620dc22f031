"""Reading back which input each record came from (the `source` feature).

The data checks name the records they list by it. Why and how:
docs/input-data.md#the-examples-format.
"""

import os
from typing import Dict, Iterator, List, Tuple

import numpy as np

import tensorflow as tf

from records import features
from records import shards

# Records parsed at once: the parse copies only the source and label.
_BATCH = 4096


def read_sources(split_uri: str) -> Iterator[Tuple[str, int]]:
  """Yields (source, label) of each record of an Examples split.

  Records come in the order of the shard files (sorted by name) and of the
  records in each. Only these two features are parsed, a batch at a time, so
  memory holds one batch and no image bytes.

  Args:
    split_uri: the split's folder (artifact_utils.get_split_uri), of the
      gzipped TFRecord shards ExampleGen writes.

  Raises:
    FileNotFoundError: the folder holds no shard.
  """
  files = shards.split_files(split_uri)
  spec = {features.SOURCE_KEY: tf.io.FixedLenFeature([], tf.string),
          features.LABEL_KEY: tf.io.FixedLenFeature([], tf.int64)}
  batches = (shards.records(files).batch(_BATCH)
             .map(lambda records: tf.io.parse_example(records, spec))
             .prefetch(1))
  for batch in batches.as_numpy_iterator():
    for source, label in zip(batch[features.SOURCE_KEY].tolist(),
                             batch[features.LABEL_KEY].tolist()):
      yield source.decode(), label


def place(path: str, index: int) -> str:
  """Where a record is: 'shard file:index', read without the split."""
  return f'{os.path.basename(path)}:{index}'


def parse_place(name: str) -> Tuple[str, int]:
  """(shard file, index) of a `place`."""
  shard, index = name.rsplit(':', 1)
  return shard, int(index)


def names_of(files: List[str], picked: np.ndarray, positions: np.ndarray,
             shard_numbers: np.ndarray, indices: np.ndarray,
             sources: np.ndarray) -> Dict[int, Tuple[str, str]]:
  """{position: (source, place)} of the `picked` of a block of records.

  Args:
    files: the split's shards, in order (shards.placed_batches's).
    picked: indices into the block.
    positions, shard_numbers, indices, sources: the block's records', as
      shards.placed_batches numbers them, and their source features.
  """
  return {int(positions[i]): (sources[i].decode(),
                              place(files[shard_numbers[i]], indices[i]))
          for i in picked.tolist()}
