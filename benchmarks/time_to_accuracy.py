"""MNIST time to accuracy: the training defaults of before against today's,
side by side in one run, each a whole local run from a fresh output
directory.

  .venv/bin/python -m benchmarks --section time-to-accuracy --data-dir ../shared/data/mnist

Variants (local_runner.py flags on top of the defaults):
  before  --epochs 8: the defaults when issue 15 was written (8 epochs,
          Adam 1e-3 decaying x0.75 per epoch; today's schedule with 8
          epochs decays x0.747, to the same 0.13 of the start);
  now     no flags: today's defaults (pipeline/configs.py).
`--candidate 'NAME=FLAGS'` adds variants (how the defaults were chosen).

Per variant: the whole run's wall time (the process), the Trainer's (its
'✔ Trainer' line) and the runner process's CPU time meanwhile (the
Trainer runs in it: a figure other work on the machine hardly changes),
each epoch's seconds and validation accuracy (its epoch
lines; the eval split is MNIST's official test set), and the accuracy of
the pushed model through `serve_images` on the raw t10k IDX files
(full_run.test_accuracy). Goal: today's pushed model >= 99.3% with at most
half the Trainer time of before.
"""

import dataclasses
import os
import re
import shlex
from typing import Dict, List, Sequence, Tuple

from benchmarks import full_run
from benchmarks import whole_dag

ACCURACY_GOAL = 0.993
TRAINER_TIME_GOAL = 0.5  # Of before's Trainer time.
VARIANTS = (('before', ('--epochs', '8')), ('now', ()))
_EPOCH = re.compile(
    r'Epoch (\d+)/(\d+): .* in ([\d.]+)s .*val_accuracy ([\d.]+)')


@dataclasses.dataclass
class Variant:
  name: str
  flags: Tuple[str, ...]
  whole_run_s: float
  trainer_s: float
  trainer_cpu_s: float
  load: Tuple[float, float]  # 1-minute load average at the start and end.
  epoch_s: List[float]
  val_accuracy: List[float]
  test_accuracy: float
  test_count: int


@dataclasses.dataclass
class Result:
  command: List[str]  # local_runner.py's, before the variant's flags.
  variants: List[Variant]


def parse_candidate(text: str) -> Tuple[str, Tuple[str, ...]]:
  """'NAME=FLAGS' -> (NAME, flags)."""
  name, sep, flags = text.partition('=')
  if not sep or not name:
    raise SystemExit(f'error: --candidate {text!r}: expected NAME=FLAGS')
  return name, tuple(shlex.split(flags))


def run(data_dir: str, work_dir: str, runner_args: Sequence[str],
        candidates: Sequence[Tuple[str, Tuple[str, ...]]] = (),
        data_dir_shown: str = '') -> Result:
  variants = []
  for name, flags in (*VARIANTS, *candidates):
    print(f'  time to accuracy: {name} {" ".join(flags)}', flush=True)
    output_dir = os.path.join(work_dir, f'tta-{name}')
    load_start = os.getloadavg()[0]
    local_run = whole_dag.run_local_runner(
        ['--data-dir', data_dir, '--output-dir', output_dir, *runner_args,
         *flags])
    stdout = local_run.stdout
    epochs = [m.groups() for m in _EPOCH.finditer(stdout)]
    if not epochs:
      raise SystemExit(f'error: no epoch lines in the run of {name}:\n{stdout}')
    accuracy, count = full_run.test_accuracy(
        os.path.join(output_dir, 'serving_model'), data_dir)
    variants.append(Variant(
        name=name, flags=tuple(flags), whole_run_s=local_run.seconds,
        trainer_s=local_run.nodes['Trainer'][0],
        trainer_cpu_s=local_run.cpu_seconds.get('Trainer', float('nan')),
        load=(load_start, os.getloadavg()[0]),
        epoch_s=[float(e[2]) for e in epochs],
        val_accuracy=[float(e[3]) for e in epochs],
        test_accuracy=accuracy, test_count=count))
  return Result(command=['local_runner.py', '--data-dir',
                         data_dir_shown or data_dir, *runner_args],
                variants=variants)


def goal_met(r: Result) -> Tuple[bool, str]:
  by_name: Dict[str, Variant] = {v.name: v for v in r.variants}
  before, now = by_name['before'], by_name['now']
  wall = now.trainer_s / before.trainer_s
  cpu = now.trainer_cpu_s / before.trainer_cpu_s
  met = (now.test_accuracy >= ACCURACY_GOAL and wall <= TRAINER_TIME_GOAL and
         cpu <= TRAINER_TIME_GOAL)
  return met, (f'{now.test_accuracy:.2%} test accuracy; Trainer '
               f'{wall:.0%} of before\'s wall time, {cpu:.0%} of its CPU '
               'time')


def render(r: Result, header: str) -> str:
  met, measured = goal_met(r)
  lines = [
      '## MNIST time to accuracy: the training defaults of before and now',
      '',
      header,
      '',
      f'    {" ".join(r.command)} [variant flags]',
      '',
      'Each variant is one whole run from a fresh output directory, run one '
      'after the other in this benchmark. Trainer: its wall time in the run '
      '(reading, training, validating every epoch, exporting), and the CPU '
      'time of the runner\'s process meanwhile (the Trainer runs in it; '
      'other work on the machine stretches wall time, much less CPU time: '
      'the load column says how busy the machine was). Test accuracy: the '
      'pushed model through `serve_images` on the raw t10k IDX files (10,000 '
      'images, the official test set); validation accuracy per epoch: the '
      'same images through the Trainer\'s input_fn.',
      '',
      f'Goal: the pushed model of today\'s defaults reaches >= '
      f'{ACCURACY_GOAL:.1%} with at most {TRAINER_TIME_GOAL:.0%} of the '
      f'Trainer time of before: **{"met" if met else "not met"}** '
      f'({measured}).',
      '',
      '| variant | flags | epochs | whole run | Trainer | Trainer CPU | s '
      'per epoch (median) | load (start, end) | test accuracy | validation '
      'accuracy per epoch |',
      '|---|---|---|---|---|---|---|---|---|---|',
  ]
  for v in r.variants:
    per_epoch = sorted(v.epoch_s)[len(v.epoch_s) // 2]
    lines.append(
        f'| {v.name} | {" ".join(v.flags) or "(defaults)"} | '
        f'{len(v.epoch_s)} | {v.whole_run_s:.0f} s | {v.trainer_s:.0f} s | '
        f'{v.trainer_cpu_s:.0f} s | {per_epoch:.1f} | {v.load[0]:.1f}, '
        f'{v.load[1]:.1f} | {v.test_accuracy:.2%} | '
        + ', '.join(f'{a:.2%}' for a in v.val_accuracy) + ' |')
  return '\n'.join(lines) + '\n'
