"""Holding a child process at a named function until the test is done with it.

tests/pause_hook/sitecustomize.py does the holding inside the child; this is
the test's side. A test that kills a run "while X runs" starts it with
`environment(...)`, waits for `reached(...)`, and kills it: the run is at
that point for certain, however fast or slow the machine, instead of
wherever it happened to be when a poll saw X running.
"""

import os
import subprocess
import time

_HOOK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         'pause_hook')
AT_VARIABLE = 'IMAGE_PIPELINE_TEST_PAUSE_AT'
DIR_VARIABLE = 'IMAGE_PIPELINE_TEST_PAUSE_DIR'


def environment(at: str, pause_dir: str) -> dict:
  """os.environ for a child that stops at `at` (MODULE:QUALNAME) and waits
  there; `pause_dir` is where it says so."""
  os.makedirs(pause_dir, exist_ok=True)
  path = os.environ.get('PYTHONPATH')
  return {**os.environ, AT_VARIABLE: at, DIR_VARIABLE: pause_dir,
          'PYTHONPATH': _HOOK_DIR + (os.pathsep + path if path else '')}


def reached(process: subprocess.Popen, pause_dir: str,
            timeout: float = 600) -> None:
  """Returns once `process` is held at its pause point.

  Fails if it ends first (the point was never reached: renamed, or the run
  broke before it) or after `timeout` seconds, which only a machine far
  slower than any the tests run on would take to get there.
  """
  marker = os.path.join(pause_dir, 'reached')
  deadline = time.monotonic() + timeout
  while not os.path.exists(marker):
    if process.poll() is not None:
      output = process.stdout.read() if process.stdout else ''
      raise AssertionError(f'the run ended (exit code {process.returncode}) '
                           f'before reaching its pause point:\n{output}')
    if time.monotonic() > deadline:
      raise AssertionError(f'the run did not reach its pause point in '
                           f'{timeout}s')
    time.sleep(0.1)
