"""The colour time-to-accuracy section: the shapes folder (data/shapes.py,
96x96x3, as the shapes section) through the whole DAG with the training
defaults of before (every planned epoch, no early stopping) and now, and
a bare Keras loop (benchmarks/colour_reference.py) on the same images as
arrays in memory, trained to the accuracy the pipeline reaches.

Two goals: the pipeline trains at least as fast per image as the bare
loop, and today's defaults reach before's test accuracy in a fraction of
before's Trainer time.
"""

import dataclasses
import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Tuple

from benchmarks import runs
from benchmarks import shapes_run
from benchmarks.figures import cpu_model, header, row, table

VARIANTS = (('before', ('--epochs', '60', '--early-stopping-patience', '0')),
            ('now', ()))
# --quick: two epochs each, the data half in one process.
QUICK_VARIANTS = (('before', ('--epochs', '2', '--early-stopping-patience',
                              '0')), ('now', ('--epochs', '2')))
QUICK_FLAGS = ('--beam-args=--direct_running_mode=in_memory '
               '--direct_num_workers=1',)
# Goals: now's Trainer time at most this fraction of before's, its test
# accuracy at most this far below before's; the pipeline's images/s at
# least this fraction of the bare loop's.
TIME_GOAL = 0.5
ACCURACY_SLACK = 0.005
SPEED_GOAL = 1.0
# CPU flags that decide the Trainer's precision (modules/devices.py).
CPU_FLAGS = ('avx2', 'avx512f', 'avx512_bf16', 'amx_bf16')


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
  plan: Dict[str, Any]  # The serving model's training_plan.json.
  precision: str
  output_dir: str

  @property
  def images_trained(self) -> int:
    return self.plan['train_records'] * len(self.epoch_s)

  @property
  def images_per_s(self) -> float:
    """Training records over an epoch's median wall time (training and
    validation)."""
    return self.plan['train_records'] / _median(self.epoch_s)


def _median(values: List[float]) -> float:
  return sorted(values)[len(values) // 2]


def _cpu_flags() -> str:
  from modules import devices  # pylint: disable=g-import-not-at-top
  flags = devices.cpu_flags()
  return ', '.join(f for f in CPU_FLAGS if f in flags) or 'none of them'


def run_variant(name: str, flags: Tuple[str, ...], shapes_dir: str,
                work_dir: str, quick: bool, images, labels) -> Variant:
  print(f'  colour time to accuracy: {name} {" ".join(flags)}', flush=True)
  output_dir = os.path.join(work_dir, f'colour-{name}')
  load_start = os.getloadavg()[0]
  local_run = runs.run_local_runner(
      ['--data-dir', shapes_dir, '--output-dir', output_dir,
       *shapes_run.RUNNER_FLAGS, *(QUICK_FLAGS if quick else ()), *flags])
  load = (load_start, os.getloadavg()[0])
  epoch_s, val_accuracy = local_run.epochs()
  model_dir, plan = runs.trainer_model(output_dir)
  with open(os.path.join(runs.newest_artifact(output_dir, 'Trainer',
                                              'model_run'),
                         'device_plan.json')) as f:
    precision = json.load(f)['precision']
  return Variant(
      name=name, flags=tuple(flags), whole_run_s=local_run.seconds,
      trainer_s=local_run.nodes['Trainer'][0],
      trainer_cpu_s=local_run.cpu_seconds.get('Trainer', float('nan')),
      load=load, epoch_s=epoch_s, val_accuracy=val_accuracy,
      test_accuracy=runs.accuracy(model_dir, images, labels), plan=plan,
      precision=precision, output_dir=output_dir)


def run_reference(variant: Variant, work_dir: str) -> Dict[str, Any]:
  """The bare loop on `variant`'s Examples and transform graph, to the
  validation accuracy of the weights it kept, within its planned epochs."""
  out = os.path.join(work_dir, 'colour-reference.json')
  stopping = variant.plan['early_stopping']
  target = stopping.get('kept_value') or max(variant.val_accuracy)
  command = [
      sys.executable, '-m', 'benchmarks.colour_reference',
      '--examples', runs.newest_artifact(variant.output_dir, 'ImageExampleGen',
                                         'examples'),
      '--transform', runs.newest_artifact(variant.output_dir, 'Transform',
                                          'transform_graph'),
      '--epochs', str(stopping['epochs_planned']), '--target', str(target),
      '--out', out,
      *(() if variant.precision != 'float32' else ('--no-mixed-precision',))]
  print('  colour time to accuracy: the bare Keras loop', flush=True)
  load_start = os.getloadavg()[0]
  subprocess.run(command, cwd=runs.PROJECT_DIR, check=True)
  with open(out) as f:
    result = json.load(f)
  result['load'] = (load_start, os.getloadavg()[0])
  result['target'] = target
  return result


def section(args, data_dir: str, work_dir: str, command: str) -> str:
  del data_dir  # The section writes its own data.
  from data import shapes  # pylint: disable=g-import-not-at-top
  per_class, eval_per_class, test_per_class = (
      shapes_run.QUICK if args.quick else
      (shapes_run.PER_CLASS, shapes_run.EVAL_PER_CLASS,
       shapes_run.TEST_PER_CLASS))
  shapes_dir = os.path.join(work_dir, 'colour-shapes')
  shapes.write(shapes_dir, per_class, shapes_run.SIZE, eval_per_class)
  images, labels = shapes_run.held_out_images(
      os.path.join(work_dir, 'colour-test'), test_per_class)
  variants = [run_variant(name, flags, shapes_dir, work_dir, args.quick,
                          images, labels)
              for name, flags in (QUICK_VARIANTS if args.quick else VARIANTS)]
  reference = run_reference(variants[-1], work_dir)
  return render(variants, reference, header(command), args.quick,
                (per_class, eval_per_class, len(labels)))


def render(variants: List[Variant], reference: Dict[str, Any], head: str,
           quick: bool, counts: Tuple[int, int, int]) -> str:
  before, now = variants
  per_class, eval_per_class, tests = counts
  wall = now.trainer_s / before.trainer_s
  cpu = now.trainer_cpu_s / before.trainer_cpu_s
  accuracy_met = now.test_accuracy >= before.test_accuracy - ACCURACY_SLACK
  time_met = accuracy_met and wall <= TIME_GOAL and cpu <= TIME_GOAL
  reference_rate = reference['train_records'] / _median(reference['epoch_s'])
  reference_cpu_ms = 1000 * reference['cpu_s'] / (
      reference['train_records'] * len(reference['epoch_s']))
  speed = now.images_per_s / reference_rate
  speed_met = speed >= SPEED_GOAL
  stopping = now.plan['early_stopping']
  flags = (*shapes_run.RUNNER_FLAGS, *(QUICK_FLAGS if quick else ()))
  lines = [
      f'## Colour time to accuracy at {shapes_run.SIZE}x{shapes_run.SIZE}x3: '
      'the pipeline against a bare Keras loop, defaults of before and now',
      '',
      head,
      '',
      f'CPU flags: {_cpu_flags()}; the Trainer computed in {now.precision}.',
      '',
      f'    {" ".join(["local_runner.py", "--data-dir", "SHAPES", *flags])} '
      '[variant flags]',
      '',
      f'SHAPES: `python -m data.shapes --per-class {per_class} '
      f'--eval-per-class {eval_per_class} --size {shapes_run.SIZE}` (seed '
      f'0). Each variant is one whole run from a fresh output directory, one '
      'after the other. Test accuracy: the trained model through '
      f'`serve_images` on {tests:,} images of seed {shapes_run.TEST_SEED}. '
      'Images/s: training records over the median epoch\'s wall time '
      '(training and validation). CPU ms per image: the CPU time of the '
      'runner\'s process while the Trainer ran (reading, training, '
      'validating, exporting the model and its TensorFlow Lite files), over '
      'the images trained. Bare Keras loop (`benchmarks/colour_reference.py`): '
      'the same network, batch, precision, optimizer and augmentation in a '
      'plain `model.fit` on the same images, transformed, as numpy arrays, '
      'validating each epoch on the eval arrays, trained until it reaches '
      'the validation accuracy of the weights `now` kept, in a process of '
      'its own (CPU: its `fit` alone). Load: the 1-minute load average at '
      'the start and end (the machine\'s other work stretches wall time, '
      'much less CPU time).',
      '',
      *table('goal', 'measured', ''),
      row(f'speed: the pipeline trains >= {SPEED_GOAL:.0%} of the bare '
          'loop\'s images/s',
          f'{speed:.0%} ({now.images_per_s:.1f} against '
          f'{reference_rate:.1f} images/s; CPU ms per image '
          f'{1000 * now.trainer_cpu_s / now.images_trained:.1f} against '
          f'{reference_cpu_ms:.1f})', 'met' if speed_met else '**not met**'),
      row(f'time to accuracy: now\'s test accuracy >= before\'s - '
          f'{ACCURACY_SLACK:.1%} with <= {TIME_GOAL:.0%} of before\'s '
          'Trainer time',
          f'{now.test_accuracy:.1%} against {before.test_accuracy:.1%}; '
          f'Trainer {wall:.0%} of before\'s wall time, {cpu:.0%} of its CPU '
          'time', 'met' if time_met else '**not met**'),
      '',
      *table('variant', 'flags', 'epochs run (planned)', 'weights kept',
             'whole run', 'Trainer', 'Trainer CPU', 'images/s',
             'CPU ms per image', 'load (start, end)',
             'validation accuracy (weights kept)', 'test accuracy'),
  ]
  for v in variants:
    kept = v.plan['early_stopping']
    lines.append(row(
        v.name, ' '.join(v.flags) or '(defaults)',
        f'{len(v.epoch_s)} ({kept["epochs_planned"]})',
        f'epoch {kept["kept_epoch"]}', f'{v.whole_run_s / 60:.1f} min',
        f'{v.trainer_s / 60:.1f} min', f'{v.trainer_cpu_s / 60:.1f} min',
        f'{v.images_per_s:.1f}',
        f'{1000 * v.trainer_cpu_s / v.images_trained:.1f}',
        f'{v.load[0]:.1f}, {v.load[1]:.1f}',
        f'{v.val_accuracy[kept["kept_epoch"] - 1]:.1%}',
        f'{v.test_accuracy:.1%}'))
  lines += [
      '',
      *table('bare Keras loop', 'epochs to reach', 'target', 'reached',
             'wall', 'CPU', 'images/s', 'CPU ms per image',
             'load (start, end)'),
      row(reference['precision'], len(reference['epoch_s']),
          f'{reference["target"]:.1%}',
          'yes' if reference['reached'] else 'no',
          f'{reference["wall_s"] / 60:.1f} min',
          f'{reference["cpu_s"] / 60:.1f} min', f'{reference_rate:.1f}',
          f'{reference_cpu_ms:.1f}',
          f'{reference["load"][0]:.1f}, {reference["load"][1]:.1f}'),
      '',
      f'Now: {_describe_stopping(stopping)}.',
  ]
  for v in variants:
    lines.append('')
    lines.append(f'Validation accuracy by epoch, {v.name}: ' + ', '.join(
        f'{a:.1%}' for a in v.val_accuracy) + '.')
  return '\n'.join(lines) + '\n'


def _describe_stopping(stopping: Dict[str, Any]) -> str:
  from modules import early_stopping  # pylint: disable=g-import-not-at-top
  return early_stopping.describe(stopping)
