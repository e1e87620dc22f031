"""The xdist groups of tests/xdist_groups.py: tests that share a wide
fixture get one group, and on 2 workers each such fixture is built once."""

import os
import subprocess
import sys

from tests import xdist_groups
from tests.local_run import PROJECT_DIR


def test_tests_sharing_nothing_get_no_group():
  assert xdist_groups.group_names({'a.py::t1': [], 'a.py::t2': []}) == {}


def test_a_session_fixture_groups_its_tests_across_modules():
  names = xdist_groups.group_names({
      'a.py::t1': ['tests::runs'], 'b.py::t2': ['tests::runs'],
      'b.py::t3': ['b.py'], 'b.py::t4': ['b.py'], 'c.py::t5': []})
  assert names == {'a.py::t1': 'tests::runs', 'b.py::t2': 'tests::runs',
                   'b.py::t3': 'b.py', 'b.py::t4': 'b.py'}


def test_groups_that_meet_in_a_test_are_merged():
  # t2 needs the session fixture and b.py's module fixture on one worker:
  # all of b.py's module-fixture tests follow, and so does t5, the other
  # session fixture's test, through t4.
  shared = {'a.py::t1': ['tests::runs'], 'b.py::t2': ['b.py', 'tests::runs'],
            'b.py::t3': ['b.py'], 'b.py::t4': ['b.py', 'tests::stopped'],
            'c.py::t5': ['tests::stopped'], 'd.py::t6': ['d.py']}
  names = xdist_groups.group_names(shared)
  assert set(names) == set(shared)
  assert len({names[t] for t in shared if t != 'd.py::t6'}) == 1
  assert names['d.py::t6'] == 'd.py'
  # Every worker names the groups alike, whatever order it met the tests in.
  assert xdist_groups.group_names(dict(reversed(shared.items()))) == names


# Each fixture logs its builds with the worker, and every test its worker;
# the session fixture is used from two modules, the module one by some of
# b's tests; the other tests share nothing.
_CONFTEST = '''
import os
import pytest
from tests.xdist_groups import pytest_collection_modifyitems

def _log(name):
  with open(os.environ['LOG'], 'a') as f:
    f.write(f"{name} {os.environ['PYTEST_XDIST_WORKER']}\\n")

@pytest.fixture(scope='session')
def runs():
  _log('runs')

@pytest.fixture(scope='module')
def per_module():
  _log('per_module')

@pytest.fixture(autouse=True)
def each_test():
  _log('test')
'''
_MODULES = {
    'test_a.py': ''.join(f'def test_runs_{i}(runs): pass\n'
                         f'def test_free_{i}(tmp_path): pass\n'
                         for i in range(6)),
    'test_b.py': ''.join(f'def test_runs_{i}(runs): pass\n'
                         f'def test_module_{i}(per_module): pass\n'
                         f'def test_free_{i}(): pass\n' for i in range(6)),
}


def test_each_shared_fixture_is_built_once_on_two_workers(tmp_path):
  # pytest-xdist is in requirements.lock: missing, this fails, not skips.
  for name, text in {'conftest.py': _CONFTEST, **_MODULES}.items():
    (tmp_path / name).write_text(text)
  (tmp_path / 'pytest.ini').write_text('[pytest]\n')
  log = tmp_path / 'log'
  env = dict(os.environ, LOG=str(log), PYTHONPATH=os.pathsep.join(
      [PROJECT_DIR, os.environ.get('PYTHONPATH', '')]))
  result = subprocess.run(
      [sys.executable, '-m', 'pytest', '-n', '2', '--dist', 'loadgroup',
       '-p', 'no:cacheprovider', '-q', str(tmp_path)], cwd=tmp_path, env=env,
      capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr
  assert '30 passed' in result.stdout
  logged = [line.split() for line in log.read_text().splitlines()]
  built = sorted(name for name, _ in logged if name != 'test')
  assert built == ['per_module', 'runs']
  # Both workers ran tests: the tests that share nothing were spread.
  assert {worker for name, worker in logged if name == 'test'} == {
      'gw0', 'gw1'}
