"""Materialise the transformed images, or transform raw records per batch?

Measures both on the artifacts of a finished local run (default settings),
side by side in one process:
  * materialising: the extra Transform work (apply the graph to the train
    split and write float Examples) and its bytes on disk;
  * the Trainer's input pipeline at batch 128 over one epoch, fed from raw
    records + the transform graph per batch (what the pipeline does) or
    from the materialised float records, each cold and with tf.data's cache.

  .venv/bin/python -m benchmarks.transform_choice --run-dir outputs
"""

import argparse
import datetime
import os
import statistics
import sys
import tempfile
import time

import apache_beam as beam
import tensorflow as tf
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from tfx_bsl.public import tfxio

import benchmarks
from modules import input_pipeline
from records import features
from inspector import queries
from inspector import store as store_lib


def _latest_uri(md: queries.Metadata, type_name: str) -> str:
  return [a for a in md.of_type(type_name) if a.state == 'LIVE'][-1].uri


def materialise(raw_pattern: str, transform_dir: str, out_dir: str,
                num_shards: int) -> float:
  """Writes the transformed train split as Examples; returns seconds."""
  output = tft.TFTransformOutput(transform_dir)
  source = tfxio.TFExampleRecord(file_pattern=raw_pattern,
                                 telemetry_descriptors=['benchmark'],
                                 schema=output.raw_metadata.schema)
  coder = tft.coders.ExampleProtoCoder(output.transformed_metadata.schema)
  start = time.monotonic()
  with beam.Pipeline(argv=['--direct_running_mode=multi_processing',
                           '--direct_num_workers=0']) as pipeline:
    with tft_beam.Context(temp_dir=tempfile.mkdtemp()):
      transform_fn = pipeline | tft_beam.ReadTransformFn(transform_dir)
      raw = (pipeline | source.BeamSource(), source.TensorAdapterConfig())
      transformed, _ = ((raw, transform_fn) | tft_beam.TransformDataset())
      _ = (transformed
           | beam.Map(coder.encode)
           | beam.io.WriteToTFRecord(os.path.join(out_dir, 'data'),
                                     file_name_suffix='.gz',
                                     num_shards=num_shards))
  return time.monotonic() - start


def materialised_dataset(pattern: str, output: tft.TFTransformOutput,
                         batch_size: int, cache: bool) -> tf.data.Dataset:
  """The same pipeline shape, over float records, with no transform to apply."""
  spec = output.transformed_feature_spec()
  files = input_pipeline.list_files(pattern)
  dataset = tf.data.Dataset.from_tensor_slices(files).interleave(
      lambda f: tf.data.TFRecordDataset(f, compression_type='GZIP'),
      cycle_length=len(files), num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=False)
  if cache:
    dataset = dataset.cache()
  dataset = dataset.shuffle(60_000).batch(batch_size).map(
      lambda s: (lambda p: (p[features.IMAGE_KEY], p[features.LABEL_KEY]))(
          tf.io.parse_example(s, spec)),
      num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
  return dataset.prefetch(tf.data.AUTOTUNE)


def epoch_seconds(dataset: tf.data.Dataset) -> tuple:
  start = time.monotonic()
  count = 0
  for images, _ in dataset:
    count += int(images.shape[0])
  return time.monotonic() - start, count


def _bytes(pattern: str) -> int:
  return sum(tf.io.gfile.stat(f).length for f in tf.io.gfile.glob(pattern))


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--run-dir', required=True,
                      help='--output-dir of a finished local_runner.py run.')
  parser.add_argument('--batch-size', type=int, default=128)
  parser.add_argument('--repetitions', type=int, default=3)
  parser.add_argument('--report', default=None)
  args = parser.parse_args()

  path = store_lib.sqlite_path(output_dir=args.run_dir)
  md = queries.Metadata(store_lib.open_store(path), path)
  examples = _latest_uri(md, 'Examples')
  transform_dir = _latest_uri(md, 'TransformGraph')
  output = tft.TFTransformOutput(transform_dir)
  raw_pattern = os.path.join(examples, 'Split-train', '*')
  num_shards = len(tf.io.gfile.glob(raw_pattern))
  work = tempfile.mkdtemp(prefix='materialised-')
  materialise_s = materialise(raw_pattern, transform_dir, work, num_shards)
  floats_pattern = os.path.join(work, '*')

  # The Trainer's shuffle (the whole split, as it plans one that fits).
  shuffle_buffer = input_pipeline.count_records(raw_pattern)
  variants = {
      'raw records + transform per batch, cold': lambda: (
          input_pipeline.make_dataset(raw_pattern, output, args.batch_size,
                                      training=True, shuffle_buffer=shuffle_buffer,
                                      cache=False)),
      'materialised floats, cold': lambda: materialised_dataset(
          floats_pattern, output, args.batch_size, cache=False),
  }
  cached = {
      'raw records + transform per batch, cached': input_pipeline.make_dataset(
          raw_pattern, output, args.batch_size, training=True,
          shuffle_buffer=shuffle_buffer, cache=True),
      'materialised floats, cached': materialised_dataset(
          floats_pattern, output, args.batch_size, cache=True),
  }
  for dataset in cached.values():
    epoch_seconds(dataset)  # Fills the cache.
  timings = {name: [] for name in [*variants, *cached]}
  for _ in range(args.repetitions):  # Interleaved, so noise hits all alike.
    for name, make in variants.items():
      timings[name].append(epoch_seconds(make()))
    for name, dataset in cached.items():
      timings[name].append(epoch_seconds(dataset))

  lines = [
      '### Transform: materialise or apply per batch',
      '',
      f'{datetime.date.today()}, {os.cpu_count()} CPU cores; train split of '
      f'the run, batch {args.batch_size}, median (min-max) of '
      f'{args.repetitions} epochs each.',
      '',
      f'- raw train records on disk: {_bytes(raw_pattern) / 1e6:.1f} MB; '
      f'materialised float records: {_bytes(floats_pattern) / 1e6:.1f} MB',
      f'- extra Transform time to materialise the train split: '
      f'{materialise_s:.1f} s',
      '',
      '| input | examples/s | vs raw per batch, cold |',
      '|---|---|---|',
  ]
  base = None
  for name, runs in timings.items():
    rates = [count / seconds for seconds, count in runs]
    median = statistics.median(rates)
    base = base or median
    lines.append(f'| {name} | {median:,.0f} ({min(rates):,.0f}-'
                 f'{max(rates):,.0f}) | {median / base:.2f}x |')
  report = '\n'.join(lines) + '\n'
  benchmarks.publish(report, args.report)
  return 0


if __name__ == '__main__':
  sys.exit(main())
