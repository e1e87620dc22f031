"""Colour images at 96x96 through the whole DAG with default settings.

  .venv/bin/python -m benchmarks --section shapes

The data are written here by data/shapes.py (seed 0): ten classes of
shapes in random colours, sizes and rotations on noisy two-colour gradient
backgrounds, 300 training and 60 eval images per class, 96x96 PNG files in
class folders. local_runner.py runs on them with no training flag: only
the folder's layout (`--input-format images --image-size 96x96 --channels
3`) and the push threshold README suggests for it (`--accuracy-threshold
0.8`). Reported: the whole run's wall time and the Trainer's, the plan the
Trainer chose (architecture, epochs), the validation accuracy per epoch,
and the trained model's accuracy through `serve_images` on a test set the
training never saw (another seed, 100 images per class).
"""

import dataclasses
import glob
import json
import os
import re
from typing import List, Tuple

import numpy as np

from benchmarks import whole_dag
from data import shapes

SIZE = 96
PER_CLASS, EVAL_PER_CLASS, TEST_PER_CLASS = 300, 60, 100
QUICK = (20, 4, 4)  # Per class: train, eval, test.
TEST_SEED = 1  # Training and eval images come from seed 0.
RUNNER_FLAGS = ('--input-format', 'images', '--image-size', f'{SIZE}x{SIZE}',
                '--channels', '3', '--accuracy-threshold', '0.8')
QUICK_FLAGS = ('--epochs', '2', '--train-steps', '4',
               '--beam-args=--direct_running_mode=in_memory '
               '--direct_num_workers=1')
_EPOCH = re.compile(
    r'Epoch (\d+)/(\d+): .* in ([\d.]+)s .*val_accuracy ([\d.]+)')


@dataclasses.dataclass
class Result:
  command: List[str]
  train_images: int
  eval_images: int
  whole_run_s: float
  trainer_s: float
  plan: dict  # The serving model's training_plan.json.
  epoch_s: List[float]
  val_accuracy: List[float]
  test_accuracy: float
  test_count: int
  pushed: bool


def _test_set(out: str, per_class: int) -> Tuple[np.ndarray, np.ndarray]:
  """uint8 images [N, H, W, 3] and labels of a fresh seed."""
  from PIL import Image  # pylint: disable=g-import-not-at-top
  shapes.write(out, per_class, SIZE, eval_per_class=0, seed=TEST_SEED)
  images, labels = [], []
  for label, name in enumerate(sorted(shapes.SHAPES)):
    for path in sorted(glob.glob(os.path.join(out, 'train', name, '*.png'))):
      images.append(np.asarray(Image.open(path).convert('RGB')))
      labels.append(label)
  return np.stack(images), np.array(labels)


def run(work_dir: str, quick: bool = False) -> Result:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tests import serving  # pylint: disable=g-import-not-at-top
  per_class, eval_per_class, test_per_class = (
      QUICK if quick else (PER_CLASS, EVAL_PER_CLASS, TEST_PER_CLASS))
  data_dir = os.path.join(work_dir, 'shapes')
  shapes.write(data_dir, per_class, SIZE, eval_per_class)
  output_dir = os.path.join(work_dir, 'shapes-run')
  flags = (*RUNNER_FLAGS, *(QUICK_FLAGS if quick else ()))
  print('  shapes: whole run', flush=True)
  local_run = whole_dag.run_local_runner(
      ['--data-dir', data_dir, '--output-dir', output_dir, *flags])
  stdout = local_run.stdout
  epochs = [m.groups() for m in _EPOCH.finditer(stdout)]
  if not epochs:
    raise SystemExit(f'error: no epoch lines in the shapes run:\n{stdout}')
  # The Trainer's model, pushed or not (the Evaluator's verdict is the
  # threshold's business, the accuracy is ours).
  [model_dir] = glob.glob(os.path.join(output_dir, 'pipeline', 'Trainer',
                                       'model', '*', 'Format-Serving'))
  with open(os.path.join(model_dir, 'assets.extra',
                         'training_plan.json')) as f:
    plan = json.load(f)
  images, labels = _test_set(os.path.join(work_dir, 'shapes-test'),
                             test_per_class)
  _, classes = serving.classify_images(tf.saved_model.load(model_dir), images,
                                       batch_size=200)
  pushed = bool(glob.glob(os.path.join(output_dir, 'serving_model', '*')))
  return Result(
      command=['local_runner.py', '--data-dir', 'SHAPES', *flags],
      train_images=per_class * len(shapes.SHAPES),
      eval_images=eval_per_class * len(shapes.SHAPES),
      whole_run_s=local_run.seconds, trainer_s=local_run.nodes['Trainer'][0],
      plan=plan,
      epoch_s=[float(e[2]) for e in epochs],
      val_accuracy=[float(e[3]) for e in epochs],
      test_accuracy=float((classes == labels).mean()), test_count=len(labels),
      pushed=pushed)


def render(r: Result, header: str) -> str:
  every = max(1, len(r.val_accuracy) // 10)
  curve = ', '.join(f'{i + 1}: {a:.1%}' for i, a in enumerate(r.val_accuracy)
                    if (i + 1) % every == 0 or i == 0)
  plan = r.plan
  lines = [
      f'## Colour images at {SIZE}x{SIZE}x3: the shapes, whole DAG, default '
      'settings',
      '',
      header,
      '',
      f'    {" ".join(r.command)}',
      '',
      f'SHAPES: `python -m data.shapes --per-class {r.train_images // 10} '
      f'--eval-per-class {r.eval_images // 10} --size {SIZE}` (seed 0), '
      f'{r.train_images:,} training and {r.eval_images:,} eval images in ten '
      'classes. Test accuracy: the trained model through `serve_images` on '
      f'{r.test_count:,} images of another seed, never seen in training or '
      'evaluation. One run.',
      '',
      '| whole run | Trainer | model (auto) | parameters | epochs | s per '
      'epoch (median) | final validation accuracy | test accuracy | pushed '
      '(threshold 0.8) |',
      '|---|---|---|---|---|---|---|---|---|',
      f'| {r.whole_run_s / 60:.1f} min | {r.trainer_s / 60:.1f} min | '
      f'{plan["architecture"]} | {plan["parameters"]:,} | {plan["epochs"]} | '
      f'{sorted(r.epoch_s)[len(r.epoch_s) // 2]:.1f} | '
      f'{r.val_accuracy[-1]:.1%} | {r.test_accuracy:.1%} | '
      f'{"yes" if r.pushed else "no"} |',
      '',
      f'Validation accuracy by epoch: {curve}.',
  ]
  return '\n'.join(lines) + '\n'
