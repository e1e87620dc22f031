"""DataChecks on a dataset: its cost, what it found, pictures of the pairs.

Converts the IDX files once, then times the DataChecks executor in this
process: wall and CPU time, peak memory, pairs per split pair and image
issues; --png draws the first pairs found, as the report does.
"""

import argparse
import os
import resource
import shlex
import sys
import tempfile
import time

from benchmarks import harness
from inspector import duplicates
from metadata import queries
from records import data_check_results as results
from tests import artifacts
from tests import test_data_checks

SHOWN_PAIRS = 40


def _cpu_seconds() -> float:
  total = 0.0
  for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
    usage = resource.getrusage(who)
    total += usage.ru_utime + usage.ru_stime
  return total


def main(argv=None) -> int:
  """Converts, times DataChecks, prints what it found."""
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--data-dir', required=True)
  parser.add_argument('--work-dir', default=None)
  parser.add_argument('--png', default=None)
  parser.add_argument('--beam-args', default='--direct_running_mode=in_memory')
  parser.add_argument(
      '--validation-percent', type=int, default=0,
      help='Carve this share of train into a validation split, as a run '
      'does (local_runner.py --validation-percent) (default: none).')
  args = parser.parse_args(argv)
  work = args.work_dir or tempfile.mkdtemp(prefix='data-checks-bench-')
  examples = harness.convert_idx(args.data_dir, work,
                                 args.validation_percent)
  artifacts.IN_MEMORY[:] = shlex.split(args.beam_args)
  start_wall, start_cpu = time.monotonic(), _cpu_seconds()
  output = test_data_checks.run_data_checks(
      examples, os.path.join(work, 'checks'))
  wall, cpu = time.monotonic() - start_wall, _cpu_seconds() - start_cpu
  peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  images = results.json_property(output, results.IMAGES_PROPERTY)
  print(f'DataChecks on {sum(images.values()):,} images ({images}): '
        f'{wall:.2f}s wall, {cpu:.2f}s CPU, peak RSS of this process '
        f'{peak:.0f} MiB (Beam: {args.beam_args})')
  print('copies:', results.json_property(output, results.COPIES_PROPERTY))
  print('held out:', results.json_property(output, results.HELD_OUT_PROPERTY))
  print('issues:', results.json_property(output, results.ISSUES_PROPERTY))
  print('pairs file:', os.path.join(output.uri, results.COPIES_FILE))
  rows = list(results.read_pairs(output.uri, SHOWN_PAIRS))
  if args.png and rows:
    duplicates.pairs_picture(
        queries.artifact_from_proto(examples.mlmd_artifact, 'Examples'),
        rows, f'DataChecks: the first {len(rows)} pairs')[0].save(args.png)
    print('pairs drawn:', args.png)
  return 0


if __name__ == '__main__':
  sys.exit(main())
