"""A real --tune run on tiny data: the Tuner's trials, the Trainer trained
with the winner, and both in ML Metadata, the inspector and the report."""

import glob
import json
import re

from modules.training import config as config_lib
from modules.training import model as model_lib
from modules.training.config import TrainingConfig
from records import features
from tests import tiny_runs

# tests/tiny_runs.py's tuned_run (shared with tests/test_scaled_mnist.py).
TRIALS = tiny_runs.TUNE_TRIALS


def _training_plan(out):
  [path] = glob.glob(str(out / 'pipeline' / 'Trainer' / 'model' / '*' /
                         'Format-Serving' / 'assets.extra' /
                         'training_plan.json'))
  with open(path) as f:
    return json.load(f)


def test_the_trainer_trains_the_winner(tuned_run):
  out, stdout = tuned_run
  assert len(re.findall(r'^  Tuner trial \d of 2: network small-bn-cnn, '
                        r'learning_rate .*: val_accuracy [\d.]+ on validation '
                        r'after 3 steps',
                        stdout, re.M)) == TRIALS
  assert stdout.index('✔ Tuner') < stdout.index('▶ Trainer')
  # The run's summary names the winner beside its artifact.
  assert re.search(r'Tuner +HyperParameters .*\n +best: network small-bn-cnn, '
                   r'learning_rate [\d.e-]+, width [\d.]+\n',
                   stdout)
  [best_file] = glob.glob(str(out / 'pipeline' / 'Tuner' /
                              'best_hyperparameters' / '*' / '*.txt'))
  with open(best_file) as f:
    winner = json.load(f)['values']
  plan = _training_plan(out)
  assert plan['tuned'] == winner
  assert plan['learning_rate'] == winner[config_lib.TUNED_LEARNING_RATE]
  # The network the Trainer built is the winner's width.
  config = config_lib.with_tuned(TrainingConfig(), winner)
  assert plan['parameters'] == model_lib.build(
      winner[config_lib.TUNED_NETWORK], features.MNIST_GEOMETRY, 10,
      config.model).count_params()


def test_the_inspector_shows_the_trials_and_the_winner(tuned_run):
  out, _ = tuned_run
  result = tiny_runs.inspect_json(out, 'tuning', 'latest')
  trials = result['trials']
  assert result['scored_on'] == 'validation'
  assert sorted(t['trial'] for t in trials) == list(range(1, TRIALS + 1))
  assert [t['score'] for t in trials] == sorted(
      (t['score'] for t in trials), reverse=True)
  [winner] = [t for t in trials if t['winner']]
  assert winner['hyperparameters'] == _training_plan(out)['tuned']
  assert winner['hyperparameters'] == result['best_hyperparameters']['values']
  text = tiny_runs.inspect(out, 'tuning').stdout
  assert 'winner' in text and 'learning_rate' in text


def test_the_report_shows_the_tuner_and_its_trials(tuned_run, tmp_path):
  out, _ = tuned_run
  page = tmp_path / 'report.html'
  facts = tiny_runs.inspect_json(out, 'report', '--html', str(page))
  nodes = {n['node']: n for n in facts['dag']['nodes']}
  assert nodes['Tuner']['state'] == 'COMPLETE'
  assert 'Tuner' in nodes['Trainer']['upstream']
  tuned = facts['training']['tuning']
  assert len(tuned['trials']) == TRIALS
  html = page.read_text()
  section = html[html.index('Tuning (--tune)'):]
  section = section[:section.index('</table>')]
  assert section.count('<tr class="winner">') == 1
  for trial in tuned['trials']:
    assert f'<td class="num">{trial["trial"]}</td>' in section
  assert 'Trials scored on the validation split.' in section
