"""How the planned epochs run: the batches, the callbacks and Keras' fit,
and a pretrained backbone's two phases (the head, then fine-tuning).

Why and how: docs/training.md, "The budget" and "Pretrained backbones".
"""

import dataclasses
import math
from typing import Any, Dict, List, Optional, Tuple

from absl import logging
import tensorflow as tf
import tf_keras as keras

from modules.training import callbacks
from modules.training import input_pipeline
from modules.training import model as model_lib
from modules.training.config import ModelConfig, TrainingConfig
from modules.training.plan import Run


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


def _shard_by_file(dataset: tf.data.Dataset) -> tf.data.Dataset:
  """Each worker reads its own shards (files) of the split: the dataset
  needs at least as many files as there are workers."""
  options = tf.data.Options()
  options.experimental_distribute.auto_shard_policy = (
      tf.data.experimental.AutoShardPolicy.FILE)
  return dataset.with_options(options)
