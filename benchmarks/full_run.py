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
import os
import tempfile

from benchmarks import results_file
from benchmarks import runs
from benchmarks.figures import row, table


def main() -> None:
  parser = argparse.ArgumentParser(
      description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
  seconds = runs.run_local_runner(['--data-dir', args.data_dir, '--output-dir',
                                   output_dir, *args.runner_args]).seconds
  accuracy, count = runs.pushed_accuracy(output_dir, args.data_dir)
  results_file.publish('\n'.join([
      f'### Full local run: {args.name}',
      '',
      f'{datetime.date.today()}, {os.cpu_count()} CPU cores, no GPU; '
      f'`local_runner.py --data-dir {" ".join([args.data_dir, *args.runner_args])}`',
      '',
      *table('wall time of the whole run',
             'test accuracy via `serve_images`'),
      row(f'{seconds / 60:.1f} min ({seconds:.0f} s)',
          f'{accuracy:.2%} of {count:,} raw t10k images'),
      '',
  ]), args.report)


if __name__ == '__main__':
  main()
