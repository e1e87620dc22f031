"""The Trainer's callbacks that watch the epochs: the console's line per
epoch, early stopping on the validation split, and the class probabilities
LabelCheck ranks records by. Why and how: docs/training.md, "Progress on
the console" and "The budget"; docs/label-check.md.
"""

import math
import os
import sys
import time
from typing import Any, Dict, List, Optional, TextIO, Tuple

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
import tf_keras as keras
from tfx.components.trainer.fn_args_utils import FnArgs
import tqdm

from modules.training import devices
from modules.training import input_pipeline
from modules.training.config import (CROSS_FIT_RECORDS_KEY,  # pylint: disable=g-multiple-import
                                     EPOCH_PROBABILITIES_KEY,
                                     VALIDATION_ACCURACY, Budget)
from records import epoch_probabilities as stored
from records import features
from records import shards

# The absl messages of each epoch's line and of training's end (how many
# epochs ran, which one's weights were kept); runs/run_summary.py shows
# them.
EPOCH_LINE = 'Epoch %d/%d: %s'
END_LINE = 'Training: %s.'
# And of each tuning trial's (modules/tuner.py): number, trials, summary.
TRIAL_LINE = 'Tuner trial %d of %d: %s'
# What the Trainer chose that its user should read (network, epochs,
# precision): shown on the console like the epoch lines.
PLAN_LINE = 'Trainer: %s'


def plan_notice(text: str) -> None:
  """Logs what the Trainer chose, as a line the console shows."""
  logging.info(PLAN_LINE, text)


def validation_notice(train_records: int, split: Optional[str],
                      split_records: Optional[int]) -> str:
  """Says in a line which split decides what.

  For example 'trains on train (54,000 records); early stopping and the
  kept epoch on validation (6,000 records)'.

  Args:
    train_records: the records of the training split.
    split: the split validated on; None: no validation split.
    split_records: that split's records.
  """
  trains = f'trains on train ({train_records:,} records)'
  if split is None:
    return (f'{trains}; no validation split: early stopping off, the last '
            'epoch kept')
  return (f'{trains}; early stopping and the kept epoch on {split} '
          f'({split_records:,} records)')


def _metrics(logs: Dict[str, Any]) -> str:
  # Keras's logs hold the learning rate too ('lr'): not a metric.
  return ', '.join(f'{name} {float(value):.4f}'
                   for name, value in logs.items() if name != 'lr')


def epoch_summary(steps: int, examples: int, seconds: float,
                  logs: Dict[str, Any]) -> str:
  """Summarises an epoch in a line.

  For example '30 steps, 960 examples in 2.1s (457 examples/s); loss
  0.6764, ...'.

  Args:
    steps: the epoch's steps.
    examples: steps x batch size, though a pass over the data may end on a
      smaller batch.
    seconds: the epoch's duration.
    logs: Keras's logs of the epoch, its metrics ('lr' left out).
  """
  rate = examples / seconds if seconds > 0 else 0.0
  metrics = _metrics(logs)
  return (f'{steps} steps, {examples:,} examples in {seconds:.1f}s '
          f'({rate:,.0f} examples/s)' + (f'; {metrics}' if metrics else ''))


class EpochProgress(keras.callbacks.Callback):
  """Logs a line per epoch; draws a bar per epoch on a terminal.

  Use with model.fit(verbose=0), which turns Keras's own output off.
  """

  def __init__(self, batch_size: int,
               bar_stream: Optional[TextIO] = None,
               epochs: Optional[int] = None):
    """Makes the callback.

    Args:
      batch_size: examples per step (over all replicas), for examples/s.
      bar_stream: where the bar goes, if it is a terminal (default: stderr).
      epochs: the run's epochs, when this fit trains only the first of them
        (a phase of modules/trainer.py's train_phases); default: the fit's.
    """
    super().__init__()
    self._batch_size = batch_size
    self._epochs = epochs
    stream = sys.stderr if bar_stream is None else bar_stream
    self._bar_stream = stream if _is_terminal(stream) else None
    self._bar = None
    self._steps = 0
    self._started = 0.0
    self.seconds = 0.0  # In all epochs so far.
    # Without a known dataset size Keras learns the steps of an epoch only
    # by running one; later epochs' bars show the first one's count.
    self._known_steps = None

  def _total_epochs(self) -> int:
    return self._epochs or self.params['epochs']

  def on_epoch_begin(self, epoch: int, logs=None) -> None:
    """Starts the epoch's clock, and its bar on a terminal."""
    self._steps = 0
    self._started = time.monotonic()
    if self._bar_stream is not None:
      # A terminal that does not tell its size (0 x 0: pseudo-terminals
      # such as `script`'s or CI's) would get no bar from tqdm, which hides
      # bars below the last of 0 rows: give it 80 x 24.
      known = all(_terminal_size(self._bar_stream))
      self._bar = tqdm.tqdm(
          total=self.params.get('steps') or self._known_steps,
          desc=f'Epoch {epoch + 1}/{self._total_epochs()}', unit='step',
          file=self._bar_stream, leave=False, dynamic_ncols=known,
          ncols=None if known else 80, nrows=None if known else 24,
          bar_format='{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} '
          'steps [{elapsed}<{remaining}{postfix}]')

  def on_train_batch_end(self, batch: int, logs=None) -> None:
    """Counts the step, and moves the bar."""
    self._steps = batch + 1
    if self._bar is not None:
      seconds = time.monotonic() - self._started
      rate = self._steps * self._batch_size / seconds if seconds > 0 else 0
      loss = (logs or {}).get('loss')
      self._bar.set_postfix_str(
          f'{rate:,.0f} examples/s' +
          (f', loss {float(loss):.4f}' if loss is not None else ''),
          refresh=False)
      self._bar.update(1)

  def on_epoch_end(self, epoch: int, logs=None) -> None:
    """Closes the bar and logs the epoch's line."""
    seconds = time.monotonic() - self._started
    self.seconds += seconds
    self._known_steps = self._steps
    if self._bar is not None:
      self._bar.close()
      self._bar = None
    logging.info(EPOCH_LINE, epoch + 1, self._total_epochs(),
                 epoch_summary(self._steps, self._steps * self._batch_size,
                               seconds, logs or {}))

  def on_train_end(self, logs=None) -> None:
    """Closes a bar left open by training that stopped inside an epoch."""
    if self._bar is not None:  # Training stopped inside an epoch.
      self._bar.close()
      self._bar = None


def _terminal_size(stream: TextIO) -> Tuple[int, int]:
  """(columns, lines) of the terminal `stream` writes to; 0 if unknown."""
  try:
    return tuple(os.get_terminal_size(stream.fileno()))
  except (AttributeError, ValueError, OSError):
    return 0, 0


def _is_terminal(stream: TextIO) -> bool:
  try:
    return stream.isatty()
  except (AttributeError, ValueError):  # No isatty, or closed.
    return False


def early_stopping(budget: Budget,
                   epochs: int) -> Optional[keras.callbacks.EarlyStopping]:
  """The callback for a run of `epochs` planned epochs (None: no early
  stopping)."""
  if not budget.patience:
    return None
  return keras.callbacks.EarlyStopping(
      monitor=budget.early_stopping_metric, patience=budget.patience,
      restore_best_weights=True,
      start_from_epoch=unwatched_epochs(budget, epochs))


def unwatched_epochs(budget: Budget, epochs: int) -> int:
  """Epochs (whole ones, rounded down) before the learning rate is down to
  half its peak (model.one_cycle)."""
  warmup = budget.warmup_fraction
  return math.floor((warmup + (1 - warmup) / 2) * epochs)


def stopping_outcome(stopper: Optional[keras.callbacks.EarlyStopping],
                     epochs_planned: int, epochs_run: int,
                     split: Optional[str] = None,
                     split_records: Optional[int] = None) -> Dict[str, Any]:
  """What happened, for the log (`describe_stopping`) and training_plan.json:
  epochs planned and run, whether training stopped early, and which
  epoch's weights the model kept (1-based) with its validation value, and
  the split validated on with its records.

  Args:
    stopper: the early-stopping callback once trained; None: none ran.
    epochs_planned: the epochs planned.
    epochs_run: the epochs trained, over every phase.
    split: the split validated on; None leaves it and its records out.
    split_records: that split's records.
  """
  on = {'split': split, 'split_records': split_records} if split else {}
  if stopper is None:
    return {'enabled': False, 'epochs_planned': epochs_planned,
            'epochs_run': epochs_run, 'stopped_early': False,
            'kept_epoch': epochs_run, **on}
  monitored = stopper.best_weights is not None
  return {
      **on,
      'enabled': True, 'epochs_planned': epochs_planned,
      'epochs_run': epochs_run, 'stopped_early': stopper.stopped_epoch > 0,
      'monitor': stopper.monitor, 'patience': stopper.patience,
      'from_epoch': stopper.start_from_epoch + 1,
      # Nothing monitored (too few epochs): the last epoch's.
      'kept_epoch': stopper.best_epoch + 1 if monitored else epochs_run,
      'kept_value': float(stopper.best) if monitored else None,
  }


def stopping_without_validation(epochs_planned: int,
                                epochs_run: int) -> Dict[str, Any]:
  """The outcome of a run without a validation split: nothing watched, the
  last epoch's weights kept."""
  return {'enabled': False, 'epochs_planned': epochs_planned,
          'epochs_run': epochs_run, 'stopped_early': False,
          'kept_epoch': epochs_run, 'split': None,
          'why': 'no validation split'}


def describe_stopping(result: Dict[str, Any]) -> str:
  """The outcome in a sentence."""
  ran = f'{result["epochs_run"]} of {result["epochs_planned"]} epochs'
  if not result['enabled'] and result.get('why'):
    return (f'trained {ran}; {result["why"]}: early stopping off, the last '
            'epoch kept')
  if not result['enabled']:
    return f'trained {ran}; early stopping off'
  if result['stopped_early']:
    ran = (f'stopped after {ran}: {result["monitor"]} had not improved for '
           f'{result["patience"]} epochs')
  else:
    ran = f'trained all {ran}'
  if result['kept_value'] is None:
    return f'{ran}; kept the last epoch\'s weights (none monitored)'
  on = f' on {result["split"]}' if result.get('split') else ''
  return (f'{ran}; kept the weights of epoch {result["kept_epoch"]} '
          f'({result["monitor"]} {result["kept_value"]:.4f}{on}, the best)')


# A prediction of the sample costs a good part of a training epoch's time:
# a long run is scored at this many of its epochs, spread over it, and a
# short one at every MIN_STRIDE-th (neighbouring epochs' probabilities
# differ little; BENCHMARKS.md, "Label check", has the recall of each).
MAX_SCORED_EPOCHS = 5
MIN_STRIDE = 2


def checked_blocks(files: List[str], records: int, checked_records: int,
                   tf_transform_output: tft.TFTransformOutput,
                   cache: bool = True) -> tf.data.Dataset:
  """Returns blocks of (positions, shard numbers, indices in the shards,
  images, labels, sources) of the records checked.

  Blocks come in file order. With `cache`, the serialized records are
  cached in memory after the first pass, and parsed and transformed again
  on each.

  Args:
    files: the split's record files, in order.
    records: the records in them.
    checked_records: about how many records to check, chosen by a hash of
      their bytes (records/shards.py).
    tf_transform_output: the transform graph that makes model inputs.
    cache: keep the serialized records for the next passes.
  """
  transform = input_pipeline.parse_and_transform(tf_transform_output)
  source_spec = {features.SOURCE_KEY: tf.io.FixedLenFeature([], tf.string,
                                                             b'')}

  @tf.autograph.experimental.do_not_convert
  def parse(serialized: tf.Tensor):
    return (*transform(serialized), tf.io.parse_example(
        serialized, source_spec)[features.SOURCE_KEY])

  sample = shards.sampled_batches(
      files, shards.sample_buckets(records, checked_records))
  blocks = ((sample.cache() if cache else sample)
            .map(tf.autograph.experimental.do_not_convert(
                lambda positions, shard, index, block: (
                    positions, shard, index, *parse(block))),
                 num_parallel_calls=tf.data.AUTOTUNE).prefetch(2))
  # Read to its end once a pass: see shards.without_autotuning.
  return shards.without_autotuning(blocks)


def scoring_stride(planned_epochs: int) -> int:
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
    self._stride = scoring_stride(planned_epochs)
    self._planned_epochs = planned_epochs
    self._files = files
    self._checked_records = checked_records
    self._transform_output = tf_transform_output
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
    if logs and VALIDATION_ACCURACY in logs:
      self._curve.append((self._examples_per_epoch * (len(self._curve) + 1),
                          float(logs[VALIDATION_ACCURACY])))
    if ((epoch + 1) % self._stride and epoch + 1 != self._planned_epochs and
        not self.model.stop_training):
      return
    started = time.monotonic()
    # The places are the same on every pass: kept from the first.
    predicted = self._scores_of(self._blocks, places=self._places is None)
    if predicted is None:
      return
    rows, positions, labels, places = predicted
    if self._sums is None:
      self._sums = np.zeros_like(rows, np.float64)
      self._positions, self._labels, self._places = positions, labels, places
    self._sums += rows
    self._epochs += 1
    self._seconds += time.monotonic() - started

  def _scores_of(self, blocks: tf.data.Dataset, places: bool = True):
    """(probabilities, positions, labels, (shard numbers, indices,
    sources) or None without `places`) of the records of `blocks`, by the
    model as it is; None where they hold none."""
    rows, positions, labels, found = [], [], [], []
    for (block_positions, shard, index, images, block_labels,
         sources) in blocks:
      rows.append(self._probabilities(images).numpy())
      positions.append(block_positions.numpy())
      labels.append(block_labels.numpy())
      if places:
        found.append((shard.numpy(), index.numpy(), sources.numpy()))
    if not rows:
      return None
    return (np.concatenate(rows), np.concatenate(positions),
            np.concatenate(labels),
            tuple(np.concatenate(part) for part in zip(*found))
            if places else None)

  def write_held_out(self, split: str, files: List[str],
                     records: int) -> None:
    """Writes the probabilities of a held-out split's sample, by the
    model's weights now (the epoch training kept), as HELD_OUT_FILE.

    LabelCheck then does not score the split again with the served
    model: it reads them, at the training precision's cost
    (docs/label-check.md).

    Args:
      split: the split's name.
      files: its record files, in order.
      records: the records in them.
    """
    started = time.monotonic()
    buckets = shards.sample_buckets(records, self._checked_records)
    predicted = self._scores_of(checked_blocks(
        files, records, self._checked_records, self._transform_output,
        cache=False))
    if predicted is None:
      return
    probabilities, positions, labels, places = predicted
    seconds = time.monotonic() - started
    self._seconds += seconds
    stored.write(self._output_dir, stored.EpochProbabilities(
        positions=positions, labels=labels, probabilities=probabilities,
        epochs=1, records=records, seconds=round(seconds, 2),
        named=shards.names_of_mistakes(files, probabilities, labels,
                                       positions, *places),
        split=split, checked_buckets=buckets), stored.HELD_OUT_FILE)
    logging.info('Trainer: probabilities of %d %s records for LabelCheck, '
                 'by the kept weights: %.1f s.', len(labels), split, seconds)

  def on_train_end(self, logs=None):
    """Writes the averaged probabilities, if any epoch was scored."""
    del logs
    if self._epochs:
      probabilities = (self._sums / self._epochs).astype(np.float32)
      stored.write(self._output_dir, stored.EpochProbabilities(
          positions=self._positions, labels=self._labels,
          probabilities=probabilities, epochs=self._epochs,
          records=self._records, seconds=round(self._seconds, 2),
          named=shards.names_of_mistakes(self._files, probabilities,
                                         self._labels, self._positions,
                                         *self._places),
          validation_curve=np.array(self._curve, np.float32).reshape(-1, 2)))
      logging.info('Trainer: probabilities of %d training records for '
                   'LabelCheck, averaged over %d epochs: %.1f s.',
                   len(self._labels), self._epochs, self._seconds)


def epoch_scores(fn_args: FnArgs, records: int,
                 tf_transform_output: tft.TFTransformOutput,
                 model_run_dir: str, task: Optional[devices.Task],
                 planned_epochs: int, examples_per_epoch: int, warm: bool
                 ) -> Optional[EpochProbabilities]:
  """The callback that keeps LabelCheck's training-run probabilities, or
  None where none are asked for or on several workers (each would need the
  others to predict).

  They are kept where LabelCheck may cross-fit the split too: it falls
  back on them where fold models would be too weak (docs/label-check.md).
  Not on a warm start, though: its few epochs would spend a large share of
  their time predicting, and its curve says nothing of fold models trained
  from scratch.

  Args:
    fn_args: TFX's FnArgs: the training files, and custom_config's records
      to check (EPOCH_PROBABILITIES_KEY) and to cross-fit
      (CROSS_FIT_RECORDS_KEY).
    records: the records of the training split.
    tf_transform_output: the Transform graph that makes model inputs.
    model_run_dir: where the probabilities are written.
    task: this worker of a cluster, None for a single process.
    planned_epochs: the epochs planned.
    examples_per_epoch: the examples an epoch trains on.
    warm: whether training starts from the served model's weights.
  """
  custom_config = fn_args.custom_config or {}
  checked = custom_config.get(EPOCH_PROBABILITIES_KEY) or 0
  if not checked:
    return None
  if warm and records <= (custom_config.get(CROSS_FIT_RECORDS_KEY) or 0):
    logging.info('Trainer: no training-run probabilities for LabelCheck on '
                 'a warm start: it cross-fits a training split of %d records '
                 'itself.', records)
    return None
  if task:
    logging.info('Trainer: no training-run probabilities for LabelCheck on '
                 '%d workers; the training split is not checked.',
                 task.workers)
    return None
  return EpochProbabilities(
      input_pipeline.list_files(fn_args.train_files), records, checked,
      tf_transform_output, model_run_dir, planned_epochs, examples_per_epoch)
