"""Test-only: holds a process at a named function, so a test can kill it there.

Python imports `sitecustomize` at start-up from the first directory of
sys.path that has one. tests/pause.py puts this directory at the head of a
child process's PYTHONPATH, with two variables in its environment:

  IMAGE_PIPELINE_TEST_PAUSE_AT   MODULE:QUALNAME, e.g.
                                 components.image_example_gen.executor:Executor.Do
  IMAGE_PIPELINE_TEST_PAUSE_DIR  a directory the test watches

When MODULE is imported (or reloaded, as TFX does with a Trainer's run_fn
module), QUALNAME is replaced by a wrapper that writes DIR/reached and then
waits until DIR/release exists before calling the real function: the test
knows the process is at that point, and stays there, for as long as it
wants. Without both variables it holds nothing. Either way it then runs
the sitecustomize it hides, if any. Nothing of the project imports it: the
packages setup.py installs know nothing of it.
"""

import functools
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import threading
import time

AT_VARIABLE = 'IMAGE_PIPELINE_TEST_PAUSE_AT'
DIR_VARIABLE = 'IMAGE_PIPELINE_TEST_PAUSE_DIR'
REACHED = 'reached'
RELEASE = 'release'


class _Gate:
  """Closed until DIR/release exists; the first caller writes DIR/reached."""

  def __init__(self, directory: str, at: str):
    self._directory = directory
    self._at = at
    self._lock = threading.Lock()
    self._reached = False

  def wait(self) -> None:
    release = os.path.join(self._directory, RELEASE)
    with self._lock:
      if not self._reached:
        self._reached = True
        marker = os.path.join(self._directory, REACHED)
        # Written whole, then renamed: the test never reads half a marker.
        with open(marker + '.tmp', 'w') as f:
          f.write(f'{os.getpid()} {self._at}\n')
        os.replace(marker + '.tmp', marker)
    # A file test rather than a signal or a pipe: the test may as well never
    # release the process (it kills it here), and nothing else is needed.
    while not os.path.exists(release):
      time.sleep(0.05)


def _patch(module, qualname: str, gate: _Gate) -> None:
  """Replaces module.<qualname> (a function, or a method of a class in it)
  by one that passes the gate first."""
  *parents, name = qualname.split('.')
  owner = module
  for parent in parents:
    owner = getattr(owner, parent)
  # From the owner's own namespace: a class's plain function, not a method
  # bound on access (the wrapper, a function too, binds the same way).
  original = vars(owner).get(name)
  if not callable(original):
    raise AttributeError(f'{AT_VARIABLE}: {module.__name__}:{qualname} is not '
                         'a function defined there')

  @functools.wraps(original)
  def paused(*args, **kwargs):
    gate.wait()
    return original(*args, **kwargs)

  setattr(owner, name, paused)


class _PatchingLoader(importlib.abc.Loader):
  """Runs the module's own loader, then patches the module."""

  def __init__(self, loader, qualname: str, gate: _Gate):
    self._loader = loader
    self._qualname = qualname
    self._gate = gate

  def create_module(self, spec):
    return self._loader.create_module(spec)

  def exec_module(self, module):
    self._loader.exec_module(module)
    _patch(module, self._qualname, self._gate)

  def __getattr__(self, name):  # get_source, get_filename, ... as they were.
    return getattr(self._loader, name)


class _PatchOnImport(importlib.abc.MetaPathFinder):
  """Finds one module as the other finders do, with a patching loader.

  First on sys.meta_path, so that importlib.reload (which finds the module
  again) patches the re-executed module too.
  """

  def __init__(self, module_name: str, qualname: str, gate: _Gate):
    self._module_name = module_name
    self._qualname = qualname
    self._gate = gate

  def find_spec(self, fullname, path, target=None):
    if fullname != self._module_name:
      return None
    for finder in sys.meta_path:
      if finder is self or not hasattr(finder, 'find_spec'):
        continue
      spec = finder.find_spec(fullname, path, target)
      if spec is not None and spec.loader is not None:
        spec.loader = _PatchingLoader(spec.loader, self._qualname, self._gate)
        return spec
    return None


def _install() -> None:
  at, directory = os.environ.get(AT_VARIABLE), os.environ.get(DIR_VARIABLE)
  if not (at and directory):
    return
  module_name, _, qualname = at.partition(':')
  if not qualname:
    raise ValueError(f'{AT_VARIABLE}={at!r}: expected MODULE:QUALNAME')
  sys.meta_path.insert(
      0, _PatchOnImport(module_name, qualname, _Gate(directory, at)))


def _run_shadowed_sitecustomize() -> None:
  """Runs the sitecustomize this one hides (some Pythons have their own)."""
  here = os.path.realpath(__file__)
  # Not this file again, under whatever other name sys.path gives its folder.
  others = [p for p in sys.path if os.path.realpath(
      os.path.join(p or '.', 'sitecustomize.py')) != here]
  spec = importlib.machinery.PathFinder.find_spec('sitecustomize', others)
  if spec is not None and spec.loader is not None:
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


_install()
_run_shadowed_sitecustomize()
