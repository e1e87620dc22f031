"""DataChecks with the kernels OpenBLAS picks itself and with those
pipeline/openblas_kernels.py chooses, alternating.

Converts the IDX files once (validation carved from train, as a run
does), then times the DataChecks executor on them in a fresh process each
time, since OpenBLAS takes its kernels once, when numpy loads.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from benchmarks import harness
from pipeline import openblas_kernels

_CHILD_FLAG = '--time-data-checks'
_KERNELS_PROGRAM = (
    'import json, numpy, scipy.linalg\n'
    'from threadpoolctl import threadpool_info\n'
    'print(json.dumps(sorted({i["architecture"] for i in threadpool_info()\n'
    '                         if i["internal_api"] == "openblas"})))\n')


def _own_kernels() -> str:
  """The kernels numpy's OpenBLAS picks itself here, with no choice made."""
  environ = {k: v for k, v in os.environ.items()
             if k != openblas_kernels.CORETYPE}
  found = json.loads(subprocess.run(
      [sys.executable, '-c', _KERNELS_PROGRAM], env=environ, check=True,
      capture_output=True, text=True).stdout)
  return '/'.join(found)


def _time_data_checks(examples_json: str, output: str) -> None:
  """The child: times DataChecks on the Examples artifact saved at
  `examples_json`, prints the seconds (wall, CPU) and the kernels, as JSON."""
  from threadpoolctl import threadpool_info  # pylint: disable=g-import-not-at-top
  from tfx.utils import json_utils  # pylint: disable=g-import-not-at-top
  from tests import test_data_checks  # pylint: disable=g-import-not-at-top
  with open(examples_json, encoding='utf-8') as f:
    examples = json_utils.loads(f.read())
  wall, cpu = time.monotonic(), time.process_time()
  test_data_checks.run_data_checks(examples, output)
  print(json.dumps({
      'wall': time.monotonic() - wall, 'cpu': time.process_time() - cpu,
      'kernels': sorted({i['architecture'] for i in threadpool_info()
                         if i['internal_api'] == 'openblas'})}))


def main(argv=None) -> int:
  """Converts once, then times DataChecks each way, alternating."""
  argv = sys.argv[1:] if argv is None else argv
  if argv and argv[0] == _CHILD_FLAG:
    _time_data_checks(*argv[1:])
    return 0
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--data-dir', required=True)
  parser.add_argument('--work-dir', default=None)
  parser.add_argument('--repeats', type=int, default=4)
  parser.add_argument('--validation-percent', type=int, default=10)
  args = parser.parse_args(argv)
  chosen = openblas_kernels.chosen()
  own = _own_kernels()
  print(harness.machine_line())
  print(f'CPU flags: {harness.cpu_flags("none of note")}')
  if chosen is None or chosen == own:
    print(f'OpenBLAS picks {own} itself here: nothing to compare.')
    return 0
  work = args.work_dir or tempfile.mkdtemp(prefix='openblas-kernels-bench-')
  examples = harness.convert_idx(args.data_dir, work,
                                 args.validation_percent)
  examples_json = os.path.join(work, 'examples.json')
  from tfx.utils import json_utils  # pylint: disable=g-import-not-at-top
  with open(examples_json, 'w', encoding='utf-8') as f:
    f.write(json_utils.dumps(examples))
  ways = {f'OpenBLAS\'s own ({own})': own, f'chosen ({chosen})': chosen}
  seconds = {way: {'wall': [], 'cpu': []} for way in ways}
  for repeat in range(args.repeats):
    for way in (list(ways) if repeat % 2 == 0 else list(reversed(ways))):
      output = os.path.join(work, f'checks-{repeat}-{ways[way]}')
      result = json.loads(subprocess.run(
          [sys.executable, '-m', 'benchmarks.blas_kernel_choice', _CHILD_FLAG,
           examples_json, output],
          env={**os.environ, openblas_kernels.CORETYPE: ways[way]},
          cwd=harness.PROJECT_DIR, check=True, capture_output=True,
          text=True).stdout.splitlines()[-1])
      assert result['kernels'] == [ways[way]], result
      for kind in ('wall', 'cpu'):
        seconds[way][kind].append(result[kind])
  print(f'DataChecks on {args.data_dir} ({args.validation_percent}% of '
        f'train carved into validation), a fresh process each run, '
        f'{args.repeats} runs each way alternating; seconds, median (all):')
  for kind in ('wall', 'cpu'):
    print(harness.alternating_line(
        f'DataChecks, {kind}', {(f'DataChecks, {kind}', way): seconds[way][kind]
                                for way in ways}, *ways))
  return 0


if __name__ == '__main__':
  sys.exit(main())
