"""Side by side, in one run: conversion, input pipeline, training, whole DAG.

  .venv/bin/python -m benchmarks --data-dir ../shared/data/mnist
  .venv/bin/python -m benchmarks --quick          # a small subset: does it work?
  .venv/bin/python -m benchmarks --scale --work-dir ../scale   # 1x, 10x, 100x

Prints a Markdown report and writes it to BENCHMARKS.md (--output). The
sections and what they compare are described in each module:
conversion.py, input_speed.py, training_speed.py, whole_dag.py; the
baseline they compare against is reference_tutorial.py. --scale runs only
the scale section (scale.py; hours at 100x, not in CI) and replaces only
that section of the report; the other sections keep it.
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
                      'removed afterwards). With --scale, given again, it '
                      'resumes at the first size not yet measured.')
  scale = parser.add_argument_group('scale (--scale)')
  scale.add_argument('--scale', action='store_true',
                     help='Only the scale section: the whole DAG at each '
                     '--scale-copies, and once under a memory cap.')
  scale.add_argument('--scale-copies', default='1,10,100',
                     help='Sizes, in copies of MNIST (default: %(default)s).')
  scale.add_argument('--scale-cap-copies', type=int, default=100,
                     help='The size run again under the memory cap (0: '
                     'none; default: %(default)s).')
  scale.add_argument('--scale-cap-mb', type=int, default=None,
                     help='The cap in MB (default: 85%% of that size\'s '
                     'raw pixels, 4.0 GB at 100x).')
  scale.add_argument('--scale-stream-copies', type=int, default=10,
                     help='The size at which the streaming input_fn is '
                     'compared with the bare read (0: not; default: '
                     '%(default)s).')
  scale.add_argument('--scale-train-steps', type=int, default=None,
                     help='The Trainer\'s fixed step budget (default: '
                     'benchmarks/scale.py\'s TRAIN_STEPS).')
  scale.add_argument('--keep-data', action='store_true',
                     help='Keep the generated data in --work-dir.')
  return parser


def main_scale(args, argv) -> int:
  """The scale section alone, spliced into --output."""
  from benchmarks import scale  # pylint: disable=g-import-not-at-top
  from benchmarks import scale_report  # pylint: disable=g-import-not-at-top
  from pipeline import configs  # pylint: disable=g-import-not-at-top
  copies = [int(n) for n in args.scale_copies.split(',') if n.strip()]
  rows = scale.plan_rows(
      copies, args.scale_cap_copies or None,
      args.scale_cap_mb and args.scale_cap_mb * 10**6,
      args.scale_train_steps or scale.TRAIN_STEPS, configs.BATCH_SIZE)
  work_dir = args.work_dir or tempfile.mkdtemp(prefix='benchmarks-scale-')
  os.makedirs(work_dir, exist_ok=True)
  try:
    rows, stream = scale.run(
        _data_dir(args), work_dir, rows, args.scale_stream_copies or None,
        (), repetitions=args.repetitions, keep_data=args.keep_data)
  finally:
    if not args.work_dir:
      shutil.rmtree(work_dir, ignore_errors=True)
  text = scale_report.render(rows, stream, ' '.join(
      ['python -m benchmarks', *(shlex.quote(a) for a in argv)]))
  print(text)
  existing = ''
  if os.path.exists(args.output):
    with open(args.output) as f:
      existing = f.read()
  with open(args.output, 'w') as f:
    f.write(scale_report.splice(existing, text))
  print(f'Written to {args.output} (its scale section)')
  return 0


def _data_dir(args) -> str:
  data_dir = args.data_dir
  if not os.path.isabs(data_dir) and not os.path.isdir(data_dir):
    data_dir = os.path.join(PROJECT_DIR, data_dir)  # Relative to the project.
  if not os.path.isdir(data_dir):
    raise SystemExit(f'error: --data-dir {args.data_dir}: no such directory')
  return os.path.abspath(data_dir)


def main(argv=None) -> int:
  args = make_parser().parse_args(argv)
  if args.scale:
    return main_scale(args, sys.argv[1:] if argv is None else argv)
  # Imported here: --help should not wait for TensorFlow.
  from benchmarks import conversion  # pylint: disable=g-import-not-at-top
  from benchmarks import input_speed  # pylint: disable=g-import-not-at-top
  from benchmarks import report  # pylint: disable=g-import-not-at-top
  from benchmarks import scale_report  # pylint: disable=g-import-not-at-top
  from benchmarks import training_speed  # pylint: disable=g-import-not-at-top
  from benchmarks import whole_dag  # pylint: disable=g-import-not-at-top
  from benchmarks import data  # pylint: disable=g-import-not-at-top
  from tests import transform_analysis  # pylint: disable=g-import-not-at-top
  from records import features  # pylint: disable=g-import-not-at-top

  data_dir = _data_dir(args)
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
  existing = ''
  if os.path.exists(args.output):
    with open(args.output) as f:
      existing = f.read()
  with open(args.output, 'w') as f:  # Keeping the scale section, if any.
    f.write(scale_report.keep_section(existing, text))
  print(f'Written to {args.output}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
