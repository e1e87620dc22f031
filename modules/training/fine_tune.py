"""Training a pretrained backbone's model in two phases (`--backbone`).

First the new head alone, then the top of the backbone too, at a lower
learning rate. Why and how: docs/training.md, "Pretrained backbones".
"""

from typing import Callable, Tuple

import tf_keras as keras

from modules.training.config import ModelConfig

# fit(epochs, initial_epoch, learning_rate): compiles the model for that
# learning rate (the trainable weights changed) and trains up to `epochs`.
Fit = Callable[[int, int, float], None]


def phase_epochs(epochs: int, config: ModelConfig) -> Tuple[int, int]:
  """(head epochs, fine-tuning epochs) of `epochs`."""
  head = min(epochs, max(1, round(epochs * config.head_epochs_fraction)))
  return head, epochs - head


def first_trained_layer(backbone: keras.Model, config: ModelConfig) -> int:
  """Index of the first of the backbone's layers that phase 2 trains."""
  layers = len(backbone.layers)
  return layers - round(layers * config.fine_tune_layers_fraction)


def freeze_below(backbone: keras.Model, first: int) -> None:
  """Layers from `first` on trainable, those before frozen."""
  backbone.trainable = True
  for layer in backbone.layers[:first]:
    layer.trainable = False


def train(backbone: keras.Model, epochs: int, config: ModelConfig,
          learning_rate: float, fit: Fit) -> None:
  """Both phases; a phase of no epochs is left out.

  Args:
    backbone: the model's pretrained backbone: frozen for the head phase,
      its top layers trained in the second.
    epochs: the epochs planned over both phases.
    config: the model's settings: the head's share of the epochs, the
      share of layers fine-tuned, the learning-rate factor.
    learning_rate: the head phase's peak learning rate; fine-tuning's is
      this times config.fine_tune_learning_rate_factor.
    fit: trains the model for a phase (see Fit).
  """
  head, fine_tuning = phase_epochs(epochs, config)
  backbone.trainable = False
  fit(head, 0, learning_rate)
  if fine_tuning:
    freeze_below(backbone, first_trained_layer(backbone, config))
    fit(epochs, head, learning_rate * config.fine_tune_learning_rate_factor)


def describe(backbone: keras.Model, epochs: int,
             config: ModelConfig) -> dict:
  """What the serving model's training plan records of the two phases.

  Args:
    backbone: the model's pretrained backbone.
    epochs: the epochs planned over both phases.
    config: the model's settings: weights and the phases' shares.

  Returns:
    {'backbone': its weights, input size, each phase's epochs, its layers
    and those fine-tuned, the fine-tuning learning-rate factor}.
  """
  head, fine_tuning = phase_epochs(epochs, config)
  first = first_trained_layer(backbone, config)
  return {'backbone': {
      'weights': config.backbone_weights,
      'input_size': list(backbone.input_shape[1:3]),
      'head_epochs': head, 'fine_tuning_epochs': fine_tuning,
      'fine_tuned_layers': len(backbone.layers) - first if fine_tuning else 0,
      'layers': len(backbone.layers),
      'fine_tuning_learning_rate_factor':
          config.fine_tune_learning_rate_factor}}
