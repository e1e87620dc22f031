"""The networks, and which one an image geometry gets.

mnist-cnn      the classic MNIST network (TensorFlow's 'Deep MNIST'
               tutorial): conv, max-pool, conv, max-pool, dense, dropout,
               dense classes (sizes: ModelConfig). Its Flatten -> Dense
               head grows with the image area: right for small grey images
               only.
small-gap-cnn  blocks of conv 3x3, batch norm and ReLU: the first conv with
               stride 2, a 2x2 max-pool after each later block but the
               last; then global average pooling, dropout and dense
               classes. The same parameter count at any image size, batch
               norm keeps it trainable on colour images whose backgrounds
               vary, and halving the image at every block lets the last
               features see most of it (at 96x96 a shape's whole outline,
               not pieces of it).
'auto' picks mnist-cnn for grey images of at most `mnist_cnn_max_pixels`
pixels and small-gap-cnn for anything larger or in colour.

With `augment`, random flips, shifts and brightness changes (Keras
preprocessing layers) come first; they act only in training, so serving
and evaluation see the images as they are.
"""

from typing import Tuple

import tf_keras as keras

from modules.architectures import AUTO, MNIST_CNN, SMALL_GAP_CNN  # pylint: disable=g-multiple-import
from modules.training_config import ModelConfig
from records import features

# Inputs are normalised per channel (zero mean, unit variance), so their
# range is a few standard deviations; RandomBrightness clips to its value
# range, set this wide so that it shifts and never clips.
_NORMALISED_RANGE = (-10.0, 10.0)


def choose(config: ModelConfig,
           geometry: features.ImageGeometry) -> Tuple[str, str]:
  """(architecture, why) for images of `geometry`."""
  if config.backbone:
    return config.backbone, 'pretrained backbone, as configured'
  if config.architecture != AUTO:
    return config.architecture, 'as configured'
  pixels = geometry.height * geometry.width
  if geometry.channels == 1 and pixels <= config.mnist_cnn_max_pixels:
    return MNIST_CNN, (f'auto: grey images of {pixels} pixels (at most '
                       f'{config.mnist_cnn_max_pixels})')
  return SMALL_GAP_CNN, (
      'auto: ' + ('colour images' if geometry.channels > 1 else
                  f'images of {pixels} pixels (more than '
                  f'{config.mnist_cnn_max_pixels})'))


def choose_augment(config: ModelConfig,
                   geometry: features.ImageGeometry) -> Tuple[bool, str]:
  """(augment, why) for images of `geometry`."""
  if config.augment is not None:
    return config.augment, 'as configured'
  if geometry.channels > 1:
    return True, 'auto: colour images'
  return False, 'auto: grey images (a flip may change what they show)'


def build(architecture: str, geometry: features.ImageGeometry,
          num_classes: int, config: ModelConfig) -> keras.Model:
  """Images [batch, H, W, C] (normalised floats) -> logits [batch, classes].

  The last layer computes in float32 whatever the global precision policy,
  so logits and the softmax on them stay numerically safe under mixed
  precision.
  """
  inputs = keras.Input(shape=geometry.shape, name=features.IMAGE_KEY)
  augment, _ = choose_augment(config, geometry)
  x = augmentation(config)(inputs) if augment else inputs
  if architecture == MNIST_CNN:
    x = _mnist_cnn_features(x, config)
  elif architecture == SMALL_GAP_CNN:
    x = _small_gap_cnn_features(x, config)
  else:
    raise ValueError(f'unknown architecture {architecture!r}')
  logits = keras.layers.Dense(num_classes, dtype='float32', name='logits')(x)
  return keras.Model(inputs, logits, name=architecture.replace('-', '_'))


def build_cnn(geometry: features.ImageGeometry, num_classes: int,
              config: ModelConfig) -> keras.Model:
  """The classic MNIST CNN."""
  return build(MNIST_CNN, geometry, num_classes, config)


def _mnist_cnn_features(x, config: ModelConfig):
  for i, filters in enumerate(config.conv_filters):
    x = keras.layers.Conv2D(filters, config.kernel_size, padding='same',
                            activation='relu', name=f'conv{i + 1}')(x)
    x = keras.layers.MaxPool2D(name=f'pool{i + 1}')(x)
  x = keras.layers.Flatten()(x)
  x = keras.layers.Dense(config.dense_units, activation='relu', name='dense')(x)
  return keras.layers.Dropout(config.dropout)(x)


def _small_gap_cnn_features(x, config: ModelConfig):
  last = len(config.gap_conv_filters)
  for i, filters in enumerate(config.gap_conv_filters, start=1):
    # The first conv halves the image itself: cheaper than a full-size
    # conv and a pool. No bias: batch norm's offset does its job.
    x = keras.layers.Conv2D(filters, 3, strides=2 if i == 1 else 1,
                            padding='same', use_bias=False, name=f'conv{i}')(x)
    x = keras.layers.BatchNormalization(
        momentum=config.gap_batch_norm_momentum, name=f'bn{i}')(x)
    x = keras.layers.ReLU(name=f'relu{i}')(x)
    # Small images stop shrinking.
    if 1 < i < last and min(x.shape[1], x.shape[2]) >= 2:
      x = keras.layers.MaxPool2D(name=f'pool{i}')(x)
  x = keras.layers.GlobalAveragePooling2D(name='gap')(x)
  return keras.layers.Dropout(config.gap_dropout)(x)


def augmentation(config: ModelConfig) -> keras.Sequential:
  """Random flips, shifts and brightness: identity outside training."""
  span = _NORMALISED_RANGE[1] - _NORMALISED_RANGE[0]
  return keras.Sequential([
      keras.layers.RandomFlip('horizontal'),
      keras.layers.RandomTranslation(config.augment_shift, config.augment_shift,
                                     fill_mode='reflect'),
      keras.layers.RandomBrightness(config.augment_brightness / span,
                                    value_range=_NORMALISED_RANGE),
  ], name='augmentation')
