"""The record files of one split of an Examples artifact."""

import os
from typing import List, Optional

import tensorflow as tf


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
  records = tf.data.TFRecordDataset(files, compression_type='GZIP')
  if at_most is not None:
    records = records.take(at_most)
  return int(records.batch(4096).reduce(
      tf.constant(0, tf.int64),
      lambda n, batch: n + tf.size(batch, out_type=tf.int64)))


def placed_batches(files: List[str], batch_size: int) -> tf.data.Dataset:
  """Returns batches of (shard numbers, indices in the shards, serialized
  records) of gzipped TFRecord `files`, in order: where a reader finds each
  record again without counting. No batch spans two files."""
  @tf.autograph.experimental.do_not_convert
  def batches_of(number: tf.Tensor, path: tf.Tensor) -> tf.data.Dataset:
    return tf.data.TFRecordDataset(path, compression_type='GZIP').batch(
        batch_size).enumerate().map(tf.autograph.experimental.do_not_convert(
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
  compression = 'GZIP' if files[0].endswith('.gz') else ''
  return tf.data.Dataset.from_tensor_slices(files).enumerate().flat_map(
      lambda index, path: tf.data.TFRecordDataset(
          path, compression_type=compression).batch(batch_size).map(
              lambda batch: (index, batch)))
