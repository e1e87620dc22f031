"""The project's `kubeflow` package beside the Kubeflow SDKs of PyPI, which
use the same top-level name.

The SDKs are not in the lock file (and tests download nothing), so each is
rebuilt here on disk laid out exactly as its wheel installs it:
kubeflow-training 1.9.4 ships a pkgutil-style `kubeflow/__init__.py`
(one `extend_path` line) with `kubeflow/training/`; the unified `kubeflow`
SDK 0.5.0 ships a regular `kubeflow/__init__.py` (only `__version__`) with
`kubeflow/trainer/` and others. Each import runs in a fresh interpreter
with the two on sys.path in a given order; the project's modules are only
located (find_spec), not run, as importing them loads TFX.
"""

import os
import subprocess
import sys

import pytest

from tests.local_run import PROJECT_DIR

TRAINING_INIT = ("__path__ = __import__('pkgutil').extend_path(__path__, "
                 "__name__)\n")
UNIFIED_INIT = '__version__ = "0.5.0"\n'
# (SDK, its kubeflow/__init__.py, one of its subpackages)
SDKS = {'kubeflow-training': (TRAINING_INIT, 'training'),
        'kubeflow': (UNIFIED_INIT, 'trainer')}
OURS = 'kubeflow.container_entrypoint'

_PROBE = '''
import importlib, importlib.util, sys
sdk_module = importlib.import_module(sys.argv[1])
spec = importlib.util.find_spec(sys.argv[2])
print(sdk_module.WHO)
print(spec.origin if spec else None)
'''


def _sdk(root, name):
  init, subpackage = SDKS[name]
  package = root / 'site-packages' / 'kubeflow'
  os.makedirs(package / subpackage)
  (package / '__init__.py').write_text(init)
  (package / subpackage / '__init__.py').write_text(f'WHO = {name!r}\n')
  return str(root / 'site-packages'), f'kubeflow.{subpackage}'


def _imports(tmp_path, sys_path):
  """(the SDK subpackage's WHO, where OURS was found), in a fresh
  interpreter whose path starts with `sys_path`; cwd holds no kubeflow/."""
  sdk_module = sys_path.pop()
  result = subprocess.run(
      [sys.executable, '-c', _PROBE, sdk_module, OURS], cwd=tmp_path,
      env={**os.environ, 'PYTHONPATH': os.pathsep.join(sys_path)},
      capture_output=True, text=True, check=False)
  assert result.returncode == 0, result.stderr
  return result.stdout.split()


@pytest.mark.parametrize('project_first', [True, False])
def test_beside_kubeflow_training_in_either_order(tmp_path, project_first):
  sdk_dir, sdk_module = _sdk(tmp_path, 'kubeflow-training')
  order = [PROJECT_DIR, sdk_dir] if project_first else [sdk_dir, PROJECT_DIR]
  who, ours = _imports(tmp_path, [*order, sdk_module])
  assert who == 'kubeflow-training'
  assert ours == os.path.join(PROJECT_DIR, 'kubeflow',
                              'container_entrypoint.py')


def test_beside_the_unified_kubeflow_sdk_as_the_project_runs(tmp_path):
  # The project first: `python -m kubeflow.MODULE` from the repository root or
  # the image's WORKDIR puts the working directory first.
  sdk_dir, sdk_module = _sdk(tmp_path, 'kubeflow')
  who, ours = _imports(tmp_path, [PROJECT_DIR, sdk_dir, sdk_module])
  assert who == 'kubeflow'
  assert ours == os.path.join(PROJECT_DIR, 'kubeflow',
                              'container_entrypoint.py')
