"""The time-to-accuracy section: whole MNIST runs, one after the other, of
the training defaults of before (`--epochs 8`) and now (none), and of any
`--candidate NAME=FLAGS`: run and Trainer time, the Trainer's CPU time (its
process's: other work on the machine hardly changes it), accuracy per epoch
and the pushed model's on the raw t10k files through `serve_images`."""

import dataclasses
import os
import shlex
from typing import List, Tuple

from benchmarks import runs
from benchmarks.figures import header, row, table

ACCURACY_GOAL = 0.993
TRAINER_TIME_GOAL = 0.5  # Of before's Trainer time.
VARIANTS = (('before', ('--epochs', '8')), ('now', ()))


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


def parse_candidate(text: str) -> Tuple[str, Tuple[str, ...]]:
  """'NAME=FLAGS' -> (NAME, flags)."""
  name, sep, flags = text.partition('=')
  if not sep or not name:
    raise SystemExit(f'error: --candidate {text!r}: expected NAME=FLAGS')
  return name, tuple(shlex.split(flags))


def section(args, data_dir: str, work_dir: str, command: str) -> str:
  runner_args = runs.QUICK_ARGS if args.quick else ()
  variants = []
  for name, flags in (*VARIANTS, *map(parse_candidate, args.candidate)):
    print(f'  time to accuracy: {name} {" ".join(flags)}', flush=True)
    output_dir = os.path.join(work_dir, f'tta-{name}')
    load_start = os.getloadavg()[0]
    local_run = runs.run_local_runner(
        ['--data-dir', data_dir, '--output-dir', output_dir, *runner_args,
         *flags])
    epoch_s, val_accuracy = local_run.epochs()
    accuracy, count = runs.pushed_accuracy(output_dir, data_dir)
    variants.append(Variant(
        name=name, flags=tuple(flags), whole_run_s=local_run.seconds,
        trainer_s=local_run.nodes['Trainer'][0],
        trainer_cpu_s=local_run.cpu_seconds.get('Trainer', float('nan')),
        load=(load_start, os.getloadavg()[0]), epoch_s=epoch_s,
        val_accuracy=val_accuracy, test_accuracy=accuracy, test_count=count))
  return render(variants, header(command), ['local_runner.py', '--data-dir',
                                            args.data_dir_shown, *runner_args])


def render(variants: List[Variant], head: str, command: List[str]) -> str:
  by_name = {v.name: v for v in variants}
  before, now = by_name['before'], by_name['now']
  wall = now.trainer_s / before.trainer_s
  cpu = now.trainer_cpu_s / before.trainer_cpu_s
  met = (now.test_accuracy >= ACCURACY_GOAL and wall <= TRAINER_TIME_GOAL and
         cpu <= TRAINER_TIME_GOAL)
  lines = [
      '## MNIST time to accuracy: the training defaults of before and now',
      '',
      head,
      '',
      f'    {" ".join(command)} [variant flags]',
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
      f'({now.test_accuracy:.2%} test accuracy; Trainer {wall:.0%} of '
      f'before\'s wall time, {cpu:.0%} of its CPU time).',
      '',
      *table('variant', 'flags', 'epochs', 'whole run', 'Trainer',
             'Trainer CPU', 's per epoch (median)', 'load (start, end)',
             'test accuracy', 'validation accuracy per epoch'),
  ]
  for v in variants:
    lines.append(row(
        v.name, ' '.join(v.flags) or '(defaults)', len(v.epoch_s),
        f'{v.whole_run_s:.0f} s', f'{v.trainer_s:.0f} s',
        f'{v.trainer_cpu_s:.0f} s', f'{sorted(v.epoch_s)[len(v.epoch_s) // 2]:.1f}',
        f'{v.load[0]:.1f}, {v.load[1]:.1f}', f'{v.test_accuracy:.2%}',
        ', '.join(f'{a:.2%}' for a in v.val_accuracy)))
  return '\n'.join(lines) + '\n'
