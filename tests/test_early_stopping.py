"""Early stopping (modules/training/callbacks.py): training stops when
validation stops improving, the model keeps its best epoch's weights, and
the outcome says so. Tiny Keras models trained for a second."""

import numpy as np
import pytest
import tf_keras as keras

from modules.training import callbacks
from modules.training import model as model_lib
from modules.training.config import Budget


def _data(seed: int = 0):
  """Training labels say x0 > 0; validation labels say the opposite, so
  that the better the model fits, the worse it validates."""
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(512, 4)).astype(np.float32)
  xv = rng.normal(size=(256, 4)).astype(np.float32)
  return x, (x[:, 0] > 0).astype(np.int64), xv, (xv[:, 0] <= 0).astype(np.int64)


def _fit(budget: Budget, epochs: int, validation_agrees: bool = False):
  """(model, its weights at the end of each epoch, history, stopper)."""
  keras.utils.set_random_seed(0)
  x, y, xv, yv = _data()
  if validation_agrees:
    yv = 1 - yv
  model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
  model_lib.steps_without_autograph(model)  # Seconds less of tracing.
  model.compile(keras.optimizers.Adam(0.05),
                keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=[keras.metrics.SparseCategoricalAccuracy(
                    name='accuracy')])
  weights = []
  record = keras.callbacks.LambdaCallback(
      on_epoch_end=lambda epoch, logs: weights.append(model.get_weights()))
  stopper = callbacks.early_stopping(budget, epochs)
  history = model.fit(x, y, batch_size=32, epochs=epochs,
                      validation_data=(xv, yv), verbose=0,
                      callbacks=[record, *([stopper] if stopper else [])])
  return model, weights, history, stopper


def _same(a, b) -> bool:
  return all(np.array_equal(u, v) for u, v in zip(a, b))


def test_validation_getting_worse_stops_training_and_keeps_the_best_epoch():
  budget = Budget(patience=2, warmup_fraction=0.0,
                  early_stopping_metric='val_loss')
  model, weights, history, stopper = _fit(budget, epochs=20)
  losses = history.history['val_loss']
  watched = callbacks.unwatched_epochs(budget, 20)
  best = watched + int(np.argmin(losses[watched:]))
  # Stopped `patience` epochs after the best watched one, before the 20.
  assert len(history.epoch) == best + 1 + budget.patience < 20
  assert _same(model.get_weights(), weights[best])
  assert not _same(model.get_weights(), weights[-1])
  result = callbacks.stopping_outcome(stopper, 20, len(history.epoch))
  assert result['stopped_early'] and result['kept_epoch'] == best + 1
  assert result['kept_value'] == pytest.approx(losses[best])
  assert callbacks.describe_stopping(result) == (
      f'stopped after {len(history.epoch)} of 20 epochs: val_loss had not '
      f'improved for 2 epochs; kept the weights of epoch {best + 1} '
      f'(val_loss {losses[best]:.4f}, the best)')


def test_the_default_watches_validation_accuracy():
  budget = Budget(patience=3, warmup_fraction=0.0)
  model, weights, history, stopper = _fit(budget, epochs=4,
                                          validation_agrees=True)
  accuracy = history.history['val_accuracy']
  assert stopper.monitor == 'val_accuracy'
  result = callbacks.stopping_outcome(stopper, 4, len(history.epoch))
  # The first epoch of the best accuracy, whether or not it stopped.
  assert result['kept_epoch'] == int(np.argmax(accuracy)) + 1
  assert _same(model.get_weights(), weights[result['kept_epoch'] - 1])


def test_epochs_at_a_high_learning_rate_do_not_count():
  # The default schedule's rate is down to half its peak at 60% of it.
  assert callbacks.unwatched_epochs(Budget(warmup_fraction=0.2),
                                    30) == 18
  budget = Budget(patience=2, warmup_fraction=0.0,
                  early_stopping_metric='val_loss')
  assert callbacks.unwatched_epochs(budget, 8) == 4
  _, _, history, stopper = _fit(budget, epochs=8)
  losses = history.history['val_loss']
  # Epochs 1-4 are not judged: 5, the best of the rest (validation only
  # gets worse), is kept, and 2 epochs later training stops.
  assert np.argmin(losses) < 4 and np.argmin(losses[4:]) == 0
  assert len(history.epoch) == 7
  result = callbacks.stopping_outcome(stopper, 8, len(history.epoch))
  assert result['from_epoch'] == 5 and result['kept_epoch'] == 5


def test_patience_zero_trains_every_epoch_and_keeps_the_last():
  budget = Budget(patience=0)
  assert callbacks.early_stopping(budget, 10) is None
  model, weights, history, stopper = _fit(budget, epochs=3)
  assert len(history.epoch) == 3
  assert _same(model.get_weights(), weights[-1])
  result = callbacks.stopping_outcome(stopper, 3, 3)
  assert result == {'enabled': False, 'epochs_planned': 3, 'epochs_run': 3,
                    'stopped_early': False, 'kept_epoch': 3}
  assert callbacks.describe_stopping(result) == (
      'trained 3 of 3 epochs; early stopping off')


def test_the_outcome_names_the_split_it_was_decided_on():
  budget = Budget(patience=3, warmup_fraction=0.0)
  _, _, history, stopper = _fit(budget, epochs=4, validation_agrees=True)
  result = callbacks.stopping_outcome(stopper, 4, len(history.epoch),
                                      'validation', 256)
  assert result['split'] == 'validation' and result['split_records'] == 256
  assert callbacks.describe_stopping(result).endswith(
      f'(val_accuracy {result["kept_value"]:.4f} on validation, the best)')


def test_without_a_validation_split_nothing_is_chosen():
  result = callbacks.stopping_without_validation(5, 5)
  assert not result['enabled'] and result['split'] is None
  assert result['kept_epoch'] == 5
  assert callbacks.describe_stopping(result) == (
      'trained 5 of 5 epochs; no validation split: early stopping off, the '
      'last epoch kept')
