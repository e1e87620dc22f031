"""The record files of one split of an Examples artifact: reading them whole,
in batches, as a stable sample, and their labels and sources.

Every TFRecord file the project reads is opened here. Why sample by hash:
docs/label-check.md#the-method-and-why.
"""

import math
import os
from typing import (Any, Callable, Dict, Iterator, List, Optional,
                    Sequence, Tuple)

import numpy as np
import tensorflow as tf

from records import features


# The compression of the project's shards (ExampleGen writes them gzipped).
GZIP = 'GZIP'


def compression_of(path: str) -> str:
  """A TFRecord file's compression, from its name: GZIP for .gz, else none."""
  return GZIP if path.endswith('.gz') else ''


def records(files: Any, compression: str = GZIP,
            parallel_reads: Optional[int] = None) -> tf.data.Dataset:
  """Returns the serialized records of TFRecord `files`.

  Args:
    files: a path, a list of paths, or a string tensor or dataset of them.
    compression: GZIP (the project's shards) or '' (plain TFRecord files).
    parallel_reads: files read at once, their records in no set order;
      None: one file after the other, in order.
  """
  return tf.data.TFRecordDataset(files, compression_type=compression,
                                 num_parallel_reads=parallel_reads)


def without_autotuning(dataset: tf.data.Dataset) -> tf.data.Dataset:
  """Returns `dataset` with tf.data's autotuning off, for a reader read to
  its end whose parallelism is set.

  Deleting an autotuned dataset's iterator can wait for tf.data's autotuning
  thread, up to about a second (TensorFlow 2.16; BENCHMARKS.md, "MNIST time
  to accuracy", its notes); a reader made once a pass pays it once a pass.
  A map's AUTOTUNE parallelism then stays at tf.data's default, a thread per
  core.
  """
  options = tf.data.Options()
  options.autotune.enabled = False
  return dataset.with_options(options)


def interleaved_batches(files: Sequence[str], batch_size: int,
                        cycle_length: Optional[int] = None,
                        compression: str = GZIP) -> tf.data.Dataset:
  """Returns batches of serialized records of `files`, in no set order.

  Each batch comes from one file.

  Args:
    files: TFRecord paths.
    batch_size: records per batch at most; a file's last batch is smaller.
    cycle_length: files read at once, in parallel; None: all of them.
    compression: GZIP (the project's shards) or '' (plain TFRecord files).
  """
  return tf.data.Dataset.from_tensor_slices(list(files)).interleave(
      tf.autograph.experimental.do_not_convert(
          lambda path: records(path, compression).batch(batch_size)),
      cycle_length=cycle_length or len(files),
      num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)


def label_counts(files: Sequence[str], label_key: str,
                 compression: str = GZIP, open_files: int = 16,
                 batch_size: int = 4096) -> np.ndarray:
  """Counts the records of each label in TFRecord files of tf.Examples.

  Only the labels are parsed, a batch at a time.

  Args:
    files: TFRecord paths of tf.Examples; none gives an empty count.
    label_key: the int64 feature holding each record's label.
    compression: GZIP (the project's shards) or '' (plain TFRecord files).
    open_files: files read at once, in parallel.
    batch_size: records parsed per batch.

  Returns:
    int64 counts indexed by label (as long as the largest label found).
  """
  spec = {label_key: tf.io.FixedLenFeature([], tf.int64)}
  counts = np.zeros(0, np.int64)
  if not files:
    return counts
  for labels in interleaved_batches(
      files, batch_size, min(len(files), open_files), compression).map(
          tf.autograph.experimental.do_not_convert(
              lambda batch: tf.io.parse_example(batch, spec)[label_key])
      ).as_numpy_iterator():
    found = np.bincount(labels)
    if len(found) > len(counts):
      counts = np.pad(counts, (0, len(found) - len(counts)))
    counts[:len(found)] += found
  return counts


def split_files(split_uri: str) -> List[str]:
  """Lists the split's gzipped TFRecord shards, sorted by name.

  Every reader of the project counts a record's position in this order.

  Args:
    split_uri: the split's folder (artifact_utils.get_split_uri).

  Raises:
    FileNotFoundError: the folder holds no shard.
  """
  files = sorted(tf.io.gfile.glob(os.path.join(split_uri, '*.gz')))
  if not files:
    raise FileNotFoundError(f'{split_uri}: no gzipped TFRecord shards')
  return files


def count_records(files: List[str], at_most: Optional[int] = None) -> int:
  """Counts the records of gzipped TFRecord `files`, without parsing them.

  With `at_most`, reading stops there: a count of `at_most` means at least.
  """
  read = records(files)
  if at_most is not None:
    read = read.take(at_most)
  return int(read.batch(4096).reduce(
      tf.constant(0, tf.int64),
      lambda n, batch: n + tf.size(batch, out_type=tf.int64)))


def placed_batches(files: List[str], batch_size: int) -> tf.data.Dataset:
  """Returns batches of (shard numbers, indices in the shards, serialized
  records) of gzipped TFRecord `files`, in order: where a reader finds each
  record again without counting. No batch spans two files."""
  @tf.autograph.experimental.do_not_convert
  def batches_of(number: tf.Tensor, path: tf.Tensor) -> tf.data.Dataset:
    return records(path).batch(batch_size).enumerate().map(
        tf.autograph.experimental.do_not_convert(
            lambda batch_number, batch: (
                tf.fill(tf.shape(batch), number),
                batch_number * batch_size + tf.range(
                    tf.size(batch, out_type=tf.int64)),
                batch)))

  return tf.data.Dataset.from_tensor_slices(files).enumerate().flat_map(
      batches_of)


def numbered_batches(files: List[str], batch_size: int) -> tf.data.Dataset:
  """Returns (index in `files`, serialized records) batches of the files.

  One reader goes through the files in order, since setting one up costs
  more than reading a small shard. No batch spans two files. Files ending
  in .gz are read as gzipped.
  """
  compression = compression_of(files[0])
  return tf.data.Dataset.from_tensor_slices(files).enumerate().flat_map(
      lambda index, path: records(path, compression).batch(batch_size).map(
          lambda batch: (index, batch)))


BUCKETS = 1 << 20
# Records of a batch of a sample: a model predicts each batch in one call.
SAMPLE_BATCH = 512


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
      records), in the order positions count them (placed_batches).
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
                    batch_size: int = SAMPLE_BATCH) -> tf.data.Dataset:
  """Returns batches of the records of `files` whose bucket is below
  `checked_buckets` (sample_buckets; every record at BUCKETS).

  Args:
    files: the split's gzipped shards, in name order (split_files).
    checked_buckets: buckets kept, from 0 to BUCKETS; BUCKETS keeps every
      record without hashing it.
    batch_size: records per batch returned.

  Returns:
    The batches of kept_batches: (positions, shard numbers, indices in the
    shards, serialized records), in record order.
  """
  keep = (None if checked_buckets >= BUCKETS
          else lambda buckets: buckets < checked_buckets)
  return kept_batches(placed_batches(files, batch_size), batch_size,
                      keep)


# Records parsed at once: the parse copies only the source and label.
_SOURCE_BATCH = 4096


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
  files = split_files(split_uri)
  spec = {features.SOURCE_KEY: tf.io.FixedLenFeature([], tf.string),
          features.LABEL_KEY: tf.io.FixedLenFeature([], tf.int64)}
  batches = (records(files).batch(_SOURCE_BATCH)
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
    files: the split's shards, in order (placed_batches's).
    picked: indices into the block.
    positions, shard_numbers, indices, sources: the block's records', as
      placed_batches numbers them, and their source features.
  """
  return {int(positions[i]): (sources[i].decode(),
                              place(files[shard_numbers[i]], indices[i]))
          for i in picked.tolist()}


def names_of_mistakes(files: List[str], probabilities: np.ndarray,
                      labels: np.ndarray, positions: np.ndarray,
                      shard_numbers: np.ndarray, indices: np.ndarray,
                      sources: np.ndarray) -> Dict[int, Tuple[str, str]]:
  """`names_of` the records of a block whose most probable class is not
  their label (LabelCheck's suspects are among them)."""
  return names_of(files,
                  np.flatnonzero(np.argmax(probabilities, axis=1) != labels),
                  positions, shard_numbers, indices, sources)
