"""tests/preloaded_python.py runs a command as `python` would: its own
process, arguments, environment, working directory, log and exit status.
(Preloading nothing here: what is preloaded changes only the start-up.)"""

import os
import subprocess
import sys

import pytest

from tests import preloaded_python

SCRIPT = '''
import os, sys
print(os.getpid(), sys.argv[1:], os.environ.get('TASK'), os.getcwd())
if sys.argv[1] == 'fail':
  raise ValueError('the task failed')
if sys.argv[1] == 'refuse':
  print('refusing', file=sys.stderr)
  sys.exit('error: refused')
sys.exit(int(sys.argv[1]))
'''


@pytest.fixture(scope='module')
def server():
  with preloaded_python.Server(dict(os.environ), modules=()) as started:
    yield started


def _run(server, tmp_path, *args, timeout=60, stderr=False):
  """(status, log) of SCRIPT; (status, log, stderr apart) with `stderr`."""
  script = tmp_path / 'task.py'
  script.write_text(SCRIPT)
  log, apart = tmp_path / 'task.log', tmp_path / 'task.err'
  status = server.run([sys.executable, str(script), *args],
                      dict(os.environ, TASK='t1'), str(tmp_path), str(log),
                      timeout, stderr_path=str(apart) if stderr else None)
  if stderr:
    return status, log.read_text(), apart.read_text()
  return status, log.read_text()


def test_a_script_gets_its_arguments_environment_directory_and_status(
    server, tmp_path):
  status, log = _run(server, tmp_path, '3', 'x')
  assert status == 3
  pid, rest = log.split(' ', 1)
  assert int(pid) != os.getpid()
  assert rest.strip() == f"['3', 'x'] t1 {tmp_path}"
  status, log = _run(server, tmp_path, 'fail')
  assert status == 1
  assert 'ValueError: the task failed' in log


def test_stderr_goes_apart_when_asked_and_an_exit_message_is_said(
    server, tmp_path):
  # sys.exit('message'), as Python ends it: the message on stderr, status 1.
  status, log, stderr = _run(server, tmp_path, 'refuse', stderr=True)
  assert status == 1
  assert log.endswith(f"['refuse'] t1 {tmp_path}\n")  # Its stdout only.
  assert stderr == 'refusing\nerror: refused\n'


def test_a_module_runs_as_main(server, tmp_path):
  log = tmp_path / 'module.log'
  status = server.run([sys.executable, '-m', 'json.tool', '--compact',
                       str(tmp_path / 'missing.json')],
                      dict(os.environ), str(tmp_path), str(log), 60)
  assert status != 0
  assert 'missing.json' in log.read_text()


def test_a_command_over_its_time_is_killed_and_the_next_runs(server,
                                                             tmp_path):
  script = tmp_path / 'sleep.py'
  script.write_text('import time\ntime.sleep(600)\n')
  with pytest.raises(subprocess.TimeoutExpired):
    server.run([sys.executable, str(script)], dict(os.environ), str(tmp_path),
               str(tmp_path / 'sleep.log'), timeout=1)
  assert _run(server, tmp_path, '0')[0] == 0


def test_only_module_and_script_commands_are_taken():
  assert preloaded_python.Server.runs([sys.executable, '-m', 'x'])
  assert preloaded_python.Server.runs([sys.executable, 'x.py'])
  assert not preloaded_python.Server.runs([sys.executable, '-c', 'pass'])
  assert not preloaded_python.Server.runs(['false'])
