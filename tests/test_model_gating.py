"""Only a model that passes the Evaluator is served, and a re-run does not
push the served model again.

The runs are tests/tiny_runs.py's `two_runs` (shared with the inspection
tests): a first run pushes a good model, and the same run again pushes
nothing new. Then one much worse model runs twice on that output
directory, which is put back as the two runs left it afterwards, for the
other tests (each runs alone and in any order): above the threshold but
below the served model, it is not pushed; against a higher threshold (its
Trainer answered from the cache), it is not pushed either. In each, the
first model stays the newest version.

A folder of images, gated by what its data says, is
tests/test_folder_gating.py's: apart, so that its runs need not share
these tests' xdist worker (tests/xdist_groups.py).
"""

import dataclasses
import json
import os
import shutil
import subprocess
from typing import List, Set, Tuple

from ml_metadata.proto import metadata_store_pb2
import pytest
import tensorflow_model_analysis as tfma
from tfx.types import standard_artifacts
from tfx.utils import path_utils

from components.evaluator import baseline_evaluator
from tests import local_run
from tests import mlmd
from tests import tiny_runs

# A learning rate this small leaves the model at its random start (~10%),
# after a few steps as after many.
UNTRAINED = ['--learning-rate', '1e-9', '--epochs', '1', '--train-steps', '2']


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


@dataclasses.dataclass
class Outcome:
  """What a run on the shared runs' output directory left there."""
  result: subprocess.CompletedProcess
  served_before: List[str]
  served_after: List[str]
  blessing: metadata_store_pb2.Artifact  # The newest.
  baselines: List[metadata_store_pb2.Artifact]  # Models its blessing names.
  failures: Set[Tuple[str, bool]]
  pushed: int  # The newest PushedModel's `pushed`.
  trainer_states: List[str]
  eval_scored: str  # How the newest LabelCheck scored eval.


def _run_and_look(workspace, *args) -> Outcome:
  served_before = _served(workspace)
  result = _run(workspace, *args)
  store = mlmd.open_store(str(workspace / 'out'))
  blessing = _runs_newest(store, 'ModelBlessing')
  baseline_id = blessing.custom_properties['baseline_model_id'].int_value
  return Outcome(
      result=result, served_before=served_before,
      served_after=_served(workspace), blessing=blessing,
      baselines=[a for a in store.get_artifacts_by_type('Model')
                 if a.id == baseline_id],
      failures=_failures(store),
      pushed=_runs_newest(store, 'PushedModel').custom_properties[
          'pushed'].int_value,
      trainer_states=mlmd.execution_states(store)['Trainer'],
      eval_scored=json.loads(_runs_newest(
          store, 'components.LabelSuspects').custom_properties[
              'methods'].string_value)['eval'])


@pytest.fixture(scope='module')
def worse_model(two_runs):
  """One untrained model, run twice on the shared runs' output directory:
  against a threshold anything meets, so that only the comparison with the
  served model can stop it, then against one it misses (its Trainer
  answered from the cache: only the threshold changed). Returns the two
  Outcomes, with the directory put back as the two runs left it, for the
  other tests that read it.

  Put back at the same path, not run on in a copy elsewhere: ML Metadata's
  artifact URIs and the PushedModel's destination are absolute paths under
  `out`, so a copy elsewhere would still read and write here.
  """
  out, kept = two_runs / 'out', two_runs / 'out-as-the-two-runs-left-it'
  shutil.copytree(out, kept, symlinks=True)
  try:
    comparison = _run_and_look(two_runs, '--accuracy-threshold', '0',
                               *UNTRAINED)
    threshold = _run_and_look(two_runs, '--accuracy-threshold', '0.5',
                              *UNTRAINED)
  finally:
    shutil.rmtree(out)
    os.rename(kept, out)
  return comparison, threshold


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
  # The baseline (the last blessed model) is the cached model itself: the
  # Evaluator scored it once, not once as each, and blessed it again.
  assert f'Evaluator: {baseline_evaluator.SELF_BASELINE}' in rerun_stdout
  evaluation = _runs_newest(store, 'ModelEvaluation')
  keys = [item.key for record in tfma.load_metrics(evaluation.uri)
          for item in record.metric_keys_and_values]
  assert keys and not any(k.is_diff or k.model_name == 'baseline'
                          for k in keys)
  assert _runs_newest(store, 'ModelBlessing').custom_properties[
      'blessed'].int_value == 1


def test_a_baseline_is_the_candidate_as_the_same_artifact_or_its_files(
    tmp_path):
  def model(name, files):
    artifact = standard_artifacts.Model()
    artifact.uri = str(tmp_path / name)
    root = path_utils.serving_model_path(artifact.uri)
    for path, data in files.items():
      os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
      with open(os.path.join(root, path), 'wb') as f:
        f.write(data)
    return artifact

  trained = {'saved_model.pb': b'graph',
             'variables/variables.data-00000-of-00001': b'w' * 100}
  candidate = model('candidate', trained)
  assert baseline_evaluator.is_candidate(candidate, candidate)
  # ServedModel's copy of the version the Pusher pushed from it.
  assert baseline_evaluator.is_candidate(model('served', trained), candidate)
  # Another training of the same network: the same files and sizes.
  retrained = {**trained, 'variables/variables.data-00000-of-00001': b'v' * 100}
  assert not baseline_evaluator.is_candidate(model('retrained', retrained),
                                             candidate)


def test_3_a_model_worse_than_the_served_one_is_not_pushed(worse_model):
  outcome, _ = worse_model
  [version] = outcome.served_before
  assert outcome.result.returncode == 0, outcome.result.stderr
  assert outcome.blessing.custom_properties['blessed'].int_value == 0
  # It was compared against the served model, and lost.
  assert outcome.baselines
  assert outcome.failures == {('sparse_categorical_accuracy', True)}
  assert 'against the last blessed model (worse)' in outcome.result.stdout
  # Beside the baseline, the Evaluator still wrote its candidate's
  # probabilities of eval, which LabelCheck read.
  assert outcome.eval_scored == 'out_of_sample (by the Evaluator)'
  assert outcome.pushed == 0
  assert outcome.served_after == [version]


def test_4_a_model_below_the_threshold_is_not_pushed(worse_model):
  _, outcome = worse_model
  [version] = outcome.served_before
  assert outcome.result.returncode == 0, outcome.result.stderr
  # The model of test 3, evaluated again against the higher threshold.
  assert outcome.trainer_states[-1] == 'CACHED'
  assert ('sparse_categorical_accuracy', False) in outcome.failures
  assert 'below the threshold 0.5' in outcome.result.stdout
  assert outcome.pushed == 0
  # The first model is still the one served, and the newest version.
  assert outcome.served_after == [version]
