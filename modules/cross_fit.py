"""Out-of-sample class probabilities for the training split, by cross-fitting.

LabelCheck (components/label_check/) calls `cross_fit` by its module path.
Why and how: docs/label-check.md, "The method, and why".
"""

import dataclasses
import math
from typing import Any, Dict, List, Optional, Tuple

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
import tf_keras as keras

from modules.training import devices
from modules.training import input_pipeline
from modules.training import model as model_lib
from modules.training import plan as training_plan
from modules.training.config import TrainingConfig
from records import features
from records import shards

SHUFFLE_RECORDS = 10_000
PREDICT_BATCH = shards.SAMPLE_BATCH

# The log line of each fold's model.
FOLD_LINE = ('LabelCheck: fold %d of %d: %s trained %d steps of %d; %d of %d '
             'held-out records in another class.')


def fold_of(bucket: tf.Tensor, folds: int) -> tf.Tensor:
  """Returns the fold of each bucket of records/shards.py.

  Folds are runs of consecutive buckets, and the records checked are the
  lowest buckets (see `plan`).
  """
  return bucket * folds // shards.BUCKETS


@dataclasses.dataclass(frozen=True)
class Plan:
  """Which records are checked, and which folds' models that takes."""
  folds: int
  checked_buckets: int  # A record is checked if its bucket is below this.

  @property
  def models(self) -> int:
    """The number of folds that hold checked records, one model each."""
    return max(1, math.ceil(self.checked_buckets * self.folds /
                            shards.BUCKETS))


def plan(records: int, folds: int, checked_records: int) -> Plan:
  """Plans to check about `checked_records` of `records`, a hash-chosen sample.

  The sample is the lowest buckets, and folds are runs of buckets. So a
  small sample lies in few folds, and only those folds' models are trained.
  With 2 folds, a sample of half the split or less takes one model.

  Args:
    records: the records of the training split.
    folds: the number of folds.
    checked_records: about how many records to check; all of them if the
      split is no larger, none if 0 or less.
  """
  return Plan(folds, shards.sample_buckets(records, checked_records))


def _training_data(files: List[str], fold: int, folds: int,
                   tf_transform_output: tft.TFTransformOutput,
                   batch_size: int, seed) -> tf.data.Dataset:
  """Returns endless shuffled batches of (images, labels) of the other folds."""
  parse = input_pipeline.parse_and_transform(tf_transform_output)
  paths = tf.data.Dataset.from_tensor_slices(files).shuffle(
      len(files), seed=seed)

  # The fold of a block of records at once: a per-record filter costs
  # more than reading them.
  def others(block: tf.Tensor) -> tf.Tensor:
    return tf.boolean_mask(
        block, fold_of(shards.bucket_of(block), folds) != fold)

  return (paths.interleave(
      shards.records,
      cycle_length=len(files), num_parallel_calls=tf.data.AUTOTUNE)
          .batch(PREDICT_BATCH).map(others).unbatch()
          .shuffle(SHUFFLE_RECORDS, seed=seed).repeat()
          # Parsed and transformed in blocks, as the Trainer's input_fn does
          # (input_pipeline.parse_block says why), then cut into batches.
          .batch(input_pipeline.parse_block(tf_transform_output, batch_size))
          .map(parse, num_parallel_calls=tf.data.AUTOTUNE)
          .rebatch(batch_size).prefetch(2))


def held_out(files: List[str], fold: int, the_plan: Plan, parse,
             cache: bool = False) -> tf.data.Dataset:
  """Returns blocks of (positions, shard numbers, indices in the shards,
  *parse(serialized)) of `fold`'s checked records.

  Blocks come in file order.

  Args:
    files: the training split's gzipped TFRecord files, in order.
    fold: the fold whose checked records are read, from 0.
    the_plan: the folds and the buckets checked.
    parse: a block of serialized records -> a tuple of tensors, e.g.
      (images, labels) from input_pipeline.parse_and_transform.
    cache: keep the serialized records in memory after the first pass, for
      a caller that reads them again.
  """
  folds, checked = the_plan.folds, the_plan.checked_buckets
  selected = shards.kept_batches(
      shards.placed_batches(files, PREDICT_BATCH), PREDICT_BATCH,
      lambda buckets: (fold_of(buckets, folds) == fold) & (buckets < checked))
  if cache:
    selected = selected.cache()
  return (selected
          .map(tf.autograph.experimental.do_not_convert(
              lambda positions, shard, index, block: (
                  positions, shard, index, *parse(block))),
               num_parallel_calls=tf.data.AUTOTUNE).prefetch(2))


def trainer_examples(config: TrainingConfig, records: int) -> int:
  """Returns the examples the Trainer shows its model (steps or epochs)."""
  if config.train_steps:
    return config.train_steps * config.batch_size
  return training_plan.epochs_for(config.budget, records) * records


def fold_budget(config: TrainingConfig, records: int, folds: int,
                fold_examples: int) -> int:
  """Returns the examples each fold's model trains on.

  That is `fold_examples`, and never more than the Trainer's own model saw,
  so a fold of a small dataset costs no more than its training.

  Args:
    config: the Trainer's training config.
    records: the records of the training split.
    folds: the number of folds; unused, each fold may see as many examples
      as the Trainer's model.
    fold_examples: the examples each fold's model trains on at most.
  """
  del folds  # Each fold's model may see as many examples as the Trainer's.
  return max(1, min(fold_examples, trainer_examples(config, records)))


def cross_fit(files: List[str], transform_graph_uri: str, num_classes: int,
              folds: int, fold_examples: int, checked_records: int,
              custom_config: Dict[str, Any],
              stop_above: Optional[float] = None
              ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, int]:
  """Predicts each record checked by a model of the folds it is not in.

  Args:
    files: the training split's gzipped TFRecord files.
    transform_graph_uri: the Transform graph.
    num_classes: the number of classes.
    folds: the number of folds.
    fold_examples: the examples each fold's model trains on at most.
    checked_records: about how many records to check, chosen by a hash of
      their bytes; all of them if the split is no larger.
    custom_config: the Trainer's ({'training': TrainingConfig.to_dict()}).
    stop_above: no further fold is trained once a fold's model puts more
      than this share of its records in another class (too weak to doubt
      their labels: components/label_check/suspects.py); None: every fold.

  Returns:
    positions [M], labels [M] and probabilities [M, classes] of the records
    checked, in file order, and the number of records in `files`.
  """
  config = (TrainingConfig.from_dict(custom_config['training'])
            if 'training' in custom_config else TrainingConfig())
  model_config = dataclasses.replace(config.model, backbone=None)
  tf_transform_output = tft.TFTransformOutput(transform_graph_uri)
  image_spec = tf_transform_output.transformed_feature_spec()[
      features.IMAGE_KEY]
  geometry = features.ImageGeometry(*image_spec.shape)
  architecture, _ = model_lib.choose(model_config, geometry)
  records = shards.count_records(files)
  the_plan = plan(records, folds, checked_records)
  examples = fold_budget(config, records, folds, fold_examples)
  steps = max(1, math.ceil(examples / config.batch_size))
  parse = input_pipeline.parse_and_transform(tf_transform_output)
  # The Trainer's precision (bfloat16 where the CPU computes it), for the
  # folds alone: the process's policy is put back after them.
  policy = keras.mixed_precision.global_policy()
  keras.mixed_precision.set_global_policy(devices.plan(
      devices.visible_gpus(), config.batch_size,
      config.mixed_precision).precision)
  positions, labels, probabilities = [], [], []
  try:
    for fold in range(the_plan.models):
      seed = None if config.seed is None else config.seed + fold
      if seed is not None:
        keras.utils.set_random_seed(seed)
      model = model_lib.build(architecture, geometry, num_classes, model_config)
      model_lib.compile_for_training(model, config, num_classes, steps)
      model.fit(_training_data(files, fold, folds, tf_transform_output,
                               config.batch_size, seed),
                steps_per_epoch=steps, epochs=1, verbose=0)
      # One trace for every block size (blocks are cut to the fold).
      predict = tf.function(
          lambda images: tf.nn.softmax(tf.cast(model(images, training=False),
                                               tf.float32)),
          input_signature=[tf.TensorSpec([None, *image_spec.shape],
                                        image_spec.dtype)],
          autograph=False)
      wrong = seen = 0
      for block_positions, _, _, images, block_labels in held_out(
          files, fold, the_plan, parse):
        positions.append(block_positions.numpy())
        labels.append(block_labels.numpy())
        probabilities.append(predict(images).numpy())
        wrong += int(np.sum(probabilities[-1].argmax(axis=1) != labels[-1]))
        seen += len(labels[-1])
      logging.info(FOLD_LINE, fold + 1, folds, architecture, steps,
                   config.batch_size, wrong, seen)
      keras.backend.clear_session()
      if stop_above is not None and seen and wrong / seen > stop_above:
        logging.info('LabelCheck: more than %.1f%%: too weak to doubt '
                     'labels; no further fold is trained.', 100 * stop_above)
        break
  finally:
    keras.mixed_precision.set_global_policy(policy)
  if not positions:
    return (np.zeros(0, np.int64), np.zeros(0, np.int64),
            np.zeros((0, num_classes), np.float32), records)
  positions = np.concatenate(positions)
  order = np.argsort(positions, kind='stable')
  return (positions[order], np.concatenate(labels)[order],
          np.concatenate(probabilities)[order], records)
