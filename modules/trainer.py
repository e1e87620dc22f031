"""Trainer module: `run_fn` trains the CNN and exports the serving model.

The exported SavedModel has three signatures, all preprocessing as the
Transform graph does, so serving sees exactly what training saw:
  serving_default    examples:    [N] serialized tf.train.Example (label
                     optional), through the whole Transform graph
  serve_images       images:      uint8 [N, H, W] or [N, H, W, C], through
                     its `transform.normalise` with the analyzers' values
  serve_image_bytes  image_bytes: [N] image files of any size and mode,
                     converted as ImageExampleGen converts image folders
                     (modules/image_files.py), then as serve_images
and all return probabilities (float32 [N, classes]), classes (int64 [N])
and class_names (string [N]). The class names are also in
assets.extra/class_names.txt (line i names class i), what was trained, and
why, in assets.extra/training_plan.json, and TensorFlow Lite files of the
model in tflite/ (modules/tflite_export.py).

Every choice made while training (early stopping, the epoch kept) is made
on the validation split, TFX's EvalArgs split (pipeline/validation.py);
without one (custom_config VALIDATION_SPLIT_KEY None) nothing is chosen.
The eval split is read only by the TensorFlow Lite accuracy check.

On several workers (a TF_CONFIG cluster: Vertex AI's replicas, or the
local processes of modules/local_workers.py) every worker runs run_fn
under MultiWorkerMirroredStrategy, reading its own files of each split;
the chief writes the model and the logs.
"""

import dataclasses
import json
import math
import os
import shutil
import tempfile
from typing import Any, Dict, List, Optional, Tuple

from absl import logging
import tensorflow as tf
import tensorflow_transform as tft
import tf_keras as keras
from tfx.components.trainer.fn_args_utils import FnArgs

from modules import backbones
from modules import cluster
from modules import devices
from modules import early_stopping
from modules import epoch_probabilities
from modules import fine_tune
from modules import image_files
from modules import input_pipeline
from modules import local_workers
from modules import model as model_lib
from modules import progress
from modules import tflite_export
from modules import training_plan
from modules import transform
from modules import tuning
from modules import warm_start
from modules.signatures import (CLASS_NAMES, CLASSES, EXTRA_DIR,  # pylint: disable=unused-import
                                IMAGE_BYTES_SIGNATURE, IMAGES_SIGNATURE,
                                PROBABILITIES, SERVING_SIGNATURE,
                                TRAINING_PLAN_FILE)
from modules.training_config import TrainingConfig
from records import decode
from records import features

# custom_config's entry naming the split validated on (None: none).
VALIDATION_SPLIT_KEY = 'validation_split'
# custom_config: training records whose class probabilities are averaged over
# the epochs for LabelCheck (modules/epoch_probabilities.py); absent or 0: none.
EPOCH_PROBABILITIES_KEY = 'epoch_probabilities_records'
EVAL_SPLIT = 'eval'


def _examples_uri(train_files: List[str]) -> str:
  # train_files are <examples uri>/Split-train/*
  return os.path.dirname(os.path.dirname(train_files[0]))


def class_names_for(train_files: List[str]) -> List[str]:
  """Class names of the Examples artifact that `train_files` belong to."""
  return features.read_class_names(
      os.path.join(_examples_uri(train_files), features.CLASS_NAMES_FILE))


def split_files_for(train_files: List[str], split: str) -> List[str]:
  """The file pattern of split `split` of the Examples artifact that
  `train_files` belong to."""
  return [os.path.join(_examples_uri(train_files), f'Split-{split}', '*')]


def validation_split(fn_args: FnArgs) -> Optional[str]:
  """The split the Trainer (or the Tuner) validates on, None for none: as
  custom_config says (pipeline/validation.py), else its eval files'."""
  if VALIDATION_SPLIT_KEY in (fn_args.custom_config or {}):
    return fn_args.custom_config[VALIDATION_SPLIT_KEY]
  return os.path.basename(os.path.dirname(fn_args.eval_files[0]))[
      len('Split-'):]


def plan_inputs(fn_args: FnArgs, config: TrainingConfig, split: Optional[str]
                ) -> Tuple[input_pipeline.InputPlan,
                           Optional[input_pipeline.InputPlan]]:
  """(The train split's plan, the validation split's or None)."""
  train = input_pipeline.measure(fn_args.train_files)
  if split is None:
    return input_pipeline.plan_split(
        'train', train, config.input, True, config.input.memory_budget), None
  train_plan, validation_plan = input_pipeline.plan_inputs(
      train, input_pipeline.measure(fn_args.eval_files), config.input)
  return train_plan, dataclasses.replace(validation_plan, split=split)


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
  """Saves `model` with the Transform graph and the serving signatures.

  sample_record: any serialized record of the data, to read the
  normalisation the transform graph learnt.
  """
  model.tft_layer = tf_transform_output.transform_features_layer()
  raw_spec = tf_transform_output.raw_feature_spec()
  # Requests carry images only: no label, and no pixel_min/pixel_max or
  # source (they are there for data checks; the model does not read them).
  request_spec = {k: v for k, v in raw_spec.items()
                  if k not in (features.LABEL_KEY, *features.DATA_CHECK_KEYS)}
  geometry = image_geometry(tf_transform_output)
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

  # No traces of each layer's call for Keras to revive the model from:
  # clients load the SavedModel (tf.saved_model.load, TFMA) and call its
  # signatures, traced here, so the layer traces were tracing time for
  # nothing.
  model.save(export_dir, save_format='tf', save_traces=False, signatures={
      SERVING_SIGNATURE: serve_examples,
      IMAGES_SIGNATURE: serve_images,
      IMAGE_BYTES_SIGNATURE: serve_image_bytes,
  })
  extra = os.path.join(export_dir, EXTRA_DIR)
  tf.io.gfile.makedirs(extra)
  features.write_class_names(os.path.join(extra, features.CLASS_NAMES_FILE),
                             class_names)
  if plan is not None:
    with tf.io.gfile.GFile(os.path.join(extra, TRAINING_PLAN_FILE), 'w') as f:
      json.dump(plan, f, indent=1, sort_keys=True)


def float32_copy(model: keras.Model, copy: keras.Model) -> keras.Model:
  """`copy` (the same network, built under the float32 policy) with
  `model`'s weights."""
  # Keras lists trainable weights first: with every layer trainable in
  # both, their weights come in the same order (a frozen layer's would not).
  model.trainable = True
  copy.set_weights(model.get_weights())
  return copy


def run_fn(fn_args: FnArgs) -> None:
  """TFX Trainer entry point.

  Trains in this process, as one of several workers when TF_CONFIG names a
  cluster, or hands training to local worker processes (config.workers > 1
  and no TF_CONFIG: nothing else started any).
  """
  config = TrainingConfig.from_dict(fn_args.custom_config['training'])
  tuned = tuning.tuned_values(fn_args.hyperparameters)  # --tune's winner.
  if tuned:
    config = tuning.apply(config, tuned)
  task = cluster.from_environment()
  if config.workers > 1 and not cluster.has_tf_config():
    check_files_per_worker(fn_args, config.workers,
                           validation_split(fn_args))
    local_workers.train(fn_args, config.workers,
                        config.workers_timeout_seconds)
    return
  # First thing, before any TensorFlow op (see devices.py).
  strategy = (devices.make_multi_worker_strategy(
      config.communication_timeout_seconds) if task else None)
  _train(fn_args, config, task, strategy)


def epoch_scores(fn_args: FnArgs, records: int,
                 tf_transform_output: tft.TFTransformOutput,
                 model_run_dir: str, task: Optional[cluster.Task],
                 planned_epochs: int
                 ) -> Optional[epoch_probabilities.EpochProbabilities]:
  """The callback that keeps LabelCheck's training-run probabilities, or
  None where none are asked for, or on several workers (each would need
  the others to predict)."""
  checked = (fn_args.custom_config or {}).get(EPOCH_PROBABILITIES_KEY) or 0
  if not checked:
    return None
  if task:
    logging.info('Trainer: no training-run probabilities for LabelCheck on '
                 '%d workers; the training split is not checked.',
                 task.workers)
    return None
  return epoch_probabilities.EpochProbabilities(
      input_pipeline.list_files(fn_args.train_files), records, checked,
      tf_transform_output, model_run_dir, planned_epochs)


def check_files_per_worker(fn_args: FnArgs, workers: int,
                           validation: Optional[str]) -> None:
  """Each worker reads its own files of a split: a split of fewer files
  than workers is an error, said before any worker starts."""
  for split, patterns in (('train', fn_args.train_files),
                          *([(validation, fn_args.eval_files)]
                            if validation else [])):
    files = input_pipeline.list_files(patterns)
    if len(files) < workers:
      raise ValueError(
          f'{workers} Trainer workers need at least {workers} files per '
          f'split, and the {split} split has {len(files)} '
          f'({", ".join(patterns)}): each worker reads its own files. Write '
          f'more shards (--num-shards) or train on fewer workers.')


def _shard_by_file(dataset: tf.data.Dataset) -> tf.data.Dataset:
  """Each worker reads its own shards (files) of the split: the dataset
  needs at least as many files as there are workers."""
  options = tf.data.Options()
  options.experimental_distribute.auto_shard_policy = (
      tf.data.experimental.AutoShardPolicy.FILE)
  return dataset.with_options(options)


def _barrier(strategy: tf.distribute.Strategy) -> None:
  """Returns when every worker got here (one all-reduce)."""

  @tf.function
  def one():
    return strategy.run(lambda: tf.constant(1.0))

  strategy.reduce(tf.distribute.ReduceOp.SUM, one(), axis=None)


def _start(fn_args: FnArgs, config: TrainingConfig,
           geometry: features.ImageGeometry,
           class_names: List[str]) -> warm_start.Start:
  """From the served model (fn_args.base_model) with --warm-start if it
  fits, else from scratch."""
  if not config.warm_start:
    return warm_start.cold('')
  architecture, _ = model_lib.choose(config.model, geometry)
  return warm_start.start(
      fn_args.base_model,
      (fn_args.custom_config or {}).get(warm_start.SERVED_FROM_KEY, ''),
      architecture, geometry, class_names, config.model)


def _train(fn_args: FnArgs, config: TrainingConfig,
           task: Optional[cluster.Task],
           strategy: Optional[tf.distribute.Strategy]) -> None:
  """Trains and exports; with `task`, as that worker of its cluster."""
  tf_transform_output = tft.TFTransformOutput(fn_args.transform_graph_path)
  geometry = image_geometry(tf_transform_output)
  class_names = class_names_for(fn_args.train_files)
  validation = validation_split(fn_args)

  train_plan, validation_plan = plan_inputs(fn_args, config, validation)
  input_plans = [p for p in (train_plan, validation_plan) if p]
  for input_plan in input_plans:
    logging.info('Trainer input: %s.', input_plan.describe())
  start = _start(fn_args, config, geometry, class_names)
  plan = training_plan.plan(
      config.budget, config.model, geometry, train_plan.size.records,
      warm_start_from=start.served_from,
      start_why=start.why if config.warm_start else '')
  device_plan = devices.plan(devices.visible_gpus(), config.batch_size,
                             config.mixed_precision,
                             task.workers if task else 1)
  # The chief writes the model and the logs; any other worker writes its
  # copies (saving may need every worker's collective ops) to temporary
  # folders, removed at the end.
  chief = task is None or task.is_chief
  temporary = [] if chief else [tempfile.mkdtemp(prefix='trainer-worker-')
                                for _ in range(2)]
  model_run_dir, serving_model_dir = (
      (fn_args.model_run_dir, fn_args.serving_model_dir) if chief
      else temporary)
  logging.info('Trainer%s: %s; %d classes %s; images %s; %s.',
               f' ({task.describe()})' if task else '',
               device_plan.describe(), len(class_names), class_names, geometry,
               plan.describe())
  if chief:
    device_plan.write(model_run_dir)
    progress.plan_notice(
        f'{plan.architecture} ({plan.why}), {plan.epochs} epochs, '
        f'{device_plan.precision} ({device_plan.precision_why or "GPU"})')
    progress.plan_notice(progress.validation_notice(
        train_plan.size.records, validation,
        validation_plan.size.records if validation_plan else None))
    if config.warm_start:
      progress.plan_notice(plan.describe_start())
  if config.seed is not None:
    keras.utils.set_random_seed(config.seed)
  keras.mixed_precision.set_global_policy(device_plan.precision)
  strategy = strategy or devices.make_strategy(device_plan)

  sample_record = input_pipeline.first_record(fn_args.train_files)
  normalisation = transform.normalisation_constants(tf_transform_output,
                                                    sample_record)

  def build() -> Tuple[keras.Model, Optional[keras.Model]]:
    """(The model, its pretrained backbone or None.)"""
    if config.model.backbone:
      return backbones.build(geometry, len(class_names), config.model,
                             *normalisation)
    return model_lib.build(plan.architecture, geometry, len(class_names),
                           config.model), None

  with strategy.scope():
    model, backbone = build()
    if start.warm:
      start.apply(model)

  # With TrainArgs(num_steps) the run is that many steps, spread over the
  # planned epochs; without it, each epoch is one pass over the data.
  steps_per_epoch = (math.ceil(fn_args.train_steps / plan.epochs)
                     if fn_args.train_steps else None)
  epoch_steps = steps_per_epoch or math.ceil(
      train_plan.size.records / device_plan.global_batch_size)
  train = input_pipeline.make_planned_dataset(
      fn_args.train_files, tf_transform_output, device_plan.global_batch_size,
      train_plan, repeat=bool(steps_per_epoch))
  evaluation = input_pipeline.make_planned_dataset(
      fn_args.eval_files, tf_transform_output, device_plan.global_batch_size,
      validation_plan) if validation_plan else None
  if task:
    check_files_per_worker(fn_args, task.workers, validation)
    train = _shard_by_file(train)
    if evaluation is not None:
      evaluation = _shard_by_file(evaluation)

  # Nothing to choose the epoch on without a validation split.
  stopper = (early_stopping.callback(config.budget, plan.epochs)
             if validation else None)
  scored = epoch_scores(fn_args, train_plan.size.records, tf_transform_output,
                        model_run_dir, task, plan.epochs)
  epochs_run = []

  def fit(epochs: int, initial_epoch: int, learning_rate: float) -> None:
    """Compiles (the trainable weights may have changed) and trains from
    `initial_epoch` up to `epochs`, one learning-rate cycle over them."""
    with strategy.scope():
      model_lib.compile_for_training(
          model, dataclasses.replace(config, learning_rate=learning_rate),
          len(class_names), (epochs - initial_epoch) * epoch_steps)
    callbacks = [
        keras.callbacks.TensorBoard(log_dir=model_run_dir,
                                    update_freq='epoch'),
        # Instead of Keras's own output (verbose=0): see progress.py.
        progress.EpochProgress(device_plan.global_batch_size,
                               epochs=plan.epochs),
        *([stopper] if stopper else []),
        *([scored] if scored else []),
    ]
    history = model.fit(
        train, epochs=epochs, initial_epoch=initial_epoch,
        steps_per_epoch=steps_per_epoch, validation_data=evaluation,
        validation_steps=fn_args.eval_steps if validation else None,
        callbacks=callbacks, verbose=0)
    epochs_run.extend(history.epoch)

  learning_rate = config.learning_rate * plan.learning_rate_factor
  if backbone is None:
    fit(plan.epochs, 0, learning_rate)
  else:  # Two phases: the head, then fine-tuning (fine_tune.py); early
    # stopping watches each, the last one's best weights are kept.
    fine_tune.train(backbone, plan.epochs, config.model, learning_rate, fit)
  if validation:
    stopping = early_stopping.outcome(stopper, plan.epochs, len(epochs_run),
                                      validation, validation_plan.size.records)
  else:
    stopping = early_stopping.without_validation(plan.epochs,
                                                 len(epochs_run))
  logging.info(progress.END_LINE, early_stopping.describe(stopping))
  # Served in float32 whatever it trained in: a bfloat16 graph would run
  # emulated, slowly, on a CPU without bfloat16 arithmetic. On several
  # workers, a copy outside the strategy too: the chief's TensorFlow Lite
  # check runs the model after the others have left, and a distributed
  # model's batch normalisation would wait for them.
  keras.mixed_precision.set_global_policy('float32')
  if device_plan.precision != 'float32' or task:
    model = float32_copy(model, build()[0])
  export_serving_model(
      model, tf_transform_output, class_names, serving_model_dir,
      sample_record,
      {**plan.to_dict(), 'parameters': model.count_params(),
       'geometry': str(geometry),
       'learning_rate': learning_rate,
       'start': 'warm' if plan.warm else 'cold',
       'tuned': tuning.tuned_values(fn_args.hyperparameters),
       **(fine_tune.describe(backbone, plan.epochs, config.model)
          if backbone else {}),
       'batch_size': device_plan.global_batch_size,
       'workers': device_plan.workers,
       'early_stopping': stopping,
       VALIDATION_SPLIT_KEY: validation,
       'records': {p.split: p.size.records for p in input_plans},
       'input': {p.split: p.to_dict() for p in input_plans}})
  if task:
    # No worker returns before the chief's model is written: on Vertex AI
    # each worker's TFX executor checks that the serving model exists.
    _barrier(strategy)
  if chief:  # After the barrier: the chief alone converts, needing no one.
    tflite_export.export(model, geometry, tf_transform_output, sample_record,
                         class_names, serving_model_dir,
                         split_files_for(fn_args.train_files, EVAL_SPLIT))
  for directory in temporary:
    shutil.rmtree(directory)
