"""Shards of Examples rewritten without some of their records.

The records left out are held-out images that are copies of training
images, so that the evaluation does not score training images.
"""

from typing import Sequence

import tensorflow as tf

from records import shards

# Records read at a time.
_BATCH = 1024


def write_without(source: str, target: str, dropped: Sequence[int]) -> int:
  """Copies shard `source` to `target` without the records at `dropped`.

  The target is compressed as the source is.

  Args:
    source: a TFRecord shard; gzipped if its name ends in .gz.
    target: the shard to write.
    dropped: indices in `source` of the records to leave out.

  Returns:
    The number of records written.
  """
  dropped = set(dropped)
  compression = shards.compression_of(source)
  written, position = 0, 0
  with tf.io.TFRecordWriter(
      target, tf.io.TFRecordOptions(compression_type=compression)) as writer:
    for batch in shards.records(source, compression).batch(_BATCH):
      for record in batch.numpy():
        if position not in dropped:
          writer.write(record)
          written += 1
        position += 1
  return written
