"""Class probabilities of training records averaged over the Trainer's epochs.

LabelCheck (components/label_check.py) ranks the training split's suspects
from them. Why and how: docs/label-check.md, "The method, and why".
"""

import math
import time
from typing import List, Optional, Tuple

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
import tf_keras as keras

from modules.training import input_pipeline
from records import epoch_probabilities as stored
from records import features
from records import shards

# A prediction of the sample costs a good part of a training epoch's time:
# a long run is scored at this many of its epochs, spread over it, and a
# short one at every MIN_STRIDE-th (neighbouring epochs' probabilities
# differ little; BENCHMARKS.md, "Label check", has the recall of each).
MAX_SCORED_EPOCHS = 5
MIN_STRIDE = 2


def checked_blocks(files: List[str], records: int, checked_records: int,
                   tf_transform_output: tft.TFTransformOutput
                   ) -> tf.data.Dataset:
  """Returns blocks of (positions, shard numbers, indices in the shards,
  images, labels, sources) of the records checked.

  Blocks come in file order. The serialized records are cached in memory
  after the first pass, and parsed and transformed again on each.

  Args:
    files: the training split's record files, in order.
    records: the records in them.
    checked_records: about how many records to check, chosen by a hash of
      their bytes (records/shards.py).
    tf_transform_output: the transform graph that makes model inputs.
  """
  transform = input_pipeline.parse_and_transform(tf_transform_output)
  source_spec = {features.SOURCE_KEY: tf.io.FixedLenFeature([], tf.string,
                                                             b'')}

  @tf.autograph.experimental.do_not_convert
  def parse(serialized: tf.Tensor):
    return (*transform(serialized), tf.io.parse_example(
        serialized, source_spec)[features.SOURCE_KEY])

  return (shards.sampled_batches(
      files, shards.sample_buckets(records, checked_records)).cache()
          .map(tf.autograph.experimental.do_not_convert(
              lambda positions, shard, index, block: (
                  positions, shard, index, *parse(block))),
               num_parallel_calls=tf.data.AUTOTUNE).prefetch(2))


def stride(planned_epochs: int) -> int:
  """Returns the epochs between two predictions of the sample.

  At most about MAX_SCORED_EPOCHS of a planned run are scored, spread over
  it, and its last; never two neighbouring epochs but the last.
  """
  return max(MIN_STRIDE, math.ceil(planned_epochs / MAX_SCORED_EPOCHS))


class EpochProbabilities(keras.callbacks.Callback):
  """Averages the probabilities of the records checked over a few epochs.

  It adds them up at the end of every `stride` epochs and of the last.
  When training ends it writes their average under `output_dir`
  (records/epoch_probabilities.py). Several `fit` calls add to the same
  sums.
  """

  def __init__(self, files: List[str], records: int, checked_records: int,
               tf_transform_output: tft.TFTransformOutput, output_dir: str,
               planned_epochs: int, examples_per_epoch: int):
    """Makes the callback over a hash sample of the training split.

    Args:
      files: the training split's record files, in order.
      records: the records in them.
      checked_records: about how many records to check.
      tf_transform_output: the transform graph that makes model inputs.
      output_dir: where the average is written.
      planned_epochs: the epochs planned, from which the stride follows.
      examples_per_epoch: the examples an epoch trains on, for the
        validation accuracy's curve.
    """
    super().__init__()
    self._stride = stride(planned_epochs)
    self._planned_epochs = planned_epochs
    self._files = files
    self._blocks = checked_blocks(files, records, checked_records,
                                  tf_transform_output)
    self._records = records
    self._output_dir = output_dir
    self._sums: Optional[np.ndarray] = None
    self._positions: Optional[np.ndarray] = None
    self._labels: Optional[np.ndarray] = None
    # The sample's shard numbers, indices there and sources, from its first
    # pass: where its suspects are found.
    self._places: Optional[Tuple[np.ndarray, ...]] = None
    self._epochs = 0
    self._examples_per_epoch = examples_per_epoch
    self._curve: List[Tuple[float, float]] = []
    self._seconds = 0.0
    self._predict = None

  @property
  def seconds(self) -> float:
    """Seconds spent predicting the sample so far."""
    return self._seconds

  def _probabilities(self, images: tf.Tensor) -> tf.Tensor:
    if self._predict is None:
      model = self.model
      # One trace for every block size (blocks are cut to the sample).
      self._predict = tf.function(
          lambda x: tf.nn.softmax(tf.cast(model(x, training=False),
                                          tf.float32)),
          input_signature=[tf.TensorSpec([None, *images.shape[1:]],
                                         images.dtype)],
          autograph=False)
    return self._predict(images)

  def on_epoch_end(self, epoch, logs=None):
    """Keeps the validation accuracy, and adds the sample's probabilities
    at the epochs scored."""
    if logs and 'val_accuracy' in logs:
      self._curve.append((self._examples_per_epoch * (len(self._curve) + 1),
                          float(logs['val_accuracy'])))
    if ((epoch + 1) % self._stride and epoch + 1 != self._planned_epochs and
        not self.model.stop_training):
      return
    started = time.monotonic()
    rows, positions, labels, places = [], [], [], []
    for (block_positions, shard, index, images, block_labels,
         sources) in self._blocks:
      rows.append(self._probabilities(images).numpy())
      positions.append(block_positions.numpy())
      labels.append(block_labels.numpy())
      if self._places is None:  # The same on every pass: kept from the first.
        places.append((shard.numpy(), index.numpy(), sources.numpy()))
    if not rows:
      return
    rows = np.concatenate(rows)
    if self._sums is None:
      self._sums = np.zeros_like(rows, np.float64)
      self._positions = np.concatenate(positions)
      self._labels = np.concatenate(labels)
      self._places = tuple(np.concatenate(part) for part in zip(*places))
    self._sums += rows
    self._epochs += 1
    self._seconds += time.monotonic() - started

  def on_train_end(self, logs=None):
    """Writes the averaged probabilities, if any epoch was scored."""
    del logs
    if self._epochs:
      probabilities = (self._sums / self._epochs).astype(np.float32)
      stored.write(self._output_dir, stored.EpochProbabilities(
          positions=self._positions, labels=self._labels,
          probabilities=probabilities, epochs=self._epochs,
          records=self._records, seconds=round(self._seconds, 2),
          named=shards.names_of(
              self._files, np.flatnonzero(
                  np.argmax(probabilities, axis=1) != self._labels),
              self._positions, *self._places),
          validation_curve=np.array(self._curve, np.float32).reshape(-1, 2)))
      logging.info('Trainer: probabilities of %d training records for '
                   'LabelCheck, averaged over %d epochs: %.1f s.',
                   len(self._labels), self._epochs, self._seconds)
