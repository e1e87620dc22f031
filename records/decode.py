"""Reading the record format in TensorFlow: raw `image` bytes to pixels.

The Transform graph decodes with this, so training, evaluation and both
serving signatures read records the same way.
"""

from typing import Dict

import tensorflow as tf

from records import features


def decode_images(inputs: Dict[str, tf.Tensor],
                  geometry: features.ImageGeometry) -> tf.Tensor:
  """Raw `image` bytes to uint8 [batch, height, width, channels].

  Fails with a readable message when the records' geometry is not the one
  the model was configured for.
  """
  # Plain Assert ops with string-only messages: tf.debugging.assert_equal
  # wraps its Assert in a tf.cond when the message holds numbers (to format
  # them only on failure), and three conds per batch cost about a third of the
  # graph's CPU time (the transform stage of benchmarks/input_speed.py).
  checks = []
  for key, expected in ((features.HEIGHT_KEY, geometry.height),
                        (features.WIDTH_KEY, geometry.width),
                        (features.CHANNELS_KEY, geometry.channels)):
    checks.append(tf.debugging.Assert(
        tf.reduce_all(tf.equal(inputs[key], expected)),
        [f'image {key} differs from the configured geometry {geometry} '
         '(height x width x channels)']))
  raw = tf.reshape(inputs[features.IMAGE_KEY], [-1])
  checks.append(tf.debugging.Assert(
      tf.reduce_all(tf.equal(tf.strings.length(raw), geometry.num_bytes)),
      [f'image must hold {geometry.num_bytes} bytes: raw uint8 pixels of the '
       f'configured geometry {geometry} (height x width x channels)']))
  with tf.control_dependencies(checks):
    raw = tf.identity(raw)
  pixels = tf.io.decode_raw(raw, tf.uint8)
  return tf.reshape(pixels, [-1, *geometry.shape])
