"""kubeflow_runner.py --tune: the Tuner compiles like the other standard
components, for both targets, wired to the Trainer as in the local DAG."""

import json

import pytest

from kubeflow import container_entrypoint
from pipeline import constants
from tests import kubeflow_specs

TUNE = ['--tune', '2', '--tune-trial-steps', '9']


@pytest.mark.parametrize('target', ['kubeflow', 'vertex'])
def test_the_tuner_compiles_and_feeds_the_trainer(tmp_path, target):
  spec = kubeflow_specs.compile_spec(
      tmp_path / 'pipeline.yaml', '--target', target,
      *kubeflow_specs.CLUSTER_PATHS, *TUNE)
  tasks = spec['root']['dag']['tasks']
  assert 'Tuner' in kubeflow_specs.container_tasks(spec)
  tuner = tasks['Tuner']
  assert {t['taskOutputArtifact']['producerTask']
          for t in tuner['inputs']['artifacts'].values()} == {
              'ImageExampleGen', 'SchemaGen', 'Transform'}
  parameters = {key: value['runtimeValue']['constant']
                for key, value in tuner['inputs']['parameters'].items()}
  assert parameters['tuner_fn'] == constants.TUNER_FN
  assert json.loads(parameters['train_args']) == {'num_steps': 9,
                                                   'splits': ['train']}
  assert json.loads(parameters['custom_config'])['tuning']['trials'] == 2
  assert tasks['Trainer']['inputs']['artifacts']['hyperparameters'] == {
      'taskOutputArtifact': {'producerTask': 'Tuner',
                             'outputArtifactKey': 'best_hyperparameters'}}
  command = (kubeflow_specs.container(spec, 'Tuner')['command'] +
             kubeflow_specs.container(spec, 'Tuner')['args'])
  assert 'tfx.components.tuner.executor.Executor' in command
  if target == 'kubeflow':
    # The project's entrypoint, which restores the input types KFP drops.
    assert 'kubeflow.container_entrypoint' in command
    assert container_entrypoint.INPUTS_SPEC_FLAG in command


def test_without_tune_no_tuner_is_compiled(tmp_path):
  spec = kubeflow_specs.compile_spec(
      tmp_path / 'pipeline.yaml', *kubeflow_specs.CLUSTER_PATHS)
  assert 'Tuner' not in spec['root']['dag']['tasks']
  assert 'hyperparameters' not in spec['root']['dag']['tasks']['Trainer'][
      'inputs']['artifacts']
