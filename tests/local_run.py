"""Running local_runner.py the way a user does: as a program."""

import os
import subprocess
import sys

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Single-process Beam, for the runs that are about something else.
ONE_PROCESS = '--beam-args=--direct_running_mode=in_memory --direct_num_workers=1'


def run(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
  """Runs local_runner.py with `args`; its output is printed for pytest -rA."""
  result = subprocess.run(
      [sys.executable, os.path.join(PROJECT_DIR, 'local_runner.py'), *args],
      capture_output=True, text=True, cwd=PROJECT_DIR, timeout=timeout)
  print(result.stdout, result.stderr)
  return result
