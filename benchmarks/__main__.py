"""Side by side, in one run: conversion, input pipeline, training, whole DAG.

  .venv/bin/python -m benchmarks --data-dir ../shared/data/mnist
  .venv/bin/python -m benchmarks --quick          # a small subset: does it work?

Prints a Markdown report and writes it to BENCHMARKS.md (--output). The
sections and what they compare are described in each module:
conversion.py, input_speed.py, training_speed.py, whole_dag.py; the
baseline they compare against is reference_tutorial.py.
"""

import argparse
import os
import shlex
import shutil
import sys
import tempfile

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA_DIR = os.path.join('..', 'shared', 'data', 'mnist')
# Quick mode: this fraction of MNIST (3,500 examples), one repetition, a few
# training steps, and a DAG run of a few training steps in one process.
QUICK_FRACTION = 0.05
QUICK_RUNNER_ARGS = ('--epochs', '1', '--train-steps', '5',
                     '--accuracy-threshold', '0',
                     '--beam-args=--direct_running_mode=in_memory '
                     '--direct_num_workers=1')


def make_parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      prog='python -m benchmarks', description=__doc__,
      formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--data-dir', default=DEFAULT_DATA_DIR,
                      help='MNIST IDX files, gzipped (default: %(default)s, '
                      'relative to the project).')
  parser.add_argument('--output', default=os.path.join(PROJECT_DIR,
                                                       'BENCHMARKS.md'),
                      help='Where the report goes (default: BENCHMARKS.md '
                      'in the project).')
  parser.add_argument('--repetitions', type=int, default=5,
                      help='Repetitions per figure (default: %(default)s).')
  parser.add_argument('--train-steps', type=int, default=100,
                      help='Timed training steps per repetition (default: '
                      '%(default)s), after --warmup-steps.')
  parser.add_argument('--warmup-steps', type=int, default=20)
  parser.add_argument('--dag-runs', type=int, default=1,
                      help='Whole DAG: fresh runs (default: %(default)s; '
                      'one is minutes long); each is followed by '
                      '--repetitions re-runs.')
  parser.add_argument('--skip-dag', action='store_true',
                      help='Leave out the whole-DAG section.')
  parser.add_argument('--quick', action='store_true',
                      help='A small subset: 5%% of the data, 1 repetition, '
                      'a few training steps, a tiny DAG run in one process. '
                      'Checks that the benchmark works; the figures mean '
                      'little.')
  parser.add_argument('--work-dir', default=None,
                      help='Scratch space (default: a temporary directory, '
                      'removed afterwards).')
  return parser


def main(argv=None) -> int:
  args = make_parser().parse_args(argv)
  # Imported here: --help should not wait for TensorFlow.
  from benchmarks import conversion  # pylint: disable=g-import-not-at-top
  from benchmarks import input_speed  # pylint: disable=g-import-not-at-top
  from benchmarks import report  # pylint: disable=g-import-not-at-top
  from benchmarks import training_speed  # pylint: disable=g-import-not-at-top
  from benchmarks import whole_dag  # pylint: disable=g-import-not-at-top
  from benchmarks import data  # pylint: disable=g-import-not-at-top
  from tests import transform_analysis  # pylint: disable=g-import-not-at-top
  from records import features  # pylint: disable=g-import-not-at-top

  data_dir = args.data_dir
  if not os.path.isabs(data_dir) and not os.path.isdir(data_dir):
    data_dir = os.path.join(PROJECT_DIR, data_dir)  # Relative to the project.
  if not os.path.isdir(data_dir):
    raise SystemExit(f'error: --data-dir {args.data_dir}: no such directory')
  data_dir = os.path.abspath(data_dir)
  work_dir = args.work_dir or tempfile.mkdtemp(prefix='benchmarks-')
  os.makedirs(work_dir, exist_ok=True)
  repetitions, train_steps, warmup = (
      (1, 5, 2) if args.quick else
      (args.repetitions, args.train_steps, args.warmup_steps))
  try:
    if args.quick:
      subset_dir = os.path.join(work_dir, 'subset')
      data.write_subset(data_dir, subset_dir, QUICK_FRACTION)
      data_dir = subset_dir

    print('1/4 conversion ...', flush=True)
    conv = conversion.run(data_dir, work_dir, repetitions)
    train_pattern = os.path.join(conv.our_examples_uri, 'Split-train', '*')
    transform_output = transform_analysis.analyze(
        train_pattern, features.MNIST_GEOMETRY,
        os.path.join(work_dir, 'transform'),
        conversion.example_gen_beam_args(data_dir))
    num_classes = len(features.read_class_names(
        os.path.join(conv.our_examples_uri, features.CLASS_NAMES_FILE)))

    print('2/4 input pipeline ...', flush=True)
    inputs = input_speed.run(conv.reference_files['train'], train_pattern,
                             transform_output, 256, repetitions)
    print('3/4 training ...', flush=True)
    training = training_speed.run(train_pattern, transform_output,
                                  num_classes, train_steps, warmup,
                                  repetitions)
    dag, skipped = None, ''
    if args.skip_dag:
      skipped = 'left out (--skip-dag)'
      print('4/4 whole DAG: skipped', flush=True)
    else:
      print('4/4 whole DAG ...', flush=True)
      dag = whole_dag.run(
          data_dir, work_dir, QUICK_RUNNER_ARGS if args.quick else (),
          runs=1 if args.quick else args.dag_runs, reruns=repetitions,
          data_dir_shown=(f'<{QUICK_FRACTION:.0%} of {args.data_dir}>'
                          if args.quick else args.data_dir))

    text = report.render(report.Results(
        command=' '.join(['python -m benchmarks',
                          *(shlex.quote(a) for a in (argv or sys.argv[1:]))]),
        quick=args.quick, repetitions=repetitions, conversion=conv,
        input=inputs, training=training, dag=dag, dag_skipped=skipped))
  finally:
    if not args.work_dir:
      shutil.rmtree(work_dir, ignore_errors=True)
  print(text)
  with open(args.output, 'w') as f:
    f.write(text)
  print(f'Written to {args.output}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
