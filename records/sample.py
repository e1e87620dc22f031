"""A stable sample of a split's records, chosen by a hash of their bytes.

Each record falls in one of BUCKETS buckets by a hash of its serialized
bytes. The same record falls in the same bucket in every run. A sample of
about N of a split's R records is the records of the lowest N/R share of
the buckets: a filter on each record, so the split streams and is never
held in memory. LabelCheck's checks of the training split (the Trainer's
run, modules/epoch_probabilities.py, or cross-fitting, modules/cross_fit.py)
and of the validation split (components/label_check.py) take their sample
so.
"""

import math
from typing import Callable, Optional

import tensorflow as tf

BUCKETS = 1 << 20


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


def kept_batches(records: tf.data.Dataset, batch_size: int,
                 keep: Optional[Callable[[tf.Tensor], tf.Tensor]] = None
                 ) -> tf.data.Dataset:
  """Returns batches of (positions, serialized records) that `keep` keeps.

  Args:
    records: serialized records, in the order positions count them; or
      tuples of which the record is the last (shards.placed_records), each
      item batched alike.
    batch_size: records per batch.
    keep: each record's bucket -> whether it is kept; None keeps every
      record without hashing it.

  Returns:
    Batches in record order, (positions, *items) of tuples; positions count
    over all of `records`.
  """
  # Straight-line code: AutoGraph's conversion would cost a trace's time.
  @tf.autograph.experimental.do_not_convert
  def select(index: tf.Tensor, block):
    items = block if isinstance(block, tuple) else (block,)
    positions = index * batch_size + tf.range(
        tf.size(items[-1], out_type=tf.int64))
    if keep is not None:
      kept = keep(bucket_of(items[-1]))
      positions = tf.boolean_mask(positions, kept)
      items = tuple(tf.boolean_mask(item, kept) for item in items)
    return (positions, *items)

  blocks = records.batch(batch_size).enumerate().map(select)
  if keep is None:
    return blocks
  # A sample keeps a few records of each block read: joined again into
  # full batches, they reach a model in few calls (each has a cost of its
  # own), not in one per block read.
  return blocks.unbatch().batch(batch_size)
