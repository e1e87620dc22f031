"""The sections on colour images, the shapes of data/shapes.py: shapes
(the whole DAG with the defaults), colour-time-to-accuracy (the defaults of
before and now against a bare Keras loop, colour_reference.py) and
backbones (each from scratch, up to the Trainer). Their templates say how.
"""

import dataclasses
import glob
import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Tuple

import numpy as np

from benchmarks import harness
from benchmarks.harness import median, row
from data import shapes

SIZE = 96
PER_CLASS, EVAL_PER_CLASS, TEST_PER_CLASS = 300, 60, 100
QUICK = (20, 4, 4)  # Per class: train, eval, test.
TEST_SEED = 1  # Training and eval images come from seed 0.
RUNNER_FLAGS = ('--input-format', 'images', '--image-size', f'{SIZE}x{SIZE}',
                '--channels', '3', '--accuracy-threshold', '0.8')
QUICK_FLAGS = ('--epochs', '2', '--train-steps', '4', harness.ONE_PROCESS)

# colour-time-to-accuracy: the variants, and in quick mode two epochs each.
VARIANTS = (('before', ('--epochs', '60', '--early-stopping-patience', '0')),
            ('now', ()))
QUICK_VARIANTS = (('before', ('--epochs', '2', '--early-stopping-patience',
                              '0')), ('now', ('--epochs', '2')))
# Goals: now's Trainer time at most this fraction of before's, its test
# accuracy at most this far below before's; the pipeline's images/s at
# least this fraction of the bare loop's.
TIME_GOAL = 0.5
ACCURACY_SLACK = 0.005
SPEED_GOAL = 1.0

BACKBONE_SIZE = 64
BACKBONE_DATA = (50, 10, 3)  # Per class: train, eval; epochs.
BACKBONE_QUICK = (10, 2, 2)
# Up to the Trainer: its epoch lines are the figures.
BACKBONE_FLAGS = ('--input-format', 'images', '--image-size',
                  f'{BACKBONE_SIZE}x{BACKBONE_SIZE}', '--channels', '3',
                  '--to-node', 'Trainer')
BACKBONE_QUICK_FLAGS = ('--train-steps', '4', harness.ONE_PROCESS)


def shapes_data(per_class: int, eval_per_class: int, size: int) -> Dict:
  """What a template reads of a section's images: the data.shapes command
  that writes them, and how many there are."""
  return dict(command=(f'`python -m data.shapes --per-class {per_class} '
                       f'--eval-per-class {eval_per_class} --size {size}`'),
              train=per_class * len(shapes.SHAPES),
              evaluation=eval_per_class * len(shapes.SHAPES))


def held_out_images(out: str, per_class: int):
  """uint8 images [N, H, W, 3] and labels of a fresh seed."""
  from PIL import Image  # pylint: disable=g-import-not-at-top
  shapes.write(out, per_class, SIZE, eval_per_class=0, seed=TEST_SEED)
  images, labels = [], []
  for label, name in enumerate(sorted(shapes.SHAPES)):
    for path in sorted(glob.glob(os.path.join(out, 'train', name, '*.png'))):
      images.append(np.asarray(Image.open(path).convert('RGB')))
      labels.append(label)
  return np.stack(images), np.array(labels)


def _write_data(ctx: harness.Context, name: str):
  """(per_class, eval_per_class, shapes folder, test images, test labels)."""
  per_class, eval_per_class, test_per_class = ctx.pick(
      (PER_CLASS, EVAL_PER_CLASS, TEST_PER_CLASS), QUICK)
  shapes.write(ctx.path(name), per_class, SIZE, eval_per_class)
  return (per_class, eval_per_class, ctx.path(name),
          *held_out_images(ctx.path(f'{name}-test'), test_per_class))


def measure_shapes(ctx: harness.Context) -> Dict[str, Any]:
  """One whole run, and its model on the held-out images."""
  per_class, eval_per_class, data_dir, images, labels = _write_data(
      ctx, 'shapes')
  print('  shapes: whole run', flush=True)
  local_run, output_dir = ctx.run(
      'shapes-run', *RUNNER_FLAGS, *ctx.pick((), QUICK_FLAGS),
      data_dir=data_dir)
  epoch_s, val_accuracy = local_run.epochs()
  model_dir, plan = harness.trainer_model(output_dir)
  return dict(
      per_class=per_class, eval_per_class=eval_per_class,
      seconds=local_run.seconds, trainer_s=local_run.nodes['Trainer'][0],
      plan=plan, epoch_s=epoch_s, val_accuracy=val_accuracy,
      tests=len(labels), test_accuracy=harness.accuracy(model_dir, images,
                                                        labels),
      pushed=bool(glob.glob(os.path.join(output_dir, 'serving_model', '*'))))


def render_shapes(r: Dict[str, Any], ctx: harness.Context) -> Dict:
  """What templates/shapes.md.j2 reads: the run's row, its curve."""
  return dict(r, **shapes_data(r['per_class'], r['eval_per_class'], SIZE),
              flags=(*RUNNER_FLAGS, *ctx.pick((), QUICK_FLAGS)),
              epoch_median=median(r['epoch_s']))


SHAPES = harness.Section(
    heading=f'## Colour images at {SIZE}x{SIZE}x3: the shapes, whole DAG, '
    'default settings', measure=measure_shapes, render=render_shapes,
    template='shapes.md.j2')


@dataclasses.dataclass
class Variant:
  """A colour-time-to-accuracy variant's whole run."""
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
    """Training records times epochs run."""
    return self.plan['train_records'] * len(self.epoch_s)

  @property
  def images_per_s(self) -> float:
    """Training records over an epoch's median wall time (training and
    validation)."""
    return self.plan['train_records'] / median(self.epoch_s)


def run_variant(name: str, flags: Tuple[str, ...], shapes_dir: str,
                ctx: harness.Context, images, labels) -> Variant:
  """One whole run of a variant, and its model on the held-out images."""
  print(f'  colour time to accuracy: {name} {" ".join(flags)}', flush=True)
  load_start = os.getloadavg()[0]
  local_run, output_dir = ctx.run(
      f'colour-{name}', *RUNNER_FLAGS, *ctx.pick((), (harness.ONE_PROCESS,)),
      *flags, data_dir=shapes_dir)
  load = (load_start, os.getloadavg()[0])
  epoch_s, val_accuracy = local_run.epochs()
  model_dir, plan = harness.trainer_model(output_dir)
  with open(os.path.join(harness.newest_artifact(output_dir, 'Trainer',
                                                 'model_run'),
                         'device_plan.json')) as f:
    precision = json.load(f)['precision']
  return Variant(
      name=name, flags=tuple(flags), whole_run_s=local_run.seconds,
      trainer_s=local_run.nodes['Trainer'][0],
      trainer_cpu_s=local_run.cpu_seconds.get('Trainer', float('nan')),
      load=load, epoch_s=epoch_s, val_accuracy=val_accuracy,
      test_accuracy=harness.accuracy(model_dir, images, labels), plan=plan,
      precision=precision, output_dir=output_dir)


def run_reference(variant: Variant, work_dir: str) -> Dict[str, Any]:
  """The bare loop on `variant`'s Examples and transform graph, to the
  validation accuracy of the weights it kept, within its planned epochs."""
  out = os.path.join(work_dir, 'colour-reference.json')
  stopping = variant.plan['early_stopping']
  target = stopping.get('kept_value') or max(variant.val_accuracy)
  artifact = lambda *a: harness.newest_artifact(variant.output_dir, *a)  # pylint: disable=unnecessary-lambda-assignment
  command = [
      sys.executable, '-m', 'benchmarks.colour_reference',
      '--examples', artifact('ImageExampleGen', 'examples'),
      '--transform', artifact('Transform', 'transform_graph'),
      '--epochs', str(stopping['epochs_planned']), '--target', str(target),
      '--out', out,
      *(() if variant.precision != 'float32' else ('--no-mixed-precision',))]
  print('  colour time to accuracy: the bare Keras loop', flush=True)
  load_start = os.getloadavg()[0]
  subprocess.run(command, cwd=harness.PROJECT_DIR, check=True)
  with open(out) as f:
    result = json.load(f)
  result['load'] = (load_start, os.getloadavg()[0])
  result['target'] = target
  return result


def measure_colour(ctx: harness.Context) -> Dict[str, Any]:
  """Both variants, then the bare loop to now's accuracy."""
  per_class, eval_per_class, shapes_dir, images, labels = _write_data(
      ctx, 'colour-shapes')
  variants = [run_variant(name, flags, shapes_dir, ctx, images, labels)
              for name, flags in ctx.pick(VARIANTS, QUICK_VARIANTS)]
  return dict(variants=variants,
              reference=run_reference(variants[-1], ctx.work_dir),
              counts=(per_class, eval_per_class, len(labels)))


def render_colour(r: Dict[str, Any], ctx: harness.Context) -> Dict:
  """What templates/colour_time_to_accuracy.md.j2 reads: goals, the
  variants and the bare loop."""
  from modules.training import callbacks  # pylint: disable=g-import-not-at-top
  reference = r['reference']
  before, now = r['variants']
  per_class, eval_per_class, tests = r['counts']
  wall = now.trainer_s / before.trainer_s
  cpu = now.trainer_cpu_s / before.trainer_cpu_s
  reference_rate = reference['train_records'] / median(reference['epoch_s'])
  return dict(
      r, tests=tests, wall=wall, cpu=cpu, reference_rate=reference_rate,
      time_met=(now.test_accuracy >= before.test_accuracy - ACCURACY_SLACK
                and wall <= TIME_GOAL and cpu <= TIME_GOAL),
      reference_cpu_ms=1000 * reference['cpu_s'] / (
          reference['train_records'] * len(reference['epoch_s'])),
      speed=now.images_per_s / reference_rate, speed_goal=SPEED_GOAL,
      accuracy_slack=ACCURACY_SLACK, time_goal=TIME_GOAL, test_seed=TEST_SEED,
      flags=(*RUNNER_FLAGS, *ctx.pick((), (harness.ONE_PROCESS,))),
      command=shapes_data(per_class, eval_per_class, SIZE)['command'],
      cpu_flags=harness.cpu_flags('none of them'),
      now_stopping=callbacks.describe_stopping(now.plan['early_stopping']))


COLOUR_TIME_TO_ACCURACY = harness.Section(
    heading=f'## Colour time to accuracy at {SIZE}x{SIZE}x3: the pipeline '
    'against a bare Keras loop, defaults of before and now',
    measure=measure_colour, render=render_colour,
    template='colour_time_to_accuracy.md.j2')


def measure_backbones(ctx: harness.Context) -> Dict[str, Any]:
  """Each network up to the Trainer, with the load before and after."""
  from modules.training.config import BACKBONES, SMALL_GAP_CNN  # pylint: disable=g-import-not-at-top
  per_class, eval_per_class, epochs = ctx.pick(BACKBONE_DATA, BACKBONE_QUICK)
  shapes_dir = ctx.path('backbone-shapes')
  shapes.write(shapes_dir, per_class, BACKBONE_SIZE, eval_per_class)
  flags = (*BACKBONE_FLAGS, '--epochs', str(epochs),
           *ctx.pick((), BACKBONE_QUICK_FLAGS))
  candidates = ((SMALL_GAP_CNN, ('--model', SMALL_GAP_CNN)),
                # From scratch: one epoch of the head, then the whole
                # network at the same learning rate.
                *((name, ('--backbone', name, '--weights', 'none',
                          '--head-epochs-fraction', '0',
                          '--fine-tune-layers-fraction', '1',
                          '--fine-tune-learning-rate-factor', '1'))
                  for name in BACKBONES))
  rows, loads = [], [harness.loads()]
  for name, candidate in candidates:
    print(f'  backbones: {name}', flush=True)
    run = harness.run_local_runner(shapes_dir, ctx.path('backbones-run'),
                                   *flags, *candidate)
    loads.append(harness.loads())
    epoch_s, val_accuracy = run.epochs()
    # The first epoch of each fit (a backbone's two phases are two) also
    # traces the model: the last epoch is the steady one.
    rows.append(row(name, ' '.join(candidate), f'{epoch_s[-1]:.1f}',
                    f'{epoch_s[0]:.1f}',
                    ', '.join(f'{a:.1%}' for a in val_accuracy)))
  return dict(per_class=per_class, eval_per_class=eval_per_class,
              flags=flags, rows=rows, loads=loads)


def render_backbones(r: Dict[str, Any], ctx: harness.Context) -> Dict:
  """What templates/backbones.md.j2 reads: each network's epochs."""
  del ctx  # The measurements say it all.
  return dict(r, **shapes_data(r['per_class'], r['eval_per_class'],
                               BACKBONE_SIZE))


BACKBONES = harness.Section(
    heading=f'## Backbones from scratch on the shapes at '
    f'{BACKBONE_SIZE}x{BACKBONE_SIZE}x3', measure=measure_backbones,
    render=render_backbones, template='backbones.md.j2')
