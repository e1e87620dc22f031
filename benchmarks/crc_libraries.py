"""Beam's TFRecord reads with crcmod (Beam's own choice here) and with
google-crc32c (pipeline/tfrecord_crc.py), alternating.

Converts the IDX files once, then times, in this process and Beam in memory
as a run's StatisticsGen uses it: Beam reading every record of the Examples,
and TFDV's statistics over them with StatisticsGen's options.
"""

import glob
import os
import sys

import apache_beam as beam
import crcmod.predefined
import tensorflow_data_validation as tfdv

from benchmarks import harness
from pipeline import scale
from pipeline import tfrecord_crc

CRCS = {'crcmod': lambda: tfrecord_crc.set_crc32c(
            crcmod.predefined.mkPredefinedCrcFun('crc-32c')),
        'google-crc32c': tfrecord_crc.use_google_crc32c}


def _beam_args():
  return beam.options.pipeline_options.PipelineOptions(
      list(scale.ANALYSIS_IN_MEMORY_BEAM_ARGS))


def _read(files):
  with beam.Pipeline(options=_beam_args()) as p:
    _ = (p | beam.Create(files) | beam.io.ReadAllFromTFRecord(
        coder=beam.coders.BytesCoder()) | beam.combiners.Count.Globally())


def _statistics(pattern, output):
  tfdv.generate_statistics_from_tfrecord(
      pattern, output, tfdv.StatsOptions(use_sketch_based_topk_uniques=True),
      _beam_args())


def main(argv=None) -> int:
  """Converts once, then times each workload with each CRC, alternating."""
  args, work, examples = harness.idx_examples(
      __doc__.split('\n\n')[0], argv, 'tfrecord-crc-bench-')
  files = sorted(glob.glob(os.path.join(examples.uri, 'Split-*', '*.gz')))
  workloads = {'Beam reads every record': lambda: _read(files),
               'TFDV statistics (StatisticsGen\'s options)': lambda: _statistics(
                   os.path.join(examples.uri, 'Split-*', '*.gz'),
                   os.path.join(work, 'stats.pb'))}
  seconds, _ = harness.alternating(workloads, CRCS, args.repeats)
  print(harness.machine_line())
  print(f'CPU flags: {harness.cpu_flags("none of note")}')
  print(f'{len(files)} shards of {args.data_dir} (gzipped Examples), '
        f'each workload once untimed, then {args.repeats} repeats '
        'alternating; seconds, median (all):')
  for workload in workloads:
    print(harness.alternating_line(workload, seconds, 'crcmod',
                                   'google-crc32c'))
  return 0


if __name__ == '__main__':
  sys.exit(main())
