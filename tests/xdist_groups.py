"""Which tests must share a pytest-xdist worker (`make test` runs 2).

Each xdist worker is a pytest session of its own: a session-scoped fixture
used on both workers is built twice, and a module-scoped one is built again
on every worker that runs one of the module's tests. The tiny whole-DAG
runs behind these fixtures (tests/tiny_runs.py, the module fixtures of the
pipeline tests) are the suite's most expensive steps, so each must still be
built once per run: tests/conftest.py puts the tests that share one into
one xdist_group, and `--dist loadgroup` (pytest.ini) sends a group to a
single worker. Tests that share no such fixture are spread freely.

xdist gives a test one group only (its marks' names joined into one), so
groups that meet in a test are merged: a test that uses a session fixture
and a module fixture brings the whole module into the session fixture's
group, and with it every other test of that group.
"""

import os
import sys
from typing import Dict, Iterable, List

import pytest

# Scopes whose fixture outlives one test; 'function' fixtures do not matter.
_SHARED_SCOPES = ('session', 'package', 'module', 'class')


# tests/conftest.py imports this hook. tryfirst: xdist's own hook, which
# reads the xdist_group marks to name each test's group, runs after it.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config,
                                  items: List[pytest.Item]) -> None:
  # Only xdist workers schedule by group; a serial run needs no marks.
  if hasattr(config, 'workerinput'):
    mark(items, str(config.rootpath))


def group_names(shared: Dict[str, Iterable[str]]) -> Dict[str, str]:
  """The group of each test that shares something.

  shared: test id -> the keys of what it shares with other tests (a key
  names one instance of a fixture: see `shared_keys`).
  Returns test id -> group name for the tests with keys; tests with keys in
  common, directly or through other tests, get the same name: the least
  key of their group, so every worker, having collected the same tests,
  names the groups alike.
  """
  parent: Dict[str, str] = {}

  def root(key: str) -> str:
    while parent.setdefault(key, key) != key:
      parent[key] = parent[parent[key]]  # Path halving.
      key = parent[key]
    return key

  for keys in shared.values():
    keys = sorted(keys)
    for key in keys[1:]:
      first, other = root(keys[0]), root(key)
      if first != other:  # The least key becomes the root, hence the name.
        parent[max(first, other)] = min(first, other)
  return {test: root(min(keys)) for test, keys in shared.items() if keys}


def shared_keys(item: pytest.Item, project: str) -> List[str]:
  """One key per instance of a wide-scoped fixture of the `project` folder
  that `item` uses, directly or through other fixtures: the fixture's own for a
  session or package fixture (one instance), the module's or class's node
  id for a module or class fixture (one instance per module or class)."""
  keys = []
  info = getattr(item, '_fixtureinfo', None)  # Non-Python items have none.
  if info is None:
    return keys
  for name in item.fixturenames:
    for fixturedef in info.name2fixturedefs.get(name, ()):
      if fixturedef.scope not in _SHARED_SCOPES or not _defined_in(
          fixturedef, project):
        continue
      if fixturedef.scope in ('session', 'package'):
        keys.append(f'{fixturedef.baseid}::{fixturedef.argname}')
      else:
        keys.append(_node_id(item, pytest.Class if fixturedef.scope == 'class'
                             else pytest.Module))
  return keys


def _defined_in(fixturedef, project: str) -> bool:
  """Whether the project defines the fixture: pytest's own wide fixtures
  (tmp_path_factory, pytestconfig...) and plugins' cost nothing to build
  again, and they are installed in the environment, which may be a folder
  of the project (.venv)."""
  path = os.path.abspath(fixturedef.func.__code__.co_filename)
  return _under(path, project) and not any(
      _under(path, prefix) for prefix in (sys.prefix, sys.base_prefix))


def _under(path: str, folder: str) -> bool:
  folder = os.path.abspath(folder)
  return os.path.commonpath([path, folder]) == folder


def _node_id(item: pytest.Item, kind) -> str:
  # A class fixture used outside a class is one per module.
  node = item.getparent(kind) or item.getparent(pytest.Module)
  return node.nodeid


def mark(items: List[pytest.Item], project: str) -> None:
  """Marks each item that shares a wide fixture of the `project` folder
  with its xdist_group."""
  names = group_names({item.nodeid: shared_keys(item, project)
                       for item in items})
  for item in items:
    if item.nodeid in names:
      item.add_marker(pytest.mark.xdist_group(names[item.nodeid]))
