"""--tune: the Tuner node and its wiring, the space and its mapping onto
the TrainingConfig, and what modules/tuner.py relies on in keras_tuner."""

import dataclasses
import importlib
import json

import keras_tuner
from keras_tuner.engine import base_tuner
import pytest
import tf_keras

import local_runner
from modules import tuner as tuner_module
from modules.training import config as config_lib
from modules.training import model as model_lib
from modules.training.config import (ARCHITECTURES, BACKBONES, MNIST_CNN,  # pylint: disable=g-multiple-import
                                     SMALL_BN_CNN, SMALL_GAP_CNN,
                                     TrainingConfig, TuningConfig)
from pipeline import constants
from records import features


def _dag(tmp_path, *flags):
  args = local_runner.make_parser().parse_args(
      ['--data-dir', str(tmp_path), '--output-dir', str(tmp_path / 'out'),
       *flags])
  return {c.id: c for c in local_runner.build_pipeline(args).components}


def test_tune_adds_the_tuner_before_the_trainer_and_nothing_else(tmp_path):
  plain = _dag(tmp_path, '--eval-steps', '5')
  tuned = _dag(tmp_path, '--eval-steps', '5', '--tune', '3',
               '--tune-trial-steps', '7', '--tune-search', 'bayesian')
  assert 'Tuner' not in plain
  assert set(tuned) - set(plain) == {'Tuner'}
  for node, component in plain.items():
    assert tuned[node].exec_properties == component.exec_properties, node
  tuner, trainer = tuned['Tuner'], tuned['Trainer']
  assert tuner in trainer.upstream_nodes
  assert {u.id for u in tuner.upstream_nodes} == {
      'ImageExampleGen', 'SchemaGen', 'Transform'}
  assert (trainer.inputs['hyperparameters'].producer_component_id ==
          'Tuner')
  assert 'hyperparameters' not in plain['Trainer'].inputs
  # The Trainer is told the same either way: its settings come from the
  # winner at run time.
  assert (trainer.exec_properties['custom_config'] ==
          plain['Trainer'].exec_properties['custom_config'])
  props = tuner.exec_properties
  assert props['tuner_fn'] == constants.TUNER_FN
  # The trials train on train and are scored on validation, as the
  # Trainer's epochs are; eval is the Evaluator's alone.
  assert json.loads(props['train_args']) == {'splits': ['train'],
                                             'num_steps': 7}
  assert json.loads(props['eval_args']) == {'splits': ['validation'],
                                            'num_steps': 5}
  for node in ('Trainer', 'Tuner'):
    assert json.loads(tuned[node].exec_properties['eval_args'])[
        'splits'] == ['validation']
    assert json.loads(tuned[node].exec_properties['custom_config'])[
        'validation_split'] == 'validation'
  assert json.loads(tuned['Evaluator'].exec_properties['example_splits']
                    ) == ['eval']
  custom = json.loads(props['custom_config'])
  assert custom['tuning'] == {'trials': 3, 'trial_steps': 7,
                              'search': 'bayesian', 'seed': 0}
  assert TrainingConfig.from_dict(custom['training']).eval_steps == 5
  module, name = constants.TUNER_FN.rsplit('.', 1)
  assert callable(getattr(importlib.import_module(module), name))


def test_every_network_has_a_space():
  assert set(config_lib.TUNING_SPACES) == {*ARCHITECTURES, *BACKBONES}


@pytest.mark.parametrize('network', [SMALL_BN_CNN, MNIST_CNN, SMALL_GAP_CNN,
                                     'mobilenet-v2'])
def test_a_point_of_the_space_sets_the_network_rate_widths_and_dropout(
    network):
  config = TrainingConfig()
  values = {config_lib.TUNED_NETWORK: network,
            config_lib.TUNED_LEARNING_RATE: 0.0042,
            config_lib.TUNED_WIDTH: 0.5, config_lib.TUNED_DROPOUT: 0.15}
  if network in BACKBONES:
    config = dataclasses.replace(config, model=dataclasses.replace(
        config.model, backbone=network))
  tuned = config_lib.with_tuned(config, values)
  space = config_lib.TUNING_SPACES[network]
  assert tuned.learning_rate == 0.0042
  assert model_lib.choose(tuned.model, features.MNIST_GEOMETRY)[0] == network
  if space.dropout:
    assert getattr(tuned.model, space.dropout) == 0.15
  for field in space.widths:
    before, after = getattr(config.model, field), getattr(tuned.model, field)
    assert after == (tuple(round(w / 2) for w in before)
                     if isinstance(before, tuple) else round(before / 2))
  # Nothing else changes.
  untouched = {'architecture', space.dropout, *space.widths} - {None}
  assert {f.name: getattr(tuned.model, f.name)
          for f in dataclasses.fields(tuned.model) if f.name not in untouched
          } == {f.name: getattr(config.model, f.name)
                for f in dataclasses.fields(config.model)
                if f.name not in untouched}
  assert dataclasses.replace(tuned, learning_rate=config.learning_rate,
                             model=config.model) == config


def test_an_unknown_network_names_the_table():
  with pytest.raises(ValueError, match='no search space for the network'):
    config_lib.with_tuned(TrainingConfig(),
                          {config_lib.TUNED_NETWORK: 'resnet'})


class _ScoreTuner(base_tuner.BaseTuner):
  """keras_tuner's BaseTuner as modules/tuner.py uses it: no hypermodel,
  run_trial returns the objective's value."""

  def run_trial(self, trial, fail=False):  # pylint: disable=arguments-differ
    if fail:
      raise keras_tuner.errors.FatalError('broken')
    values = trial.hyperparameters.values
    return {config_lib.TUNING_OBJECTIVE: values[config_lib.TUNED_DROPOUT]}


def _oracle(trials, search='random'):
  return tuner_module.oracle(TuningConfig(trials=trials, search=search),
                             config_lib.search_space(MNIST_CNN))


@pytest.mark.parametrize('search', ['random', 'bayesian'])
def test_keras_tuner_holds_what_modules_tuner_relies_on(tmp_path, search):
  # keras_tuner's Keras tuners build, fit and save with Keras 3, which
  # cannot fit the project's tf_keras models: hence a BaseTuner.
  from keras_tuner.src.backend import config as backend_config  # pylint: disable=g-import-not-at-top
  assert backend_config.multi_backend(), (
      'keras_tuner now uses tf.keras: keras_tuner.Tuner may fit tf_keras '
      'models, modules/tuner.py may not need its own BaseTuner')
  assert not issubclass(tf_keras.Model,
                        keras_tuner.src.backend.keras.Model)
  # A BaseTuner without a hypermodel searches the oracle's space, scores
  # each trial by what run_trial returns, and ranks them.
  tuner = _ScoreTuner(_oracle(3, search), directory=str(tmp_path),
                      overwrite=True)
  tuner.search()
  trials = tuner.oracle.get_best_trials(3)
  assert len(trials) == 3
  assert [t.score for t in trials] == sorted(
      (t.hyperparameters.values[config_lib.TUNED_DROPOUT] for t in trials),
      reverse=True)
  best = tuner.get_best_hyperparameters()[0].get_config()
  assert best['values'] == trials[0].hyperparameters.values
  assert best['values'][config_lib.TUNED_NETWORK] == MNIST_CNN
  # A FatalError stops the search (any other error only fails the trial).
  with pytest.raises(keras_tuner.errors.FatalError, match='broken'):
    _ScoreTuner(_oracle(1), directory=str(tmp_path / 'fail'),
                overwrite=True).search(fail=True)


@pytest.mark.parametrize('flags', [['--tune', '-1'],
                                   ['--tune', '2', '--tune-trial-steps', '0']])
def test_a_negative_tune_or_no_trial_steps_is_refused(tmp_path, flags):
  with pytest.raises(SystemExit, match='error: --tune'):
    _dag(tmp_path, *flags)
