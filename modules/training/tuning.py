"""What `--tune` searches, and how a point of the search becomes training.

`apply` maps a point to the TrainingConfig that both the Tuner's trials and
the Trainer train with. The space: docs/training.md, "Tuning".
"""

import dataclasses
from typing import Any, Dict, Mapping, Optional, Tuple

from modules.training.config import (BACKBONES, MNIST_CNN, SMALL_BN_CNN,  # pylint: disable=g-multiple-import
                                     SMALL_GAP_CNN, VALIDATION_ACCURACY,
                                     TrainingConfig)

# What a trial's score is: the Trainer's validation metric, higher better.
OBJECTIVE = VALIDATION_ACCURACY

LEARNING_RATE = 'learning_rate'
WIDTH = 'width'
DROPOUT = 'dropout'
NETWORK = 'network'

LEARNING_RATE_RANGE = (1e-4, 1e-2)
WIDTHS = (0.5, 1.0, 1.5)
DROPOUT_RANGE = (0.1, 0.6)
DROPOUT_STEP = 0.05


@dataclasses.dataclass(frozen=True)
class NetworkSpace:
  """Which ModelConfig fields a network's `width` and `dropout` set."""
  dropout: Optional[str] = None
  widths: Tuple[str, ...] = ()


SPACES = {
    SMALL_BN_CNN: NetworkSpace(widths=('bn_conv_filters',)),
    MNIST_CNN: NetworkSpace(dropout='dropout',
                            widths=('conv_filters', 'dense_units')),
    SMALL_GAP_CNN: NetworkSpace(dropout='gap_dropout',
                                widths=('gap_conv_filters',)),
    # A pretrained backbone: its head's dropout (its widths are its own).
    **{backbone: NetworkSpace(dropout='head_dropout')
       for backbone in BACKBONES},
}


def space_for(network: str) -> NetworkSpace:
  """Returns the NetworkSpace of `network`.

  Raises:
    ValueError: SPACES has no entry for it.
  """
  try:
    return SPACES[network]
  except KeyError:
    raise ValueError(f'--tune: no search space for the network {network!r} '
                     f'(modules/training/tuning.py SPACES has {sorted(SPACES)})'
                     ) from None


def hyperparameters(network: str):
  """Returns the search space for `network`, as keras_tuner HyperParameters."""
  import keras_tuner  # pylint: disable=g-import-not-at-top
  space = space_for(network)
  hp = keras_tuner.HyperParameters()
  hp.Fixed(NETWORK, network)
  hp.Float(LEARNING_RATE, *LEARNING_RATE_RANGE, sampling='log')
  if space.widths:
    hp.Choice(WIDTH, list(WIDTHS))
  if space.dropout:
    hp.Float(DROPOUT, *DROPOUT_RANGE, step=DROPOUT_STEP)
  return hp


def _scaled(value, width: float):
  if isinstance(value, (tuple, list)):
    return tuple(_scaled(v, width) for v in value)
  return max(1, round(value * width))


def apply(config: TrainingConfig, values: Mapping[str, Any]) -> TrainingConfig:
  """Returns `config` with the values of a point of the space.

  The point sets the network, the learning rate, the widths (scaled by its
  width) and the dropout.

  Args:
    config: the run's training settings.
    values: {hyperparameter name: value} of the point, as a keras_tuner
      trial holds them; the network must be in SPACES.
  """
  network = values[NETWORK]
  space = space_for(network)
  # A backbone is chosen by --backbone, which stays as it is.
  model = {} if network in BACKBONES else {'architecture': network}
  if space.dropout:
    model[space.dropout] = float(values[DROPOUT])
  for field in space.widths:
    model[field] = _scaled(getattr(config.model, field), float(values[WIDTH]))
  return dataclasses.replace(
      config, learning_rate=float(values[LEARNING_RATE]),
      model=dataclasses.replace(config.model, **model))


def tuned_values(hyperparameters_config: Optional[Dict[str, Any]]
                 ) -> Optional[Dict[str, Any]]:
  """Returns the values of the Trainer's fn_args.hyperparameters, or None.

  That is a keras_tuner HyperParameters config, as TFX's Tuner writes the
  best one.
  """
  if not hyperparameters_config:
    return None
  return dict(hyperparameters_config['values'])


def describe(values: Mapping[str, Any]) -> str:
  """Describes a point in one line.

  For example 'network mnist-cnn, learning_rate 0.00123, width 1, dropout
  0.35'.
  """
  return ', '.join(f'{name} {value:.3g}' if isinstance(value, float)
                   else f'{name} {value}' for name, value in values.items())
