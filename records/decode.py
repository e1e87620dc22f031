"""Reading the record format in TensorFlow.

It checks `image` bytes or uint8 tensors against the configured geometry,
alike for training, evaluation and serving. The format: docs/input-data.md.
"""

from typing import Dict, List

import tensorflow as tf

from records import features


def _geometry_checks(heights: tf.Tensor, widths: tf.Tensor,
                     channels: tf.Tensor,
                     geometry: features.ImageGeometry) -> List[tf.Operation]:
  # Plain Assert ops with string-only messages. tf.debugging.assert_equal
  # wraps its Assert in a tf.cond when the message holds numbers, and three
  # conds per batch cost much of the graph's CPU time (BENCHMARKS.md,
  # section 2, the transform stage).
  return [
      tf.debugging.Assert(
          tf.reduce_all(tf.equal(values, expected)),
          [f'image {key} differs from the configured geometry {geometry} '
           '(height x width x channels)'])
      for key, values, expected in (
          (features.HEIGHT_KEY, heights, geometry.height),
          (features.WIDTH_KEY, widths, geometry.width),
          (features.CHANNELS_KEY, channels, geometry.channels))]


def decode_images(inputs: Dict[str, tf.Tensor],
                  geometry: features.ImageGeometry,
                  encoding: str = 'raw') -> tf.Tensor:
  """Decodes `image` bytes to uint8 [batch, height, width, channels].

  Args:
    inputs: parsed features of a batch of records (records/features.py).
    geometry: the geometry the model was configured for.
    encoding: one of features.IMAGE_ENCODINGS.

  Returns:
    The images, with ops that fail with a readable message when the records'
    geometry is another.
  """
  checks = _geometry_checks(inputs[features.HEIGHT_KEY],
                            inputs[features.WIDTH_KEY],
                            inputs[features.CHANNELS_KEY], geometry)
  raw = tf.reshape(inputs[features.IMAGE_KEY], [-1])
  if encoding != 'raw':
    return _decode_files(raw, checks, geometry)
  checks.append(tf.debugging.Assert(
      tf.reduce_all(tf.equal(tf.strings.length(raw), geometry.num_bytes)),
      [f'image must hold {geometry.num_bytes} bytes: raw uint8 pixels of the '
       f'configured geometry {geometry} (height x width x channels)']))
  with tf.control_dependencies(checks):
    raw = tf.identity(raw)
  pixels = tf.io.decode_raw(raw, tf.uint8)
  return tf.reshape(pixels, [-1, *geometry.shape])


def _decode_files(files: tf.Tensor, checks: List[tf.Operation],
                  geometry: features.ImageGeometry) -> tf.Tensor:
  """PNG or JPEG files [batch] to uint8 [batch, height, width, channels]."""
  with tf.control_dependencies(checks):
    files = tf.identity(files)

  def decode(data: tf.Tensor) -> tf.Tensor:
    image = tf.io.decode_image(data, channels=geometry.channels,
                               expand_animations=False)
    shape = tf.shape(image)
    # The file's own size, which the height and width features may belie.
    with tf.control_dependencies(
        _geometry_checks(shape[0], shape[1], shape[2], geometry)):
      return tf.reshape(image, geometry.shape)

  return tf.map_fn(decode, files,
                   fn_output_signature=tf.TensorSpec(geometry.shape, tf.uint8),
                   parallel_iterations=16)  # A batch's decodes side by side.


def check_images(images: tf.Tensor,
                 geometry: features.ImageGeometry) -> tf.Tensor:
  """Checks uint8 [N, H, W] or [N, H, W, C] images against `geometry`.

  Returns:
    The images as [N, H, W, C] of `geometry`, with ops that fail with the
    messages `decode_images` gives for another geometry, or with one naming
    the shapes accepted.
  """
  rank_check = tf.debugging.assert_rank_in(
      images, [3, 4], message='images must be uint8 [N, H, W] or [N, H, W, C]')
  # Checked before anything slices the shape, which would fail less clearly.
  with tf.control_dependencies([rank_check]):
    images = tf.identity(images)
  shape = tf.shape(images)
  images = tf.reshape(images, [shape[0], shape[1], shape[2], -1])
  shape = tf.shape(images)
  with tf.control_dependencies(
      _geometry_checks(shape[1], shape[2], shape[3], geometry)):
    return tf.reshape(images, [-1, *geometry.shape])
