"""A stable sample of a split's records, chosen by a hash of their bytes.

A filter on each record, so the split streams. Why and how:
docs/label-check.md#the-method-and-why.
"""

import math
from typing import Callable, List, Optional

import tensorflow as tf

from records import shards

BUCKETS = 1 << 20
# Records of a batch of a sample: a model predicts each batch in one call.
BATCH = 512


def bucket_of(serialized: tf.Tensor) -> tf.Tensor:
  """Returns each serialized record's bucket, a stable hash of its bytes."""
  return tf.strings.to_hash_bucket_fast(serialized, BUCKETS)


def sample_buckets(records: int, checked_records: int) -> int:
  """Returns the buckets a sample of about `checked_records` of `records` takes.

  A record is in the sample if its bucket is below this: every bucket where
  the split is no larger than the sample, none for a sample of 0.
  """
  if checked_records <= 0:
    return 0
  share = checked_records / max(records, 1)
  return BUCKETS if share >= 1 else max(1, math.ceil(share * BUCKETS))


def kept_batches(blocks: tf.data.Dataset, batch_size: int,
                 keep: Optional[Callable[[tf.Tensor], tf.Tensor]] = None
                 ) -> tf.data.Dataset:
  """Returns batches of the records of `blocks` that `keep` keeps.

  Args:
    blocks: batches of (shard numbers, indices in the shards, serialized
      records), in the order positions count them (shards.placed_batches).
    batch_size: records per batch returned.
    keep: each record's bucket -> whether it is kept; None keeps every
      record without hashing it.

  Returns:
    Full batches but the last, in record order, of (positions, shard
    numbers, indices in the shards, serialized records); positions count
    over all of `blocks`.
  """
  # Straight-line code: AutoGraph's conversion would cost a trace's time.
  @tf.autograph.experimental.do_not_convert
  def select(start: tf.Tensor, block):
    *places, serialized = block
    size = tf.size(serialized, out_type=tf.int64)
    items = (start + tf.range(size), *places, serialized)
    if keep is not None:
      kept = keep(bucket_of(serialized))
      items = tuple(tf.boolean_mask(item, kept) for item in items)
    return start + size, items

  # A sample keeps a few records of each block read: joined again into
  # full batches, they reach a model in few calls (each has a cost of its
  # own), not in one per block read.
  return blocks.scan(tf.constant(0, tf.int64), select).rebatch(batch_size)


def sampled_batches(files: List[str], checked_buckets: int,
                    batch_size: int = BATCH) -> tf.data.Dataset:
  """Returns batches of the records of `files` whose bucket is below
  `checked_buckets` (sample_buckets; every record at BUCKETS).

  Args:
    files: the split's gzipped shards, in name order (shards.split_files).
    checked_buckets: buckets kept, from 0 to BUCKETS; BUCKETS keeps every
      record without hashing it.
    batch_size: records per batch returned.

  Returns:
    The batches of kept_batches: (positions, shard numbers, indices in the
    shards, serialized records), in record order.
  """
  keep = (None if checked_buckets >= BUCKETS
          else lambda buckets: buckets < checked_buckets)
  return kept_batches(shards.placed_batches(files, batch_size), batch_size,
                      keep)
