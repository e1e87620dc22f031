"""The model the Trainer exports: the SavedModel TF Serving loads, with the
Transform graph inside and signatures taking records, images or image files,
and its TensorFlow Lite files with their accuracy on the eval split.

What each takes and returns: docs/serving.md.
"""

import contextlib
import json
import os
import sys
import tempfile
import time
from typing import (Any, Callable, Dict, Iterator, List, Optional,
                    Sequence, Tuple)

from absl import logging
import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
import tf_keras as keras

from modules import transform
from modules.training import input_pipeline
from records import decode
from records import features
from records import serving_model
from records.serving_model import (CLASS_NAMES, CLASSES, EXTRA_DIR,  # pylint: disable=g-multiple-import
                                   IMAGE_BYTES_SIGNATURE, IMAGES_SIGNATURE,
                                   PROBABILITIES, SERVING_SIGNATURE,
                                   TRAINING_PLAN_FILE)


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
        decode.decode_files(image_bytes, geometry), mean, variance))

  return {SERVING_SIGNATURE: serve_examples, IMAGES_SIGNATURE: serve_images,
          IMAGE_BYTES_SIGNATURE: serve_image_bytes}


TFLITE_EVAL_RECORDS = 2000
TFLITE_BATCH = 200


def pixel_classifier(model: keras.Model, geometry: features.ImageGeometry,
                     mean: np.ndarray, variance: np.ndarray):
  """Returns a concrete function from uint8 [N, H, W, C] to probabilities.

  Args:
    model: the trained network, from normalised images to logits.
    geometry: the images' height, width and channels.
    mean: each channel's mean [C] the transform graph learnt.
    variance: each channel's variance [C] the transform graph learnt.
  """

  @tf.function(autograph=False, input_signature=[
      tf.TensorSpec([None, *geometry.shape], tf.uint8, name='images')])
  def classify(images):
    logits = model(transform.normalise(images, mean, variance), training=False)
    return tf.nn.softmax(tf.cast(logits, tf.float32))

  return classify.get_concrete_function()


@contextlib.contextmanager
def _stderr_to_log() -> Iterator[None]:
  """Sends what C++ writes to file descriptor 2 to the log instead.

  The converter and the interpreter log from C++ straight to file
  descriptor 2, whatever TF_CPP_MIN_LOG_LEVEL says. The pipeline's console
  shows only its own lines.
  """
  sys.stderr.flush()
  saved = os.dup(2)
  with tempfile.TemporaryFile() as captured:
    os.dup2(captured.fileno(), 2)
    try:
      yield
    finally:
      os.dup2(saved, 2)
      os.close(saved)
      captured.seek(0)
      text = captured.read().decode(errors='replace').strip()
      if text:
        logging.info('TensorFlow Lite: %s', text)


def save_classifier(concrete_function, model: keras.Model,
                    directory: str) -> None:
  """Saves `concrete_function` of `model` as the serving_default signature
  of a SavedModel in `directory`, for `convert_to_tflite`.

  Args:
    concrete_function: what `pixel_classifier` returns.
    model: the network the function calls; only its variables are saved.
    directory: the SavedModel's folder.
  """
  # A module holding only the model's variables saves in a fraction of the
  # time the Keras model takes (which traces every layer), for the same
  # files. Saved once for both files: the converter, given the function,
  # would save it again at each conversion.
  holder = tf.Module()
  holder.model_variables = list(model.variables)
  tf.saved_model.save(
      holder, directory, signatures=concrete_function,
      options=tf.saved_model.SaveOptions(save_debug_info=True))


def convert_to_tflite(saved_model_dir: str, quantise: bool) -> bytes:
  """Converts `save_classifier`'s SavedModel to a .tflite file's bytes.

  Args:
    saved_model_dir: where `save_classifier` saved the function.
    quantise: whether to quantise the weights to 8 bits (dynamic range).
  """
  converter = tf.lite.TFLiteConverter.from_saved_model(saved_model_dir)
  converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
  if quantise:
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
  return converter.convert()


def tflite_probabilities(model_content: bytes, images: np.ndarray) -> np.ndarray:
  """Runs a .tflite file's model on uint8 images [N, H, W, C]."""
  # Left unset, the interpreter runs on one core: half the speed on two.
  interpreter = tf.lite.Interpreter(model_content=model_content,
                                    num_threads=os.cpu_count())
  [inputs], [outputs] = (interpreter.get_input_details(),
                         interpreter.get_output_details())
  out = []
  for start in range(0, len(images), TFLITE_BATCH):
    batch = images[start:start + TFLITE_BATCH]
    interpreter.resize_tensor_input(inputs['index'], batch.shape)
    interpreter.allocate_tensors()
    interpreter.set_tensor(inputs['index'], batch)
    interpreter.invoke()
    out.append(interpreter.get_tensor(outputs['index']))
  return np.concatenate(out)


def eval_sample(eval_files: Sequence[str],
                tf_transform_output: tft.TFTransformOutput, mean: np.ndarray,
                variance: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
  """Returns (uint8 pixels, labels) of the first TFLITE_EVAL_RECORDS of the
  eval split.

  They come in a fixed order. They are read as the Trainer reads any split,
  through the Transform graph, which outputs normalised floats. Those are
  un-normalised and rounded, which recovers the uint8 values exactly.

  Args:
    eval_files: the eval split's file patterns.
    tf_transform_output: the Transform graph.
    mean: each channel's mean [C] the transform graph learnt.
    variance: each channel's variance [C] the transform graph learnt.

  Raises:
    ValueError: the eval split holds no records.
  """
  dataset = input_pipeline.make_dataset(eval_files, tf_transform_output,
                                        TFLITE_BATCH, training=False,
                                        cache=False)
  images, labels = [], []
  for batch_images, batch_labels in dataset.unbatch().take(
      TFLITE_EVAL_RECORDS).batch(TFLITE_BATCH):
    images.append(batch_images.numpy())
    labels.append(batch_labels.numpy())
  if not images:
    raise ValueError('the eval split holds no records to measure the '
                     'TFLite models on')
  normalised = np.concatenate(images)
  scale = np.sqrt(variance + transform.VARIANCE_EPSILON)
  pixels = np.round((normalised * scale + mean) * 255.0)
  return (np.clip(pixels, 0, 255).astype(np.uint8),
          np.concatenate(labels).reshape(-1))


def export_tflite(model: keras.Model, geometry: features.ImageGeometry,
                  tf_transform_output: tft.TFTransformOutput,
                  sample_record: bytes, class_names: List[str],
                  export_dir: str,
                  eval_files: Sequence[str]) -> Dict[str, Any]:
  """Writes the TFLite files, the class names and their results (tflite.json).

  They go into export_dir/tflite/.

  Args:
    model: the trained model.
    geometry: the images' geometry.
    tf_transform_output: the Transform graph.
    sample_record: any serialized record, to read the normalisation.
    class_names: the classes' names.
    export_dir: the exported SavedModel's directory.
    eval_files: the eval split's file patterns, to measure accuracy on.

  Returns:
    What tflite.json holds.
  """
  started = time.monotonic()
  mean, variance = transform.normalisation_constants(tf_transform_output,
                                                     sample_record)
  concrete = pixel_classifier(model, geometry, mean, variance)
  pixels, labels = eval_sample(eval_files, tf_transform_output, mean,
                               variance)
  reference = concrete(tf.constant(pixels)).numpy().argmax(axis=1)
  seconds = {'the eval sample and its reference': time.monotonic() - started,
             'conversion': 0.0, 'accuracy check': 0.0}
  directory = os.path.join(export_dir, serving_model.TFLITE_DIR)
  tf.io.gfile.makedirs(directory)
  features.write_class_names(
      os.path.join(directory, features.CLASS_NAMES_FILE), class_names)
  results = {
      'input': {'name': 'images', 'dtype': 'uint8',
                'shape': [-1, *geometry.shape]},
      'output': {'dtype': 'float32', 'shape': [-1, len(class_names)],
                 'what': 'class probabilities'},
      'select_tf_ops': False,
      'eval_records': int(len(labels)),
      'saved_model_accuracy': float((reference == labels).mean()),
      'models': {},
  }
  started = time.monotonic()
  with tempfile.TemporaryDirectory() as saved, _stderr_to_log():
    save_classifier(concrete, model, saved)
    contents = {kind: convert_to_tflite(saved, quantise=kind != 'float32')
                for kind in serving_model.TFLITE_FILES}
  seconds['conversion'] = time.monotonic() - started
  for kind, name in serving_model.TFLITE_FILES.items():
    content = contents[kind]
    with _stderr_to_log():
      started = time.monotonic()
      predicted = tflite_probabilities(content, pixels).argmax(axis=1)
      seconds['accuracy check'] += time.monotonic() - started
    with tf.io.gfile.GFile(os.path.join(directory, name), 'wb') as f:
      f.write(content)
    results['models'][kind] = {
        'file': name,
        'bytes': len(content),
        'accuracy': float((predicted == labels).mean()),
        'agreement_with_saved_model': float((predicted == reference).mean()),
    }
  with tf.io.gfile.GFile(
      os.path.join(directory, serving_model.TFLITE_RESULTS_FILE), 'w') as f:
    json.dump(results, f, indent=1, sort_keys=True)
  logging.info('TensorFlow Lite: %d files, checked on %d eval records: %s.',
               len(serving_model.TFLITE_FILES), len(labels),
               ', '.join(f'{k} {s:.1f} s' for k, s in seconds.items()))
  return results
