"""Side by side, in one run: conversion, input pipeline, training, whole DAG.

  .venv/bin/python -m benchmarks --data-dir ../shared/data/mnist
  .venv/bin/python -m benchmarks --quick          # a small subset: does it work?
  .venv/bin/python -m benchmarks --section time-to-accuracy --section shapes
  .venv/bin/python -m benchmarks --scale --work-dir ../scale   # 1x, 10x, 100x

Prints a Markdown report and writes it to BENCHMARKS.md (--output). The
sections and what they compare are described in each module:
  core              (the default) conversion.py, input_speed.py,
                    training_speed.py, whole_dag.py; the baseline they
                    compare against is reference_tutorial.py;
  time-to-accuracy  time_to_accuracy.py: MNIST, training defaults of before
                    and now, whole runs;
  shapes            shapes_run.py: colour 96x96 shapes through the whole DAG
                    at default settings;
  encodings         encodings.py: raw, PNG and JPEG records at 96x96x3 and
                    224x224x3 (bytes, input examples/s), and Keras's
                    image_dataset_from_directory at 96x96x3;
  scale             scale.py: 1x, 10x and 100x MNIST through the whole DAG,
                    once under a memory cap (~25 min on 2 cores; --scale is
                    short for --section scale).
The core sections are BENCHMARKS.md's head; each other section is a block
of its own there, replaced when that section runs again
(results_file.py).
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
SECTIONS = ('core', 'time-to-accuracy', 'shapes', 'encodings', 'scale')
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
  parser.add_argument('--section', action='append', choices=SECTIONS,
                      default=None, dest='sections',
                      help='Run this section (repeatable; default: core).')
  parser.add_argument('--candidate', action='append', default=[],
                      metavar='NAME=FLAGS',
                      help='time-to-accuracy: one more variant, local_runner '
                      'flags on top of the defaults (repeatable).')
  parser.add_argument('--work-dir', default=None,
                      help='Scratch space (default: a temporary directory, '
                      'removed afterwards). With --scale, given again, it '
                      'resumes at the first size not yet measured.')
  scale = parser.add_argument_group('scale (--scale)')
  scale.add_argument('--scale', action='append_const', const='scale',
                     dest='sections',
                     help='The scale section (--section scale): the whole '
                     'DAG at each --scale-copies, and once under a memory '
                     'cap.')
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


def _command(argv) -> str:
  return ' '.join(['python -m benchmarks',
                   *(shlex.quote(a) for a in (argv or sys.argv[1:]))])


def _core(args, argv, data_dir: str, work_dir: str) -> str:
  """Conversion, input pipeline, training, whole DAG."""
  from benchmarks import conversion  # pylint: disable=g-import-not-at-top
  from benchmarks import input_speed  # pylint: disable=g-import-not-at-top
  from benchmarks import report  # pylint: disable=g-import-not-at-top
  from benchmarks import training_speed  # pylint: disable=g-import-not-at-top
  from benchmarks import whole_dag  # pylint: disable=g-import-not-at-top
  from tests import transform_analysis  # pylint: disable=g-import-not-at-top
  from records import features  # pylint: disable=g-import-not-at-top
  repetitions, train_steps, warmup = (
      (1, 5, 2) if args.quick else
      (args.repetitions, args.train_steps, args.warmup_steps))
  print('1/4 conversion ...', flush=True)
  conv = conversion.run(data_dir, work_dir, repetitions)
  train_pattern = os.path.join(conv.our_examples_uri, 'Split-train', '*')
  transform_output = transform_analysis.analyze(
      train_pattern, features.MNIST_GEOMETRY,
      os.path.join(work_dir, 'transform'), conversion.BEAM_ARGS)
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

  return report.render(report.Results(
      command=_command(argv),
      quick=args.quick, repetitions=repetitions, conversion=conv,
      input=inputs, training=training, dag=dag, dag_skipped=skipped))


def _time_to_accuracy(args, argv, data_dir: str, work_dir: str) -> str:
  from benchmarks import report  # pylint: disable=g-import-not-at-top
  from benchmarks import time_to_accuracy  # pylint: disable=g-import-not-at-top
  result = time_to_accuracy.run(
      data_dir, work_dir, QUICK_RUNNER_ARGS if args.quick else (),
      [time_to_accuracy.parse_candidate(c) for c in args.candidate],
      data_dir_shown=_data_dir_shown(args))
  return time_to_accuracy.render(
      result, f'{report.machine_line()}\n\n    {_command(argv)}')


def _shapes(args, argv, data_dir: str, work_dir: str) -> str:
  del data_dir  # The section writes its own data.
  from benchmarks import report  # pylint: disable=g-import-not-at-top
  from benchmarks import shapes_run  # pylint: disable=g-import-not-at-top
  result = shapes_run.run(work_dir, quick=args.quick)
  return shapes_run.render(
      result, f'{report.machine_line()}\n\n    {_command(argv)}')


def _encodings(args, argv, data_dir: str, work_dir: str) -> str:
  del data_dir  # The section writes its own data.
  from benchmarks import encodings  # pylint: disable=g-import-not-at-top
  from benchmarks import report  # pylint: disable=g-import-not-at-top
  return encodings.run(
      work_dir, quick=args.quick, repetitions=1 if args.quick else
      args.repetitions,
      header=f'{report.machine_line()}\n\n    {_command(argv)}')


def _scale(args, argv, data_dir: str, work_dir: str) -> str:
  from benchmarks import scale  # pylint: disable=g-import-not-at-top
  from benchmarks import scale_report  # pylint: disable=g-import-not-at-top
  from modules.training_config import TrainingConfig  # pylint: disable=g-import-not-at-top
  copies = [int(n) for n in args.scale_copies.split(',') if n.strip()]
  rows = scale.plan_rows(
      copies, args.scale_cap_copies or None,
      args.scale_cap_mb and args.scale_cap_mb * 10**6,
      args.scale_train_steps or scale.TRAIN_STEPS, TrainingConfig().batch_size)
  rows, stream = scale.run(
      data_dir, work_dir, rows, args.scale_stream_copies or None,
      (), repetitions=args.repetitions, keep_data=args.keep_data)
  return scale_report.render(rows, stream, _command(argv))


_SECTION_RUNNERS = {
    'core': _core,
    'time-to-accuracy': _time_to_accuracy,
    'shapes': _shapes,
    'encodings': _encodings,
    'scale': _scale,
}


def _data_dir_shown(args) -> str:
  return (f'<{QUICK_FRACTION:.0%} of {args.data_dir}>' if args.quick
          else args.data_dir)


def main(argv=None) -> int:
  args = make_parser().parse_args(argv)
  # Imported here: --help should not wait for TensorFlow.
  from benchmarks import data  # pylint: disable=g-import-not-at-top
  from benchmarks import results_file  # pylint: disable=g-import-not-at-top

  data_dir = args.data_dir
  if not os.path.isabs(data_dir) and not os.path.isdir(data_dir):
    data_dir = os.path.join(PROJECT_DIR, data_dir)  # Relative to the project.
  if not os.path.isdir(data_dir):
    raise SystemExit(f'error: --data-dir {args.data_dir}: no such directory')
  data_dir = os.path.abspath(data_dir)
  work_dir = args.work_dir or tempfile.mkdtemp(prefix='benchmarks-')
  os.makedirs(work_dir, exist_ok=True)
  sections = args.sections or ['core']
  try:
    if args.quick:
      subset_dir = os.path.join(work_dir, 'subset')
      data.write_subset(data_dir, subset_dir, QUICK_FRACTION)
      data_dir = subset_dir
    for name in SECTIONS:
      if name not in sections:
        continue
      print(f'section {name} ...', flush=True)
      text = _SECTION_RUNNERS[name](args, argv, data_dir, work_dir)
      print(text)
      # Each section as soon as it is measured: a later one may fail.
      if name == 'core':
        results_file.write_head(args.output, text)
      else:
        results_file.write_section(args.output, name, text)
      print(f'Written to {args.output}', flush=True)
  finally:
    if not args.work_dir:
      shutil.rmtree(work_dir, ignore_errors=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())
