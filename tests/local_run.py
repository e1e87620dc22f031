"""Running local_runner.py the way a user does: as a program."""

import os
import shutil
import signal
import subprocess
import sys
from typing import Dict, Optional

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Single-process Beam, for the runs that are about something else.
ONE_PROCESS = '--beam-args=--direct_running_mode=in_memory --direct_num_workers=1'


# Root reads any file whatever its mode; without these two capabilities it
# obeys file permissions like any user (setpriv is part of util-linux).
_OBEY_PERMISSIONS = ['setpriv', '--bounding-set=-dac_override,-dac_read_search',
                     '--']


def permissions_enforceable() -> str:
  """'' when a test can make a file unreadable to local_runner.py, else why not."""
  if os.geteuid() != 0:
    return ''
  if not shutil.which('setpriv'):
    return 'running as root, and setpriv (to drop root\'s file access) is missing'
  probe = subprocess.run([*_OBEY_PERMISSIONS, 'true'], capture_output=True)
  if probe.returncode:
    return f'running as root, and setpriv cannot drop capabilities: {probe.stderr!r}'
  return ''


def run(*args: str, timeout: int = 900, obey_permissions: bool = False,
        env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
  """Runs local_runner.py with `args`; its output is printed for pytest -rA.

  obey_permissions: when root, run without root's power to read any file.
  env: variables to set on top of this process's environment.
  """
  prefix = _OBEY_PERMISSIONS if obey_permissions and os.geteuid() == 0 else []
  result = subprocess.run(
      [*prefix, sys.executable, os.path.join(PROJECT_DIR, 'local_runner.py'),
       *args],
      capture_output=True, text=True, cwd=PROJECT_DIR, timeout=timeout,
      env={**os.environ, **(env or {})})
  print(result.stdout, result.stderr)
  return result


def start(*args: str, env: Optional[dict] = None) -> subprocess.Popen:
  """Starts local_runner.py in a process group of its own (see `kill`);
  `env`: its environment, when not this one (e.g. tests/pause.py's)."""
  return subprocess.Popen(
      [sys.executable, os.path.join(PROJECT_DIR, 'local_runner.py'), *args],
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
      cwd=PROJECT_DIR, start_new_session=True, env=env)


def kill(process: subprocess.Popen) -> str:
  """SIGKILLs the run and every process it started (Beam workers too), as
  the OOM killer or a power cut would; returns what it had printed."""
  os.killpg(process.pid, signal.SIGKILL)
  output, _ = process.communicate(timeout=60)
  print(output)
  return output
