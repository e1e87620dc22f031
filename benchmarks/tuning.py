"""The tuning section: TFX's Tuner on MNIST (`--tune`), up to the Tuner:
each trial's hyperparameters, seconds and score, and the winner."""

import json
import os
import re

from benchmarks import runs
from benchmarks.figures import header, row, table

TRIALS = 4
TRIAL_STEPS = 200
QUICK_TRIALS, QUICK_TRIAL_STEPS = 2, 5
# modules/progress.py TRIAL_LINE, as the console shows it.
_TRIAL = re.compile(r'Tuner trial (\d+) of \d+: (.*): val_accuracy ([\d.]+) '
                    r'after \d+ steps in ([\d.]+)s')


def section(args, data_dir: str, work_dir: str, command: str) -> str:
  trials, steps = ((QUICK_TRIALS, QUICK_TRIAL_STEPS) if args.quick
                   else (TRIALS, TRIAL_STEPS))
  flags = ['--tune', str(trials), '--tune-trial-steps', str(steps),
           '--to-node', 'Tuner', *(runs.QUICK_ARGS if args.quick else ())]
  output_dir = os.path.join(work_dir, 'tuning')
  print(f'  tuning: {" ".join(flags)}', flush=True)
  load_start = os.getloadavg()[0]
  local_run = runs.run_local_runner(
      ['--data-dir', data_dir, '--output-dir', output_dir, *flags])
  load_end = os.getloadavg()[0]
  found = _TRIAL.findall(local_run.stdout)
  if len(found) != trials:
    raise SystemExit(f'error: {len(found)} trial lines, not {trials}, in the '
                     f'output of {" ".join(local_run.command)}:\n'
                     f'{local_run.stdout}')
  with open(os.path.join(runs.newest_artifact(output_dir, 'Tuner',
                                              'tuner_results'),
                         'tuner_results.json')) as f:
    winner = int(json.load(f)[0]['trial_id']) + 1  # Best first.
  lines = [
      '## Tuning: TFX\'s Tuner on MNIST',
      '',
      header(command),
      '',
      f'    local_runner.py --data-dir {args.data_dir_shown} '
      f'{" ".join(flags)}',
      '',
      f'{trials} random-search trials of {steps} training steps each (batch '
      f'{runs.TRAINING.batch_size}), each scored by its accuracy on the '
      'whole eval split (10,000 images) after those steps. Trial seconds: '
      'building the model, the steps and the evaluation; the first trial '
      'also reads the splits into the input cache. One run; 1-minute load '
      f'{load_start:.1f} at the start, {load_end:.1f} at the end (above '
      f'{os.cpu_count()}, something else shared the cores).',
      '',
      *table('trial', 'hyperparameters', 'seconds', 'val_accuracy', ''),
  ]
  for number, values, accuracy, seconds in found:
    lines.append(row(number, values, seconds, accuracy,
                     'winner' if int(number) == winner else ''))
  lines += ['', f'Tuner: {local_run.nodes["Tuner"][0]:.0f} s; whole run up '
            f'to the Tuner: {local_run.seconds:.0f} s.']
  return '\n'.join(lines) + '\n'
