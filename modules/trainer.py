"""Trainer module: `run_fn` trains the CNN and exports the serving model.

The exported SavedModel has two signatures, both preprocessing as the
Transform graph does, so serving sees exactly what training saw:
  serving_default  examples: [N] serialized tf.train.Example (label optional),
                   through the whole Transform graph
  serve_images     images:   uint8 [N, H, W] or [N, H, W, C], through its
                   `transform.normalise` with the analyzers' values
and both return probabilities (float32 [N, classes]) and classes (int64 [N]).
The class names are in assets.extra/class_names.txt (line i names class i),
and what was trained, and why, in assets.extra/training_plan.json.
"""

import dataclasses
import json
import math
import os
from typing import Any, Dict, List, Optional

from absl import logging
import tensorflow as tf
import tensorflow_transform as tft
import tf_keras as keras
from tfx.components.trainer.fn_args_utils import FnArgs

from modules import devices
from modules import input_pipeline
from modules import model as model_lib
from modules import progress
from modules import training_plan
from modules import transform
from records import decode
from records import features

SERVING_SIGNATURE = 'serving_default'
IMAGES_SIGNATURE = 'serve_images'
PROBABILITIES = 'probabilities'
CLASSES = 'classes'
# In the serving model's assets.extra: the network, why, and the budget.
TRAINING_PLAN_FILE = 'training_plan.json'


@dataclasses.dataclass(frozen=True)
class TrainingConfig:
  """Training settings; pipeline/configs.py holds their values."""
  budget: training_plan.Budget  # Epochs and learning rate decay.
  batch_size: int
  learning_rate: float
  mixed_precision: bool  # On GPUs.
  model: model_lib.ModelConfig
  input: input_pipeline.InputConfig  # Cache or stream, and their sizes.

  def to_dict(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)

  @classmethod
  def from_dict(cls, d: Dict[str, Any]) -> 'TrainingConfig':
    d = dict(d)
    d['budget'] = training_plan.Budget(**d['budget'])
    d['model'] = model_lib.ModelConfig.from_dict(d['model'])
    d['input'] = input_pipeline.InputConfig(**d['input'])
    return cls(**d)


def class_names_for(train_files: List[str]) -> List[str]:
  """Class names of the Examples artifact that `train_files` belong to."""
  # train_files are <examples uri>/Split-train/*
  examples_uri = os.path.dirname(os.path.dirname(train_files[0]))
  return features.read_class_names(
      os.path.join(examples_uri, features.CLASS_NAMES_FILE))


def image_geometry(
    tf_transform_output: tft.TFTransformOutput) -> features.ImageGeometry:
  """The geometry the transform graph was built for: the data's."""
  return features.ImageGeometry(*tf_transform_output.transformed_feature_spec()[
      features.IMAGE_KEY].shape)


def export_serving_model(model: keras.Model,
                         tf_transform_output: tft.TFTransformOutput,
                         class_names: List[str], export_dir: str,
                         sample_record: bytes,
                         plan: Optional[Dict[str, Any]] = None) -> None:
  """Saves `model` with the Transform graph and both serving signatures.

  sample_record: any serialized record of the data, to read the
  normalisation the transform graph learnt.
  """
  model.tft_layer = tf_transform_output.transform_features_layer()
  raw_spec = tf_transform_output.raw_feature_spec()
  # Requests carry images only: no label, and no pixel_min/pixel_max (they
  # are there for data validation; the model does not read them).
  request_spec = {k: v for k, v in raw_spec.items()
                  if k not in (features.LABEL_KEY, *features.PIXEL_RANGE_KEYS)}
  geometry = image_geometry(tf_transform_output)
  mean, variance = transform.normalisation_constants(tf_transform_output,
                                                     sample_record)

  def classify(inputs):
    logits = model(inputs, training=False)
    probabilities = tf.nn.softmax(tf.cast(logits, tf.float32))
    return {PROBABILITIES: probabilities,
            CLASSES: tf.argmax(probabilities, axis=-1, output_type=tf.int64)}

  @tf.function(input_signature=[
      tf.TensorSpec([None], tf.string, name='examples')])
  def serve_examples(examples):
    transformed = model.tft_layer(tf.io.parse_example(examples, request_spec))
    return classify(transformed[features.IMAGE_KEY])

  @tf.function(input_signature=[
      tf.TensorSpec(None, tf.uint8, name='images')])
  def serve_images(images):
    # The transform's second half on the pixels as sent: no raw bytes.
    return classify(transform.normalise(decode.check_images(images, geometry),
                                        mean, variance))

  model.save(export_dir, save_format='tf', signatures={
      SERVING_SIGNATURE: serve_examples,
      IMAGES_SIGNATURE: serve_images,
  })
  extra = os.path.join(export_dir, 'assets.extra')
  tf.io.gfile.makedirs(extra)
  features.write_class_names(os.path.join(extra, features.CLASS_NAMES_FILE),
                             class_names)
  if plan is not None:
    with tf.io.gfile.GFile(os.path.join(extra, TRAINING_PLAN_FILE), 'w') as f:
      json.dump(plan, f, indent=1, sort_keys=True)


def run_fn(fn_args: FnArgs) -> None:
  """TFX Trainer entry point."""
  config = TrainingConfig.from_dict(fn_args.custom_config['training'])
  tf_transform_output = tft.TFTransformOutput(fn_args.transform_graph_path)
  geometry = image_geometry(tf_transform_output)
  class_names = class_names_for(fn_args.train_files)

  train_plan, eval_plan = input_pipeline.plan_inputs(
      input_pipeline.measure(fn_args.train_files),
      input_pipeline.measure(fn_args.eval_files), config.input)
  for input_plan in (train_plan, eval_plan):
    logging.info('Trainer input: %s.', input_plan.describe())
  plan = training_plan.plan(config.budget, config.model, geometry,
                            train_plan.size.records)
  device_plan = devices.plan(devices.visible_gpus(), config.batch_size,
                             config.mixed_precision)
  logging.info('Trainer: %s; %d classes %s; images %s; %s.',
               device_plan.describe(), len(class_names), class_names, geometry,
               plan.describe())
  device_plan.write(fn_args.model_run_dir)
  keras.mixed_precision.set_global_policy(device_plan.precision)
  strategy = devices.make_strategy(device_plan)

  with strategy.scope():
    model = model_lib.build(plan.architecture, geometry, len(class_names),
                            config.model)
    model.compile(
        optimizer=keras.optimizers.Adam(config.learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name='accuracy')])

  # With TrainArgs(num_steps) the run is that many steps, spread over the
  # planned epochs; without it, each epoch is one pass over the data.
  steps_per_epoch = (math.ceil(fn_args.train_steps / plan.epochs)
                     if fn_args.train_steps else None)
  train = input_pipeline.make_planned_dataset(
      fn_args.train_files, tf_transform_output, device_plan.global_batch_size,
      train_plan, repeat=bool(steps_per_epoch))
  evaluation = input_pipeline.make_planned_dataset(
      fn_args.eval_files, tf_transform_output, device_plan.global_batch_size,
      eval_plan)

  callbacks = [
      keras.callbacks.LearningRateScheduler(
          lambda epoch: config.learning_rate * plan.learning_rate_decay**epoch),
      keras.callbacks.TensorBoard(log_dir=fn_args.model_run_dir,
                                  update_freq='epoch'),
      # Instead of Keras's own output (verbose=0): see progress.py.
      progress.EpochProgress(device_plan.global_batch_size),
  ]
  model.fit(train, epochs=plan.epochs, steps_per_epoch=steps_per_epoch,
            validation_data=evaluation, validation_steps=fn_args.eval_steps,
            callbacks=callbacks, verbose=0)
  export_serving_model(
      model, tf_transform_output, class_names, fn_args.serving_model_dir,
      input_pipeline.first_record(fn_args.train_files),
      {**plan.to_dict(), 'parameters': model.count_params(),
       'geometry': str(geometry), 'augment': config.model.augment,
       'learning_rate': config.learning_rate,
       'batch_size': device_plan.global_batch_size,
       'input': {p.split: p.to_dict() for p in (train_plan, eval_plan)}})
  keras.mixed_precision.set_global_policy('float32')
