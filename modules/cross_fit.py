"""Out-of-sample class probabilities for the training split, by cross-fitting.

The Trainer's model learnt the training records, labels and all, so its
probabilities there would confirm a wrong label rather than doubt it. Here
each record goes to one of K folds by a stable hash of its bytes (the same
fold in every run); for each fold, a fresh model of the project's own
network (modules/model.py: `choose`, `build`, `compile_for_training`, under
the Trainer's settings), fed by the project's input code (the Transform
graph through input_pipeline.parse_and_transform), trains on the other
folds for `fold_examples` examples, then predicts its own fold. LabelCheck
(components/label_check.py) calls `cross_fit` by its module path.

A pretrained backbone is not used here: its fine-tuning is far beyond a
small budget, so the fold models are the network --model picks.
Memory: a shuffle buffer of SHUFFLE_RECORDS records, the batches in flight,
and the [N, classes] probabilities being filled.
"""

import dataclasses
import math
from typing import Any, Dict, List, Tuple

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
import tf_keras as keras

from modules import input_pipeline
from modules import model as model_lib
from modules import training_plan
from modules.training_config import TrainingConfig
from records import features

SHUFFLE_RECORDS = 10_000
PREDICT_BATCH = 512


def fold_of(serialized: tf.Tensor, folds: int) -> tf.Tensor:
  """The fold of each serialized record: a stable hash of its bytes."""
  return tf.strings.to_hash_bucket_fast(serialized, folds)


def _records(files: List[str]) -> tf.data.Dataset:
  return tf.data.TFRecordDataset(files, compression_type='GZIP')


def _training_data(files: List[str], fold: int, folds: int,
                   tf_transform_output: tft.TFTransformOutput,
                   batch_size: int, seed) -> tf.data.Dataset:
  """Endless shuffled batches of (images, labels) of every fold but `fold`."""
  parse = input_pipeline.parse_and_transform(tf_transform_output)
  shards = tf.data.Dataset.from_tensor_slices(files).shuffle(
      len(files), seed=seed)
  return (shards.interleave(
      lambda path: tf.data.TFRecordDataset(path, compression_type='GZIP'),
      cycle_length=len(files), num_parallel_calls=tf.data.AUTOTUNE)
          .filter(lambda record: fold_of(record, folds) != fold)
          .shuffle(SHUFFLE_RECORDS, seed=seed).repeat()
          # Parsed and transformed in blocks, as the Trainer's input_fn does
          # (input_pipeline.parse_block says why), then cut into batches.
          .batch(input_pipeline.parse_block(tf_transform_output, batch_size))
          .map(parse, num_parallel_calls=tf.data.AUTOTUNE)
          .rebatch(batch_size).prefetch(2))


def trainer_examples(config: TrainingConfig, records: int) -> int:
  """Examples the Trainer shows its model (its steps, or its epochs)."""
  if config.train_steps:
    return config.train_steps * config.batch_size
  return training_plan.epochs_for(config.budget, records) * records


def fold_budget(config: TrainingConfig, records: int, folds: int,
                fold_examples: int) -> int:
  """Examples each fold's model trains on: `fold_examples`, and never
  more than the Trainer's own model saw (a fold of a small dataset costs
  no more than its training)."""
  del folds  # Each fold's model may see as many examples as the Trainer's.
  return max(1, min(fold_examples, trainer_examples(config, records)))


def cross_fit(files: List[str], transform_graph_uri: str, num_classes: int,
              folds: int, fold_examples: int,
              custom_config: Dict[str, Any]) -> Tuple[np.ndarray, np.ndarray]:
  """(labels [N], probabilities [N, classes]) of the records of `files`
  in their order, each predicted by the model of the folds it is not in.

  custom_config: the Trainer's ({'training': TrainingConfig.to_dict()}).
  """
  config = (TrainingConfig.from_dict(custom_config['training'])
            if 'training' in custom_config else TrainingConfig())
  model_config = dataclasses.replace(config.model, backbone=None)
  tf_transform_output = tft.TFTransformOutput(transform_graph_uri)
  geometry = features.ImageGeometry(*tf_transform_output.
                                    transformed_feature_spec()[
                                        features.IMAGE_KEY].shape)
  architecture, _ = model_lib.choose(model_config, geometry)
  records = input_pipeline.count_records(files)
  labels = np.full(records, -1, np.int64)
  probabilities = np.zeros((records, num_classes), np.float32)
  examples = fold_budget(config, records, folds, fold_examples)
  steps = max(1, math.ceil(examples / config.batch_size))
  parse = input_pipeline.parse_and_transform(tf_transform_output)
  keras.mixed_precision.set_global_policy('float32')
  for fold in range(folds):
    seed = None if config.seed is None else config.seed + fold
    if seed is not None:
      keras.utils.set_random_seed(seed)
    model = model_lib.build(architecture, geometry, num_classes, model_config)
    model_lib.compile_for_training(model, config, num_classes, steps)
    model.fit(_training_data(files, fold, folds, tf_transform_output,
                             config.batch_size, seed),
              steps_per_epoch=steps, epochs=1, verbose=0)
    # Its own fold, in file order, with each record's position.
    held_out = (_records(files).enumerate()
                .filter(lambda _, record: fold_of(record, folds) == fold)
                .batch(PREDICT_BATCH)
                .map(lambda positions, batch: (positions, *parse(batch)),
                     num_parallel_calls=tf.data.AUTOTUNE).prefetch(2))
    predict = tf.function(lambda images: tf.nn.softmax(
        tf.cast(model(images, training=False), tf.float32)),
                          autograph=False)
    for positions, images, batch_labels in held_out:
      positions = positions.numpy()
      labels[positions] = batch_labels.numpy()
      probabilities[positions] = predict(images).numpy()
    logging.info('LabelCheck: fold %d of %d: %s trained %d steps of %d.',
                 fold + 1, folds, architecture, steps, config.batch_size)
    keras.backend.clear_session()
  missing = int(np.sum(labels < 0))
  if missing:
    raise ValueError(f'cross-fitting predicted {records - missing} of '
                     f'{records} records of {files[0]}...')
  return labels, probabilities
