"""Only a model that passes the Evaluator is served, and a re-run does not
push the served model again.

The runs are tests/tiny_runs.py's `two_runs` (shared with the inspection
tests): a first run pushes a good model, and the same run again pushes
nothing new. Each later case starts from the output directory exactly as
those two runs left it, and puts it back afterwards, whatever the other
tests did (each test runs alone and in any order): a much worse model
(above the threshold, below the served one) is not pushed; the same worse
model against a higher threshold is not pushed either. In each, the first
model stays the newest version.
"""

import os
import shutil

import pytest
import tensorflow_model_analysis as tfma

from tests import local_run
from tests import mlmd
from tests import tiny_runs

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
  """A run on the shared runs' data and output directory, with their
  training settings and `args` (which may override them)."""
  return local_run.run('--data-dir', str(workspace / 'data'), '--output-dir',
                       str(workspace / 'out'), *tiny_runs.TINY_TRAINING,
                       *args)


@pytest.fixture
def workspace(two_runs):
  """The shared runs' folder, for a test that runs again on their output
  directory: put back as the two runs left it once the test is done, for
  the other tests that read it.

  Put back at the same path, not run on in a copy elsewhere: ML Metadata's
  artifact URIs and the PushedModel's destination are absolute paths under
  `out`, so a copy elsewhere would still read and write here.
  """
  out, kept = two_runs / 'out', two_runs / 'out-as-the-two-runs-left-it'
  shutil.copytree(out, kept, symlinks=True)
  try:
    yield two_runs
  finally:
    shutil.rmtree(out)
    os.rename(kept, out)


def _served(workspace):
  return sorted(os.listdir(workspace / 'out' / 'serving_model'), key=int)


def test_1_a_good_model_is_pushed(two_runs):
  # The first run's push (its outcome is also checked in the fixture).
  assert len(_served(two_runs)) == 1
  first_pushed = sorted(mlmd.open_store(str(two_runs / 'out'))
                        .get_artifacts_by_type('PushedModel'),
                        key=lambda a: a.id)[0]
  assert first_pushed.custom_properties['pushed'].int_value == 1
  assert 'already_served' not in first_pushed.custom_properties


def test_2_a_rerun_does_not_push_the_same_model_again(two_runs):
  # The second of the two runs is the unchanged re-run.
  [version] = _served(two_runs)
  rerun_stdout = (two_runs / 'run-2.stdout').read_text()
  store = mlmd.open_store(str(two_runs / 'out'))
  pushed = _runs_newest(store, 'PushedModel')
  # ML Metadata still says where the model is served.
  assert pushed.custom_properties['pushed'].int_value == 1
  assert pushed.custom_properties['already_served'].int_value == 1
  assert pushed.custom_properties['pushed_version'].string_value == version
  destination = str(two_runs / 'out' / 'serving_model' / version)
  assert f'already served from {destination}; not pushed again' in rerun_stdout
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
