"""Only a model that passes the Evaluator is served, and a re-run does not
push the served model again.

A first run pushes a good model. Each later case starts from the output
directory exactly as that run left it, whatever the other tests did (each
test runs alone and in any order): the same run again pushes nothing new; a
much worse model (above the threshold, below the served one) is not pushed;
the same worse model against a higher threshold is not pushed either. In
each, the first model stays the newest version.
"""

import os
import shutil

import pytest
import tensorflow_model_analysis as tfma

from tests import datasets
from tests import local_run
from tests import mlmd

TINY_TRAINING = ['--epochs', '2', '--train-steps', '60', '--batch-size', '32',
                 local_run.ONE_PROCESS]
# A learning rate this small leaves the model at its random start: ~10%.
UNTRAINED = ['--learning-rate', '1e-9']


def _runs_newest(store, type_name):
  return sorted(store.get_artifacts_by_type(type_name), key=lambda a: a.id)[-1]


def _failures(store):
  """(metric, is_diff) of every check the newest evaluation failed."""
  evaluation = _runs_newest(store, 'ModelEvaluation')
  result = tfma.load_validation_result(evaluation.uri)
  return {(f.metric_key.name, f.metric_key.is_diff)
          for s in result.metric_validations_per_slice for f in s.failures}


def _run(workspace, *args):
  return local_run.run('--data-dir', str(workspace / 'data'), '--output-dir',
                       str(workspace / 'out'), *TINY_TRAINING, *args)


@pytest.fixture(scope='module')
def first_run(tmp_path_factory):
  """(folder, result) of the first run, a good model pushed; the output
  directory it left is also kept aside, never run on, in `after_first_run`."""
  tmp = tmp_path_factory.mktemp('gating')
  datasets.write_idx_dataset(str(tmp / 'data'), {'train': 300, 't10k': 100})
  result = _run(tmp, '--accuracy-threshold', '0.3')
  shutil.copytree(tmp / 'out', tmp / 'after_first_run', symlinks=True)
  return tmp, result


@pytest.fixture
def workspace(first_run):
  """The folder whose `out` holds the output directory as the first run
  left it, put back for each test.

  Put back at the same path, not copied to a folder of the test's own: ML
  Metadata's artifact URIs and the PushedModel's destination are absolute
  paths under `out`, so a copy elsewhere would still read and write here.
  """
  tmp, result = first_run
  assert result.returncode == 0, 'the first run failed:\n' + result.stderr
  shutil.rmtree(tmp / 'out')
  shutil.copytree(tmp / 'after_first_run', tmp / 'out', symlinks=True)
  return tmp


def _served(workspace):
  return sorted(os.listdir(workspace / 'out' / 'serving_model'), key=int)


def test_1_a_good_model_is_pushed(first_run, workspace):
  _, result = first_run
  assert result.returncode == 0, result.stderr
  assert len(_served(workspace)) == 1
  pushed = _runs_newest(mlmd.open_store(str(workspace / 'out')), 'PushedModel')
  assert pushed.custom_properties['pushed'].int_value == 1


def test_2_a_rerun_does_not_push_the_same_model_again(workspace):
  [version] = _served(workspace)
  result = _run(workspace, '--accuracy-threshold', '0.3')
  assert result.returncode == 0, result.stderr
  assert _served(workspace) == [version]
  store = mlmd.open_store(str(workspace / 'out'))
  pushed = _runs_newest(store, 'PushedModel')
  # ML Metadata still says where the model is served.
  assert pushed.custom_properties['pushed'].int_value == 1
  assert pushed.custom_properties['already_served'].int_value == 1
  assert pushed.custom_properties['pushed_version'].string_value == version
  destination = str(workspace / 'out' / 'serving_model' / version)
  assert f'already served from {destination}; not pushed again' in result.stdout
  assert mlmd.execution_states(store)['Trainer'] == ['COMPLETE', 'CACHED']


def test_3_a_model_worse_than_the_served_one_is_not_pushed(workspace):
  [version] = _served(workspace)
  # The threshold lets anything through: only the comparison can stop it.
  result = _run(workspace, '--accuracy-threshold', '0', *UNTRAINED)
  assert result.returncode == 0, result.stderr
  store = mlmd.open_store(str(workspace / 'out'))
  blessing = _runs_newest(store, 'ModelBlessing')
  assert blessing.custom_properties['blessed'].int_value == 0
  # It was compared against the served model, and lost.
  served_model = [a for a in store.get_artifacts_by_type('Model')
                  if a.id == blessing.custom_properties[
                      'baseline_model_id'].int_value]
  assert served_model
  assert _failures(store) == {('sparse_categorical_accuracy', True)}
  assert 'against the last blessed model (worse)' in result.stdout
  assert _runs_newest(store, 'PushedModel').custom_properties[
      'pushed'].int_value == 0
  assert _served(workspace) == [version]


def test_4_a_model_below_the_threshold_is_not_pushed(workspace):
  [version] = _served(workspace)
  result = _run(workspace, '--accuracy-threshold', '0.5', *UNTRAINED)
  assert result.returncode == 0, result.stderr
  store = mlmd.open_store(str(workspace / 'out'))
  assert ('sparse_categorical_accuracy', False) in _failures(store)
  assert 'below the threshold 0.5' in result.stdout
  assert _runs_newest(store, 'PushedModel').custom_properties[
      'pushed'].int_value == 0
  # The first model is still the one served, and the newest version.
  assert _served(workspace) == [version]
