"""The Trainer's input_fn: sharded, gzipped raw Examples to model batches.

Following tf.data's performance guide:
  list the shards -> shuffle them (training) -> interleave TFRecordDatasets
  in parallel (non-deterministic order when training) -> cache the raw
  records -> shuffle records (training) -> batch -> parse the whole batch at
  once (`tf.io.parse_example`) -> apply the transform graph to the batch ->
  prefetch.

The cache holds the raw serialized records (MNIST's 60,000 are ~50 MB), not
the transformed floats (4x larger): parsing and the transform are vectorised
per batch and cheap, and caching *before* the record shuffle lets every epoch
see a new order (a cache after the shuffle would replay epoch one's order).
"""

from typing import List, Optional, Sequence, Tuple, Union

import tensorflow as tf
import tensorflow_transform as tft

from records import features

AUTOTUNE = tf.data.AUTOTUNE


def list_files(file_patterns: Union[str, Sequence[str]]) -> List[str]:
  patterns = [file_patterns] if isinstance(file_patterns, str) else file_patterns
  files = sorted(f for p in patterns for f in tf.io.gfile.glob(p))
  if not files:
    raise ValueError(f'no files match {list(patterns)}')
  return files


def count_records(file_patterns: Union[str, Sequence[str]]) -> int:
  """Records in gzipped TFRecord files (counted in TensorFlow: MNIST's
  60,000 in well under a second)."""
  dataset = tf.data.TFRecordDataset(list_files(file_patterns),
                                    compression_type='GZIP')
  return int(dataset.reduce(tf.constant(0, tf.int64), lambda n, _: n + 1))


def first_record(file_patterns: Union[str, Sequence[str]]) -> bytes:
  """The first serialized record (shards may be empty: the first of the
  first that is not)."""
  dataset = tf.data.TFRecordDataset(list_files(file_patterns),
                                    compression_type='GZIP')
  return next(iter(dataset.take(1))).numpy()


def parse_and_transform(tf_transform_output: tft.TFTransformOutput):
  """Serialized Examples [batch] -> (images, labels), vectorised."""
  raw_spec = tf_transform_output.raw_feature_spec()
  transform = tf_transform_output.transform_features_layer()

  def fn(serialized: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    transformed = transform(tf.io.parse_example(serialized, raw_spec))
    return transformed[features.IMAGE_KEY], transformed[features.LABEL_KEY]

  return fn


def make_dataset(file_patterns: Union[str, Sequence[str]],
                 tf_transform_output: tft.TFTransformOutput,
                 batch_size: int,
                 training: bool,
                 shuffle_buffer: Optional[int] = None,
                 cache: bool = True,
                 repeat: bool = False) -> tf.data.Dataset:
  """A dataset of (images [batch, H, W, C] float32, labels [batch] int64).

  shuffle_buffer: records shuffled through this buffer when `training` (the
  Trainer passes configs.SHUFFLE_BUFFER); unused otherwise.
  """
  if training and not shuffle_buffer:
    raise ValueError('training needs a shuffle_buffer of at least 1 record')
  files = list_files(file_patterns)
  dataset = tf.data.Dataset.from_tensor_slices(files)
  if training:
    dataset = dataset.shuffle(len(files), reshuffle_each_iteration=True)
  dataset = dataset.interleave(
      lambda path: tf.data.TFRecordDataset(path, compression_type='GZIP'),
      cycle_length=len(files), num_parallel_calls=AUTOTUNE,
      deterministic=not training)
  if cache:
    dataset = dataset.cache()
  if training:
    dataset = dataset.shuffle(shuffle_buffer, reshuffle_each_iteration=True)
  if repeat:
    dataset = dataset.repeat()
  dataset = dataset.batch(batch_size)
  dataset = dataset.map(parse_and_transform(tf_transform_output),
                        num_parallel_calls=AUTOTUNE, deterministic=not training)
  return dataset.prefetch(AUTOTUNE)
