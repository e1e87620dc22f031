"""Transform module: raw image bytes to normalised float images.

The analyzers learn each channel's mean and variance; the graph is applied
per batch by the Trainer and inside the served model (docs/training.md).
"""

from typing import Any, Dict, Tuple

import numpy as np
import tensorflow as tf
import tensorflow_transform as tft

from records import decode
from records import features


# Outputs beside the model's inputs: the analyzers' values, on every row.
PIXEL_MEAN_KEY = 'pixel_mean'
PIXEL_VARIANCE_KEY = 'pixel_variance'
# Keeps a channel of one value (variance 0) finite.
VARIANCE_EPSILON = 1e-6


def geometry_from_config(custom_config: Dict[str, Any]) -> features.ImageGeometry:
  """Returns the images' geometry from the preprocessing_fn's custom_config.

  The Transform component's executor (components/image_transform.py) read
  it from the Examples, as it read their encoding
  (custom_config[features.IMAGE_ENCODING_PROPERTY]).
  """
  return features.ImageGeometry.from_dict(custom_config)


def normalise(images: tf.Tensor, mean: tf.Tensor,
              variance: tf.Tensor) -> tf.Tensor:
  """Maps uint8 images [N, H, W, C] to model inputs.

  The inputs have per-channel zero mean and unit variance. This is the one
  map from pixels to model inputs. The Transform graph applies it with its
  analyzers (training, evaluation, `serving_default`). `serve_images`
  applies it with their values (modules/training/export.py) on the uint8
  tensors it is sent.

  Args:
    images: uint8 pixels [N, H, W, C].
    mean: each channel's mean [C], of pixels in 0..1.
    variance: each channel's variance [C], of pixels in 0..1.
  """
  pixels = tf.cast(images, tf.float32) / 255.0
  return (pixels - mean) * tf.math.rsqrt(variance + VARIANCE_EPSILON)


def preprocessing_fn(inputs: Dict[str, tf.Tensor],
                     custom_config: Dict[str, Any]) -> Dict[str, tf.Tensor]:
  """Decodes and normalises the images, as tf.Transform's entry point.

  Besides the model's inputs, every row carries the analyzers' values
  (PIXEL_MEAN_KEY, PIXEL_VARIANCE_KEY) for `normalisation_constants`. A
  transform graph's outputs are per row, and this is how the graph says
  what it learnt. pixel_min, pixel_max and source are for data checks only.
  They are neither transformed nor model inputs.

  Args:
    inputs: the parsed raw features of a batch.
    custom_config: the images' geometry and encoding
      (components/image_transform.py).

  Returns:
    The transformed features.
  """
  geometry = geometry_from_config(custom_config)
  images = decode.decode_images(
      inputs, geometry, custom_config[features.IMAGE_ENCODING_PROPERTY])
  # Per-channel statistics over every pixel of the training split.
  pixels = tf.reshape(tf.cast(images, tf.float32) / 255.0,
                      [-1, geometry.channels])
  mean = tft.mean(pixels, reduce_instance_dims=False)
  variance = tft.var(pixels, reduce_instance_dims=False)
  rows = tf.ones_like(tf.reshape(inputs[features.HEIGHT_KEY], [-1, 1]),
                      tf.float32)
  return {
      features.IMAGE_KEY: normalise(images, mean, variance),
      PIXEL_MEAN_KEY: rows * mean,
      PIXEL_VARIANCE_KEY: rows * variance,
      # Serving requests may leave the label out; TFT then drops this output.
      features.LABEL_KEY: tf.reshape(inputs[features.LABEL_KEY], [-1]),
  }


def normalisation_constants(tf_transform_output: tft.TFTransformOutput,
                            record: bytes) -> Tuple[np.ndarray, np.ndarray]:
  """Returns the per-channel (mean, variance) the transform graph uses.

  They are read by transforming `record`, any serialized record of its data.
  """
  raw = tf.io.parse_example(tf.constant([record]),
                            tf_transform_output.raw_feature_spec())
  out = tf_transform_output.transform_features_layer()(raw)
  return out[PIXEL_MEAN_KEY].numpy()[0], out[PIXEL_VARIANCE_KEY].numpy()[0]
