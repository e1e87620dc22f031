"""Every flag of the DAG is one knob (a config field, declared once with its
default and help), and a flag's value reaches the component that uses it:
parsed flags -> config objects -> the built pipeline's exec properties."""

import argparse
import dataclasses
import json
import re

import pytest

from components.evaluator import baseline_evaluator
from components.image_example_gen.options import ImageExampleGenOptions
import local_runner
from metadata import store as inspect_store
from modules import knob as knob_lib
from modules.training.config import TrainingConfig
from pipeline import constants
from pipeline import knobs
from runs import flags

# local_runner.py's own flags: paths and how this machine runs the DAG,
# none of them a knob of the DAG (kubeflow_runner.py has its own);
# --keep-runs is knobs.DiskConfig's, applied after the run.
RUNNER_FLAGS = {'--help', '--data-dir', '--output-dir', '--pipeline-name',
                '--beam-args', '--to-node', '--freeze-schema', '--no-cache',
                '--verbose', '--keep-runs'}
FASHION = knobs.DATASETS['fashion-mnist']


def _flags_in_usage(parser: argparse.ArgumentParser):
  return set(re.findall(r'(--[a-z][a-z0-9-]*)', parser.format_usage()))


def _knob_flags():
  """{flag: [fields declaring it]} over every config the flags set."""
  declared = {}
  for _, classes in flags.GROUPS:
    for config_class in classes:
      for field in flags.knob_fields(config_class):
        flag = field.metadata.get('flag')
        if flag:
          declared.setdefault(flag, []).append(field.name)
          if field.metadata.get('action') is argparse.BooleanOptionalAction:
            declared.setdefault('--no-' + flag[2:], []).append(field.name)
  return declared


def _component(dag, node_id):
  [component] = [c for c in dag.components if c.id == node_id]
  return component.exec_properties


def _example_gen(dag) -> ImageExampleGenOptions:
  return ImageExampleGenOptions.from_exec_properties(
      _component(dag, 'ImageExampleGen'))


def _training(dag) -> TrainingConfig:
  return TrainingConfig.from_dict(
      json.loads(_component(dag, 'Trainer')['custom_config'])['training'])


def _steps(dag, key):
  return json.loads(_component(dag, 'Trainer')[key]).get('num_steps')


def _accuracy_threshold(dag):
  """The Evaluator's fixed accuracy threshold, or FROM_DATA."""
  evaluator = _component(dag, 'Evaluator')
  [threshold] = [
      metric['threshold'].get('value_threshold', {}).get('lower_bound')
      for spec in json.loads(evaluator['eval_config'])['metrics_specs']
      for metric in spec['metrics']
      if metric['class_name'] == 'SparseCategoricalAccuracy']
  from_data = evaluator[baseline_evaluator.ACCURACY_FROM_DATA_KEY]
  assert (threshold is None) == bool(from_data)
  return FROM_DATA if from_data else threshold


FROM_DATA = 'from the data'


def _tuning(dag):
  """The Tuner's settings; {} without a Tuner."""
  if 'Tuner' not in [c.id for c in dag.components]:
    return {}
  return json.loads(_component(dag, 'Tuner')['custom_config'])['tuning']


IMAGES = ['--input-format', 'images']
# flag: (command line, where its value lands in the built DAG, that value).
CASES = {
    '--input-format': (IMAGES, lambda dag: _example_gen(dag).input_format,
                       'images'),
    '--dataset': (['--dataset', 'fashion-mnist'], lambda dag: (
        _example_gen(dag).class_names, _training(dag).budget.epochs,
        _accuracy_threshold(dag)), (
            FASHION['class_names'], FASHION['epochs'],
            FASHION['accuracy_threshold'])),
    '--class-names': (['--class-names', 'a, b'],
                      lambda dag: _example_gen(dag).class_names, ['a', 'b']),
    '--image-size': ([*IMAGES, '--image-size', '32x48'],
                     lambda dag: _example_gen(dag).geometry.shape[:2],
                     (32, 48)),
    '--channels': ([*IMAGES, '--channels', '3'],
                   lambda dag: _example_gen(dag).geometry.channels, 3),
    '--image-encoding': (['--image-encoding', 'png'],
                         lambda dag: _example_gen(dag).image_encoding, 'png'),
    '--num-shards': (['--num-shards', '4'],
                     lambda dag: _example_gen(dag).num_shards, 4),
    '--span-dir-pattern': (
        ['--span-dir-pattern', 'span-{SPAN}'],
        lambda dag: json.loads(_component(dag, 'ImageExampleGen')[
            'input_config'])['splits'][0]['pattern'], 'span-{SPAN}/train-*'),
    '--span-window': (
        ['--span-dir-pattern', 'span-{SPAN}', '--span-window', '3'],
        lambda dag: _example_gen(dag).span_window, 3),
    '--judge-window': (['--judge-window'], lambda dag: json.loads(
        _component(dag, 'Evaluator')['example_splits']),
                       ['eval', 'earlier_eval']),
    '--eval-percent': ([*IMAGES, '--eval-percent', '10'],
                       lambda dag: _example_gen(dag).eval_percent, 10),
    '--validation-percent': (['--validation-percent', '25'],
                             lambda dag: _example_gen(dag).validation_percent,
                             25),
    '--max-image-pixels': ([*IMAGES, '--max-image-pixels', '1000'],
                           lambda dag: _example_gen(dag).max_image_pixels,
                           1000),
    '--skip-bad-images': ([*IMAGES, '--skip-bad-images'],
                          lambda dag: _example_gen(dag).skip_bad_images, True),
    '--schema': (['--schema', constants.MNIST_SCHEMA],
                 lambda dag: [c.exec_properties['schema_file']
                              for c in dag.components
                              if c.id == 'ImportSchemaGen'],
                 [constants.MNIST_SCHEMA]),
    '--eval-copies': (['--eval-copies', 'keep'], lambda dag: _component(
        dag, 'ValidationGate')['eval_copies'], 'keep'),
    '--max-eval-copy-share': (
        ['--max-eval-copy-share', '0.05'],
        lambda dag: _component(dag, 'ValidationGate')['max_eval_copy_share'],
        0.05),
    '--epochs': (['--epochs', '5'],
                 lambda dag: _training(dag).budget.epochs, 5),
    '--early-stopping-patience': (
        ['--early-stopping-patience', '0'],
        lambda dag: _training(dag).budget.patience, 0),
    '--model': (['--model', 'small-gap-cnn'],
                lambda dag: _training(dag).model.architecture,
                'small-gap-cnn'),
    '--backbone': (['--backbone', 'resnet50'],
                   lambda dag: _training(dag).model.backbone, 'resnet50'),
    '--weights': (['--backbone', 'resnet50', '--weights', 'none'],
                  lambda dag: _training(dag).model.weights, 'none'),
    '--head-epochs-fraction': (
        ['--head-epochs-fraction', '0.25'],
        lambda dag: _training(dag).model.head_epochs_fraction, 0.25),
    '--fine-tune-layers-fraction': (
        ['--fine-tune-layers-fraction', '0.5'],
        lambda dag: _training(dag).model.fine_tune_layers_fraction, 0.5),
    '--fine-tune-learning-rate-factor': (
        ['--fine-tune-learning-rate-factor', '0.5'],
        lambda dag: _training(dag).model.fine_tune_learning_rate_factor, 0.5),
    '--augment': (['--augment'], lambda dag: _training(dag).model.augment,
                  True),
    '--no-augment': (['--no-augment'],
                     lambda dag: _training(dag).model.augment, False),
    '--train-steps': (['--train-steps', '7'],
                      lambda dag: _steps(dag, 'train_args'), 7),
    '--input-memory-budget': (
        ['--input-memory-budget', '10'],
        lambda dag: _training(dag).input.memory_budget, 10 << 20),
    '--eval-steps': (['--eval-steps', '3'],
                     lambda dag: _steps(dag, 'eval_args'), 3),
    '--batch-size': (['--batch-size', '64'],
                     lambda dag: _training(dag).batch_size, 64),
    '--learning-rate': (['--learning-rate', '0.01'],
                        lambda dag: _training(dag).learning_rate, 0.01),
    '--label-smoothing': (['--label-smoothing', '0.2'],
                          lambda dag: _training(dag).label_smoothing, 0.2),
    '--seed': (['--seed', '3'], lambda dag: _training(dag).seed, 3),
    '--no-mixed-precision': (['--no-mixed-precision'],
                             lambda dag: _training(dag).mixed_precision,
                             False),
    # The Trainer's base_model: the served model (pipeline/warm_start_model.py).
    '--warm-start': (['--warm-start'], lambda dag: (
        _training(dag).warm_start,
        'base_model' in next(c for c in dag.components
                             if c.id == 'Trainer').inputs), (
            True, True)),
    '--warm-start-epochs-fraction': (
        ['--warm-start-epochs-fraction', '0.5'],
        lambda dag: _training(dag).budget.warm_start_epochs_fraction, 0.5),
    '--warm-start-learning-rate-factor': (
        ['--warm-start-learning-rate-factor', '0.7'],
        lambda dag: _training(dag).budget.warm_start_learning_rate_factor,
        0.7),
    # Locally, the Trainer runs the run_fn that starts the workers.
    '--trainer-workers': (
        ['--trainer-workers', '2'],
        lambda dag: (_training(dag).workers,
                     _component(dag, 'Trainer')['run_fn']),
        (2, constants.LOCAL_WORKERS_RUN_FN)),
    '--accuracy-threshold': (['--accuracy-threshold', '0.5'],
                             _accuracy_threshold, 0.5),
    '--no-label-check': (['--no-label-check'], lambda dag: 'LabelCheck' in [
        c.id for c in dag.components], False),
    '--label-check-folds': (['--label-check-folds', '3'], lambda dag: (
        _component(dag, 'LabelCheck')['folds']), 3),
    '--label-check-train-examples': (
        ['--label-check-train-examples', '500'],
        lambda dag: _component(dag, 'LabelCheck')['fold_examples'], 500),
    '--label-check-records': (
        ['--label-check-records', '700'],
        lambda dag: _component(dag, 'LabelCheck')['checked_records'], 700),
    '--tune': (['--tune', '3'], lambda dag: _tuning(dag).get('trials'), 3),
    '--tune-trial-steps': (['--tune', '1', '--tune-trial-steps', '9'],
                           lambda dag: _tuning(dag).get('trial_steps'), 9),
    '--tune-search': (['--tune', '1', '--tune-search', 'bayesian'],
                      lambda dag: _tuning(dag).get('search'), 'bayesian'),
}


def test_every_flag_is_one_knob_or_the_runners_own():
  parser = local_runner.make_parser()
  declared = _knob_flags()
  assert {flag: fields for flag, fields in declared.items()
          if len(fields) != 1} == {}
  mysql = argparse.ArgumentParser(add_help=False)
  inspect_store.add_mysql_flags(mysql)
  runner_flags = RUNNER_FLAGS | _flags_in_usage(mysql)
  assert _flags_in_usage(parser) - runner_flags == set(declared)
  assert not runner_flags & set(declared)


def test_every_knob_flag_is_checked_below():
  assert set(CASES) == set(_knob_flags())


def test_a_flag_not_given_leaves_the_default():
  knobs_of_no_flags = flags.knobs_from_args(
      local_runner.make_parser().parse_args([]))
  assert knobs_of_no_flags == knobs.Knobs()


def _dag(tmp_path, *argv):
  args = local_runner.make_parser().parse_args(
      ['--data-dir', str(tmp_path), '--output-dir', str(tmp_path / 'out'),
       *argv])
  return local_runner.build_pipeline(args)


@pytest.fixture(scope='module')
def default_dag(tmp_path_factory):
  return _dag(tmp_path_factory.mktemp('default'))


@pytest.mark.parametrize('flag', sorted(CASES))
def test_a_flag_reaches_its_component(flag, default_dag, tmp_path):
  argv, where, value = CASES[flag]
  assert where(_dag(tmp_path, *argv)) == value
  assert where(default_dag) != value  # The flag did it.


def test_explicit_flags_win_over_the_dataset_preset(tmp_path):
  dag = _dag(tmp_path, '--dataset', 'fashion-mnist', '--epochs', '3',
             '--accuracy-threshold', '0.5', '--class-names', 'a,b')
  assert (_example_gen(dag).class_names, _training(dag).budget.epochs,
          _accuracy_threshold(dag)) == (['a', 'b'], 3, 0.5)


def test_the_training_config_survives_the_trip_to_the_trainer():
  config = TrainingConfig()
  config = dataclasses.replace(
      config, batch_size=32,
      model=dataclasses.replace(config.model, conv_filters=(8, 16)))
  assert TrainingConfig.from_dict(json.loads(json.dumps(
      config.to_dict()))) == config


def test_a_class_names_file_that_cannot_be_read_is_named(tmp_path, capsys):
  with pytest.raises(SystemExit):
    local_runner.make_parser().parse_args(
        ['--class-names', f'@{tmp_path}/names.txt'])
  assert f'cannot read {tmp_path}/names.txt' in capsys.readouterr().err


@pytest.mark.parametrize('argv,threshold', [
    ([], knobs.IDX_ACCURACY_THRESHOLD),
    (IMAGES, FROM_DATA),
    ([*IMAGES, '--accuracy-threshold', '0.5'], 0.5),
    ([*IMAGES, '--dataset', 'mnist'], 0.99),
    ([*IMAGES, '--dataset', 'fashion-mnist'], 0.91),
    (['--dataset', 'mnist'], 0.99),
    (['--accuracy-threshold', '0'], 0),
])
def test_the_accuracy_threshold_is_fixed_or_from_the_data(tmp_path, argv,
                                                          threshold):
  # Image folders without a known dataset: from the eval split's classes
  # (components/evaluator/blessing_rule.py); IDX files and known datasets
  # keep theirs.
  assert _accuracy_threshold(_dag(tmp_path, *argv)) == threshold


def test_a_preset_for_an_unknown_dataset_is_refused():
  with pytest.raises(ValueError, match=r"unknown datasets \['cifar-10'\]"):
    knob_lib.knob(1, 'A knob.', presets={'cifar-10': 2})
