"""Running local_runner.py the way a user does: as a program.

A run's first seconds of CPU go to importing TFX, TensorFlow, Beam and the
libraries of the DAG's components, the same for every run. `run` starts each
run as a fork of a Python that has already imported them, one per test
process (tests/preloaded_python.py): the same program, with its own process,
arguments, environment, output and exit status. A test of what a run does
or prints as it starts asks for a Python of the run's own (`fresh`). The
inspector's commands run the same way (`python`: tests/tiny_runs.py).
"""

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Sequence

from tests import preloaded_python

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Single-process Beam, for the runs that are about something else.
ONE_PROCESS = '--beam-args=--direct_running_mode=in_memory --direct_num_workers=1'
# The libraries every run imports before its first component.
_PRELOADED = ('tfx.orchestration.local.local_dag_runner', 'tfx.components',
              'apache_beam', 'tensorflow_transform',
              'tensorflow_data_validation', 'tensorflow_model_analysis',
              'tf_keras')
_servers: List[preloaded_python.Server] = []  # This process's, once started.


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


def _preloaded() -> preloaded_python.Server:
  """This process's preloaded Python, started on first use."""
  if not _servers:
    # Started as local_runner.py starts TensorFlow (pipeline/startup.py
    # quiet_tensorflow), before it loads.
    env = dict(os.environ)
    env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    _servers.append(preloaded_python.Server(env, modules=_PRELOADED))
    atexit.register(_servers[0].close)
  return _servers[0]


def python(args: Sequence[str], timeout: float,
           env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
  """Runs `python ARGS` (a script, or -m MODULE) in the project's folder as
  a fork of this process's preloaded Python, with this process's
  environment and `env` on top; its stdout and stderr apart. Variables read
  as the preloaded libraries load do not take (see `run`'s `fresh`)."""
  command = [sys.executable, *args]
  with tempfile.TemporaryDirectory() as tmp:
    stdout, stderr = os.path.join(tmp, 'stdout'), os.path.join(tmp, 'stderr')
    status = _preloaded().run(command, {**os.environ, **(env or {})},
                              PROJECT_DIR, stdout, timeout,
                              stderr_path=stderr)
    with open(stdout) as out, open(stderr) as err:
      return subprocess.CompletedProcess(command, status, out.read(),
                                         err.read())


def fresh_python(args: Sequence[str], timeout: float,
                 env: Optional[Dict[str, str]] = None,
                 obey_permissions: bool = False) -> subprocess.CompletedProcess:
  """Runs `python ARGS` in the project's folder in a Python started for it,
  with this process's environment and `env` on top; its stdout and stderr
  apart. obey_permissions: when root, without root's power to read any
  file."""
  prefix = (_OBEY_PERMISSIONS if obey_permissions and os.geteuid() == 0
            else [])
  return subprocess.run(
      [*prefix, sys.executable, *args], capture_output=True, text=True,
      cwd=PROJECT_DIR, timeout=timeout, env={**os.environ, **(env or {})})


def _cheap_label_check(args) -> List[str]:
  """`args`, scoring the training split from the Trainer's run where no
  LabelCheck flag is given: the default cross-fitting of a split as small as
  the tests' costs two model builds a run (tests/test_label_check.py runs
  the default)."""
  if any(a.startswith(('--label-check', '--no-label-check')) for a in args):
    return list(args)
  return [*args, '--label-check-folds', '0']


def run(*args: str, timeout: int = 900, obey_permissions: bool = False,
        env: Optional[Dict[str, str]] = None,
        fresh: bool = False) -> subprocess.CompletedProcess:
  """Runs local_runner.py with `args`; its output is printed for pytest -rA.

  obey_permissions: when root, run without root's power to read any file.
  env: variables to set on top of this process's environment.
  fresh: in a Python started for the run, as a user's is, not a fork of the
    preloaded one (see above); so is every run with `env` or
    `obey_permissions`.
  """
  script = os.path.join(PROJECT_DIR, 'local_runner.py')
  args = _cheap_label_check(args)
  if fresh or env or obey_permissions:
    result = fresh_python([script, *args], timeout, env, obey_permissions)
  else:
    result = python([script, *args], timeout)
  print(result.stdout, result.stderr)
  return result


def start(*args: str, env: Optional[dict] = None) -> subprocess.Popen:
  """Starts local_runner.py in a process group of its own (see `kill`);
  `env`: its environment, when not this one (e.g. tests/pause.py's)."""
  return subprocess.Popen(
      [sys.executable, os.path.join(PROJECT_DIR, 'local_runner.py'),
       *_cheap_label_check(args)],
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
      cwd=PROJECT_DIR, start_new_session=True, env=env)


def kill(process: subprocess.Popen) -> str:
  """SIGKILLs the run and every process it started (Beam workers too), as
  the OOM killer or a power cut would; returns what it had printed."""
  os.killpg(process.pid, signal.SIGKILL)
  output, _ = process.communicate(timeout=60)
  print(output)
  return output
