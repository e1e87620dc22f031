"""A folder of images without flags is gated by what its data says
(components/evaluator/blessing_rule.py): a run blesses and pushes a model well
above always guessing the most common class, saying the rule. Its re-run with
--accuracy-threshold uses that one, and with the serving directory
unreadable, fails in the Pusher instead of taking it for "nothing served".

Apart from tests/test_model_gating.py, whose tests share tests/tiny_runs.py's
session runs: these runs share nothing with them, so `make test` may give
them the other xdist worker (tests/xdist_groups.py).
"""

import os

import pytest

from components.evaluator import blessing_rule
from tests import datasets
from tests import local_run
from tests import mlmd
from tests import tiny_runs


def _served(workspace):
  return sorted(os.listdir(workspace / 'out' / 'serving_model'), key=int)


def _newest_blessing(workspace):
  return max(mlmd.open_store(str(workspace / 'out')).get_artifacts_by_type(
      'ModelBlessing'), key=lambda a: a.id)


FOLDER_CLASSES = ('cat', 'dog', 'fish')
FOLDER_EVAL_PER_CLASS = 10
# The classes' brightness tells them apart within an epoch. LabelCheck is
# not what these runs are about.
TRAINING = ['--epochs', '1', '--train-steps', '20', '--batch-size', '32',
            '--no-label-check', local_run.ONE_PROCESS]


@pytest.fixture(scope='module')
def folder_runs(tmp_path_factory):
  """A folder of images run without a threshold flag, then again with
  --accuracy-threshold 0.5 and its serving directory unreadable (as a user
  without root's power to read any file). Returns (workspace, first run,
  second run, served versions and `inspector metrics --json` after the
  first run)."""
  reason = local_run.permissions_enforceable()
  if reason:
    pytest.skip(reason)
  tmp = tmp_path_factory.mktemp('folder_gating')
  datasets.write_image_folder(
      str(tmp / 'data'), classes=FOLDER_CLASSES,
      per_class={'train': 30, 'eval': FOLDER_EVAL_PER_CLASS})
  args = ['--data-dir', str(tmp / 'data'), '--input-format', 'images',
          '--output-dir', str(tmp / 'out'), *TRAINING]
  first = local_run.run(*args)
  assert first.returncode == 0, first.stderr[-3000:]
  served = _served(tmp)
  metrics = tiny_runs.inspect_json(tmp / 'out', 'metrics')
  serving_dir = tmp / 'out' / 'serving_model'
  serving_dir.chmod(0)
  try:
    second = local_run.run(*args, '--accuracy-threshold', '0.5',
                           obey_permissions=True)
  finally:
    serving_dir.chmod(0o755)  # So that pytest can clean up.
  return tmp, first, second, (served, metrics)


def _rule_lines(result):
  return [line.strip() for line in result.stdout.splitlines()
          if line.strip().startswith('Blessing rule:')]


def test_a_folder_is_blessed_above_always_guessing_its_commonest_class(
    folder_runs):
  workspace, first, _, (served, metrics) = folder_runs
  rule = blessing_rule.from_class_counts(
      [FOLDER_EVAL_PER_CLASS] * len(FOLDER_CLASSES), FOLDER_CLASSES)
  assert 0.4 < rule.threshold < 0.6  # Far from 0.99, and above a third.
  # Said once, on the console, as the Evaluator runs.
  assert _rule_lines(first) == [
      f'Blessing rule: accuracy >= {rule.threshold:g}, clearly above always '
      "guessing 'cat' (33.3% of 30 eval images); --accuracy-threshold sets "
      'a fixed one']
  store = mlmd.open_store(str(workspace / 'out'))
  first_blessing = min(store.get_artifacts_by_type('ModelBlessing'),
                       key=lambda a: a.id)
  props = first_blessing.custom_properties
  assert props['blessed'].int_value == 1
  assert props['accuracy_threshold'].double_value == rule.threshold
  assert len(served) == 1
  # The inspector reads the rule's threshold, not the eval_config's.
  assert metrics['blessing_rule'] == (
      f'accuracy >= {rule.threshold:g}, {rule.reason}')


def test_an_explicit_threshold_wins_and_an_unreadable_serving_directory_fails(
    folder_runs):
  workspace, _, second, (served, _) = folder_runs
  assert _rule_lines(second) == [
      'Blessing rule: accuracy >= 0.5, ' + blessing_rule.FIXED_REASON]
  blessing = _newest_blessing(workspace)
  assert blessing.custom_properties['accuracy_threshold'].double_value == 0.5
  # The same model, blessed again: the Pusher must know what is served,
  # and cannot read it.
  assert second.returncode == 1
  assert '✘ Pusher' in second.stdout
  serving_dir = workspace / 'out' / 'serving_model'
  [error] = [l for l in second.stderr.splitlines() if l.startswith('error')]
  assert error == (
      'error in Pusher: ServingDirectoryError: cannot read the serving '
      f'directory {serving_dir}, so which model is served is unknown: '
      f'PermissionDeniedError: {serving_dir}; Permission denied')
  assert _served(workspace) == served
