"""pipeline/startup.py: a block run without the garbage collector, what it
leaves behind frozen, the collector as it was before; an exit that leaves
what exists uncollected; TensorFlow's C++ log level set unless given."""

import gc
import os
import subprocess
import sys

from pipeline import startup
from tests.local_run import PROJECT_DIR


def test_the_block_runs_without_the_collector_and_its_objects_stay_frozen():
  assert gc.isenabled()
  before = gc.get_freeze_count()
  try:
    with startup.without_gc():
      assert not gc.isenabled()
      kept = [[] for _ in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + len(kept)
  finally:
    gc.unfreeze()


def test_a_collector_that_was_off_stays_off():
  gc.disable()
  try:
    with startup.without_gc():
      pass
    assert not gc.isenabled()
  finally:
    gc.enable()
    gc.unfreeze()


def test_exit_leaves_the_status_and_runs_exit_handlers():
  program = ('import atexit, gc\n'
             'from pipeline import startup\n'
             'atexit.register(lambda: print(gc.get_freeze_count() > 0))\n'
             'startup.exit_without_gc(3)\n')
  result = subprocess.run([sys.executable, '-c', program], cwd=PROJECT_DIR,
                          capture_output=True, text=True, check=False)
  assert result.returncode == 3, result.stderr
  assert result.stdout == 'True\n'  # The handler ran, on frozen objects.


def test_tensorflow_is_quiet_unless_the_user_says_otherwise(monkeypatch):
  monkeypatch.delenv('TF_CPP_MIN_LOG_LEVEL', raising=False)
  startup.quiet_tensorflow()
  assert os.environ['TF_CPP_MIN_LOG_LEVEL'] == '2'
  monkeypatch.setenv('TF_CPP_MIN_LOG_LEVEL', '0')
  startup.quiet_tensorflow()
  assert os.environ['TF_CPP_MIN_LOG_LEVEL'] == '0'
