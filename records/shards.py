"""The record files of one split of an Examples artifact."""

import os
from typing import Any, List, Optional, Sequence

import numpy as np
import tensorflow as tf

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
