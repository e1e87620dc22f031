"""Real runs on tiny data: the validation split decides what training
chooses, the eval split nothing; --validation-percent 0 chooses nothing.

The run with a validation split is tests/tiny_runs.py's first of
`two_runs` (the defaults, which the inspection tests share); the run with
--validation-percent 0 is its `warm_run` (to the Trainer, on a copy of
two_runs' output and data, warm-started: tests/test_warm_start.py's)."""

import glob
import json
import os

from tests import examples_io
from tests import local_run
from tests import mlmd
from tests import tiny_runs


def _only(pattern):
  [path] = glob.glob(str(pattern))
  return path


def _training_plan(out):
  with open(_only(out / 'pipeline' / 'Trainer' / 'model' / '*' /
                  'Format-Serving' / 'assets.extra' /
                  'training_plan.json')) as f:
    return json.load(f)


def _newest_training_plan(out):
  """The training plan of the newest Model in `out`'s store."""
  model = mlmd.newest(mlmd.open_store(str(out)), 'Model')
  with open(os.path.join(model.uri, 'Format-Serving', 'assets.extra',
                         'training_plan.json')) as f:
    return json.load(f)


def _examples(out):
  return _only(out / 'pipeline' / 'ImageExampleGen' / 'examples' / '*')


def test_the_trainer_validates_on_the_validation_split(two_runs,
                                                       first_report):
  # The first run trained; the second, unchanged, took it from the cache.
  out, stdout = two_runs / 'out', (two_runs / 'run-1.stdout').read_text()
  examples = _examples(out)
  counts = {split: len(examples_io.read_split(examples, split))
            for split in ('train', 'validation', 'eval')}
  assert counts == tiny_runs.SPLIT_RECORDS
  assert counts['train'] + counts['validation'] == tiny_runs.TRAIN_RECORDS
  assert 0 < counts['validation'] < tiny_runs.TRAIN_RECORDS // 5

  plan = _training_plan(out)
  assert plan['validation_split'] == 'validation'
  assert plan['records'] == {'train': counts['train'],
                             'validation': counts['validation']}
  assert plan['early_stopping']['split'] == 'validation'
  assert plan['early_stopping']['split_records'] == counts['validation']
  assert sorted(plan['input']) == ['train', 'validation']
  assert (f'  Trainer: trains on train ({counts["train"]} records); early '
          'stopping and the kept epoch on validation '
          f'({counts["validation"]} records)') in stdout
  # The run summary lists every split's records.
  assert (f'train: {counts["train"]} records in 16 shards; validation: '
          f'{counts["validation"]} records in 16 shards; eval: '
          f'{counts["eval"]} records') in stdout

  # TFX's own args say it, and the inspector's report of the run that
  # trained (`inspect report -2 --html`) shows it.
  facts, page = first_report
  training = facts['training']
  assert training['settings']['train_splits'] == ['train']
  assert training['settings']['eval_splits'] == ['validation']
  assert training['splits']['validation_split'] == 'validation'
  assert training['splits']['records']['validation'] == counts['validation']
  assert (f'decided on validation ({counts["validation"]} records)'
          in page.read_text())


def test_the_tflite_check_reads_the_eval_split(two_runs):
  with open(_only(two_runs / 'out' / 'pipeline' / 'Trainer' / 'model' / '*' /
                  'Format-Serving' / 'tflite' / 'tflite.json')) as f:
    assert json.load(f)['eval_records'] == tiny_runs.EVAL_RECORDS


def test_validation_percent_0_makes_no_choice(warm_run):
  out, stdout = warm_run
  examples = mlmd.newest(mlmd.open_store(str(out)), 'Examples').uri
  assert examples.startswith(str(out))  # This run's, not two_runs'.
  assert examples_io.split_files(examples, 'train')
  assert not examples_io.split_files(examples, 'validation')
  plan = _newest_training_plan(out)
  assert plan['validation_split'] is None
  assert plan['records'] == {'train': tiny_runs.TRAIN_RECORDS}
  stopping = plan['early_stopping']
  assert not stopping['enabled'] and stopping['split'] is None
  assert stopping['kept_epoch'] == stopping['epochs_run'] == tiny_runs.EPOCHS
  assert (f'  Trainer: trains on train ({tiny_runs.TRAIN_RECORDS} records); '
          'no validation split: early stopping off, the last epoch kept'
          ) in stdout
  assert (f'Training: trained {tiny_runs.EPOCHS} of {tiny_runs.EPOCHS} '
          'epochs; no validation split: early stopping off, the last epoch '
          'kept.') in stdout


def test_tune_without_a_validation_split_is_refused(tmp_path):
  result = local_run.run('--data-dir', str(tmp_path), '--output-dir',
                         str(tmp_path / 'out'), '--validation-percent', '0',
                         '--tune', '2')
  assert result.returncode != 0
  assert result.stderr.strip().splitlines()[-1] == (
      'error: --tune needs a validation split to score its trials on; '
      '--validation-percent 0 leaves none')
