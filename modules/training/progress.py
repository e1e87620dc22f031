"""Training progress: a live bar per epoch on a terminal, a line per epoch.

`EpochProgress` logs each epoch's line through absl and draws a tqdm bar
only on a terminal. Why: docs/training.md, "Progress on the console".
"""

import os
import sys
import time
from typing import Any, Dict, Optional, TextIO, Tuple

from absl import logging
import tf_keras as keras
import tqdm

# The absl messages of each epoch's line and of training's end (how many
# epochs ran, which one's weights were kept); runners/run_summary.py shows
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
        (a phase of modules/training/fine_tune.py); default: the fit's.
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
