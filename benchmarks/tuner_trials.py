"""The tuning section: TFX's Tuner on MNIST (`--tune`), up to the Tuner:
each trial's hyperparameters, seconds and score, and the winner."""

import json
import os
import re
from typing import Any, Dict

from benchmarks import harness

TRIALS = 4
TRIAL_STEPS = 200
QUICK_TRIALS, QUICK_TRIAL_STEPS = 2, 5
# modules/training/callbacks.py TRIAL_LINE, as the console shows it.
_TRIAL = re.compile(r'Tuner trial (\d+) of \d+: (.*): val_accuracy ([\d.]+) '
                    r'after \d+ steps in ([\d.]+)s')


def measure(ctx: harness.Context) -> Dict[str, Any]:
  """One run up to the Tuner; its trial lines and the winner."""
  trials, steps = ctx.pick((TRIALS, TRIAL_STEPS),
                           (QUICK_TRIALS, QUICK_TRIAL_STEPS))
  flags = ['--tune', str(trials), '--tune-trial-steps', str(steps),
           '--to-node', 'Tuner', *ctx.pick((), harness.QUICK_ARGS)]
  print(f'  tuning: {" ".join(flags)}', flush=True)
  load_start = os.getloadavg()[0]
  local_run, output_dir = ctx.run('tuning', *flags)
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


SECTION = harness.Section(heading='## Tuning: TFX\'s Tuner on MNIST',
                          measure=measure, template='tuning.md.j2')
