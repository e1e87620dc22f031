"""Beam pipelines with Beam's own signature lookups and option views, and
with them cached (pipeline/beam_caches.py), alternating.

Converts the IDX files once, then times, in this process and Beam in memory
as a run's components use it: TFDV's statistics with StatisticsGen's options,
and tf.Transform's analysis of the train split with the project's
preprocessing_fn. Each cached repeat starts from empty caches.
"""

import glob
import os
import sys
import tempfile
import time

from apache_beam.options import pipeline_options
from apache_beam.transforms import core
import tensorflow_data_validation as tfdv

from benchmarks import harness
from pipeline import beam_caches
from pipeline import constants
from pipeline import scale
from pipeline import tfrecord_crc
from records import features
from tests import transform_analysis

OPTIONS = pipeline_options.PipelineOptions
BEAMS_GET_SIGNATURE = getattr(core.get_signature, '__wrapped__',
                              core.get_signature)
BEAMS_VIEW_AS = getattr(OPTIONS.view_as, '__wrapped__', OPTIONS.view_as)


class _Tally:
  """Calls of one of Beam's functions, and the seconds spent in them."""

  def __init__(self):
    self.count = 0
    self.seconds = 0.0

  def counting(self, func):
    def counted(*args):
      self.count += 1
      start = time.perf_counter()
      try:
        return func(*args)
      finally:
        self.seconds += time.perf_counter() - start
    return counted

  def __str__(self):
    return f'{self.count:,} in {self.seconds:.2f} s'


def _set(cached: bool):
  """Sets this process's Beam either way; returns the tallies of Beam's own
  signature lookups and option views."""
  signatures, views = _Tally(), _Tally()
  get_signature = signatures.counting(BEAMS_GET_SIGNATURE)
  view_as = views.counting(BEAMS_VIEW_AS)
  core.get_signature = (beam_caches.cached(get_signature) if cached
                        else get_signature)
  OPTIONS.view_as = beam_caches.cached_views(view_as) if cached else view_as
  return signatures, views


def main(argv=None) -> int:
  """Converts once, then times each workload both ways, alternating."""
  args, work, examples = harness.idx_examples(
      __doc__.split('\n\n')[0], argv, 'beam-recomputation-bench-')
  tfrecord_crc.use_google_crc32c()  # As in a run.
  every_split = os.path.join(examples.uri, 'Split-*', '*.gz')
  train = os.path.join(examples.uri, f'Split-{features.TRAIN_SPLIT}', '*.gz')
  # As a local run's StatisticsGen and Transform get them at this size.
  beam_args = (list(scale.ANALYSIS_IN_MEMORY_BEAM_ARGS)
               + list(constants.LOCAL_BEAM_PIPELINE_ARGS))

  def statistics_of_every_split():
    tfdv.generate_statistics_from_tfrecord(
        every_split, os.path.join(work, 'stats.pb'),
        tfdv.StatsOptions(use_sketch_based_topk_uniques=True),
        OPTIONS(beam_args))

  def analysis_of_train():
    transform_analysis.analyze(train, features.MNIST_GEOMETRY,
                               tempfile.mkdtemp(dir=work), beam_args)

  workloads = {
      'TFDV statistics (StatisticsGen\'s options), every split': (
          statistics_of_every_split),
      'tf.Transform analysis (the project\'s preprocessing_fn), train': (
          analysis_of_train),
  }
  seconds, tallies = harness.alternating(
      workloads, {'Beam\'s own': lambda: _set(cached=False),
                  'cached': lambda: _set(cached=True)}, args.repeats)
  core.get_signature, OPTIONS.view_as = BEAMS_GET_SIGNATURE, BEAMS_VIEW_AS
  print(harness.machine_line())
  print(f'CPU flags: {harness.cpu_flags("none of note")}')
  files = glob.glob(every_split)
  print(f'{len(files)} shards of {args.data_dir} (gzipped Examples), each '
        f'workload once untimed, then {args.repeats} repeats alternating; '
        'seconds, median (all); the signatures Beam took and the option views it '
        'parsed in the last repeat, and the seconds inside them:')
  for workload in workloads:
    print(harness.alternating_line(
        workload, seconds, 'Beam\'s own', 'cached',
        lambda way, workload=workload: (
            ', signatures {}, option views {}'.format(*tallies[workload, way]))))
  return 0


if __name__ == '__main__':
  sys.exit(main())
