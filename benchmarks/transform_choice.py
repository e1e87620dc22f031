"""Materialise the transformed images, or transform raw records per batch?

Measures both on the artifacts of a finished local run, side by side in
one process:
  * materialising: the extra Transform work (apply the graph to the train
    split and write float Examples) and its bytes on disk;
  * the Trainer's input pipeline over one epoch, fed from raw records + the
    transform graph per batch (what the pipeline does) or from the
    materialised float records, each cold and with tf.data's cache.

  .venv/bin/python -m benchmarks.transform_choice --run-dir outputs
"""

import argparse
import datetime
import os
import tempfile

import apache_beam as beam
import tensorflow as tf
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from tfx_bsl.public import tfxio

from benchmarks import harness
from benchmarks.harness import figures, rate_rows, table, timed
from modules import input_pipeline
from records import features


def materialise(raw_pattern: str, transform_dir: str, out_dir: str,
                num_shards: int) -> None:
  """Writes the transformed train split as Examples."""
  output = tft.TFTransformOutput(transform_dir)
  source = tfxio.TFExampleRecord(file_pattern=raw_pattern,
                                 telemetry_descriptors=['benchmark'],
                                 schema=output.raw_metadata.schema)
  coder = tft.coders.ExampleProtoCoder(output.transformed_metadata.schema)
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


def materialised_dataset(pattern: str, output: tft.TFTransformOutput,
                         batch_size: int, shuffle_buffer: int,
                         cache: bool) -> tf.data.Dataset:
  """The same pipeline shape over float records, with no transform."""
  spec = output.transformed_feature_spec()
  files = input_pipeline.list_files(pattern)
  dataset = tf.data.Dataset.from_tensor_slices(files).interleave(
      lambda f: tf.data.TFRecordDataset(f, compression_type='GZIP'),
      cycle_length=len(files), num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=False)
  if cache:
    dataset = dataset.cache()
  dataset = dataset.shuffle(shuffle_buffer).batch(batch_size).map(
      lambda s: (lambda p: (p[features.IMAGE_KEY], p[features.LABEL_KEY]))(
          tf.io.parse_example(s, spec)),
      num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
  return dataset.prefetch(tf.data.AUTOTUNE)


def main() -> None:
  """Times both inputs on a finished run; prints the table."""
  parser = argparse.ArgumentParser(
      description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--run-dir', required=True,
                      help='--output-dir of a finished local_runner.py run.')
  parser.add_argument('--batch-size', type=int, default=harness.TRAINING.batch_size)
  parser.add_argument('--repetitions', type=int, default=3)
  parser.add_argument('--report', default=None)
  args = parser.parse_args()
  examples = harness.newest_artifact(args.run_dir, 'ImageExampleGen', 'examples')
  transform_dir = harness.newest_artifact(args.run_dir, 'Transform',
                                       'transform_graph')
  output = tft.TFTransformOutput(transform_dir)
  raw_pattern = os.path.join(examples, 'Split-train', '*')
  work = tempfile.mkdtemp(prefix='materialised-')
  materialise_s, _ = timed(lambda: materialise(
      raw_pattern, transform_dir, work, len(tf.io.gfile.glob(raw_pattern))))
  floats_pattern = os.path.join(work, '*')
  # The Trainer's shuffle (the whole split, as it plans one that fits).
  shuffle = input_pipeline.count_records(raw_pattern)
  raw = 'raw records + transform per batch'
  makers = {
      f'{raw}, cold': lambda cache: input_pipeline.make_dataset(
          raw_pattern, output, args.batch_size, training=True,
          shuffle_buffer=shuffle, cache=cache),
      'materialised floats, cold': lambda cache: materialised_dataset(
          floats_pattern, output, args.batch_size, shuffle, cache),
  }
  cached = {name.replace('cold', 'cached'): make(True)
            for name, make in makers.items()}
  for dataset in cached.values():
    harness.epoch(dataset)  # Fills the cache.
  rates = figures([*makers, *cached])
  for _ in range(args.repetitions):  # Interleaved, so noise hits all alike.
    datasets = {**{n: make(False) for n, make in makers.items()}, **cached}
    for name, dataset in datasets.items():
      seconds, _, count = harness.timed_epoch(dataset)
      rates[name].add(count / seconds)
  harness.publish('\n'.join([
      '### Transform: materialise or apply per batch',
      '',
      f'{datetime.date.today()}, {os.cpu_count()} CPU cores; train split of '
      f'the run, batch {args.batch_size}, median (min-max) of '
      f'{args.repetitions} epochs each.',
      '',
      f'- raw train records on disk: '
      f'{harness.bytes_on_disk(raw_pattern) / 1e6:.1f} MB; materialised float '
      f'records: {harness.bytes_on_disk(floats_pattern) / 1e6:.1f} MB',
      f'- extra Transform time to materialise the train split: '
      f'{materialise_s:.1f} s',
      '',
      *table('input', 'examples/s', 'vs raw per batch, cold'),
      *rate_rows(rates, f'{raw}, cold', '{:.2f}x'),
  ]) + '\n', args.report)


if __name__ == '__main__':
  main()
