"""Throughput of the predict command against `serve_images`, on MNIST.

  .venv/bin/python -m benchmarks.predict_speed --model outputs/ --images 3000

The first --images test images of --data-dir are written as PNG files; then,
with the same served model (a pushed version or a pipeline's output
directory) and the same batch size:
  serve_images        uint8 arrays already in memory, the model's own speed;
  predict, in process `predict.cli.main` on the PNG folder: files listed and
                      read, decoded and resized in the graph
                      (serve_image_bytes), rows written to CSV; the time
                      to load the model (measured apart) taken off;
  predict command     `python -m predict` as a user runs it, Python and
                      TensorFlow start-up included.
Both predict runs must name the class serve_images names for each image
(the agreement line). The model's TensorFlow Lite files are listed too, with
what the Trainer measured of them (tflite/tflite.json). The figures, with
the machine and its load (it may be shared), replace the `predict-speed`
section of BENCHMARKS.md.
"""

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top
import numpy as np
from PIL import Image

from benchmarks import harness
from modules import tflite_export
from predict import cli
from predict import served_model
# pylint: enable=g-import-not-at-top

SECTION = 'predict-speed'


def make_parser() -> argparse.ArgumentParser:
  """The command line's flags."""
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--model', required=True,
                      help='a pushed model version or a pipeline output '
                      'directory (as the predict command takes)')
  parser.add_argument('--data-dir',
                      default=os.path.join('..', 'shared', 'data', 'mnist'),
                      help='MNIST IDX files (t10k-* are used)')
  parser.add_argument('--images', type=int, default=3000,
                      help='how many test images (default 3000)')
  parser.add_argument('--batch-size', type=int, default=cli.BATCH_SIZE)
  parser.add_argument('--repeats', type=int, default=5,
                      help='timed runs of each; the median is reported')
  parser.add_argument('--output', default=os.path.join(harness.PROJECT_DIR,
                                                       'BENCHMARKS.md'))
  return parser


def _write_pngs(images: np.ndarray, folder: str) -> None:
  for i, image in enumerate(images):
    Image.fromarray(image).save(os.path.join(folder, f'{i:06d}.png'))


def _serve_images(model_path: str, images: np.ndarray, batch: int):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from modules import signatures  # pylint: disable=g-import-not-at-top
  serve = tf.saved_model.load(model_path).signatures[
      signatures.IMAGES_SIGNATURE]
  serve(images=tf.constant(images[:batch]))  # Traced and warm.

  def run():
    names = []
    for start in range(0, len(images), batch):
      out = serve(images=tf.constant(images[start:start + batch]))
      names += [n.decode() for n in out[signatures.CLASS_NAMES].numpy()]
    return names

  return run


def _timed(fn, repeats: int):
  seconds, result = [], None
  for _ in range(repeats):
    start = time.perf_counter()
    result = fn()
    seconds.append(time.perf_counter() - start)
  return statistics.median(seconds), result


def _classes(csv_path: str):
  with open(csv_path) as f:
    return [row['class'] for row in csv.DictReader(f)]


def _model_line(model_path: str) -> str:
  from modules import signatures  # pylint: disable=g-import-not-at-top
  from modules import trainer  # pylint: disable=g-import-not-at-top
  path = os.path.join(model_path, signatures.EXTRA_DIR,
                      trainer.TRAINING_PLAN_FILE)
  if not os.path.isfile(path):
    return 'The model: no training plan recorded.'
  with open(path) as f:
    plan = json.load(f)
  return (f'The model: {plan["architecture"]}, {plan["parameters"]:,} '
          f'parameters, {plan["epochs"]} epoch(s) on '
          f'{plan["train_records"]:,} records.')


def _tflite_lines(model_path: str):
  path = os.path.join(model_path, tflite_export.TFLITE_DIR,
                      tflite_export.RESULTS_FILE)
  if not os.path.isfile(path):
    return ['', 'The model has no TensorFlow Lite files.']
  with open(path) as f:
    results = json.load(f)
  lines = ['', f'Its TensorFlow Lite files, as the Trainer measured them on '
           f'the first {results["eval_records"]:,} records of the eval split '
           '(`tflite/tflite.json`):', '',
           '| model | size | accuracy | same class as the SavedModel |',
           '|---|---|---|---|',
           f'| SavedModel | | {results["saved_model_accuracy"]:.2%} | |']
  for kind, entry in results['models'].items():
    lines.append(f'| `{entry["file"]}` | {entry["bytes"] / 2**20:.1f} MiB | '
                 f'{entry["accuracy"]:.2%} | '
                 f'{entry["agreement_with_saved_model"]:.2%} |')
  return lines


def main(argv=None) -> int:
  """Times the three paths; writes the section's block."""
  args = make_parser().parse_args(argv)
  model_path = served_model.locate(args.model)
  images, _ = harness.load_split(args.data_dir, harness.SPLIT_PREFIXES['eval'])
  images = images[:args.images]
  n = len(images)
  load_before = os.getloadavg()
  with tempfile.TemporaryDirectory(prefix='predict-speed-') as tmp:
    folder = os.path.join(tmp, 'png')
    os.makedirs(folder)
    _write_pngs(images, folder)
    rows = os.path.join(tmp, 'rows.csv')
    flags = [model_path, folder, '-o', rows, '--batch-size',
             str(args.batch_size)]

    arrays_s, reference = _timed(
        _serve_images(model_path, images, args.batch_size), args.repeats)

    def in_process():
      with open(os.devnull, 'w') as null:
        stderr, sys.stderr = sys.stderr, null
        try:
          assert cli.main(flags) == 0
        finally:
          sys.stderr = stderr
      return _classes(rows)

    in_process()  # Warm: the first load reads the files from disk.
    process_s, by_files = _timed(in_process, args.repeats)
    load_s, _ = _timed(lambda: served_model.Model(model_path), args.repeats)

    def command():
      subprocess.run([sys.executable, '-m', 'predict', *flags], check=True,
                     cwd=harness.PROJECT_DIR, capture_output=True)
      return _classes(rows)

    command_s, by_command = _timed(command, args.repeats)
  load_after = os.getloadavg()

  agree = min(np.mean(np.array(by_files) == np.array(reference)),
              np.mean(np.array(by_command) == np.array(reference)))
  lines = [
      f'## Predict speed: image files vs arrays in memory',
      '',
      harness.machine_line(),
      '',
      f'Load average (1, 5, 15 min) before: '
      f'{", ".join(f"{x:.2f}" for x in load_before)}; after: '
      f'{", ".join(f"{x:.2f}" for x in load_after)}.',
      '',
      f'{n:,} MNIST test images written as PNG files, batches of '
      f'{args.batch_size}, median of {args.repeats} runs '
      '(`python -m benchmarks.predict_speed`). ' + _model_line(model_path),
      '',
      '| path | seconds | images/s | vs serve_images |',
      '|---|---|---|---|',
  ]
  for name, seconds in (
      ('`serve_images`, uint8 arrays in memory', arrays_s),
      ('predict, in process (files read, decoded in the graph, CSV written), '
       'after loading the model', process_s - load_s),
      ('`python -m predict` (Python and TensorFlow start-up and loading the '
       'model included)', command_s)):
    lines.append(f'| {name} | {seconds:.2f} | {n / seconds:,.0f} | '
                 f'{arrays_s / seconds:.2f}x |')
  lines += ['', f'Loading the model (in process): {load_s:.2f}s.']
  lines += ['', f'Same class as `serve_images` for {agree:.2%} of the images.']
  lines += _tflite_lines(model_path)
  text = '\n'.join(lines)
  print(text)
  harness.write_section(args.output, SECTION, text)
  return 0


if __name__ == '__main__':
  sys.exit(main())
