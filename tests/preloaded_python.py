"""A Python that has imported TFX once and runs `python -m MODULE ARGS...`
and `python SCRIPT ARGS...` commands as forks of itself.

Every task of a compiled spec is a `python -m` command that first imports
TensorFlow, Beam, TFX and TFMA, seconds of CPU before the task does
anything. The Kubeflow spec tests start this server once per test module,
and tests/kfp_launcher.py runs each task as a fork of it (the compiler's
command too): a process of its own with the task's
arguments, environment, working directory and log, and its own exit
status, whose third-party imports are already done. The project's own
modules and tensorflow-io are imported by each task, as in a container.

tests/local_run.py runs local_runner.py the same way, for the same
reason: one server per test process, with TFX, Beam and the libraries of
the DAG's components imported.

The server reads one JSON request a line on stdin and answers on stdout
with the child's pid, then its exit status.
"""

import gc
import importlib
import json
import logging
import os
import runpy
import select
import signal
import subprocess
import sys
import traceback
from typing import Dict, List, Optional, Sequence

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What TFX's Kubeflow entrypoint imports, and the libraries of the
# project's components (Transform, Trainer, Evaluator).
PRELOADED = ('tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor',
             'tfx.components', 'tensorflow_transform', 'tf_keras')


class Server:
  """The preloaded Python: start once, `run` many commands, `close`."""

  def __init__(self, env: Dict[str, str], modules: Sequence[str] = PRELOADED):
    """Starts the server with `env`, once it has imported `modules`."""
    self._process = subprocess.Popen(
        [sys.executable, '-m', 'tests.preloaded_python', *modules],
        cwd=PROJECT_DIR,
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    ready = self._process.stdout.readline()
    if ready.strip() != b'ready':
      raise RuntimeError(f'the preloaded Python did not start: {ready!r}')

  @staticmethod
  def runs(command: List[str]) -> bool:
    """Whether `command` is one `run` takes: this Python with -m or a
    script."""
    return (len(command) > 1 and command[0] == sys.executable and
            (command[1] == '-m' or not command[1].startswith('-')))

  def run(self, command: List[str], env: Dict[str, str], cwd: str,
          log_path: str, timeout: float,
          stderr_path: Optional[str] = None) -> int:
    """Runs `command` (see `runs`) with its output to `log_path`; returns
    its exit status.

    stderr_path: where its stderr goes apart, when given.

    Raises:
      subprocess.TimeoutExpired: it ran longer than `timeout` (killed).
    """
    if not self.runs(command):
      raise ValueError(f'not a python -m or script command: {command}')
    request = memoryview(json.dumps(dict(
        argv=command[1:], env=env, cwd=cwd, log=log_path,
        stderr=stderr_path)).encode() + b'\n')
    while request:  # Unbuffered: a pipe takes part of a long line at a time.
      request = request[self._process.stdin.write(request):]
    # Unbuffered reads too, line by line: select() sees what is unread.
    pid = json.loads(self._process.stdout.readline())['pid']
    ready, _, _ = select.select([self._process.stdout], [], [], timeout)
    if not ready:
      os.kill(pid, signal.SIGKILL)
      self._process.stdout.readline()
      raise subprocess.TimeoutExpired(command, timeout)
    return json.loads(self._process.stdout.readline())['returncode']

  def close(self) -> None:
    self._process.stdin.close()
    self._process.wait(timeout=60)

  def __enter__(self) -> 'Server':
    return self

  def __exit__(self, *unused_exc_info) -> None:
    self.close()


def _child(request) -> None:
  """Runs the request's module or script as __main__ in this forked
  process; exits with its status."""
  status = 1
  try:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    log = os.open(request['log'], flags)
    os.dup2(log, 1)
    os.dup2(os.open(request['stderr'], flags) if request.get('stderr')
            else log, 2)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.chdir(request['cwd'])
    os.environ.clear()
    os.environ.update(request['env'])
    argv = request['argv']
    if argv[0] == '-m':
      sys.argv = argv[1:]
      runpy.run_module(argv[1], run_name='__main__', alter_sys=True)
    else:
      sys.argv = argv
      sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
      runpy.run_path(argv[0], run_name='__main__')
    status = 0
  except SystemExit as e:
    if e.code is None or isinstance(e.code, int):
      status = e.code or 0
    else:  # As Python does with sys.exit('message'): said on stderr.
      print(e.code, file=sys.stderr)
  except BaseException:  # pylint: disable=broad-except
    traceback.print_exc()
  finally:
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # pylint: disable=protected-access


def main() -> None:
  gc.disable()
  for module in sys.argv[1:]:
    importlib.import_module(module)
  gc.freeze()
  gc.enable()
  print('ready', flush=True)
  for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
      _child(request)
    print(json.dumps({'pid': pid}), flush=True)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({'returncode': os.waitstatus_to_exitcode(status)}),
          flush=True)


if __name__ == '__main__':
  main()
