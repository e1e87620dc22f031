"""Training a pretrained backbone's model in two phases (`--backbone`).

First the new head alone, then the top of the backbone too, at a lower
learning rate. Why and how: docs/training.md, "Pretrained backbones".
"""

from typing import Callable, Tuple

import tf_keras as keras

from modules.training_config import ModelConfig

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
  """Both phases; a phase of no epochs is left out."""
  head, fine_tuning = phase_epochs(epochs, config)
  backbone.trainable = False
  fit(head, 0, learning_rate)
  if fine_tuning:
    freeze_below(backbone, first_trained_layer(backbone, config))
    fit(epochs, head, learning_rate * config.fine_tune_learning_rate_factor)


def describe(backbone: keras.Model, epochs: int,
             config: ModelConfig) -> dict:
  """What the serving model's training plan records of the two phases."""
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
