"""Image folders: Keras's image_dataset_from_directory against our
ExampleGen + the Trainer's input_fn, one epoch of the train split (96x96x3
unless told; benchmarks/encodings.py also runs it at 224x224x3).

  .venv/bin/python -m benchmarks.folder_input            # 3,000 images, 5 repetitions
  .venv/bin/python -m benchmarks.folder_input --quick    # 200 images, 1 repetition: does it work?

The data are the shapes dataset (data/shapes.py: PNG files, ten classes).
Variants, batch 128 (the Trainer's), each to normalised float images and
labels:
  keras            tf_keras.utils.image_dataset_from_directory (lists the
                   folders, reads and decodes every PNG file each epoch),
                   then the same per-channel normalisation as ours;
  keras, cached    the same dataset with .cache() after decoding: its
                   second epoch;
  ours raw         modules/input_pipeline.make_dataset on the records
                   ExampleGen wrote with --image-encoding raw, cold (first
                   epoch) and cached (second);
  ours png, jpeg   the same on --image-encoding png or jpeg records: the
                   files decoded in the transform graph, per batch, in
                   parallel.
Ours also pays a one-off conversion (ExampleGen), reported with the bytes
each variant reads. Figures are median (min-max) of interleaved
repetitions; on a contended machine they say little.
"""

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from typing import Dict, List

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import tensorflow as tf  # pylint: disable=g-import-not-at-top
import tf_keras as keras  # pylint: disable=g-import-not-at-top

from benchmarks.timing import Figure, timed  # pylint: disable=g-import-not-at-top
from components.image_example_gen.options import ImageExampleGenOptions  # pylint: disable=g-import-not-at-top
from data import shapes  # pylint: disable=g-import-not-at-top
from modules import input_pipeline  # pylint: disable=g-import-not-at-top
from modules import transform  # pylint: disable=g-import-not-at-top
from modules.training_config import InputConfig, TrainingConfig  # pylint: disable=g-import-not-at-top,g-multiple-import
from pipeline.knobs import DataConfig  # pylint: disable=g-import-not-at-top
from records import features  # pylint: disable=g-import-not-at-top
from tests import example_gen_standalone  # pylint: disable=g-import-not-at-top
from tests import transform_analysis  # pylint: disable=g-import-not-at-top

SIZE = 96
IN_MEMORY = ['--direct_running_mode=in_memory', '--direct_num_workers=1']
ENCODINGS = features.IMAGE_ENCODINGS


def _epoch(dataset: tf.data.Dataset) -> int:
  return sum(int(images.shape[0]) for images, _ in dataset)


def _bytes(pattern: str) -> int:
  return sum(tf.io.gfile.stat(f).length for f in tf.io.gfile.glob(pattern))


def keras_dataset(train_dir: str, size: int, batch_size: int, mean, variance,
                  cache: bool) -> tf.data.Dataset:
  dataset = keras.utils.image_dataset_from_directory(
      train_dir, label_mode='int', color_mode='rgb', image_size=(size, size),
      batch_size=batch_size, shuffle=True, seed=0)
  # It yields float32 0..255 images: the same normalisation as ours.
  dataset = dataset.map(
      lambda images, labels: (transform.normalise(
          tf.cast(images, tf.uint8), mean, variance), labels),
      num_parallel_calls=tf.data.AUTOTUNE)
  if cache:
    dataset = dataset.cache()
  return dataset.prefetch(tf.data.AUTOTUNE)


@dataclasses.dataclass
class Result:
  geometry: features.ImageGeometry
  images: int  # Training images, read once per epoch.
  per_class: int
  batch_size: int
  repetitions: int
  conversion_s: Dict[str, float]  # Encoding -> ExampleGen's seconds.
  rates: Dict[str, Figure]  # Variant -> examples/s.
  bytes_read: Dict[str, int]  # Variant -> bytes of the files it reads.


def measure(work_dir: str, per_class: int, repetitions: int, batch_size: int,
            size: int = SIZE, encodings=ENCODINGS,
            with_keras: bool = True) -> Result:
  """Builds the data, measures every variant."""
  geometry = features.ImageGeometry(size, size, 3)
  data_dir = os.path.join(work_dir, f'shapes-{size}')
  shapes.write(data_dir, per_class, size, eval_per_class=max(1, per_class // 5))
  patterns, outputs, conversion = {}, {}, {}
  for encoding in encodings:
    out = os.path.join(work_dir, f'examples-{size}-{encoding}')
    seconds, examples = timed(lambda: example_gen_standalone.run_example_gen(  # pylint: disable=cell-var-from-loop
        data_dir, out, ImageExampleGenOptions(
            input_format='images', geometry=geometry,
            num_shards=DataConfig().num_shards, image_encoding=encoding),
        IN_MEMORY))
    conversion[encoding] = seconds
    patterns[encoding] = os.path.join(examples.uri, 'Split-train', '*')
    outputs[encoding] = transform_analysis.analyze(
        patterns[encoding], geometry,
        os.path.join(work_dir, f'tft-{size}-{encoding}'), IN_MEMORY, encoding)
  first = encodings[0]
  mean, variance = transform.normalisation_constants(
      outputs[first], input_pipeline.first_record(patterns[first]))
  train_dir = os.path.join(data_dir, 'train')

  rates: Dict[str, Figure] = {}
  examples = 0

  def run_epoch(name: str, dataset: tf.data.Dataset) -> None:
    nonlocal examples
    seconds, examples = timed(lambda: _epoch(dataset))
    rates.setdefault(name, Figure()).add(examples / seconds)

  for _ in range(repetitions):  # Interleaved, so noise hits all alike.
    if with_keras:
      run_epoch('keras', keras_dataset(train_dir, size, batch_size, mean,
                                       variance, cache=False))
      cached = keras_dataset(train_dir, size, batch_size, mean, variance,
                             cache=True)
      _epoch(cached)
      run_epoch('keras, cached', cached)
    for encoding in encodings:
      dataset = input_pipeline.make_planned_dataset(
          patterns[encoding], outputs[encoding], batch_size,
          input_pipeline.plan_training(patterns[encoding],
                                       InputConfig()))
      run_epoch(f'ours {encoding}, cold', dataset)
      run_epoch(f'ours {encoding}, cached', dataset)

  png_bytes = sum(os.path.getsize(os.path.join(folder, name))
                  for folder, _, names in os.walk(train_dir) for name in names)
  read = {f'ours {e}, {s}': _bytes(patterns[e]) for e in encodings
          for s in ('cold', 'cached')}
  if with_keras:
    read.update({'keras': png_bytes, 'keras, cached': png_bytes})
  return Result(geometry=geometry, images=examples, per_class=per_class,
                batch_size=batch_size, repetitions=repetitions,
                conversion_s=conversion, rates=rates, bytes_read=read)


def render(r: Result) -> str:
  lines = [
      f'## Image folders at {r.geometry}: image_dataset_from_directory vs ours',
      '',
      f'{r.images:,} training images ({r.per_class} per class), batch '
      f'{r.batch_size}, {r.repetitions} repetition(s), {os.cpu_count()} CPU '
      f'cores, {time.strftime("%Y-%m-%d")}. One-off conversion by our '
      'ExampleGen: ' + ', '.join(f'{e} {s:.1f} s'
                                for e, s in r.conversion_s.items()) + '.',
      '',
      '| variant | examples/s | files read (bytes) |',
      '|---|---|---|',
  ]
  lines += [f'| {name} | {figure.format()} | {r.bytes_read[name]:,} |'
            for name, figure in r.rates.items()]
  return '\n'.join(lines) + '\n'


def run(work_dir: str, per_class: int, repetitions: int,
        batch_size: int) -> str:
  """Builds the data, measures, returns the Markdown report."""
  return render(measure(work_dir, per_class, repetitions, batch_size))


def main(argv: List[str] = None) -> int:
  parser = argparse.ArgumentParser(
      prog='python -m benchmarks.folder_input', description=__doc__,
      formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--per-class', type=int, default=300)
  parser.add_argument('--repetitions', type=int, default=5)
  parser.add_argument('--batch-size', type=int, default=TrainingConfig().batch_size)
  parser.add_argument('--quick', action='store_true',
                      help='20 images per class, 1 repetition: checks that '
                      'the benchmark works; the figures mean little.')
  parser.add_argument('--work-dir', default=None,
                      help='Where the data go (default: a temporary folder).')
  parser.add_argument('--report', default=None,
                      help='Also write the report to this file.')
  args = parser.parse_args(argv)
  per_class, repetitions = ((20, 1) if args.quick else
                            (args.per_class, args.repetitions))
  with tempfile.TemporaryDirectory() as scratch:
    report = run(args.work_dir or scratch, per_class, repetitions,
                 args.batch_size)
  print(report)
  if args.report:
    with open(args.report, 'w') as f:
      f.write(report)
  return 0


if __name__ == '__main__':
  sys.exit(main())
