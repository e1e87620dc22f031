"""Beam pipelines with Beam's own signature lookups and with them cached
(pipeline/beam_signatures.py), alternating.

Converts the IDX files once, then times, in this process and Beam in memory
as a run's components use it: TFDV's statistics with StatisticsGen's options,
and tf.Transform's analysis of the train split with the project's
preprocessing_fn. Each cached repeat starts from an empty cache.
"""

import argparse
import glob
import os
import statistics
import sys
import tempfile
import time

import apache_beam as beam
from apache_beam.transforms import core
import tensorflow_data_validation as tfdv

from benchmarks import harness
from components.image_example_gen.options import ImageExampleGenOptions
from pipeline import beam_signatures
from pipeline import constants
from pipeline import scale
from pipeline import tfrecord_crc
from records import features
from records import splits
from tests import artifacts
from tests import transform_analysis

BEAMS_OWN = getattr(core.get_signature, '__wrapped__', core.get_signature)


class _Counted:
  """Beam's own get_signature, counting the signatures it takes and the
  seconds it takes them in."""

  def __init__(self):
    self.count = 0
    self.seconds = 0.0

  def __call__(self, func):
    self.count += 1
    start = time.perf_counter()
    try:
      return BEAMS_OWN(func)
    finally:
      self.seconds += time.perf_counter() - start


def _lookups(cached: bool):
  """Sets this process's lookups; returns their counter."""
  counted = _Counted()
  core.get_signature = (beam_signatures.cached(counted) if cached
                        else counted)
  return counted


def main(argv=None) -> int:
  """Converts once, then times each workload both ways, alternating."""
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--data-dir', required=True)
  parser.add_argument('--work-dir', default=None)
  parser.add_argument('--repeats', type=int, default=6)
  args = parser.parse_args(argv)
  work = args.work_dir or tempfile.mkdtemp(prefix='beam-signatures-bench-')
  tfrecord_crc.use_google_crc32c()  # As in a run.
  examples = artifacts.run_example_gen(
      args.data_dir, os.path.join(work, 'examples'),
      ImageExampleGenOptions(input_format='idx', num_shards=16))
  every_split = os.path.join(examples.uri, 'Split-*', '*.gz')
  train = os.path.join(examples.uri, f'Split-{splits.TRAIN}', '*.gz')
  # As a local run's StatisticsGen and Transform get them at this size.
  beam_args = (list(scale.ANALYSIS_IN_MEMORY_BEAM_ARGS)
               + list(constants.LOCAL_BEAM_PIPELINE_ARGS))

  def statistics_of_every_split():
    tfdv.generate_statistics_from_tfrecord(
        every_split, os.path.join(work, 'stats.pb'),
        tfdv.StatsOptions(use_sketch_based_topk_uniques=True),
        beam.options.pipeline_options.PipelineOptions(beam_args))

  def analysis_of_train():
    transform_analysis.analyze(train, features.MNIST_GEOMETRY,
                               tempfile.mkdtemp(dir=work), beam_args)

  workloads = {
      'TFDV statistics (StatisticsGen\'s options), every split': (
          statistics_of_every_split),
      'tf.Transform analysis (the project\'s preprocessing_fn), train': (
          analysis_of_train),
  }
  ways = ('Beam\'s own', 'cached')
  for run in workloads.values():  # Imports and first-time set-up: untimed.
    _lookups(cached=False)
    run()
  seconds = {(w, way): [] for w in workloads for way in ways}
  lookups = {}
  for repeat in range(args.repeats):
    for workload, run in workloads.items():
      order = ways if repeat % 2 == 0 else tuple(reversed(ways))
      for way in order:
        counted = _lookups(cached=way == 'cached')
        start = time.monotonic()
        run()
        seconds[workload, way].append(time.monotonic() - start)
        lookups[workload, way] = counted
  core.get_signature = BEAMS_OWN
  print(harness.machine_line())
  print(f'CPU flags: {harness.cpu_flags("none of note")}')
  files = glob.glob(every_split)
  print(f'{len(files)} shards of {args.data_dir} (gzipped Examples), each '
        f'workload once untimed, then {args.repeats} repeats alternating; '
        'seconds, median (all); the signatures Beam took in the last repeat, and '
        'the seconds it took them in:')
  for workload in workloads:
    cells = []
    for way in ways:
      times = seconds[workload, way]
      cells.append(f'{way} {statistics.median(times):.2f} '
                   f'({", ".join(f"{t:.2f}" for t in times)}), '
                   f'{lookups[workload, way].count:,} signatures in '
                   f'{lookups[workload, way].seconds:.2f} s')
    ratio = (statistics.median(seconds[workload, 'cached'])
             / statistics.median(seconds[workload, 'Beam\'s own']))
    print(f'{workload}: {"; ".join(cells)}; ratio {ratio:.2f}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
