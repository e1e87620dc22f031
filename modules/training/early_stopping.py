"""Early stopping on the validation split, keeping the best epoch's weights.

Keras's EarlyStopping does the work; this module sets it up from the Budget
and reports what happened. Why and how: docs/training.md, "The budget".
"""

import math
from typing import Any, Dict, Optional

import tf_keras as keras

from modules.training.config import Budget


def callback(budget: Budget,
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


def outcome(stopper: Optional[keras.callbacks.EarlyStopping],
            epochs_planned: int, epochs_run: int,
            split: Optional[str] = None,
            split_records: Optional[int] = None) -> Dict[str, Any]:
  """What happened, for the log (`describe`) and training_plan.json:
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


def without_validation(epochs_planned: int, epochs_run: int) -> Dict[str, Any]:
  """The outcome of a run without a validation split: nothing watched, the
  last epoch's weights kept."""
  return {'enabled': False, 'epochs_planned': epochs_planned,
          'epochs_run': epochs_run, 'stopped_early': False,
          'kept_epoch': epochs_run, 'split': None,
          'why': 'no validation split'}


def describe(result: Dict[str, Any]) -> str:
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
