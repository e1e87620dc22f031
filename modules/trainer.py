"""Trainer module: `run_fn` trains the CNN and exports the serving model.

The exported SavedModel has two signatures, both running the Transform
graph first, so serving sees exactly what training saw:
  serving_default  examples: [N] serialized tf.train.Example (label optional)
  serve_images     images:   uint8 [N, H, W] or [N, H, W, C]
and both return probabilities (float32 [N, classes]) and classes (int64 [N]).
The class names are in assets.extra/class_names.txt (line i names class i).
"""

import dataclasses
import math
import os
from typing import Any, Dict, List

from absl import logging
import tensorflow as tf
import tensorflow_transform as tft
import tf_keras as keras
from tfx.components.trainer.fn_args_utils import FnArgs

from modules import devices
from modules import input_pipeline
from modules import model as model_lib
from modules import progress
from records import features

SERVING_SIGNATURE = 'serving_default'
IMAGES_SIGNATURE = 'serve_images'
PROBABILITIES = 'probabilities'
CLASSES = 'classes'
# Every byte value as a one-byte string: gathering pixels from this table and
# joining them turns uint8 images into the raw `image` bytes of the Examples.
_BYTE_TABLE = [bytes([i]) for i in range(256)]


@dataclasses.dataclass(frozen=True)
class TrainingConfig:
  """Training settings; pipeline/configs.py holds their values."""
  epochs: int
  batch_size: int
  learning_rate: float
  learning_rate_decay: float  # The learning rate is multiplied by this per epoch.
  shuffle_buffer: int
  mixed_precision: bool  # On GPUs.
  model: model_lib.ModelConfig

  def to_dict(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)

  @classmethod
  def from_dict(cls, d: Dict[str, Any]) -> 'TrainingConfig':
    d = dict(d)
    d['model'] = model_lib.ModelConfig.from_dict(d['model'])
    return cls(**d)


def class_names_for(train_files: List[str]) -> List[str]:
  """Class names of the Examples artifact that `train_files` belong to."""
  # train_files are <examples uri>/Split-train/*
  examples_uri = os.path.dirname(os.path.dirname(train_files[0]))
  return features.read_class_names(
      os.path.join(examples_uri, features.CLASS_NAMES_FILE))


def _raw_features_from_images(images: tf.Tensor,
                              raw_spec: Dict[str, Any]) -> Dict[str, tf.Tensor]:
  """uint8 images -> the raw features ExampleGen would have written."""
  rank_check = tf.debugging.assert_rank_in(
      images, [3, 4], message='images must be uint8 [N, H, W] or [N, H, W, C]')
  # Checked before anything slices the shape, which would fail less clearly.
  with tf.control_dependencies([rank_check]):
    images = tf.identity(images)
  shape = tf.shape(images)
  images = tf.reshape(images, [shape[0], shape[1], shape[2], -1])
  shape = tf.shape(images, out_type=tf.int64)
  pixels = tf.reshape(tf.cast(images, tf.int32), [shape[0], -1])
  values = {
      features.IMAGE_KEY: tf.strings.reduce_join(
          tf.gather(tf.constant(_BYTE_TABLE), pixels), axis=-1),
      features.HEIGHT_KEY: tf.fill([shape[0]], shape[1]),
      features.WIDTH_KEY: tf.fill([shape[0]], shape[2]),
      features.CHANNELS_KEY: tf.fill([shape[0]], shape[3]),
  }
  # Shape them like parse_example would ([N] + the schema's feature shape).
  return {k: tf.reshape(v, [-1, *raw_spec[k].shape]) for k, v in values.items()}


def export_serving_model(model: keras.Model,
                         tf_transform_output: tft.TFTransformOutput,
                         class_names: List[str], export_dir: str) -> None:
  """Saves `model` with the Transform graph and both serving signatures."""
  model.tft_layer = tf_transform_output.transform_features_layer()
  raw_spec = tf_transform_output.raw_feature_spec()
  # Requests carry images only: no label, and no pixel_min/pixel_max (they
  # are there for data validation; the model does not read them).
  request_spec = {k: v for k, v in raw_spec.items()
                  if k not in (features.LABEL_KEY, *features.PIXEL_RANGE_KEYS)}

  def predict(raw_features):
    transformed = model.tft_layer(raw_features)
    logits = model(transformed[features.IMAGE_KEY], training=False)
    probabilities = tf.nn.softmax(tf.cast(logits, tf.float32))
    return {PROBABILITIES: probabilities,
            CLASSES: tf.argmax(probabilities, axis=-1, output_type=tf.int64)}

  @tf.function(input_signature=[
      tf.TensorSpec([None], tf.string, name='examples')])
  def serve_examples(examples):
    return predict(tf.io.parse_example(examples, request_spec))

  @tf.function(input_signature=[
      tf.TensorSpec(None, tf.uint8, name='images')])
  def serve_images(images):
    return predict(_raw_features_from_images(images, request_spec))

  model.save(export_dir, save_format='tf', signatures={
      SERVING_SIGNATURE: serve_examples,
      IMAGES_SIGNATURE: serve_images,
  })
  extra = os.path.join(export_dir, 'assets.extra')
  tf.io.gfile.makedirs(extra)
  features.write_class_names(os.path.join(extra, features.CLASS_NAMES_FILE),
                             class_names)


def run_fn(fn_args: FnArgs) -> None:
  """TFX Trainer entry point."""
  config = TrainingConfig.from_dict(fn_args.custom_config['training'])
  tf_transform_output = tft.TFTransformOutput(fn_args.transform_graph_path)
  image_shape = tf_transform_output.transformed_feature_spec()[
      features.IMAGE_KEY].shape
  geometry = features.ImageGeometry(*image_shape)
  class_names = class_names_for(fn_args.train_files)

  device_plan = devices.plan(devices.visible_gpus(), config.batch_size,
                             config.mixed_precision)
  logging.info('Trainer: %s; %d classes %s; images %s.',
               device_plan.describe(), len(class_names), class_names, geometry)
  keras.mixed_precision.set_global_policy(device_plan.precision)
  strategy = devices.make_strategy(device_plan)

  with strategy.scope():
    model = model_lib.build_cnn(geometry, len(class_names), config.model)
    model.compile(
        optimizer=keras.optimizers.Adam(config.learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name='accuracy')])

  # With TrainArgs(num_steps) the run is that many steps, spread over the
  # configured epochs; without it, each epoch is one pass over the data.
  steps_per_epoch = (math.ceil(fn_args.train_steps / config.epochs)
                     if fn_args.train_steps else None)
  train = input_pipeline.make_dataset(
      fn_args.train_files, tf_transform_output, device_plan.global_batch_size,
      training=True, shuffle_buffer=config.shuffle_buffer,
      repeat=bool(steps_per_epoch))
  evaluation = input_pipeline.make_dataset(
      fn_args.eval_files, tf_transform_output, device_plan.global_batch_size,
      training=False)

  callbacks = [
      keras.callbacks.LearningRateScheduler(
          lambda epoch: config.learning_rate * config.learning_rate_decay**epoch),
      keras.callbacks.TensorBoard(log_dir=fn_args.model_run_dir,
                                  update_freq='epoch'),
      # Instead of Keras's own output (verbose=0): see progress.py.
      progress.EpochProgress(device_plan.global_batch_size),
  ]
  model.fit(train, epochs=config.epochs, steps_per_epoch=steps_per_epoch,
            validation_data=evaluation, validation_steps=fn_args.eval_steps,
            callbacks=callbacks, verbose=0)
  export_serving_model(model, tf_transform_output, class_names,
                       fn_args.serving_model_dir)
  keras.mixed_precision.set_global_policy('float32')
