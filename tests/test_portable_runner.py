"""The DAG's Beam components on Beam's portability framework, as on a
Flink, Spark or Dataflow cluster: ExampleGen, StatisticsGen and Transform
run with --runner=PortableRunner against Beam's own job service, on
EXTERNAL workers in separate processes that have only what the pipeline
ships them (the project's sdist, staged from --setup_file).

The job service and the worker pool are started here, outside the
project's folder, on an interpreter that cannot import the project: -S
(no .pth files, so no editable install) and only the environment's
site-packages on its path. The pool runs each worker through
tests/beam_boot.py, which does what Beam's container boot does: fetch the
staged files and pip-install the packages among them.
"""

import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time

import pytest

from modules.local_workers import free_ports
from tests import datasets
from tests import examples_io
from tests import local_run

# Beam pipelines the run starts: ExampleGen, StatisticsGen, Transform.
BEAM_COMPONENTS = 3


def _environment_without_the_project(install_root: str):
  env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
  env.update(PYTHONPATH=sysconfig.get_paths()['purelib'],
             BEAM_BOOT_INSTALL_ROOT=install_root, TF_CPP_MIN_LOG_LEVEL='2')
  return env


def _wait_for_port(port: int, process: subprocess.Popen, log: str) -> None:
  deadline = time.monotonic() + 60
  while time.monotonic() < deadline:
    if process.poll() is not None:
      with open(log) as f:
        raise RuntimeError(f'exited with {process.returncode}:\n{f.read()}')
    with socket.socket() as s:
      if s.connect_ex(('localhost', port)) == 0:
        return
    time.sleep(0.2)
  raise TimeoutError(f'nothing listens on port {port} after 60 s')


@pytest.fixture()
def beam_services(tmp_path):
  """(job endpoint, worker pool endpoint, the services' folder), both
  services running there with the project out of reach."""
  outside = tmp_path / 'services'
  outside.mkdir()
  install_root = str(outside / 'installs')
  os.makedirs(install_root)
  shutil.copy(os.path.join(local_run.PROJECT_DIR, 'tests', 'beam_boot.py'),
              outside)
  boot = outside / 'boot.sh'
  boot.write_text(f'#!/bin/sh\nexec {sys.executable} -S '
                  f'{outside / "beam_boot.py"} "$@"\n')
  boot.chmod(0o755)
  env = _environment_without_the_project(install_root)
  probe = subprocess.run([sys.executable, '-S', '-c', 'import modules'],
                         cwd=outside, env=env, capture_output=True, text=True)
  assert 'ModuleNotFoundError' in probe.stderr, (
      'the workers\' interpreter can import the project without shipping')

  job_port, pool_port = free_ports(2)
  commands = {
      'job': ['apache_beam.runners.portability.local_job_service_main',
              f'--port={job_port}'],
      'pool': ['apache_beam.runners.worker.worker_pool_main',
               f'--service_port={pool_port}',
               f'--container_executable={boot}'],
  }
  processes = []
  try:
    for name, (module, *args) in commands.items():
      log = str(outside / f'{name}.log')
      with open(log, 'w') as out:
        # A session of its own: the pool's workers are stopped with it.
        processes.append(subprocess.Popen(
            [sys.executable, '-S', '-m', module, *args], cwd=outside,
            env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True))
      _wait_for_port(job_port if name == 'job' else pool_port,
                     processes[-1], log)
    yield f'localhost:{job_port}', f'localhost:{pool_port}', outside
  finally:
    for process in processes:
      os.killpg(process.pid, signal.SIGKILL)
      process.wait()


def test_beam_components_on_portable_runner_with_external_workers(
    beam_services, tmp_path):
  job_endpoint, pool_endpoint, services = beam_services
  datasets.write_idx_dataset(str(tmp_path / 'data'), {'train': 40, 't10k': 20})
  result = local_run.run(
      '--data-dir', str(tmp_path / 'data'), '--output-dir',
      str(tmp_path / 'out'), '--to-node', 'Transform', '--num-shards', '2',
      f'--beam-args=--runner=PortableRunner --job_endpoint={job_endpoint} '
      f'--environment_type=EXTERNAL --environment_config={pool_endpoint}',
      timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  assert '✔ Transform' in result.stdout

  # Each Beam pipeline had workers, which ran from the project's sdist
  # that the pipeline staged (workflow.tar.gz), installed by beam_boot.
  starts = [line for line in (services / 'pool.log').read_text().splitlines()
            if line.startswith('beam_boot: worker ')
            and ' starting with ' in line]
  assert len(starts) >= BEAM_COMPONENTS, starts
  sites = glob.glob(str(services / 'installs' / '*' / 'site'))
  assert sites
  for site in sites:
    assert os.path.isfile(os.path.join(os.path.dirname(site), 'staged',
                                       'workflow.tar.gz'))
    assert os.path.isfile(os.path.join(site, 'pipeline', 'beam_worker.py'))
    assert os.path.isdir(os.path.join(site, 'components',
                                      'image_example_gen'))
  # What the workers wrote: the records, the statistics, the graph.
  [examples] = glob.glob(str(tmp_path / 'out' / 'pipeline' /
                             'ImageExampleGen' / 'examples' / '*'))
  # Of the train files' 40, those hashed into validation are there.
  assert len(examples_io.read_split(examples, 'train')) == 31
  assert len(examples_io.read_split(examples, 'validation')) == 9
  assert len(examples_io.read_split(examples, 'eval')) == 20
  assert glob.glob(str(tmp_path / 'out' / 'pipeline' / 'StatisticsGen' /
                       'statistics' / '*' / 'Split-train' / 'FeatureStats.pb'))
  assert glob.glob(str(tmp_path / 'out' / 'pipeline' / 'Transform' /
                       'transform_graph' / '*' / 'transform_fn' /
                       'saved_model.pb'))
