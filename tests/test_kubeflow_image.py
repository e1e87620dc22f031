"""kubeflow/Dockerfile, checked without a Docker engine: what it copies exists
and is in the build context, it installs like the Makefile, and every module
path of the compiled spec imports from the layout it creates."""

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

from pipeline import constants
from tests import kubeflow_specs

PROJECT_DIR = constants.PROJECT_DIR
# Paths only the project provides (TFX's own come from the lock file).
OUR_PATHS = {'components.image_example_gen.executor.Executor',
             'components.validation_gate.ValidationGate_Executor',
             'components.push_once.Executor',
             'components.evaluator.baseline_evaluator.Executor',
             constants.RUN_FN, constants.PREPROCESSING_FN}
# Besides, per target: the open-source KFP target's entrypoint, baseline
# and --keep-runs step.
TARGET_PATHS = {
    'kubeflow': {'kubeflow.container_entrypoint',
                 'components.served_model.Executor',
                 'components.keep_runs.component.Executor'},
    'vertex': {
        'tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor',
        'tfx.orchestration.kubeflow.v2.file_based_example_gen.driver'},
}


def instructions(path):
  """(INSTRUCTION, argument text) of a Dockerfile, continuations joined."""
  with open(path) as f:
    text = re.sub(r'\\\n', ' ', f.read())
  result = []
  for line in text.splitlines():
    line = line.strip()
    if line and not line.startswith('#'):
      keyword, _, rest = line.partition(' ')
      result.append((keyword.upper(), rest.strip()))
  return result


def copies(path):
  """(sources, destination) of every COPY, destinations made absolute."""
  workdir, result = '/', []
  for keyword, rest in instructions(path):
    if keyword == 'WORKDIR':
      workdir = os.path.join(workdir, rest)
    elif keyword == 'COPY':
      words = [w for w in shlex.split(rest) if not w.startswith('--')]
      *sources, destination = words
      result.append((sources, os.path.join(workdir, destination)))
  return workdir, result


def dockerignored(relative_path):
  with open(os.path.join(PROJECT_DIR, '.dockerignore')) as f:
    patterns = [p.strip() for p in f if p.strip() and not p.startswith('#')]
  parts = relative_path.strip('/').split('/')
  prefixes = ['/'.join(parts[:i]) for i in range(1, len(parts) + 1)]
  return [p for p in patterns for prefix in prefixes
          if fnmatch.fnmatch(prefix, p.replace('**/', ''))
          or fnmatch.fnmatch(prefix, p)]


def stage_image(root):
  """Lays the COPY sources out under `root` as the image would."""
  workdir, copy_list = copies(kubeflow_specs.dockerfile_path())
  for sources, destination in copy_list:
    target = os.path.join(root, os.path.relpath(destination, '/'))
    for source in sources:
      path = os.path.join(PROJECT_DIR, source)
      if os.path.isdir(path):
        shutil.copytree(path, target, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns('__pycache__'))
      else:
        os.makedirs(target, exist_ok=True)
        shutil.copy(path, target)
  return os.path.join(root, os.path.relpath(workdir, '/'))


def test_every_copied_path_exists_and_is_in_the_build_context():
  _, copy_list = copies(kubeflow_specs.dockerfile_path())
  sources = [s for sources, _ in copy_list for s in sources]
  assert 'requirements.lock' in sources and 'setup.py' in sources
  for package in ('records/', 'components/', 'modules/', 'pipeline/',
                  'metadata/', 'inspector/', 'runs/', 'data/', 'kubeflow/'):
    assert package in sources
  for source in sources:
    assert os.path.exists(os.path.join(PROJECT_DIR, source)), source
    assert not dockerignored(source), (source, dockerignored(source))


def _install_options(line, installer_only):
  """The options of an install command line, less the installer's own."""
  return {t for t in line.split(' install', 1)[1].split()
          if t.startswith('--')} - installer_only


def test_the_image_installs_what_the_makefile_installs():
  # The Makefile installs with uv, the image with pip. Their own options
  # aside (uv compiles bytecode and, with --no-deps, does not check
  # Requires-Python; pip needs --ignore-requires-python), each file goes in
  # with the same options.
  with open(os.path.join(PROJECT_DIR, 'Makefile')) as f:
    makefile = f.read()
  uv_install = re.search(r'^UV_INSTALL = (.*)$', makefile, re.M).group(1)
  make_lines = [l.replace('$(UV_INSTALL)', uv_install)
                for l in makefile.splitlines() if l.startswith('\t$(UV_INSTALL)')]
  runs = [rest for keyword, rest in instructions(
      kubeflow_specs.dockerfile_path()) if keyword == 'RUN'
          and 'pip install' in rest]
  for target in ('-r requirements.lock', '-e .'):
    [make_line] = [l for l in make_lines if l.rstrip().endswith(target)]
    [run] = [r for r in runs if r.rstrip().endswith(target)]
    assert (_install_options(make_line, {'--quiet', '--python',
                                         '--compile-bytecode'}) ==
            _install_options(run, {'--ignore-requires-python'})), make_line
  workdir, _ = copies(kubeflow_specs.dockerfile_path())
  assert workdir == constants.IMAGE_PROJECT_DIR


def test_spec_module_paths_import_from_the_image_layout(tmp_path):
  paths = set()
  for target, expected in TARGET_PATHS.items():
    spec = kubeflow_specs.compile_spec(
        tmp_path / f'{target}.yaml', '--target', target,
        *kubeflow_specs.CLUSTER_PATHS,
        *(['--keep-runs', '1'] if target == 'kubeflow' else []))
    target_paths = kubeflow_specs.module_paths(spec)
    assert OUR_PATHS | expected <= target_paths, target
    assert 'tfx.components.trainer.executor.GenericExecutor' in target_paths
    paths |= target_paths

  image_dir = stage_image(str(tmp_path / 'image'))
  # A fresh interpreter in the image's WORKDIR, without this checkout on its
  # path: each path must import, and the project's from the copied files.
  check = r'''
import importlib, importlib.util, json, os, sys
image_dir, project_dir, paths = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
# The checkout itself goes (its virtualenv, which may live inside it, stays).
sys.path[:] = [image_dir] + [p for p in sys.path[1:]
                             if os.path.abspath(p or '.') != project_dir]
found = {}
for path in paths:
  if importlib.util.find_spec(path.split('.')[0]) is None:
    raise SystemExit(f'{path}: no top-level package')
  try:
    module, attribute = importlib.import_module(path), None
  except ImportError:
    module_name, attribute = path.rsplit('.', 1)
    module = importlib.import_module(module_name)
    getattr(module, attribute)
  found[path] = os.path.abspath(module.__file__)
print(json.dumps(found))
'''
  env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
  result = subprocess.run(
      [sys.executable, '-c', check, image_dir, PROJECT_DIR,
       json.dumps(sorted(paths))],
      cwd=image_dir, env=env, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  found = json.loads(result.stdout.strip().splitlines()[-1])
  for path, module_file in found.items():
    if path.split('.')[0] in ('components', 'modules', 'pipeline', 'data',
                              'kubeflow'):
      assert module_file.startswith(image_dir + os.sep), (path, module_file)
    else:  # A library: from site-packages, not from the checkout.
      assert 'site-packages' in module_file.split(os.sep), (path, module_file)


def _pins(path):
  with open(os.path.join(PROJECT_DIR, path)) as f:
    return dict(line.strip().split('==') for line in f
                if line.strip() and not line.startswith('#'))


def test_the_gpu_image_has_the_cuda_build_of_the_same_tensorflow():
  """The lock pins TensorFlow's CPU-only build; WITH_GPU=1 takes it out of
  the lock before installing, and installs the CUDA build of the same
  version from requirements-gpu.lock: one `tensorflow` package, not two."""
  cpu, gpu = _pins('requirements.lock'), _pins('kubeflow/requirements-gpu.lock')
  assert 'tensorflow' not in cpu
  assert gpu['tensorflow'] == cpu['tensorflow-cpu']
  runs = [rest for keyword, rest in instructions(
      kubeflow_specs.dockerfile_path()) if keyword == 'RUN']
  [drop] = [i for i, run in enumerate(runs) if '$WITH_GPU' in run
            and "sed -i '/^tensorflow-cpu==/d' requirements.lock" in run]
  [lock] = [i for i, run in enumerate(runs)
            if run.endswith('-r requirements.lock')]
  [cuda] = [i for i, run in enumerate(runs) if '$WITH_GPU' in run
            and 'kubeflow/requirements-gpu.lock' in run]
  assert drop < lock < cuda


def test_the_image_fetches_the_weights_auto_starts_photos_from(tmp_path):
  # The build step, run as a build runs it but without network: it asks
  # for the default backbone's ImageNet file, for Keras' cache.
  from tests.test_backbones import no_network  # pylint: disable=g-import-not-at-top
  from modules.training import model as model_lib  # pylint: disable=g-import-not-at-top
  [run] = [rest for keyword, rest in instructions(
      kubeflow_specs.dockerfile_path()) if keyword == 'RUN'
           and 'WITH_WEIGHTS' in rest]
  command = shlex.split(run.split(' then ', 1)[1].rsplit(';', 1)[0])
  (tmp_path / 'home').mkdir()
  result = subprocess.run(
      [sys.executable if command[0] == 'python' else command[0],
       *command[1:]], cwd=PROJECT_DIR, capture_output=True, text=True,
      env={**os.environ, **no_network(tmp_path / 'home')}, check=False)
  assert result.returncode != 0
  weights = model_lib.APPLICATIONS[model_lib.DEFAULT_BACKBONE][2]
  assert f'cannot download the ImageNet weights of --backbone ' \
         f'{model_lib.DEFAULT_BACKBONE} from {weights.url}' in result.stderr
  assert str(tmp_path / 'home' / '.keras' / 'models') in result.stderr
