"""Pretrained backbones (`--backbone`): a Keras Application and its model.

The model takes the Transform graph's normalised images, as every network
here does. Why and how: docs/training.md, "Pretrained backbones".
"""

import dataclasses
import os
import socket
import tempfile
from typing import Callable, Optional, Tuple

import numpy as np
import tensorflow as tf
import tf_keras as keras

from modules import model as model_lib
from modules import transform
from modules.training.config import (AUTO, BACKBONE_MIN_SIDE, BACKBONE_SIZES,  # pylint: disable=g-multiple-import
                                     DEFAULT_BACKBONE, IMAGENET, ModelConfig,
                                     NO_WEIGHTS)
from records import features


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
      not model_lib.photos(config, geometry)):
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


def input_size(config: ModelConfig) -> Tuple[Tuple[int, int], str]:
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


def build(geometry: features.ImageGeometry, num_classes: int,
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
  size, _ = input_size(config)
  backbone = application(config.backbone, size, weights_file(config))
  inputs = keras.Input(shape=geometry.shape, name=features.IMAGE_KEY)
  augment, _ = model_lib.choose_augment(config, geometry)
  x = model_lib.augmentation(config)(inputs) if augment else inputs
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
