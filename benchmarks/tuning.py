"""The tuning section: TFX's Tuner on MNIST (`--tune`), up to the Tuner:
each trial's hyperparameters, seconds and score, and the winner."""

import json
import os
import re
from typing import Any, Dict, List

from benchmarks import harness
from benchmarks.harness import row, table

TRIALS = 4
TRIAL_STEPS = 200
QUICK_TRIALS, QUICK_TRIAL_STEPS = 2, 5
# modules/progress.py TRIAL_LINE, as the console shows it.
_TRIAL = re.compile(r'Tuner trial (\d+) of \d+: (.*): val_accuracy ([\d.]+) '
                    r'after \d+ steps in ([\d.]+)s')


def measure(ctx: harness.Context) -> Dict[str, Any]:
  """One run up to the Tuner; its trial lines and the winner."""
  trials, steps = ctx.pick((TRIALS, TRIAL_STEPS),
                           (QUICK_TRIALS, QUICK_TRIAL_STEPS))
  flags = ['--tune', str(trials), '--tune-trial-steps', str(steps),
           '--to-node', 'Tuner', *ctx.pick((), harness.QUICK_ARGS)]
  output_dir = ctx.path('tuning')
  print(f'  tuning: {" ".join(flags)}', flush=True)
  load_start = os.getloadavg()[0]
  local_run = harness.run_local_runner(ctx.data_dir, output_dir, *flags)
  load_end = os.getloadavg()[0]
  found = _TRIAL.findall(local_run.stdout)
  if len(found) != trials:
    raise SystemExit(f'error: {len(found)} trial lines, not {trials}, in the '
                     f'output of {" ".join(local_run.command)}:\n'
                     f'{local_run.stdout}')
  with open(os.path.join(harness.newest_artifact(output_dir, 'Tuner',
                                                 'tuner_results'),
                         'tuner_results.json')) as f:
    winner = int(json.load(f)[0]['trial_id']) + 1  # Best first.
  return dict(flags=flags, trials=trials, steps=steps, load=(load_start,
                                                             load_end),
              found=found, winner=winner, tuner_s=local_run.nodes['Tuner'][0],
              seconds=local_run.seconds)


def render(r: Dict[str, Any], ctx: harness.Context) -> List[str]:
  """The trials, the winner marked."""
  lines = [
      f'    local_runner.py --data-dir {ctx.data_dir_shown} '
      f'{" ".join(r["flags"])}',
      '',
      f'{r["trials"]} random-search trials of {r["steps"]} training steps '
      f'each (batch {harness.TRAINING.batch_size}), each scored by its '
      'accuracy on the whole eval split (10,000 images) after those steps. '
      'Trial seconds: building the model, the steps and the evaluation; the '
      'first trial also reads the splits into the input cache. One run; '
      f'1-minute load {r["load"][0]:.1f} at the start, {r["load"][1]:.1f} at '
      f'the end (above {os.cpu_count()}, something else shared the cores).',
      '',
      *table('trial', 'hyperparameters', 'seconds', 'val_accuracy', ''),
  ]
  for number, values, accuracy, seconds in r['found']:
    lines.append(row(number, values, seconds, accuracy,
                     'winner' if int(number) == r['winner'] else ''))
  return lines + ['', f'Tuner: {r["tuner_s"]:.0f} s; whole run up to the '
                  f'Tuner: {r["seconds"]:.0f} s.']


SECTION = harness.Section(heading='## Tuning: TFX\'s Tuner on MNIST',
                          measure=measure, render=render)
