"""The serving model: the trained network with the Transform graph inside.

Its signatures, what they take and what they return: docs/serving.md, "The
pushed model".
"""

import json
import os
from typing import Any, Callable, Dict, List, Optional

import tensorflow as tf
import tensorflow_transform as tft
import tf_keras as keras

from modules import image_files
from modules import transform
from modules.signatures import (CLASS_NAMES, CLASSES, EXTRA_DIR,  # pylint: disable=g-multiple-import
                                IMAGE_BYTES_SIGNATURE, IMAGES_SIGNATURE,
                                PROBABILITIES, SERVING_SIGNATURE,
                                TRAINING_PLAN_FILE)
from records import decode
from records import features


def export_serving_model(model: keras.Model,
                         tf_transform_output: tft.TFTransformOutput,
                         geometry: features.ImageGeometry,
                         class_names: List[str], export_dir: str,
                         sample_record: bytes,
                         plan: Optional[Dict[str, Any]] = None) -> None:
  """Saves `model` with the Transform graph and the serving signatures.

  Args:
    model: The trained network, in float32.
    tf_transform_output: The Transform graph the model trained behind.
    geometry: The images' geometry, the transform graph's.
    class_names: Name of class i at i.
    export_dir: Where the SavedModel goes.
    sample_record: Any serialized record of the data, to read the
      normalisation the transform graph learnt.
    plan: What was trained and why, for assets.extra/training_plan.json.
  """
  # No traces of each layer's call for Keras to revive the model from:
  # clients load the SavedModel (tf.saved_model.load, TFMA) and call its
  # signatures, traced here, so the layer traces were tracing time for
  # nothing.
  model.save(export_dir, save_format='tf', save_traces=False,
             signatures=serving_signatures(model, tf_transform_output,
                                           geometry, class_names,
                                           sample_record))
  extra = os.path.join(export_dir, EXTRA_DIR)
  tf.io.gfile.makedirs(extra)
  features.write_class_names(os.path.join(extra, features.CLASS_NAMES_FILE),
                             class_names)
  if plan is not None:
    with tf.io.gfile.GFile(os.path.join(extra, TRAINING_PLAN_FILE), 'w') as f:
      json.dump(plan, f, indent=1, sort_keys=True)


def serving_signatures(model: keras.Model,
                       tf_transform_output: tft.TFTransformOutput,
                       geometry: features.ImageGeometry,
                       class_names: List[str], sample_record: bytes
                       ) -> Dict[str, Callable[..., Dict[str, tf.Tensor]]]:
  """{signature name: its tf.function}; the Transform layer goes on `model`
  (as `tft_layer`), so that saving the model saves it too.

  Args:
    model: The trained network, in float32.
    tf_transform_output: The Transform graph the model trained behind.
    geometry: The images' geometry, the transform graph's.
    class_names: Name of class i at i.
    sample_record: Any serialized record of the data, to read the
      normalisation the transform graph learnt.
  """
  model.tft_layer = tf_transform_output.transform_features_layer()
  raw_spec = tf_transform_output.raw_feature_spec()
  # Requests carry images only: no label, and no pixel_min/pixel_max or
  # source (they are there for data checks; the model does not read them).
  request_spec = {k: v for k, v in raw_spec.items()
                  if k not in (features.LABEL_KEY, *features.DATA_CHECK_KEYS)}
  mean, variance = transform.normalisation_constants(tf_transform_output,
                                                     sample_record)
  names = tf.constant(class_names)

  def classify(inputs):
    logits = model(inputs, training=False)
    probabilities = tf.nn.softmax(tf.cast(logits, tf.float32))
    classes = tf.argmax(probabilities, axis=-1, output_type=tf.int64)
    return {PROBABILITIES: probabilities, CLASSES: classes,
            CLASS_NAMES: tf.gather(names, classes)}

  # autograph=False: the model and the transform need no conversion, and
  # AutoGraph would convert tf_keras's layers (model.compile_for_training
  # says why) at every trace.
  @tf.function(autograph=False, input_signature=[
      tf.TensorSpec([None], tf.string, name='examples')])
  def serve_examples(examples):
    transformed = model.tft_layer(tf.io.parse_example(examples, request_spec))
    return classify(transformed[features.IMAGE_KEY])

  @tf.function(autograph=False, input_signature=[
      tf.TensorSpec(None, tf.uint8, name='images')])
  def serve_images(images):
    # The transform's second half on the pixels as sent: no raw bytes.
    return classify(transform.normalise(decode.check_images(images, geometry),
                                        mean, variance))

  @tf.function(autograph=False, input_signature=[
      tf.TensorSpec([None], tf.string, name='image_bytes')])
  def serve_image_bytes(image_bytes):
    return classify(transform.normalise(
        image_files.decode_files(image_bytes, geometry), mean, variance))

  return {SERVING_SIGNATURE: serve_examples, IMAGES_SIGNATURE: serve_images,
          IMAGE_BYTES_SIGNATURE: serve_image_bytes}
