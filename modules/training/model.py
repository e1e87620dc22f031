"""The networks the Trainer trains: built from scratch, or a pretrained Keras
Application with a head of its own, and how each is compiled.

Which one and why: docs/training.md, "The network".
"""

import dataclasses
import os
import socket
import tempfile
from typing import Callable, Optional, Tuple

import numpy as np
import tensorflow as tf
import tf_keras as keras

from modules import transform
from modules.training.config import (AUTO, BACKBONE_MIN_SIDE, BACKBONE_SIZES,  # pylint: disable=g-multiple-import
                                     DEFAULT_BACKBONE, IMAGENET, MNIST_CNN,
                                     ModelConfig, NO_WEIGHTS, SMALL_BN_CNN,
                                     SMALL_GAP_CNN, TrainingConfig)
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


@dataclasses.dataclass(frozen=True)
class Weights:
  """Keras' published ImageNet weights of an application without its top.

  They are the file, where Keras Applications download it from, and its MD5
  (None where Keras checks none).
  """
  file_name: str
  base_url: str
  md5: Optional[str]

  @property
  def url(self) -> str:
    """The file's download URL."""
    return self.base_url + self.file_name


_KERAS_APPLICATIONS = 'https://storage.googleapis.com/tensorflow/keras-applications/'
# Application, module of its preprocess_input, weights: tests/test_backbones.py
# checks these against what each application downloads.
APPLICATIONS = {
    'mobilenet-v3-small': (
        'MobileNetV3Small', 'mobilenet_v3', Weights(
            'weights_mobilenet_v3_small_224_1.0_float_no_top_v2.h5',
            _KERAS_APPLICATIONS + 'mobilenet_v3/',
            'd3e8ec802a04aa4fc771ee12a9a9b836')),
    'mobilenet-v3-large': (
        'MobileNetV3Large', 'mobilenet_v3', Weights(
            'weights_mobilenet_v3_large_224_1.0_float_no_top_v2.h5',
            _KERAS_APPLICATIONS + 'mobilenet_v3/',
            '07fb09a5933dd0c8eaafa16978110389')),
    # Keras picks MobileNetV2's file by input size; the 224 one fits any.
    'mobilenet-v2': (
        'MobileNetV2', 'mobilenet_v2', Weights(
            'mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.0_224_no_top.h5',
            _KERAS_APPLICATIONS + 'mobilenet_v2/', None)),
    'efficientnet-b0': (
        'EfficientNetB0', 'efficientnet', Weights(
            'efficientnetb0_notop.h5',
            'https://storage.googleapis.com/keras-applications/',
            '50bc09e76180e00e4465e1a485ddc09d')),
    'resnet50': (
        'ResNet50', 'resnet50', Weights(
            'resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5',
            _KERAS_APPLICATIONS + 'resnet/',
            '4d473c1dd8becc155b73f8504c6f6626')),
}
assert set(APPLICATIONS) == set(BACKBONE_SIZES)
# Where keras.utils.get_file keeps what it downloads (its default cache).
CACHE_SUBDIR = 'models'
# How long a download may wait for the network at one read.
DOWNLOAD_TIMEOUT_SECONDS = 30


class WeightsError(ValueError):
  """Weights that cannot be had or do not fit.

  The message is one line naming the file or the URL, and the way out;
  `reason` is the cause alone.
  """

  def __init__(self, message: str, reason: str = ''):
    super().__init__(message)
    self.reason = reason or message


def keras_cache_dir() -> str:
  """Returns the folder of Keras' download cache to put a weights file in.

  keras.utils.get_file uses ~/.keras, or /tmp/.keras while ~/.keras is not
  a writable folder; one put in ~/.keras/models is found from then on.
  """
  home = os.path.expanduser('~')
  base = os.path.join(home, '.keras')
  if not (os.access(base, os.W_OK) or
          (not os.path.exists(base) and os.access(home, os.W_OK))):
    base = os.path.join('/tmp', '.keras')  # get_file's own fallback.
  return os.path.join(base, CACHE_SUBDIR)


def imagenet_weights(name: str) -> str:
  """Returns the local path of `name`'s ImageNet weights.

  They are downloaded into Keras' cache unless already there.

  Raises:
    WeightsError: the download failed.
  """
  weights = APPLICATIONS[name][2]
  # get_file has no timeout of its own: a network that swallows packets
  # would hold the run; this bounds each read, not the whole download.
  timeout = socket.getdefaulttimeout()
  socket.setdefaulttimeout(DOWNLOAD_TIMEOUT_SECONDS)
  try:
    return keras.utils.get_file(weights.file_name, weights.url,
                                cache_subdir=CACHE_SUBDIR,
                                file_hash=weights.md5)
  except Exception as e:  # get_file raises a bare Exception for URL errors.
    # Raised while handling urllib's error, whose reason says it best.
    cause = getattr(e.__context__, 'reason', None) or e
    reason = str(cause).splitlines()[0] if str(cause) else type(e).__name__
    raise WeightsError(
        f'cannot download the ImageNet weights of --backbone {name} from '
        f'{weights.url} ({reason}); without network, fetch that file '
        f'elsewhere and pass --weights PATH (or put it in '
        f'{keras_cache_dir()}), or train from scratch with --weights '
        f'{NO_WEIGHTS}', reason=reason) from e
  finally:
    socket.setdefaulttimeout(timeout)


def weights_file(config: ModelConfig) -> Optional[str]:
  """Returns the local weights file the backbone starts from, None if none.

  Raises:
    WeightsError: the file does not exist, or cannot be downloaded.
  """
  weights = config.backbone_weights
  if weights == NO_WEIGHTS:
    return None
  if weights == IMAGENET:
    return imagenet_weights(config.backbone)
  if not tf.io.gfile.exists(weights):
    raise WeightsError(f'--weights {weights}: no such file')
  if '://' not in weights:
    return weights
  # h5py reads local files only: an object store's file is copied first,
  # keeping its name (Keras picks the format by the name's ending).
  local = os.path.join(tempfile.mkdtemp(prefix='backbone-weights-'),
                       os.path.basename(weights))
  tf.io.gfile.copy(weights, local)
  return local


def auto(config: ModelConfig, geometry: features.ImageGeometry
         ) -> Tuple[ModelConfig, str, str]:
  """What `--model auto` trains images of `geometry` from.

  Colour photos (model.photos) start from DEFAULT_BACKBONE's ImageNet
  weights when they are in Keras' cache or can be downloaded now.

  Returns:
    The config (with the backbone, if chosen), why the backbone was chosen
    ('' if not), and why colour photos train from scratch ('' if they do
    not), in a line that says how to provide the weights.
  """
  if (config.backbone or config.architecture != AUTO or
      not photos(config, geometry)):
    return config, '', ''
  chosen = dataclasses.replace(config, backbone=DEFAULT_BACKBONE)
  shape = f'{geometry.height}x{geometry.width}'
  try:
    weights_file(chosen)
  except WeightsError as e:
    weights = APPLICATIONS[DEFAULT_BACKBONE][2]
    return config, '', (
        f'Colour photos of {shape} train from scratch: the ImageNet weights '
        f'of {DEFAULT_BACKBONE} cannot be had ({e.reason}). To start from '
        f'them, download {weights.url} and pass --weights PATH, or put the '
        f'file in {keras_cache_dir()}.')
  return chosen, (f'auto: colour photos of {shape}, from its ImageNet '
                  'weights'), ''


def pretrained_input_size(config: ModelConfig) -> Tuple[Tuple[int, int], str]:
  """Returns ((height, width) the backbone sees, why)."""
  if config.input_size:
    height, width = config.input_size
    why = 'as configured'
  else:
    (height, width), why = BACKBONE_SIZES[config.backbone], 'the backbone\'s own'
  return (max(height, BACKBONE_MIN_SIDE), max(width, BACKBONE_MIN_SIDE)), why


def application(name: str, size: Tuple[int, int],
                weights: Optional[str]) -> keras.Model:
  """Builds Keras Application `name` without its top.

  Args:
    name: the backbone's flag value.
    size: the (height, width) of its RGB input, 0..255 before its
      preprocess_input.
    weights: a weights file to load, or None to keep it as initialised.

  Raises:
    WeightsError: the file holds no weights of this backbone.
  """
  constructor = getattr(keras.applications, APPLICATIONS[name][0])
  backbone = constructor(input_shape=(*size, 3), include_top=False,
                         weights=None)
  if weights:
    try:
      backbone.load_weights(weights)
    except (OSError, ValueError, KeyError) as e:
      first = str(e).strip().splitlines()[0] if str(e).strip() else ''
      raise WeightsError(
          f'--weights {weights}: not weights of --backbone {name} without '
          f'its top ({type(e).__name__}: {first})') from e
  return backbone


def preprocess_input(name: str) -> Callable[[tf.Tensor], tf.Tensor]:
  """Returns the preprocess_input function of backbone `name`."""
  return getattr(keras.applications, APPLICATIONS[name][1]).preprocess_input


def check_weights(config: ModelConfig) -> None:
  """Loads the weights into the backbone now, as the Trainer will.

  Raises:
    WeightsError: what the Trainer would raise later.
  """
  weights = weights_file(config)
  if weights:
    application(config.backbone, BACKBONE_SIZES[config.backbone], weights)


def build_pretrained(geometry: features.ImageGeometry, num_classes: int,
                     config: ModelConfig, mean: np.ndarray,
                     variance: np.ndarray) -> Tuple[keras.Model, keras.Model]:
  """Builds the model around a backbone, as docs/training.md describes.

  The model maps normalised images [batch, H, W, C] to logits [batch,
  classes].

  Args:
    geometry: the images' geometry.
    num_classes: the number of classes.
    config: the model's settings.
    mean: the Transform's per-channel mean.
    variance: the Transform's per-channel variance.

  Returns:
    The model and its backbone.
  """
  size, _ = pretrained_input_size(config)
  backbone = application(config.backbone, size, weights_file(config))
  inputs = keras.Input(shape=geometry.shape, name=features.IMAGE_KEY)
  augment, _ = choose_augment(config, geometry)
  x = augmentation(config)(inputs) if augment else inputs
  std = np.sqrt(np.asarray(variance, np.float64) + transform.VARIANCE_EPSILON)
  x = keras.layers.Rescaling(
      scale=[float(s * 255) for s in std],
      offset=[float(m * 255) for m in np.asarray(mean)], name='pixels')(x)
  if geometry.channels == 1:
    x = keras.layers.Concatenate(name='rgb')([x, x, x])
  if size != (geometry.height, geometry.width):
    x = keras.layers.Resizing(*size, name='resize')(x)
  x = preprocess_input(config.backbone)(x)
  # Pretrained: batch norm in inference mode, always. From scratch there are
  # no statistics to keep: it normalises with the batch's, as in any
  # network trained from scratch (while frozen it runs in inference mode).
  x = (backbone(x) if config.backbone_weights == NO_WEIGHTS
       else backbone(x, training=False))
  x = keras.layers.GlobalAveragePooling2D(name='pool')(x)
  x = keras.layers.Dropout(config.head_dropout, name='head_dropout')(x)
  logits = keras.layers.Dense(num_classes, dtype='float32', name='logits')(x)
  model = keras.Model(inputs, logits,
                      name=config.backbone.replace('-', '_') + '_classifier')
  return model, backbone
