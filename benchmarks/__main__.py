"""`python -m benchmarks`: runs the benchmark sections, writes BENCHMARKS.md.

USAGE below is the --help text. How the sections and BENCHMARKS.md fit
together: docs/development.md, "Benchmarks".
"""

import argparse
import importlib
import os
import shlex
import shutil
import sys
import tempfile

from pipeline import startup

startup.quiet_tensorflow()  # Before anything imports TensorFlow.

# The --help text, above the flags.
USAGE = """Side by side, in one run: conversion, input pipeline, training, whole DAG.

  .venv/bin/python -m benchmarks --data-dir ../shared/data/mnist
  .venv/bin/python -m benchmarks --quick          # a small subset: does it work?
  .venv/bin/python -m benchmarks --section time-to-accuracy --section shapes
  .venv/bin/python -m benchmarks --section colour-time-to-accuracy
  .venv/bin/python -m benchmarks --section photos  # a photo folder, before and now
  .venv/bin/python -m benchmarks --section trust   # the checks on planted faults
  .venv/bin/python -m benchmarks --section real-data  # on data the project did not make
  .venv/bin/python -m benchmarks --section copies  # DataChecks on planted copies
  .venv/bin/python -m benchmarks --section schedule  # spans, warm start
  .venv/bin/python -m benchmarks --section predict-speed --model outputs/
  .venv/bin/python -m benchmarks --section tfrecord-sinks --data-dir mnist10 \
      --data-dir mnist100 --memory-cap-gb 4
  .venv/bin/python -m benchmarks --scale --work-dir ../scale   # 1x, 10x, 100x
  ONEDNN_MAX_CPU_ISA=AVX2 .venv/bin/python -m benchmarks --section time-to-accuracy

Prints a Markdown report and writes it to BENCHMARKS.md (--output): the
core sections (core.py) are its head, each other section a block of its
own that a later run of that section replaces (harness.py).
"""

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Each section's `module:attribute`, a harness.Section; imported when run:
# --help should not wait for TensorFlow.
SECTIONS = {'core': 'core:SECTION',
            'time-to-accuracy': 'time_to_accuracy:SECTION',
            'shapes': 'colour_images:SHAPES',
            'colour-time-to-accuracy': 'colour_images:COLOUR_TIME_TO_ACCURACY',
            'backbones': 'colour_images:BACKBONES',
            'encodings': 'encodings:SECTION', 'scale': 'scaling:SECTION',
            'tuning': 'tuner_trials:SECTION', 'trust': 'trust:SECTION',
            'schedule': 'schedule:SECTION',
            'predict-speed': 'predict_speed:SECTION',
            'tfrecord-sinks': 'tfrecord_sinks:SECTION',
            'real-data': 'real_data:SECTION', 'photos': 'photo_folder:SECTION',
            'copies': 'copies:SECTION'}
# Quick mode: this fraction of MNIST, one repetition, a few
# training steps, and a DAG run of a few training steps in one process.
QUICK_FRACTION = 0.05
DATA_DIR = os.path.join('..', 'shared', 'data', 'mnist')


def make_parser() -> argparse.ArgumentParser:
  """The command line's flags."""
  parser = argparse.ArgumentParser(
      prog='python -m benchmarks', description=USAGE,
      formatter_class=argparse.RawDescriptionHelpFormatter)
  add = parser.add_argument
  add('--data-dir', action='append', dest='data_dirs', default=None,
      help=f'MNIST IDX files, gzipped (default: {DATA_DIR}, relative to the '
      'project); tfrecord-sinks: repeatable, one input each.')
  add('--output', default=os.path.join(PROJECT_DIR, 'BENCHMARKS.md'),
      help='Where the report goes (default: BENCHMARKS.md in the project).')
  add('--repetitions', type=int, default=5,
      help='Repetitions per figure (default: %(default)s).')
  add('--train-steps', type=int, default=100,
      help='Timed training steps per repetition (default: %(default)s), '
      'after --warmup-steps.')
  add('--warmup-steps', type=int, default=20)
  add('--dag-runs', type=int, default=1,
      help='Whole DAG: fresh runs (default: %(default)s; one is minutes '
      'long); each is followed by --repetitions re-runs.')
  add('--skip-dag', action='store_true',
      help='Leave out the whole-DAG section.')
  add('--quick', action='store_true',
      help=f'A small subset: {QUICK_FRACTION:.0%} of the data, 1 repetition, '
      'a few training steps, a tiny DAG run in one process. Checks that the '
      'benchmark works; the figures mean little.'.replace('%', '%%'))
  add('--section', action='append', choices=list(SECTIONS), default=None,
      dest='sections', help='Run this section (repeatable; default: core).')
  add('--candidate', action='append', default=[], metavar='NAME=FLAGS',
      help='time-to-accuracy: one more variant, local_runner flags on top of '
      'the defaults (repeatable).')
  add('--work-dir', default=None,
      help='Scratch space (default: a temporary directory, removed '
      'afterwards). With --scale, given again, it resumes at the first size '
      'not yet measured.')
  predict = parser.add_argument_group('predict-speed').add_argument
  predict('--model', default=None,
          help='A pushed model version or a pipeline output directory, as '
          'the predict command takes it.')
  predict('--images', type=int, default=3000,
          help='How many test images (default: %(default)s).')
  parser.add_argument_group('tfrecord-sinks').add_argument(
      '--memory-cap-gb', type=float, default=4.0,
      help='Memory limit of each run (default: %(default)s, under the raw '
      'pixels of 100x MNIST, as the scale section caps its run).')
  scale = parser.add_argument_group('scale (--scale)').add_argument
  scale('--scale', action='append_const', const='scale', dest='sections',
        help='The scale section (--section scale): the whole DAG at each '
        '--scale-copies, and once under a memory cap.')
  scale('--scale-copies', default='1,10,100',
        help='Sizes, in copies of MNIST (default: %(default)s).')
  scale('--scale-cap-copies', type=int, default=100,
        help='The size run again under the memory cap (0: none; default: '
        '%(default)s).')
  scale('--scale-cap-mb', type=int, default=None,
        help='The cap in MB (default: 85%% of that size\'s raw pixels).')
  scale('--scale-stream-copies', type=int, default=10,
        help='The size at which the streaming input_fn is compared with the '
        'bare read (0: not; default: %(default)s).')
  scale('--scale-train-steps', type=int, default=None,
        help='The Trainer\'s fixed step budget (default: '
        'benchmarks/scaling.py\'s TRAIN_STEPS).')
  scale('--keep-data', action='store_true',
        help='Keep the generated data in --work-dir.')
  return parser


def main(argv=None) -> int:
  """Runs the sections asked for, writing each block as it is measured."""
  args = make_parser().parse_args(argv)
  from benchmarks import harness  # pylint: disable=g-import-not-at-top
  shown = args.data_dirs or [DATA_DIR]
  args.data_dir, args.data_dirs = shown[0], []
  for given in shown:  # Relative to the project unless found from here.
    path = (given if os.path.isabs(given) or os.path.isdir(given)
            else os.path.join(PROJECT_DIR, given))
    if not os.path.isdir(path):
      raise SystemExit(f'error: --data-dir {given}: no such directory')
    args.data_dirs.append(os.path.abspath(path))
  ctx = harness.Context(
      command=' '.join(['python -m benchmarks', *(
          shlex.quote(a) for a in (argv or sys.argv[1:]))]),
      quick=args.quick, repetitions=1 if args.quick else args.repetitions,
      data_dir=args.data_dirs[0],
      # --data-dir as the reports show it (not the scratch space's subset).
      data_dir_shown=(f'<{QUICK_FRACTION:.0%} of {args.data_dir}>'
                      if args.quick else args.data_dir),
      work_dir=(os.path.abspath(args.work_dir) if args.work_dir
                else tempfile.mkdtemp(prefix='benchmarks-')),
      args=args)
  os.makedirs(ctx.work_dir, exist_ok=True)
  try:
    if args.quick:
      harness.write_subset(ctx.data_dir, ctx.path('subset'), QUICK_FRACTION)
      ctx.data_dir = ctx.path('subset')
    for name, where in SECTIONS.items():
      if name not in (args.sections or ['core']):
        continue
      print(f'section {name} ...', flush=True)
      module, attribute = where.split(':')
      text = getattr(importlib.import_module(f'benchmarks.{module}'),
                     attribute).run(ctx)
      print(text)
      # Each section as soon as it is measured: a later one may fail. Under
      # a oneDNN ISA cap (an older CPU's instruction set, emulated) a
      # section keeps a block of its own beside the uncapped one.
      isa_cap = os.environ.get('ONEDNN_MAX_CPU_ISA')
      if isa_cap:
        harness.write_section(args.output, f'{name}-onednn-{isa_cap.lower()}',
                              text)
      elif name == 'core':
        harness.write_head(args.output, text)
      else:
        harness.write_section(args.output, name, text)
      print(f'Written to {args.output}', flush=True)
  finally:
    if not args.work_dir:
      shutil.rmtree(ctx.work_dir, ignore_errors=True)
  return 0


if __name__ == '__main__':
  sys.exit(main())
