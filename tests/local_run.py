"""Running local_runner.py the way a user does: as a program."""

import os
import signal
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


def start(*args: str) -> subprocess.Popen:
  """Starts local_runner.py in a process group of its own (see `kill`)."""
  return subprocess.Popen(
      [sys.executable, os.path.join(PROJECT_DIR, 'local_runner.py'), *args],
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
      cwd=PROJECT_DIR, start_new_session=True)


def kill(process: subprocess.Popen) -> str:
  """SIGKILLs the run and every process it started (Beam workers too), as
  the OOM killer or a power cut would; returns what it had printed."""
  os.killpg(process.pid, signal.SIGKILL)
  output, _ = process.communicate(timeout=60)
  print(output)
  return output
