"""tests/pause_hook: the crash tests kill runs where it holds them, so it
must hold them there, and only there."""

import os
import subprocess
import sys

import pytest

from tests import pause

# colorsys: a stdlib module nothing imports at start-up.
PRINT = 'print(colorsys.rgb_to_hsv(1, 0, 0), flush=True)'
CALL = 'import colorsys; ' + PRINT


def _start(code, env):
  return subprocess.Popen([sys.executable, '-c', code], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)


@pytest.mark.parametrize('code', [
    CALL,
    # TFX reloads a module it loads a function from (the Trainer's run_fn):
    # the reloaded module is held too.
    'import colorsys, importlib; importlib.reload(colorsys); ' + PRINT,
])
def test_holds_the_call_until_released(tmp_path, code):
  child = _start(code, pause.environment('colorsys:rgb_to_hsv', str(tmp_path)))
  try:
    pause.reached(child, str(tmp_path), timeout=60)
    with open(tmp_path / 'reached') as f:
      assert f.read() == f'{child.pid} colorsys:rgb_to_hsv\n'
    with pytest.raises(subprocess.TimeoutExpired):  # Held, not finished.
      child.wait(timeout=1)
    (tmp_path / 'release').touch()
    output, _ = child.communicate(timeout=60)
  finally:
    child.kill()
    child.wait()
  assert child.returncode == 0, output
  assert output == '(0.0, 1.0, 1)\n'


def test_a_method_of_a_class(tmp_path):
  (tmp_path / 'release').touch()  # Open from the start: only the marker.
  child = _start(
      'import fractions; print(fractions.Fraction(3, 6).limit_denominator())',
      pause.environment('fractions:Fraction.limit_denominator', str(tmp_path)))
  output, _ = child.communicate(timeout=60)
  assert (child.returncode, output) == (0, '1/2\n')
  assert (tmp_path / 'reached').exists()


def test_a_name_that_is_not_there_stops_the_process(tmp_path):
  child = _start(CALL, pause.environment('colorsys:nope', str(tmp_path)))
  with pytest.raises(AssertionError, match='colorsys:nope is not a function'):
    pause.reached(child, str(tmp_path), timeout=60)
  assert child.returncode != 0


def test_without_the_variables_nothing_is_held(tmp_path):
  env = pause.environment('colorsys:rgb_to_hsv', str(tmp_path))
  del env[pause.AT_VARIABLE]
  output, _ = _start(CALL, env).communicate(timeout=60)
  assert output == '(0.0, 1.0, 1)\n'
  assert os.listdir(tmp_path) == []


def test_a_sitecustomize_it_hides_still_runs(tmp_path):
  # Some Pythons (Debian's) have a sitecustomize of their own.
  other = tmp_path / 'other'
  other.mkdir()
  (other / 'sitecustomize.py').write_text(
      'import builtins\nbuiltins.OTHER_SITECUSTOMIZE = "ran"\n')
  env = pause.environment('colorsys:rgb_to_hsv', str(tmp_path / 'pause'))
  env['PYTHONPATH'] += os.pathsep + str(other)
  output, _ = _start('print(OTHER_SITECUSTOMIZE)', env).communicate(timeout=60)
  assert output == 'ran\n'
