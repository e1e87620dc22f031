"""The Tuner's module: `tuner_fn` for TFX's Tuner component (`--tune`).

Its TrialTuner runs keras_tuner's oracles and trains each trial with
tf_keras, as the Trainer trains. Why and how: docs/training.md, "Tuning".
"""

import dataclasses
import math
import time

from absl import logging
import keras_tuner
from keras_tuner.engine import base_tuner
import tf_keras as keras
from tfx.components.trainer.fn_args_utils import FnArgs
from tfx.components.tuner.component import TunerFnResult

from modules import trainer
from modules.training import devices
from modules.training import input_pipeline
from modules.training import model as model_lib
from modules.training import plan as training_plan
from modules.training import callbacks
from modules.training import config as config_lib
from modules.training.config import TrainingConfig, TuningConfig
from modules.training.input_pipeline import TrainerData, read_data, validation_split  # pylint: disable=g-multiple-import

PROJECT_NAME = 'tuning'


def _number(trial) -> int:
  """A trial's number from 1, as the inspector shows it (its ids are
  '0', '1', ...)."""
  return int(trial.trial_id) + 1


class TrialTuner(base_tuner.BaseTuner):
  """Runs each trial as the Trainer trains (docs/training.md, "Tuning")."""

  def __init__(self, oracle, config: TrainingConfig, fn_args: FnArgs,
               plan: training_plan.TrainingPlan, data: TrainerData,
               **kwargs):
    """Makes the tuner.

    Args:
      oracle: the KerasTuner oracle that proposes trials.
      config: the run's training settings, which a trial overrides.
      fn_args: TFX's FnArgs of the Tuner.
      plan: the Trainer's plan of the network; each trial builds it as the
        Trainer does (a pretrained backbone, or a network from scratch).
      data: what the Trainer reads of its inputs; its validation split
        scores each trial.
      **kwargs: KerasTuner's BaseTuner arguments.
    """
    super().__init__(oracle, **kwargs)
    self._config = config
    self._fn_args = fn_args
    self._plan = plan
    self._data = data
    self._trials = oracle.max_trials

  def run_trial(self, trial, train, evaluation):  # pylint: disable=arguments-differ
    """Trains and scores one trial.

    Args:
      trial: keras_tuner's trial, with the point of the space to train.
      train: the training dataset, repeated.
      evaluation: the validation dataset.

    Returns:
      {config_lib.TUNING_OBJECTIVE: the trial's validation accuracy}.

    Raises:
      keras_tuner.errors.FatalError: the trial could not train.
    """
    values = trial.hyperparameters.values
    config = config_lib.with_tuned(self._config, values)
    started = time.monotonic()
    try:
      keras.backend.clear_session()
      # The Trainer's precision (modules/training/devices.py).
      keras.mixed_precision.set_global_policy(devices.plan(
          devices.visible_gpus(), config.batch_size,
          config.mixed_precision).precision)
      model, _ = trainer.build_model(config, self._plan, self._data)
      model_lib.compile_for_training(model, config,
                                     len(self._data.class_names),
                                     self._fn_args.train_steps)
      model.fit(train, epochs=1, steps_per_epoch=self._fn_args.train_steps,
                verbose=0)
      _, accuracy = model.evaluate(evaluation, steps=self._fn_args.eval_steps,
                                   verbose=0)
    except Exception as e:
      # keras_tuner would record the trial as invalid and go on: a trial
      # that cannot train is a broken setup, not a bad point of the space.
      raise keras_tuner.errors.FatalError(
          f'tuner trial {_number(trial)} '
          f'({config_lib.describe_tuned(values)}): '
          f'{type(e).__name__}: {e}') from e
    finally:
      keras.mixed_precision.set_global_policy('float32')
    seconds = time.monotonic() - started
    logging.info(callbacks.TRIAL_LINE, _number(trial), self._trials,
                 f'{config_lib.describe_tuned(values)}: '
                 f'{config_lib.TUNING_OBJECTIVE} {accuracy:.4f} on '
                 f'{self._data.validation} after '
                 f'{self._fn_args.train_steps} steps in {seconds:.1f}s')
    return {config_lib.TUNING_OBJECTIVE: float(accuracy)}

  # TFX's executor calls these; keras_tuner prints them on stdout, which in
  # a local run is the console: the log gets them instead.
  def search_space_summary(self, extended=False):
    """Logs the search space, where keras_tuner would print it."""
    logging.info('Tuner search space: %s', [
        p.get_config() for p in self.oracle.get_space().space])

  def results_summary(self, num_trials=10):
    """Logs the best trials, where keras_tuner would print them."""
    for trial in self.oracle.get_best_trials(num_trials):
      logging.info('Tuner trial %d: %s: %s %s', _number(trial),
                   config_lib.describe_tuned(trial.hyperparameters.values),
                   config_lib.TUNING_OBJECTIVE, trial.score)


def oracle(tuning_config: TuningConfig, hyperparameters):
  """Returns the oracle of the --tune-search, over `hyperparameters`.

  Args:
    tuning_config: the Tuner's settings: the search, its trials and seed.
    hyperparameters: the search space, keras_tuner HyperParameters
      (config_lib.search_space).
  """
  kwargs = dict(objective=keras_tuner.Objective(config_lib.TUNING_OBJECTIVE,
                                                 'max'),
                max_trials=tuning_config.trials, seed=tuning_config.seed,
                hyperparameters=hyperparameters, allow_new_entries=False)
  if tuning_config.search == 'bayesian':
    return keras_tuner.oracles.BayesianOptimizationOracle(**kwargs)
  return keras_tuner.oracles.RandomSearchOracle(**kwargs)


def tuner_fn(fn_args: FnArgs) -> TunerFnResult:
  """Returns the tuner and the datasets its trials read, for TFX's Tuner.

  The network tuned is the one the Trainer trains: with `--model auto`, a
  pretrained backbone for colour photos where its weights can be had
  (model_lib.auto), as run_fn chooses it.

  Raises:
    ValueError: the Examples have no validation split to score trials on.
  """
  config = TrainingConfig.from_dict(fn_args.custom_config['training'])
  tuning_config = TuningConfig(**fn_args.custom_config['tuning'])
  if validation_split(fn_args) is None:
    raise ValueError('the Tuner needs a validation split to score its '
                     'trials on, and the Examples have none '
                     '(--validation-percent 0)')
  data = read_data(fn_args, config, reader='Tuner')
  model_config, network_why, scratch_why = model_lib.auto(config.model,
                                                          data.geometry)
  if scratch_why:
    logging.info('Tuner: %s', scratch_why)
  config = dataclasses.replace(config, model=model_config)
  plan = training_plan.plan(config.budget, config.model, data.geometry,
                            data.train_plan.size.records, why=network_why)
  search = oracle(tuning_config, config_lib.search_space(plan.architecture))
  search.verbose = 0  # Its display prints on stdout; run_trial logs.
  tuner = TrialTuner(search, config, fn_args, plan, data,
                     directory=fn_args.working_dir,
                     project_name=PROJECT_NAME, overwrite=True)
  records = data.train_plan.size.records
  batches = max(1, math.ceil(records / config.batch_size))
  logging.info('Tuner: %d trials of %d steps (%.2f epochs) each, %s, of %s '
               '(%s); scored on %s (%d records).', tuning_config.trials,
               fn_args.train_steps, fn_args.train_steps / batches,
               tuning_config.search, plan.architecture, plan.why,
               data.validation, data.validation_plan.size.records)
  return TunerFnResult(tuner=tuner, fit_kwargs=dict(
      train=input_pipeline.make_planned_dataset(
          fn_args.train_files, data.transform_output, config.batch_size,
          data.train_plan, repeat=True, ordered=config.seed is not None),
      evaluation=input_pipeline.make_planned_dataset(
          fn_args.eval_files, data.transform_output, config.batch_size,
          data.validation_plan)))
