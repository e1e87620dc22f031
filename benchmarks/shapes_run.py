"""The shapes section: colour images at 96x96 (data/shapes.py) through the
whole DAG with default training settings, and the trained model's accuracy
through `serve_images` on images of another seed."""

import glob
import os

import numpy as np

from benchmarks import runs
from benchmarks.figures import header, row, table
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


def section(args, data_dir: str, work_dir: str, command: str) -> str:
  del data_dir  # The section writes its own data.
  per_class, eval_per_class, test_per_class = (
      QUICK if args.quick else (PER_CLASS, EVAL_PER_CLASS, TEST_PER_CLASS))
  shapes_dir = os.path.join(work_dir, 'shapes')
  shapes.write(shapes_dir, per_class, SIZE, eval_per_class)
  output_dir = os.path.join(work_dir, 'shapes-run')
  flags = (*RUNNER_FLAGS, *(QUICK_FLAGS if args.quick else ()))
  print('  shapes: whole run', flush=True)
  local_run = runs.run_local_runner(
      ['--data-dir', shapes_dir, '--output-dir', output_dir, *flags])
  epoch_s, val_accuracy = local_run.epochs()
  model_dir, plan = runs.trainer_model(output_dir)
  images, labels = held_out_images(os.path.join(work_dir, 'shapes-test'),
                             test_per_class)
  pushed = bool(glob.glob(os.path.join(output_dir, 'serving_model', '*')))
  train, evaluation = (n * len(shapes.SHAPES)
                       for n in (per_class, eval_per_class))
  every = max(1, len(val_accuracy) // 10)
  curve = ', '.join(f'{i + 1}: {a:.1%}' for i, a in enumerate(val_accuracy)
                    if (i + 1) % every == 0 or i == 0)
  return '\n'.join([
      f'## Colour images at {SIZE}x{SIZE}x3: the shapes, whole DAG, default '
      'settings',
      '',
      header(command),
      '',
      f'    {" ".join(["local_runner.py", "--data-dir", "SHAPES", *flags])}',
      '',
      f'SHAPES: `python -m data.shapes --per-class {per_class} '
      f'--eval-per-class {eval_per_class} --size {SIZE}` (seed 0), '
      f'{train:,} training and {evaluation:,} eval images in ten '
      'classes. Test accuracy: the trained model through `serve_images` on '
      f'{len(labels):,} images of another seed, never seen in training or '
      'evaluation. One run.',
      '',
      *table('whole run', 'Trainer', 'model (auto)', 'parameters', 'epochs',
             's per epoch (median)', 'final validation accuracy',
             'test accuracy', 'pushed (threshold 0.8)'),
      row(f'{local_run.seconds / 60:.1f} min',
          f'{local_run.nodes["Trainer"][0] / 60:.1f} min',
          plan['architecture'], f'{plan["parameters"]:,}', plan['epochs'],
          f'{sorted(epoch_s)[len(epoch_s) // 2]:.1f}',
          f'{val_accuracy[-1]:.1%}',
          f'{runs.accuracy(model_dir, images, labels):.1%}',
          'yes' if pushed else 'no'),
      '',
      f'Validation accuracy by epoch: {curve}.',
  ]) + '\n'
