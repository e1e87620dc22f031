"""ServedModel: the newest served version, copied into a Model artifact, and
never answered from a stale cache on LocalDagRunner (its driver puts the
served version into the cache key). Nothing is served only when the serving
directory is missing or holds no version: one that cannot be read (its
permissions, an S3 server that does not answer) fails the step, never
passes for "nothing served" (the Pusher reads it with the same function)."""

import os

import pytest
from tfx import v1 as tfx
from tfx.utils import path_utils

from components import push_once
from components import served_model
from tests import local_run
from tests import mlmd
from tests import ports
from tests import s3_server


PIPELINE_NAME = 'served_model_test'


def _pipeline(root, serving_dir):
  return tfx.dsl.Pipeline(
      pipeline_name=PIPELINE_NAME, pipeline_root=str(root / 'pipeline'),
      components=[served_model.ServedModel(serving_model_dir=str(serving_dir))],
      enable_cache=True,
      metadata_connection_config=(
          tfx.orchestration.metadata.sqlite_metadata_connection_config(
              str(root / 'metadata.db'))))


def _serve(serving_dir, version, content):
  """A fake served version (the component copies files, loads nothing)."""
  os.makedirs(serving_dir / version / 'variables')
  (serving_dir / version / 'saved_model.pb').write_bytes(content)


def _newest_model(root):
  store = mlmd.open_store(str(root))
  return sorted(store.get_artifacts_by_type('Model'), key=lambda a: a.id)[-1]


def test_copies_the_newest_version_and_is_cached_only_while_it_is_served(
    tmp_path):
  serving_dir = tmp_path / 'serving'
  run = lambda: tfx.orchestration.LocalDagRunner().run(
      _pipeline(tmp_path, serving_dir))

  run()  # Nothing served.
  first = _newest_model(tmp_path)
  assert first.custom_properties['served_version'].string_value == ''
  assert not served_model.holds_model(_as_artifact(first))

  run()  # Nothing changed: answered from the cache.
  assert _states(tmp_path) == ['COMPLETE', 'CACHED']

  _serve(serving_dir, '100', b'old')
  _serve(serving_dir, '200', b'new')
  run()  # A new version is served: the cache must not answer.
  model = _newest_model(tmp_path)
  assert model.id != first.id
  assert model.custom_properties['served_version'].string_value == '200'
  copied = os.path.join(path_utils.serving_model_dir(model.uri),
                        'saved_model.pb')
  with open(copied, 'rb') as f:
    assert f.read() == b'new'
  assert served_model.holds_model(_as_artifact(model))
  assert _states(tmp_path) == ['COMPLETE', 'CACHED', 'COMPLETE']


def _states(root):
  return mlmd.execution_states(mlmd.open_store(str(root)),
                               PIPELINE_NAME)['ServedModel']


def _as_artifact(mlmd_artifact):
  artifact = tfx.types.standard_artifacts.Model()
  artifact.set_mlmd_artifact(mlmd_artifact)
  return artifact


def test_nothing_is_served_only_without_a_directory_or_a_version(tmp_path):
  assert served_model.served_version(str(tmp_path / 'missing')) is None
  (tmp_path / 'empty').mkdir()
  assert served_model.served_version(str(tmp_path / 'empty')) is None
  (tmp_path / 'empty' / 'notes').mkdir()
  assert served_model.served_version(str(tmp_path / 'empty')) is None
  _serve(tmp_path / 'served', '9', b'old')
  _serve(tmp_path / 'served', '10', b'new')
  assert served_model.served_version(str(tmp_path / 'served')) == '10'


def test_a_file_instead_of_the_directory_is_an_error(tmp_path):
  (tmp_path / 'serving').write_text('not a directory')
  with pytest.raises(push_once.ServingDirectoryError,
                     match=f'serving directory {tmp_path}/serving: a file'):
    served_model.served_version(str(tmp_path / 'serving'))


# Run in a process of its own: a fork of the preloaded Python with the S3
# settings in its environment (tensorflow-io reads them as it first opens
# s3://), or one started as a user without root's power to read any file.
# `mode`: 'lookup' (served_version of each directory) or 'component'
# (ServedModel run by LocalDagRunner, as the pipeline runs it).
_PROBE = """
import os, sys
import tensorflow_io  # s3://, as kubeflow/container_entrypoint.py
from tfx import v1 as tfx
from components import push_once, served_model
mode, root, *serving_dirs = sys.argv[1:]
status = 0
try:
  if mode == 'lookup':
    for serving_dir in serving_dirs:
      print(serving_dir, 'served:', served_model.served_version(serving_dir))
  else:
    [serving_dir] = serving_dirs
    tfx.orchestration.LocalDagRunner().run(tfx.dsl.Pipeline(
        pipeline_name='probe', pipeline_root=os.path.join(root, 'pipeline'),
        components=[served_model.ServedModel(serving_model_dir=serving_dir)],
        metadata_connection_config=(
            tfx.orchestration.metadata.sqlite_metadata_connection_config(
                os.path.join(root, 'metadata.db')))))
    print('ran')
except push_once.ServingDirectoryError as e:
  print('error:', e)
  status = 3
sys.stdout.flush()
os._exit(status)  # Before tensorflow-io's S3 client aborts the teardown.
"""


def _probe(mode, serving_dirs, root, env=None, obey_permissions=False):
  script = root / 'probe.py'
  script.write_text(_PROBE)
  args = [str(script), mode, str(root), *serving_dirs]
  result = (local_run.fresh_python(args, 300, env, obey_permissions=True)
            if obey_permissions else local_run.python(args, 300, env))
  print(result.stdout, result.stderr[-3000:])
  return result


def _error_line(result):
  [line] = [l for l in result.stdout.splitlines() if l.startswith('error:')]
  return line


@pytest.mark.parametrize('mode', ['lookup', 'component'])
def test_an_unreadable_serving_directory_fails_instead_of_nothing_served(
    tmp_path, mode):
  reason = local_run.permissions_enforceable()
  if reason:
    pytest.skip(reason)
  serving_dir = tmp_path / 'serving'
  _serve(serving_dir, '1', b'served')
  serving_dir.chmod(0)
  try:
    result = _probe(mode, [str(serving_dir)], tmp_path,
                    obey_permissions=True)
  finally:
    serving_dir.chmod(0o755)  # So that pytest can clean up.
  assert result.returncode == 3
  assert _error_line(result) == (
      f'error: cannot read the serving directory {serving_dir}, so which '
      f'model is served is unknown: PermissionDeniedError: {serving_dir}; '
      'Permission denied')


# One attempt (the AWS SDK's standard retry mode reads AWS_MAX_ATTEMPTS; its
# default retries for many seconds a request), short timeouts, no EC2 metadata
# lookups: an unreachable server is said at once.
_QUICK_S3 = {'AWS_MAX_ATTEMPTS': '1', 'AWS_RETRY_MODE': 'standard',
             'AWS_EC2_METADATA_DISABLED': 'true',
             'S3_CONNECT_TIMEOUT_MSEC': '2000',
             'S3_REQUEST_TIMEOUT_MSEC': '2000'}


@pytest.fixture(scope='module')
def s3(tmp_path_factory):
  """A bucket on a real S3 server: its endpoint."""
  log = tmp_path_factory.mktemp('s3') / 's3.log'
  with s3_server.running(str(log)) as endpoint:
    client = s3_server.client(endpoint)
    client.create_bucket(Bucket='models')
    for key in ('serving/3/saved_model.pb', 'serving/12/saved_model.pb',
                'empty/notes.txt'):
      client.put_object(Bucket='models', Key=key, Body=b'x')
    yield endpoint


def test_on_s3_nothing_is_served_only_where_nothing_is(tmp_path, s3):
  served = {'s3://models/serving': '12', 's3://models/missing': 'None',
            's3://models/empty': 'None', 's3://no-such-bucket/serving': 'None'}
  result = _probe('lookup', list(served), tmp_path,
                  env={**s3_server.pod_environment(s3), **_QUICK_S3})
  assert result.returncode == 0
  for path, version in served.items():
    assert f'{path} served: {version}' in result.stdout.splitlines()


@pytest.mark.parametrize('mode', ['lookup', 'component'])
def test_an_unreachable_s3_server_fails_instead_of_nothing_served(tmp_path,
                                                                  mode):
  endpoint = f'http://127.0.0.1:{ports.free_port()}'  # Refuses connections.
  result = _probe(mode, ['s3://models/serving'], tmp_path,
                  env={**s3_server.pod_environment(endpoint), **_QUICK_S3})
  assert result.returncode == 3
  assert _error_line(result).startswith(
      'error: cannot read the serving directory s3://models/serving, so which '
      'model is served is unknown: ')
  assert "Couldn't connect to server" in _error_line(result)


def test_on_s3_a_denied_listing_fails_instead_of_nothing_served(
    tmp_path_factory, tmp_path):
  # The bucket answers, listing it is denied: tensorflow-io says NotFound
  # for the serving directory as for a missing one.
  log = tmp_path_factory.mktemp('denied_s3') / 's3.log'
  with s3_server.running(str(log)) as endpoint:
    client = s3_server.client(endpoint)
    client.create_bucket(Bucket='models')
    client.put_object(Bucket='models', Key='serving/3/saved_model.pb',
                      Body=b'x')
    user = s3_server.enforce_policy(endpoint, ['s3:ListBucket'],
                                    'arn:aws:s3:::models')
    result = _probe('lookup', ['s3://models/serving'], tmp_path,
                    env={**s3_server.pod_environment(endpoint), **user,
                         **_QUICK_S3})
  assert result.returncode == 3
  assert _error_line(result) == (
      'error: cannot read the serving directory s3://models/serving, so '
      'which model is served is unknown: PermissionDeniedError: '
      'AccessDenied: Access Denied')
