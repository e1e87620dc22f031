"""The whole local pipeline, timed, and the pushed model's test accuracy.

Runs `local_runner.py` (default settings unless told otherwise) on a fresh
output directory, then classifies the dataset's raw t10k IDX test files
through the pushed model's `serve_images` signature, the way a client
would: no TFX, no Examples, just uint8 images in and classes out.

  .venv/bin/python -m benchmarks.full_run --data-dir ../shared/data/mnist
  .venv/bin/python -m benchmarks.full_run --name fashion-mnist \
      --data-dir /usr/share/datasets/fashion-mnist -- --dataset fashion-mnist
"""

import argparse
import datetime
import glob
import os
import subprocess
import sys
import tempfile
import time

import benchmarks

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_accuracy(serving_model_dir: str, data_dir: str) -> tuple:
  """(accuracy, count) of the newest pushed model on the raw test files."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from components.image_example_gen import idx  # pylint: disable=g-import-not-at-top
  from tests import serving  # pylint: disable=g-import-not-at-top
  images = labels = None
  for path in glob.glob(os.path.join(data_dir, 't10k-*')):
    header = idx.validate(path)
    if len(header.shape) == 1:
      labels = idx.read_all(header)
    else:
      images = idx.read_all(header)
  model = tf.saved_model.load(serving.latest_pushed_model(serving_model_dir))
  _, classes = serving.classify_images(model, images)
  return float((classes == labels).mean()), len(labels)


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--data-dir', required=True)
  parser.add_argument('--name', default='mnist')
  parser.add_argument('--output-dir', default=None,
                      help='Run directory (default: a new temporary one).')
  parser.add_argument('--report', default=None,
                      help='Also write the result as Markdown here.')
  parser.add_argument('runner_args', nargs='*',
                      help='Extra local_runner.py flags, after "--".')
  args = parser.parse_args()
  output_dir = args.output_dir or tempfile.mkdtemp(prefix='full-run-')

  command = [sys.executable, os.path.join(PROJECT_DIR, 'local_runner.py'),
             '--data-dir', args.data_dir, '--output-dir', output_dir,
             *args.runner_args]
  print('$', ' '.join(command), flush=True)
  start = time.monotonic()
  subprocess.run(command, check=True, cwd=PROJECT_DIR)
  seconds = time.monotonic() - start
  accuracy, count = test_accuracy(os.path.join(output_dir, 'serving_model'),
                                  args.data_dir)

  report = '\n'.join([
      f'### Full local run: {args.name}',
      '',
      f'{datetime.date.today()}, {os.cpu_count()} CPU cores, no GPU; '
      f'`local_runner.py {" ".join(command[2:4] + args.runner_args)}`',
      '',
      '| wall time of the whole run | test accuracy via `serve_images` |',
      '|---|---|',
      f'| {seconds / 60:.1f} min ({seconds:.0f} s) | {accuracy:.2%} '
      f'of {count:,} raw t10k images |',
      '',
  ])
  benchmarks.publish(report, args.report)
  return 0


if __name__ == '__main__':
  sys.exit(main())
