"""Transform module: raw image bytes to normalised float images.

The transform graph becomes part of the served model (both signatures call
it), so serving sees exactly what training saw.

Materialise or not? The Transform component runs with `materialize=False`
and the Trainer applies this graph to each parsed batch in its input_fn.
Measured side by side on full MNIST (benchmarks/transform_choice.py, output
in benchmarks/results/transform_choice.md, 2 cores, batch 128): reading raw
records and transforming per batch fed 145k examples/s cold and 282k/s from
tf.data's cache; the materialised float records fed 95k/s and 197k/s, and
materialising cost another 13.5 s of Transform and 16 MB on disk next to
the 11 MB of raw records. Both are far above what the CNN consumes on a CPU
(~3k examples/s), so the simpler and cheaper path wins: no second copy of
the data, and the transform graph is applied the same way in training and
serving.

The analyzers (`tft.mean`, `tft.var` per channel) earn their place: the
same module normalises MNIST, Fashion-MNIST (a different brightness
distribution) and RGB image folders to zero mean and unit variance per
channel without anyone hard-coding statistics.
"""

from typing import Any, Dict

import tensorflow as tf
import tensorflow_transform as tft

from records import decode
from records import features


def geometry_from_config(custom_config: Dict[str, Any]) -> features.ImageGeometry:
  """The images' geometry, which the Transform component's executor
  (components/image_transform.py) read from the Examples."""
  return features.ImageGeometry.from_dict(custom_config)


def preprocessing_fn(inputs: Dict[str, tf.Tensor],
                     custom_config: Dict[str, Any]) -> Dict[str, tf.Tensor]:
  """tf.Transform entry point (see module docstring).

  pixel_min and pixel_max are for data validation only: not transformed,
  not model inputs.
  """
  geometry = geometry_from_config(custom_config)
  images = tf.cast(decode.decode_images(inputs, geometry),
                   tf.float32) / 255.0
  # Per-channel statistics over every pixel of the training split.
  pixels = tf.reshape(images, [-1, geometry.channels])
  mean = tft.mean(pixels, reduce_instance_dims=False)
  variance = tft.var(pixels, reduce_instance_dims=False)
  return {
      features.IMAGE_KEY: (images - mean) * tf.math.rsqrt(variance + 1e-6),
      # Serving requests may leave the label out; TFT then drops this output.
      features.LABEL_KEY: tf.reshape(inputs[features.LABEL_KEY], [-1]),
  }
