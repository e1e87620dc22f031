"""The backbones section: each --backbone from scratch (--weights none)
against the scratch small-gap-cnn on the colour shapes (data/shapes.py),
through the DAG up to the Trainer, in one output directory, so the data
half runs once and each network re-runs only the Trainer.

The machine that measures has no network: ImageNet weights, the reason to
use a backbone, are not measured here; these figures say what each network
costs per epoch and how far it gets from scratch in a few epochs.
"""

import os

from benchmarks import runs
from benchmarks.figures import header, row, table
from data import shapes
from modules.architectures import BACKBONES, SMALL_GAP_CNN

SIZE = 64
PER_CLASS, EVAL_PER_CLASS = 50, 10
EPOCHS = 3
QUICK = (10, 2, 2)  # Per class: train, eval; epochs.
# Up to the Trainer: its epoch lines are the figures.
RUNNER_FLAGS = ('--input-format', 'images', '--image-size', f'{SIZE}x{SIZE}',
                '--channels', '3', '--to-node', 'Trainer')
QUICK_FLAGS = ('--train-steps', '4',
               '--beam-args=--direct_running_mode=in_memory '
               '--direct_num_workers=1')
CANDIDATES = ((SMALL_GAP_CNN, ('--model', SMALL_GAP_CNN)),
              # From scratch: one epoch of the head, then the whole network
              # at the same learning rate.
              *((name, ('--backbone', name, '--weights', 'none',
                        '--head-epochs-fraction', '0',
                        '--fine-tune-layers-fraction', '1',
                        '--fine-tune-learning-rate-factor', '1'))
                for name in BACKBONES))


def _load() -> str:
  one, five, fifteen = os.getloadavg()
  return f'{one:.1f}, {five:.1f}, {fifteen:.1f}'


def section(args, data_dir: str, work_dir: str, command: str) -> str:
  del data_dir  # The section writes its own data.
  per_class, eval_per_class, epochs = (
      QUICK if args.quick else (PER_CLASS, EVAL_PER_CLASS, EPOCHS))
  shapes_dir = os.path.join(work_dir, 'backbone-shapes')
  shapes.write(shapes_dir, per_class, SIZE, eval_per_class)
  output_dir = os.path.join(work_dir, 'backbones-run')
  flags = (*RUNNER_FLAGS, '--epochs', str(epochs),
           *(QUICK_FLAGS if args.quick else ()))
  rows, loads = [], [_load()]
  for name, candidate in CANDIDATES:
    print(f'  backbones: {name}', flush=True)
    run = runs.run_local_runner(['--data-dir', shapes_dir, '--output-dir',
                                 output_dir, *flags, *candidate])
    loads.append(_load())
    epoch_s, val_accuracy = run.epochs()
    # The first epoch of each fit (a backbone's two phases are two) also
    # traces the model: the last epoch is the steady one.
    rows.append(row(name, ' '.join(candidate), f'{epoch_s[-1]:.1f}',
                    f'{epoch_s[0]:.1f}',
                    ', '.join(f'{a:.1%}' for a in val_accuracy)))
  train, evaluation = (n * len(shapes.SHAPES)
                       for n in (per_class, eval_per_class))
  return '\n'.join([
      f'## Backbones from scratch on the shapes at {SIZE}x{SIZE}x3',
      '',
      header(command),
      '',
      f'    {" ".join(["local_runner.py", "--data-dir", "SHAPES", *flags])} '
      'NETWORK',
      '',
      f'SHAPES: `python -m data.shapes --per-class {per_class} '
      f'--eval-per-class {eval_per_class} --size {SIZE}` (seed 0), '
      f'{train:,} training and {evaluation:,} eval images in ten classes; '
      'one run per network up to the Trainer, in one output directory (the '
      f'data half runs once). Each backbone from `--weights none`: one epoch of '
      'the head alone (the first phase, never shorter), then the whole '
      'network at the same learning rate (no pretrained layers to protect).',
      '',
      '**Not measured: the gain from ImageNet weights.** This machine has '
      'no network, so no backbone starts from its ImageNet weights here; '
      'from scratch, on this little data and so few epochs, the backbones '
      'say what an epoch costs, not how well transfer learning does.',
      '',
      f'Load average (1, 5, 15 min) before and after each run: '
      f'{"; ".join(loads)} (above the cores\' count, something else shared '
      'them: times are then upper bounds).',
      '',
      *table('network', 'flags', 'last epoch s', 'first epoch s (with '
             'tracing)', 'validation accuracy by epoch'),
      *rows,
  ]) + '\n'
