"""Real runs on tiny data that several test modules inspect, made once per
test session (tests/conftest.py shares the fixtures): a full run and its
unchanged re-run in one store, a warm-started run on a copy of it, a run
the ValidationGate stopped in another, and a --tune run on a scaled
dataset in a third. What each run printed is kept beside its output
directory."""

import json
import shutil

import numpy as np
import pytest

from components.image_example_gen import validation_split
from data import scaled_mnist
from pipeline import constants
from pipeline.knobs import DataConfig
from records import features
from tests import datasets
from tests import local_run

# Cached in the re-run whatever the Evaluator's baseline does (LabelCheck
# reads the Evaluator's evaluation, so it runs again with the Evaluator).
DATA_AND_TRAINING = ['ImageExampleGen', 'StatisticsGen', 'SchemaGen',
                     'ExampleValidator', 'DataChecks', 'ValidationGate',
                     'Transform', 'Trainer']
EPOCHS = 2
TINY_TRAINING = ['--epochs', str(EPOCHS), '--train-steps', '60',
                 '--batch-size', '32', local_run.ONE_PROCESS]
TRAIN_RECORDS = 300
EVAL_RECORDS = 100
ACCURACY_THRESHOLD = '0.3'
# tuned_run: the Tuner's trials, and the copies of each training image in
# its data (data/scaled_mnist.py: the image and deformed copies of it).
TUNE_TRIALS = 2
SCALED_COPIES = 3
SCALED_SOURCE = {'train': 100, 't10k': 50}
# warm_run: the factor --warm-start-learning-rate-factor gives.
WARM_LEARNING_RATE_FACTOR = 0.5


def _split_labels():
  """The labels of each split of two_runs' data: validation is the train
  files' records hashed into it (validation_split.py), eval is t10k's."""
  images, labels = datasets.images_and_labels(TRAIN_RECORDS, seed=0)
  chosen = validation_split.mask([image[..., None].tobytes()
                                  for image in images],
                                 DataConfig().validation_percent)
  _, eval_labels = datasets.images_and_labels(EVAL_RECORDS, seed=1)
  return {'train': labels[~chosen], 'validation': labels[chosen],
          'eval': eval_labels}


# Records, and records per class, of each split of two_runs' data.
SPLIT_LABELS = _split_labels()
SPLIT_RECORDS = {split: len(labels) for split, labels in SPLIT_LABELS.items()}
CLASS_RECORDS = {split: np.bincount(labels, minlength=10).tolist()
                 for split, labels in SPLIT_LABELS.items()}


def inspect(out_dir, *args, expect_rc=0):
  """Runs the CLI on `out_dir`'s store, as a fork of the preloaded Python
  (tests/local_run.py); returns the completed process."""
  result = local_run.python(['-m', 'inspector', '--output-dir', str(out_dir),
                             *args], timeout=300)
  assert result.returncode == expect_rc, result.stderr[-3000:]
  # Whatever the command, the libraries' deprecation warnings are not shown.
  assert 'deprecat' not in result.stderr.lower(), result.stderr[-3000:]
  return result


def inspect_json(out_dir, *args):
  return json.loads(inspect(out_dir, *args, '--json').stdout)


@pytest.fixture(scope='session')
def two_runs(tmp_path_factory):
  """A full run on tiny MNIST-format data, then an unchanged re-run; their
  output in run-1.out and run-2.out (stdout, then stderr), their stdout
  alone in run-1.stdout and run-2.stdout. tests/test_model_gating.py runs
  again on this output directory and puts it back as it was."""
  tmp = tmp_path_factory.mktemp('inspect')
  data = tmp / 'data'
  datasets.write_idx_dataset(str(data), {'train': TRAIN_RECORDS,
                                         't10k': EVAL_RECORDS})
  for number in (1, 2):
    result = local_run.run('--data-dir', str(data), '--output-dir',
                           str(tmp / 'out'), '--accuracy-threshold',
                           ACCURACY_THRESHOLD, *TINY_TRAINING)
    (tmp / f'run-{number}.out').write_text(result.stdout + result.stderr)
    (tmp / f'run-{number}.stdout').write_text(result.stdout)
    assert result.returncode == 0, result.stderr[-3000:]
  return tmp


@pytest.fixture(scope='session')
def first_report(two_runs, tmp_path_factory):
  """(facts, page path) of `inspect report -2 --html first.html --json`: the
  report of two_runs' first run (the one that trained and pushed), which
  tests/test_report.py and tests/test_validation_runs.py read."""
  page = tmp_path_factory.mktemp('first_report') / 'first.html'
  return inspect_json(two_runs / 'out', 'report', '-2', '--html',
                      str(page)), page


@pytest.fixture(scope='session')
def warm_run(two_runs, tmp_path_factory):
  """(output directory, console output) of one run to the Trainer on a copy
  of two_runs' output and data, with --warm-start (from the model two_runs
  pushed, at half the learning rate) and --validation-percent 0 (all of
  train trains, no validation split). tests/test_warm_start.py reads where
  its Trainer started, tests/test_validation_runs.py what it chose without
  a validation split: one run serves both, as a run's cost hardly depends
  on what it trains.

  Its ImageExampleGen runs again (another split of the same files), so
  the copy holds two of each artifact up to the Trainer: the run's own are
  the newest (mlmd.newest)."""
  out = tmp_path_factory.mktemp('warm') / 'out'
  shutil.copytree(two_runs / 'out', out)
  result = local_run.run(
      '--data-dir', str(two_runs / 'data'), '--output-dir', str(out),
      '--accuracy-threshold', ACCURACY_THRESHOLD, *TINY_TRAINING,
      '--warm-start', '--warm-start-learning-rate-factor',
      str(WARM_LEARNING_RATE_FACTOR), '--validation-percent', '0',
      # What the Trainer started from and chose is the point: no
      # Evaluator, Pusher or LabelCheck after it.
      '--to-node', 'Trainer')
  assert result.returncode == 0, result.stderr[-3000:]
  return out, result.stdout


@pytest.fixture(scope='session')
def stopped_run(tmp_path_factory):
  """32x32 images against the curated 28x28 schema: the gate stops the run.
  Its output is in ../run.out (stdout, then stderr), and apart in
  ../run.stdout and ../run.stderr."""
  tmp = tmp_path_factory.mktemp('stopped')
  datasets.write_idx_dataset(str(tmp / 'data'), {'train': 40, 't10k': 20},
                             geometry=features.ImageGeometry(32, 32, 1))
  result = local_run.run('--data-dir', str(tmp / 'data'), '--schema',
                         constants.MNIST_SCHEMA, '--output-dir',
                         str(tmp / 'out'), local_run.ONE_PROCESS)
  (tmp / 'run.out').write_text(result.stdout + result.stderr)
  (tmp / 'run.stdout').write_text(result.stdout)
  (tmp / 'run.stderr').write_text(result.stderr)
  assert result.returncode == 1
  return tmp / 'out'


@pytest.fixture(scope='session')
def tuned_run(tmp_path_factory):
  """(output directory, console output) of one whole run to a push with
  --tune TUNE_TRIALS, on SCALED_COPIES copies of a tiny dataset's training
  images (data/scaled_mnist.py). tests/test_tuning_run.py reads its Tuner,
  tests/test_scaled_mnist.py its way through the whole DAG."""
  tmp = tmp_path_factory.mktemp('tuned')
  datasets.write_idx_dataset(str(tmp / 'source'), SCALED_SOURCE)
  scaled_mnist.write_idx(str(tmp / 'data'), SCALED_COPIES, str(tmp / 'source'),
                         progress=False)
  result = local_run.run(
      '--data-dir', str(tmp / 'data'), '--output-dir', str(tmp / 'out'),
      # Threshold 0: the run's way to a push is the point, not accuracy.
      '--accuracy-threshold', '0', *TINY_TRAINING,
      '--tune', str(TUNE_TRIALS), '--tune-trial-steps', '3')
  assert result.returncode == 0, result.stderr[-3000:]
  return tmp / 'out', result.stdout
