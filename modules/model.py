"""The networks, and which one an image geometry gets.

small-bn-cnn, mnist-cnn and small-gap-cnn, trained from scratch, and the
choice `auto` makes. Why and how: docs/training.md, "The network".
"""

from typing import Tuple

import tensorflow as tf
import tf_keras as keras

from modules.training.config import (AUTO, MNIST_CNN, ModelConfig,  # pylint: disable=g-multiple-import
                                     SMALL_BN_CNN, SMALL_GAP_CNN,
                                     TrainingConfig)
from records import features

# Inputs are normalised per channel (zero mean, unit variance), so their
# range is a few standard deviations; RandomBrightness clips to its value
# range, set this wide so that it shifts and never clips.
_NORMALISED_RANGE = (-10.0, 10.0)
# The classifier: one column of its kernel (and one bias) per class.
LOGITS_LAYER = 'logits'


def choose(config: ModelConfig,
           geometry: features.ImageGeometry) -> Tuple[str, str]:
  """Returns (architecture, why) for images of `geometry`."""
  if config.backbone:
    return config.backbone, 'pretrained backbone, as configured'
  if config.architecture != AUTO:
    return config.architecture, 'as configured'
  pixels = geometry.height * geometry.width
  if geometry.channels == 1 and pixels <= config.small_grey_max_pixels:
    return SMALL_BN_CNN, (f'auto: grey images of {pixels} pixels (at most '
                          f'{config.small_grey_max_pixels})')
  return SMALL_GAP_CNN, (
      'auto: ' + ('colour images' if geometry.channels > 1 else
                  f'images of {pixels} pixels (more than '
                  f'{config.small_grey_max_pixels})'))


def photos(config: ModelConfig, geometry: features.ImageGeometry) -> bool:
  """Whether images of `geometry` are colour photos (auto's backbone)."""
  return (geometry.channels == 3 and
          min(geometry.height, geometry.width) >= config.photo_min_side)


def input_size(config: ModelConfig, geometry: features.ImageGeometry
               ) -> Tuple[Tuple[int, int], str]:
  """Returns ((height, width) a scratch network sees, why)."""
  own = (geometry.height, geometry.width)
  if config.input_size:
    return tuple(config.input_size), 'as configured'
  longer = max(own)
  if longer <= config.scratch_max_side:
    return own, 'the images\' own'
  scale = config.scratch_max_side / longer
  return (max(1, round(own[0] * scale)), max(1, round(own[1] * scale))), (
      f'the images\' {own[0]}x{own[1]} scaled to at most '
      f'{config.scratch_max_side} a side')


def choose_augment(config: ModelConfig,
                   geometry: features.ImageGeometry) -> Tuple[bool, str]:
  """Returns (augment, why) for images of `geometry`."""
  if config.augment is not None:
    return config.augment, 'as configured'
  if geometry.channels > 1:
    return True, 'auto: colour images'
  return False, 'auto: grey images (a flip may change what they show)'


def build(architecture: str, geometry: features.ImageGeometry,
          num_classes: int, config: ModelConfig) -> keras.Model:
  """Builds a network from images [batch, H, W, C] to logits [batch, classes].

  The images are normalised floats, resized in the model to input_size's.
  The last layer computes in float32 whatever the global precision policy,
  so logits and the softmax on them stay numerically safe under mixed
  precision.

  Args:
    architecture: the scratch network: SMALL_BN_CNN, MNIST_CNN or
      SMALL_GAP_CNN.
    geometry: the transformed images' height, width and channels.
    num_classes: the number of classes, one logit each.
    config: the network's settings (input size, augmentation, layers).

  Raises:
    ValueError: `architecture` is not one of the scratch networks.
  """
  inputs = keras.Input(shape=geometry.shape, name=features.IMAGE_KEY)
  size, _ = input_size(config, geometry)
  x = (keras.layers.Resizing(*size, name='resize')(inputs)
       if size != (geometry.height, geometry.width) else inputs)
  augment, _ = choose_augment(config, geometry)
  x = augmentation(config)(x) if augment else x
  if architecture == SMALL_BN_CNN:
    x = _small_bn_cnn_features(x, config)
  elif architecture == MNIST_CNN:
    x = _mnist_cnn_features(x, config)
  elif architecture == SMALL_GAP_CNN:
    x = _small_gap_cnn_features(x, config)
  else:
    raise ValueError(f'unknown architecture {architecture!r}')
  logits = keras.layers.Dense(num_classes, dtype='float32',
                              name=LOGITS_LAYER)(x)
  return keras.Model(inputs, logits, name=architecture.replace('-', '_'))


def one_cycle(peak: float, warmup_fraction: float,
              total_steps: int) -> keras.optimizers.schedules.CosineDecay:
  """Returns the one-cycle learning rate schedule.

  It rises from peak/10 to `peak` over the first `warmup_fraction` of the
  steps, then follows a cosine down to zero at the last step.

  Args:
    peak: the highest learning rate.
    warmup_fraction: the share of the steps spent rising, from 0 to 1.
    total_steps: the training steps the schedule spans.
  """
  warmup = int(warmup_fraction * total_steps)
  return keras.optimizers.schedules.CosineDecay(
      peak / 10, decay_steps=max(total_steps - warmup, 1), alpha=0.0,
      warmup_target=peak, warmup_steps=warmup)


def steps_without_autograph(model: keras.Model) -> None:
  """Has Keras's train and test steps of `model` traced as they are.

  AutoGraph leaves the `keras` package alone but not `tf_keras`. It would
  convert Keras's train and test steps and everything they call, which
  costs seconds of tracing before the first step. Keras's code needs no
  conversion.
  """
  model.train_step = tf.autograph.experimental.do_not_convert(model.train_step)
  model.test_step = tf.autograph.experimental.do_not_convert(model.test_step)


def compile_for_training(model: keras.Model, config: TrainingConfig,
                         num_classes: int, total_steps: int) -> None:
  """Compiles `model` as the Trainer and the Tuner's trials train it.

  That is Adam on the one-cycle schedule, the (smoothed) cross-entropy and
  accuracy.

  Args:
    model: the network, compiled in place.
    config: the training settings: learning rate, warm-up, label smoothing.
    num_classes: the number of classes, for the smoothed loss's labels.
    total_steps: the training steps the one-cycle schedule spans.
  """
  steps_without_autograph(model)
  model.compile(
      optimizer=keras.optimizers.Adam(one_cycle(
          config.learning_rate, config.budget.warmup_fraction, total_steps)),
      loss=loss(num_classes, config.label_smoothing),
      metrics=[keras.metrics.SparseCategoricalAccuracy(name='accuracy')])
  # Adam makes its variables at the first step unless they exist. A
  # tf.function that makes variables is traced twice, so the first epoch
  # would trace the training step once more than needed.
  model.optimizer.build(model.trainable_variables)


def loss(num_classes: int, label_smoothing: float = 0.0):
  """Returns the cross-entropy on logits and integer labels.

  It smooths the labels by `label_smoothing`, which Keras does for one-hot
  labels only.
  """
  if not label_smoothing:
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

  # A function of per-example losses: Model.compile wraps it to reduce
  # them as each distribution strategy needs.
  def smoothed_cross_entropy(labels, logits):
    labels = tf.one_hot(tf.cast(tf.reshape(labels, [-1]), tf.int32),
                        num_classes)
    return keras.losses.categorical_crossentropy(
        labels, logits, from_logits=True, label_smoothing=label_smoothing)
  return smoothed_cross_entropy


def build_cnn(geometry: features.ImageGeometry, num_classes: int,
              config: ModelConfig) -> keras.Model:
  """Builds the classic MNIST CNN.

  Args:
    geometry: the transformed images' height, width and channels.
    num_classes: the number of classes, one logit each.
    config: the network's settings (conv filters, dense units, dropout).
  """
  return build(MNIST_CNN, geometry, num_classes, config)


def _mnist_cnn_features(x, config: ModelConfig):
  for i, filters in enumerate(config.conv_filters):
    x = keras.layers.Conv2D(filters, config.kernel_size, padding='same',
                            activation='relu', name=f'conv{i + 1}')(x)
    x = keras.layers.MaxPool2D(name=f'pool{i + 1}')(x)
  x = keras.layers.Flatten()(x)
  x = keras.layers.Dense(config.dense_units, activation='relu', name='dense')(x)
  return keras.layers.Dropout(config.dropout)(x)


def _small_bn_cnn_features(x, config: ModelConfig):
  for i, filters in enumerate(config.bn_conv_filters, start=1):
    if i > 1 and min(x.shape[1], x.shape[2]) >= 2:
      x = keras.layers.MaxPool2D(name=f'pool{i - 1}')(x)
    # No bias: batch norm's offset does its job.
    x = keras.layers.Conv2D(filters, 3, padding='same', use_bias=False,
                            name=f'conv{i}')(x)
    x = keras.layers.BatchNormalization(
        momentum=config.batch_norm_momentum, name=f'bn{i}')(x)
    x = keras.layers.ReLU(name=f'relu{i}')(x)
  return keras.layers.Flatten()(x)


def _small_gap_cnn_features(x, config: ModelConfig):
  last = len(config.gap_conv_filters)
  for i, filters in enumerate(config.gap_conv_filters, start=1):
    # The first conv halves the image itself: cheaper than a full-size
    # conv and a pool. No bias: batch norm's offset does its job.
    x = keras.layers.Conv2D(filters, 3, strides=2 if i == 1 else 1,
                            padding='same', use_bias=False, name=f'conv{i}')(x)
    x = keras.layers.BatchNormalization(
        momentum=config.batch_norm_momentum, name=f'bn{i}')(x)
    x = keras.layers.ReLU(name=f'relu{i}')(x)
    # Small images stop shrinking.
    if 1 < i < last and min(x.shape[1], x.shape[2]) >= 2:
      x = keras.layers.MaxPool2D(name=f'pool{i}')(x)
  x = keras.layers.GlobalAveragePooling2D(name='gap')(x)
  return keras.layers.Dropout(config.gap_dropout)(x)


def augmentation(config: ModelConfig) -> keras.Sequential:
  """Returns random flips, shifts and brightness, identity outside training."""
  span = _NORMALISED_RANGE[1] - _NORMALISED_RANGE[0]
  return keras.Sequential([
      keras.layers.RandomFlip('horizontal'),
      keras.layers.RandomTranslation(config.augment_shift, config.augment_shift,
                                     fill_mode='reflect'),
      keras.layers.RandomBrightness(config.augment_brightness / span,
                                    value_range=_NORMALISED_RANGE),
  ], name='augmentation')
