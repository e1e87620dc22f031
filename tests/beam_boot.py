"""A Beam SDK worker's boot, in Python, for the portable-runner test.

  python -S tests/beam_boot.py --id=ID --provision_endpoint=HOST:PORT \\
      --artifact_endpoint=... --control_endpoint=... --logging_endpoint=...

What Beam's container entrypoint (/opt/apache/beam/boot, a Go program in
the apache/beam_python*_sdk images that Flink, Spark and Dataflow workers
run) does before a worker starts, and no more: ask the runner for the
pipeline's options and staged files (provision API), fetch the files
(artifact API), pip-install the packages among them (the project's sdist
that --setup_file stages, --extra_package files) into a folder of this
worker's, and start the SDK harness with that folder on its path. The
worker pool (`worker_pool_main --container_executable`) runs it for every
worker it is asked for. Not installed: a test tool.

The interpreter runs with -S and PYTHONPATH set by the test to the
environment's site-packages only, so nothing of the project's checkout
(nor an editable install of it) is importable: the worker has what the
pipeline shipped.
"""

import argparse
import fcntl
import hashlib
import os
import subprocess
import sys

import grpc
from apache_beam.portability import common_urns
from apache_beam.portability.api import beam_artifact_api_pb2
from apache_beam.portability.api import beam_artifact_api_pb2_grpc
from apache_beam.portability.api import beam_provision_api_pb2
from apache_beam.portability.api import beam_provision_api_pb2_grpc
from apache_beam.portability.api import beam_runner_api_pb2
from google.protobuf import json_format

# Where installs go, one folder per set of staged files (the test sets it;
# workers of one pipeline share their install, as a container's do).
INSTALL_ROOT = 'BEAM_BOOT_INSTALL_ROOT'
# Staged file names that are packages to install, as boot.go reads them.
_PACKAGE_SUFFIXES = ('.tar.gz', '.whl', '.zip')


def _staged_name(artifact) -> str:
  if artifact.role_urn != common_urns.artifact_roles.STAGING_TO.urn:
    return ''
  return beam_runner_api_pb2.ArtifactStagingToRolePayload.FromString(
      artifact.role_payload).staged_name


def _fetch(endpoint: str, dependencies, directory: str, metadata):
  """The staged files, written to `directory`; returns their paths."""
  stub = beam_artifact_api_pb2_grpc.ArtifactRetrievalServiceStub(
      grpc.insecure_channel(endpoint))
  paths = []
  for artifact in dependencies:
    name = _staged_name(artifact)
    if not name:
      continue
    path = os.path.join(directory, name)
    with open(path, 'wb') as f:
      for chunk in stub.GetArtifact(
          beam_artifact_api_pb2.GetArtifactRequest(artifact=artifact),
          metadata=metadata):
        f.write(chunk.data)
    paths.append(path)
  return paths


def _install(packages, target: str) -> None:
  """pip installs `packages` into `target`, offline, without dependencies
  (the environment has them, as an SDK image has Beam's)."""
  subprocess.run(
      [sys.executable, '-S', '-m', 'pip', 'install', '--quiet', '--no-deps',
       '--no-index', '--no-build-isolation', '--disable-pip-version-check',
       '--target', target, *packages],
      check=True, stdout=sys.stderr)


def main() -> None:
  parser = argparse.ArgumentParser()
  for flag in ('--id', '--provision_endpoint', '--artifact_endpoint',
               '--control_endpoint', '--logging_endpoint'):
    parser.add_argument(flag, required=True)
  args = parser.parse_args()

  # The runner tells its workers apart by this header (as boot.go sends).
  metadata = [('worker_id', args.id)]
  provision = beam_provision_api_pb2_grpc.ProvisionServiceStub(
      grpc.insecure_channel(args.provision_endpoint))
  info = provision.GetProvisionInfo(
      beam_provision_api_pb2.GetProvisionInfoRequest(),
      metadata=metadata).info

  key = hashlib.sha256(b''.join(
      d.SerializeToString() for d in info.dependencies)).hexdigest()[:16]
  root = os.path.join(os.environ[INSTALL_ROOT], key)
  site = os.path.join(root, 'site')
  os.makedirs(root, exist_ok=True)
  with open(os.path.join(root, 'lock'), 'w') as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)  # One worker installs, the others wait.
    if not os.path.isdir(site):
      staged = os.path.join(root, 'staged')
      os.makedirs(staged, exist_ok=True)
      files = _fetch(args.artifact_endpoint, info.dependencies, staged,
                     metadata)
      packages = [f for f in files if f.endswith(_PACKAGE_SUFFIXES)]
      print(f'beam_boot: worker {args.id}: installing {packages}',
            file=sys.stderr, flush=True)
      _install(packages, site + '.partial')
      os.rename(site + '.partial', site)

  print(f'beam_boot: worker {args.id}: starting with {site} on its path',
        file=sys.stderr, flush=True)
  env = dict(os.environ)
  env.update(
      WORKER_ID=args.id,
      PIPELINE_OPTIONS=json_format.MessageToJson(info.pipeline_options),
      CONTROL_API_SERVICE_DESCRIPTOR=f'url: "{args.control_endpoint}"',
      LOGGING_API_SERVICE_DESCRIPTOR=f'url: "{args.logging_endpoint}"',
      SEMI_PERSISTENT_DIRECTORY=root,
      PYTHONPATH=os.pathsep.join([site, env.get('PYTHONPATH', '')]))
  os.execve(sys.executable,
            [sys.executable, '-S', '-m',
             'apache_beam.runners.worker.sdk_worker_main'], env)


if __name__ == '__main__':
  main()
