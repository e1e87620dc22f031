"""Trainer module: `run_fn` trains the CNN and exports the serving model.

Its steps follow it in their order, the epochs' loop and a backbone's two
phases among them. The serving model holds the Transform graph, three
signatures and TensorFlow Lite files (docs/serving.md; docs/training.md).
"""

import dataclasses
import math
import time
from typing import Any, Dict, List, Optional, Tuple

from absl import logging
import tensorflow as tf
import tf_keras as keras
from tfx.components.trainer.fn_args_utils import FnArgs

from modules import transform
from modules.training import callbacks
from modules.training import config as config_lib
from modules.training import devices
from modules.training import export
from modules.training import input_pipeline
from modules.training import model as model_lib
from modules.training import plan as training_plan
from modules.training import warm_start
from modules.training.config import (VALIDATION_SPLIT_KEY, ModelConfig,  # pylint: disable=g-multiple-import
                                     TrainingConfig)
from modules.training.input_pipeline import (TrainerData, read_data,  # pylint: disable=g-multiple-import
                                             split_files_for)
from modules.training.plan import Run
from records import features


def run_fn(fn_args: FnArgs) -> None:
  """TFX Trainer entry point: plans the run, trains and exports the model.

  Trains in this process, as one worker of a cluster when TF_CONFIG names
  one. Locally, --trainer-workers N runs modules/local_workers.py's run_fn
  instead, which starts the workers.

  Args:
    fn_args: TFX's FnArgs; custom_config['training'] is a TrainingConfig's
      dict (modules/training/config.py).

  Raises:
    ValueError: config.workers > 1, and no TF_CONFIG names a cluster.
  """
  config = training_config(fn_args)
  if config.workers > 1 and not devices.has_tf_config():
    raise ValueError(
        f'{config.workers} Trainer workers need a cluster: a TF_CONFIG (Vertex '
        'AI sets one), or modules.local_workers.run_fn, which starts them '
        'on this machine (local_runner.py --trainer-workers N)')
  clock = PhaseClock()
  task = devices.task_from_environment()
  # First thing, before any TensorFlow op (see devices.py).
  strategy = (devices.make_multi_worker_strategy(
      config.communication_timeout_seconds) if task else None)
  data = read_data(fn_args, config)
  model_config, network_why, scratch_why = model_lib.auto(config.model,
                                                          data.geometry)
  config = dataclasses.replace(config, model=model_config)
  start = start_from(fn_args, config, data)
  plan = training_plan.plan(
      config.budget, config.model, data.geometry,
      data.train_plan.size.records, warm_start_from=start.served_from,
      start_why=start.why if config.warm_start else '', why=network_why)
  device_plan = devices.plan(devices.visible_gpus(), config.batch_size,
                             config.mixed_precision,
                             task.workers if task else 1)
  run = Run(fn_args, config, data, plan, device_plan, task,
            training_plan.outputs_for(fn_args, task))
  log_plan(run, scratch_why)
  seed_and_precision(config, device_plan)
  strategy = strategy or devices.make_strategy(device_plan)
  clock.lap('reading and planning')
  with strategy.scope():
    model, backbone = build_model(config, plan, data)
    if start.warm:
      start.apply(model)
  datasets = make_datasets(run)
  fit = Fit(model, strategy, config, len(data.class_names), datasets,
            make_callbacks(run, datasets.epoch_steps *
                           device_plan.global_batch_size, start.warm))
  clock.lap('model and input')
  trained = train_model(run, fit, backbone)
  if fit.scored and data.validation not in (None, features.EVAL_SPLIT):
    # The eval split is scored by the served model, which the Evaluator
    # judges (its mistakes are the confusion matrix's).
    fit.scored.write_held_out(
        data.validation, input_pipeline.list_files(run.fn_args.eval_files),
        data.validation_plan.size.records)
  scoring = fit.scored.seconds if fit.scored else 0.0
  clock.lap('training outside its epochs', less=fit.epoch_seconds + scoring)
  clock.add("LabelCheck's predictions", scoring)
  model = float32_for_serving(run, model)
  clock.lap('float32 copy')
  export.export_serving_model(
      model, data.transform_output, data.geometry, data.class_names,
      run.outputs.serving_model_dir, data.sample_record,
      training_record(run, model, trained))
  clock.lap('SavedModel export')
  if task:
    # No worker returns before the chief's model is written: on Vertex AI
    # each worker's TFX executor checks that the serving model exists.
    _barrier(strategy)
  if run.outputs.chief:  # After the barrier: the chief alone converts.
    export.export_tflite(model, data.geometry, data.transform_output,
                         data.sample_record, data.class_names,
                         run.outputs.serving_model_dir,
                         split_files_for(fn_args.train_files,
                                         features.EVAL_SPLIT))
    clock.lap('TensorFlow Lite')
  run.outputs.remove_temporary()
  clock.log()


class PhaseClock:
  """Seconds of the Trainer's phases outside its epochs, for the log."""

  def __init__(self):
    self.seconds: Dict[str, float] = {}
    self._last = time.monotonic()

  def add(self, phase: str, seconds: float) -> None:
    """Adds `seconds` to `phase`."""
    self.seconds[phase] = self.seconds.get(phase, 0.0) + seconds

  def lap(self, phase: str, less: float = 0.0) -> None:
    """Adds the seconds since the last lap, less `less`, to `phase`."""
    now = time.monotonic()
    self.add(phase, now - self._last - less)
    self._last = now

  def log(self) -> None:
    """Logs one line: each phase's seconds, and their sum."""
    logging.info('Trainer fixed part: %s; %.1f s in all.',
                 ', '.join(f'{p} {s:.1f} s' for p, s in self.seconds.items()),
                 sum(self.seconds.values()))


def training_config(fn_args: FnArgs) -> TrainingConfig:
  """The run's settings: custom_config's, with --tune's winner if any."""
  config = TrainingConfig.from_dict(fn_args.custom_config['training'])
  tuned = config_lib.tuned_values(fn_args.hyperparameters)
  return config_lib.with_tuned(config, tuned) if tuned else config


def start_from(fn_args: FnArgs, config: TrainingConfig,
               data: TrainerData) -> warm_start.Start:
  """Where training starts: from the served model (fn_args.base_model) with
  --warm-start if it fits, else from scratch.

  Args:
    fn_args: TFX's FnArgs: base_model, and custom_config's served model path
      (warm_start.SERVED_FROM_KEY).
    config: the run's settings: --warm-start and the network's.
    data: the run's inputs: their image geometry and classes.
  """
  if not config.warm_start:
    return warm_start.cold('')
  architecture, _ = model_lib.choose(config.model, data.geometry)
  return warm_start.start(
      fn_args.base_model,
      (fn_args.custom_config or {}).get(warm_start.SERVED_FROM_KEY, ''),
      architecture, data.geometry, data.class_names, config.model)


def log_plan(run: Run, scratch_why: str = '') -> None:
  """Logs the plan; the chief also writes the device plan beside the logs
  and shows the plan on the console, with `scratch_why` (why colour photos
  train from scratch) if any."""
  config, task, data, plan = run.config, run.task, run.data, run.plan
  device_plan, outputs = run.device_plan, run.outputs
  logging.info('Trainer%s: %s; %d classes %s; images %s; %s.',
               f' ({task.describe()})' if task else '',
               device_plan.describe(), len(data.class_names),
               data.class_names, data.geometry, plan.describe())
  if not outputs.chief:
    return
  device_plan.write(outputs.model_run_dir)
  if scratch_why:
    callbacks.plan_notice(scratch_why)
  callbacks.plan_notice(
      f'{plan.architecture} ({plan.why}) at {plan.size_text}, '
      f'{plan.epochs} epochs, '
      f'{device_plan.precision} ({device_plan.precision_why or "GPU"})')
  callbacks.plan_notice(callbacks.validation_notice(
      data.train_plan.size.records, data.validation,
      data.validation_plan.size.records if data.validation_plan else None))
  if config.warm_start:
    callbacks.plan_notice(plan.describe_start())


def seed_and_precision(config: TrainingConfig,
                       device_plan: devices.DevicePlan) -> None:
  """Seeds Keras (--seed) and sets the precision the devices train in."""
  if config.seed is not None:
    keras.utils.set_random_seed(config.seed)
  keras.mixed_precision.set_global_policy(device_plan.precision)


def build_model(config: TrainingConfig, plan: training_plan.TrainingPlan,
                data: TrainerData
                ) -> Tuple[keras.Model, Optional[keras.Model]]:
  """(The planned network, its pretrained backbone or None.)

  Args:
    config: the run's settings, with the network chosen.
    plan: the training plan, with the scratch network's architecture.
    data: the run's inputs: geometry, classes and a record to read the
      transform's normalisation from (for a backbone).
  """
  if config.model.backbone:
    return model_lib.build_pretrained(
        data.geometry, len(data.class_names), config.model,
        *transform.normalisation_constants(data.transform_output,
                                           data.sample_record))
  return model_lib.build(plan.architecture, data.geometry,
                         len(data.class_names), config.model), None


@dataclasses.dataclass(frozen=True)
class Datasets:
  """The batches model.fit reads, and the steps of an epoch."""
  train: tf.data.Dataset
  validation: Optional[tf.data.Dataset]
  # With TrainArgs(num_steps): each epoch's steps, the training data
  # repeating; None: an epoch is one pass over the training data.
  steps_per_epoch: Optional[int]
  epoch_steps: int  # Either way: the learning-rate schedule's unit.
  validation_steps: Optional[int]


def make_datasets(run: Run) -> Datasets:
  """The training and validation batches, each worker reading its own
  files of each split, in a fixed order in a seeded run."""
  fn_args, data, task = run.fn_args, run.data, run.task
  batch_size, epochs = run.device_plan.global_batch_size, run.plan.epochs
  # With TrainArgs(num_steps) the run is that many steps, spread over the
  # planned epochs; without it, each epoch is one pass over the data.
  steps_per_epoch = (math.ceil(fn_args.train_steps / epochs)
                     if fn_args.train_steps else None)
  train = input_pipeline.make_planned_dataset(
      fn_args.train_files, data.transform_output, batch_size,
      data.train_plan, repeat=bool(steps_per_epoch),
      ordered=run.config.seed is not None)
  validation = input_pipeline.make_planned_dataset(
      fn_args.eval_files, data.transform_output, batch_size,
      data.validation_plan) if data.validation_plan else None
  if task:
    input_pipeline.check_files_per_worker(fn_args, task.workers,
                                          data.validation)
    train = _shard_by_file(train)
    if validation is not None:
      validation = _shard_by_file(validation)
  return Datasets(
      train, validation, steps_per_epoch,
      steps_per_epoch or math.ceil(data.train_plan.size.records / batch_size),
      fn_args.eval_steps if data.validation else None)


def make_callbacks(run: Run, examples_per_epoch: int,
                   warm: bool) -> List[keras.callbacks.Callback]:
  """TensorBoard's logs, the console's progress, early stopping on the
  validation split, and LabelCheck's training-run probabilities.

  Args:
    run: the run's settings, data, plan and outputs.
    examples_per_epoch: the examples an epoch trains on, for the
      probabilities' validation-accuracy curve.
    warm: whether training starts from the served model's weights; then no
      probabilities are kept where LabelCheck cross-fits.
  """
  config, plan, data, outputs = run.config, run.plan, run.data, run.outputs
  # Nothing to choose the epoch on without a validation split.
  stopper = (callbacks.early_stopping(config.budget, plan.epochs)
             if data.validation else None)
  scored = callbacks.epoch_scores(
      run.fn_args, data.train_plan.size.records, data.transform_output,
      outputs.model_run_dir, run.task, plan.epochs, examples_per_epoch, warm)
  return [
      keras.callbacks.TensorBoard(log_dir=outputs.model_run_dir,
                                  update_freq='epoch'),
      # Instead of Keras's own output (verbose=0): see EpochProgress.
      callbacks.EpochProgress(run.device_plan.global_batch_size,
                              epochs=plan.epochs),
      *([stopper] if stopper else []),
      *([scored] if scored else []),
  ]


@dataclasses.dataclass
class Fit:
  """Trains the model over a range of epochs at a peak learning rate: a
  phase of `train_phases`, or the whole run without a backbone."""
  model: keras.Model
  strategy: tf.distribute.Strategy
  config: TrainingConfig
  num_classes: int
  datasets: Datasets
  callbacks: List[keras.callbacks.Callback]
  epochs_run: int = 0  # Over every call.

  @property
  def epoch_seconds(self) -> float:
    """Seconds in the epochs so far, as their lines give them."""
    return next(c.seconds for c in self.callbacks
                if isinstance(c, callbacks.EpochProgress))

  @property
  def scored(self) -> Optional[callbacks.EpochProbabilities]:
    """LabelCheck's training-run probabilities callback, None without one."""
    return next((c for c in self.callbacks
                 if isinstance(c, callbacks.EpochProbabilities)),
                None)

  @property
  def stopper(self) -> Optional[keras.callbacks.EarlyStopping]:
    """The early-stopping callback, None without one."""
    return next((c for c in self.callbacks
                 if isinstance(c, keras.callbacks.EarlyStopping)), None)

  def __call__(self, epochs: int, initial_epoch: int,
               learning_rate: float) -> None:
    """Compiles (the trainable weights may have changed) and trains from
    `initial_epoch` up to `epochs`, one learning-rate cycle over them."""
    with self.strategy.scope():
      model_lib.compile_for_training(
          self.model,
          dataclasses.replace(self.config, learning_rate=learning_rate),
          self.num_classes,
          (epochs - initial_epoch) * self.datasets.epoch_steps)
    history = self.model.fit(
        self.datasets.train, epochs=epochs, initial_epoch=initial_epoch,
        steps_per_epoch=self.datasets.steps_per_epoch,
        validation_data=self.datasets.validation,
        validation_steps=self.datasets.validation_steps,
        callbacks=self.callbacks, verbose=0)
    self.epochs_run += len(history.epoch)


def train_model(run: Run, fit: Fit, backbone: Optional[keras.Model]
                ) -> Dict[str, Any]:
  """The training step: trains the model for the plan's epochs.

  With a pretrained backbone, in two phases: the head, then fine-tuning
  (`train_phases`); early stopping watches each (on the
  validation split, if any), and the last one's best weights are kept.

  Args:
    run: The run's settings, data and plan.
    fit: Trains the model over a range of epochs at a learning rate.
    backbone: The model's pretrained backbone, or None.

  Returns:
    What training did, for training_plan.json: the peak learning rate, the
    early-stopping outcome and, with a backbone, its phases.
  """
  config, plan = run.config, run.plan
  validation_plan = run.data.validation_plan
  learning_rate = config.learning_rate * plan.learning_rate_factor
  if backbone is None:
    fit(plan.epochs, 0, learning_rate)
  else:
    train_phases(backbone, plan.epochs, config.model, learning_rate, fit)
  if validation_plan:
    stopping = callbacks.stopping_outcome(
        fit.stopper, plan.epochs, fit.epochs_run, validation_plan.split,
        validation_plan.size.records)
  else:
    stopping = callbacks.stopping_without_validation(plan.epochs,
                                                     fit.epochs_run)
  logging.info(callbacks.END_LINE, callbacks.describe_stopping(stopping))
  return {'learning_rate': learning_rate, 'early_stopping': stopping,
          **(describe_phases(backbone, plan.epochs, config.model)
             if backbone else {})}


def phase_epochs(epochs: int, config: ModelConfig) -> Tuple[int, int]:
  """(head epochs, fine-tuning epochs) of `epochs`."""
  head = min(epochs, max(1, round(epochs * config.head_epochs_fraction)))
  return head, epochs - head


def first_trained_layer(backbone: keras.Model, config: ModelConfig) -> int:
  """Index of the first of the backbone's layers that phase 2 trains."""
  layers = len(backbone.layers)
  return layers - round(layers * config.fine_tune_layers_fraction)


def freeze_below(backbone: keras.Model, first: int) -> None:
  """Layers from `first` on trainable, those before frozen."""
  backbone.trainable = True
  for layer in backbone.layers[:first]:
    layer.trainable = False


def train_phases(backbone: keras.Model, epochs: int, config: ModelConfig,
                 learning_rate: float, fit: Fit) -> None:
  """Both phases; a phase of no epochs is left out.

  Args:
    backbone: the model's pretrained backbone: frozen for the head phase,
      its top layers trained in the second.
    epochs: the epochs planned over both phases.
    config: the model's settings: the head's share of the epochs, the
      share of layers fine-tuned, the learning-rate factor.
    learning_rate: the head phase's peak learning rate; fine-tuning's is
      this times config.fine_tune_learning_rate_factor.
    fit: trains the model for a phase (see Fit).
  """
  head, fine_tuning = phase_epochs(epochs, config)
  backbone.trainable = False
  fit(head, 0, learning_rate)
  if fine_tuning:
    freeze_below(backbone, first_trained_layer(backbone, config))
    fit(epochs, head, learning_rate * config.fine_tune_learning_rate_factor)


def describe_phases(backbone: keras.Model, epochs: int,
                    config: ModelConfig) -> dict:
  """What the serving model's training plan records of the two phases.

  Args:
    backbone: the model's pretrained backbone.
    epochs: the epochs planned over both phases.
    config: the model's settings: weights and the phases' shares.

  Returns:
    {'backbone': its weights, input size, each phase's epochs, its layers
    and those fine-tuned, the fine-tuning learning-rate factor}.
  """
  head, fine_tuning = phase_epochs(epochs, config)
  first = first_trained_layer(backbone, config)
  return {'backbone': {
      'weights': config.backbone_weights,
      'input_size': list(backbone.input_shape[1:3]),
      'head_epochs': head, 'fine_tuning_epochs': fine_tuning,
      'fine_tuned_layers': len(backbone.layers) - first if fine_tuning else 0,
      'layers': len(backbone.layers),
      'fine_tuning_learning_rate_factor':
          config.fine_tune_learning_rate_factor}}


def float32_for_serving(run: Run, model: keras.Model) -> keras.Model:
  """The trained model in float32, outside any strategy, for serving."""
  # Served in float32 whatever it trained in: a bfloat16 graph would run
  # emulated, slowly, on a CPU without bfloat16 arithmetic. On several
  # workers, a copy outside the strategy too: the chief's TensorFlow Lite
  # check runs the model after the others have left, and a distributed
  # model's batch normalisation would wait for them.
  keras.mixed_precision.set_global_policy('float32')
  if run.device_plan.precision == 'float32' and not run.task:
    return model
  return float32_copy(model, build_model(run.config, run.plan, run.data)[0])


def float32_copy(model: keras.Model, copy: keras.Model) -> keras.Model:
  """`copy` (the same network, built under the float32 policy) with
  `model`'s weights."""
  # Keras lists trainable weights first: with every layer trainable in
  # both, their weights come in the same order (a frozen layer's would not).
  model.trainable = True
  copy.set_weights(model.get_weights())
  return copy


def training_record(run: Run, model: keras.Model,
                    trained: Dict[str, Any]) -> Dict[str, Any]:
  """What was trained and why: the serving model's training_plan.json.

  Args:
    run: the run's plan, data and device plan.
    model: the trained model, to count its parameters.
    trained: what train_model returns: learning rate, early stopping and
      fine-tuning phases.
  """
  plan, data, device_plan = run.plan, run.data, run.device_plan
  return {**plan.to_dict(), 'parameters': model.count_params(),
          'geometry': str(data.geometry),
          'start': 'warm' if plan.warm else 'cold',
          'tuned': config_lib.tuned_values(run.fn_args.hyperparameters),
          'batch_size': device_plan.global_batch_size,
          'workers': device_plan.workers,
          VALIDATION_SPLIT_KEY: data.validation,
          'records': {p.split: p.size.records for p in data.input_plans},
          'input': {p.split: p.to_dict() for p in data.input_plans},
          **trained}


def _barrier(strategy: tf.distribute.Strategy) -> None:
  """Returns when every worker got here (one all-reduce)."""

  @tf.function
  def one():
    return strategy.run(lambda: tf.constant(1.0))

  strategy.reduce(tf.distribute.ReduceOp.SUM, one(), axis=None)


def _shard_by_file(dataset: tf.data.Dataset) -> tf.data.Dataset:
  """Each worker reads its own shards (files) of the split: the dataset
  needs at least as many files as there are workers."""
  options = tf.data.Options()
  options.experimental_distribute.auto_shard_policy = (
      tf.data.experimental.AutoShardPolicy.FILE)
  return dataset.with_options(options)
