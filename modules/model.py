"""The CNN. Defaults are the classic MNIST network (TensorFlow's 'Deep MNIST'
tutorial): conv 5x5x32, max-pool, conv 5x5x64, max-pool, dense 1024,
dropout 0.4, dense classes."""

import dataclasses
from typing import Any, Dict, Tuple

import tf_keras as keras

from records import features


@dataclasses.dataclass(frozen=True)
class ModelConfig:
  """Network size; pipeline/configs.py holds the values."""
  conv_filters: Tuple[int, ...]
  kernel_size: int
  dense_units: int
  dropout: float

  @classmethod
  def from_dict(cls, d: Dict[str, Any]) -> 'ModelConfig':
    return cls(conv_filters=tuple(int(f) for f in d['conv_filters']),
               kernel_size=int(d['kernel_size']),
               dense_units=int(d['dense_units']),
               dropout=float(d['dropout']))


def build_cnn(geometry: features.ImageGeometry, num_classes: int,
              config: ModelConfig) -> keras.Model:
  """Images [batch, H, W, C] (normalised floats) -> logits [batch, classes].

  The last layer computes in float32 whatever the global precision policy,
  so logits and the softmax on them stay numerically safe under mixed
  precision.
  """
  inputs = keras.Input(shape=geometry.shape, name=features.IMAGE_KEY)
  x = inputs
  for i, filters in enumerate(config.conv_filters):
    x = keras.layers.Conv2D(filters, config.kernel_size, padding='same',
                            activation='relu', name=f'conv{i + 1}')(x)
    x = keras.layers.MaxPool2D(name=f'pool{i + 1}')(x)
  x = keras.layers.Flatten()(x)
  x = keras.layers.Dense(config.dense_units, activation='relu', name='dense')(x)
  x = keras.layers.Dropout(config.dropout)(x)
  logits = keras.layers.Dense(num_classes, dtype='float32', name='logits')(x)
  return keras.Model(inputs, logits, name='cnn')
