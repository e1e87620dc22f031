"""ML Metadata in MySQL: local_runner.py and the inspect tool on a real
MariaDB server (tests/mariadb.py), artifacts under --output-dir."""

import json
import os
import subprocess
import sys

import pytest
from ml_metadata.proto import metadata_store_pb2

from metadata import store as inspect_store
from pipeline import constants
from runs import interrupted_runs
from metadata import local_store
from tests import datasets
from tests import local_run
from tests import mariadb
from tests import mlmd
from tests import ports

DATA_HALF = ['ImageExampleGen', 'StatisticsGen', 'SchemaGen',
             'ExampleValidator', 'DataChecks', 'ValidationGate']
PASSWORD = {inspect_store.MYSQL_PASSWORD_ENV: mariadb.PASSWORD}


@pytest.fixture(scope='module')
def server(tmp_path_factory):
  if mariadb.missing():
    pytest.skip(mariadb.missing())
  started = mariadb.start(str(tmp_path_factory.mktemp('mariadb')))
  yield started
  started.stop()


def _store(server, database):
  return inspect_store.open_store(mysql=inspect_store.MySqlOptions(
      server.host, server.port, database, mariadb.USER, mariadb.PASSWORD))


def test_runs_cache_freeze_schema_and_inspect(server, tmp_path):
  database = 'mlmd_runs'  # Created by ML Metadata on the first run.
  datasets.write_idx_dataset(str(tmp_path / 'data'), {'train': 40, 't10k': 20})
  out = tmp_path / 'out'
  args = ['--data-dir', str(tmp_path / 'data'), '--output-dir', str(out),
          '--to-node', 'ValidationGate', '--freeze-schema',
          local_run.ONE_PROCESS, *server.flags(database)]

  first = local_run.run(*args, env=PASSWORD)
  assert first.returncode == 0, first.stderr[-3000:]
  assert 'no run has passed validation yet' in first.stdout
  address = f'{server.host}:{server.port}/{database}'
  assert f'ML Metadata (MySQL): {address}' in first.stdout
  # Artifacts under --output-dir, ML Metadata not.
  assert not (out / constants.METADATA_DB_NAME).exists()
  assert (out / local_store.MYSQL_MARKER).read_text().strip() == address
  store = _store(server, database)
  assert mlmd.execution_states(store) == {n: ['COMPLETE'] for n in DATA_HALF}
  [examples] = mlmd.live_artifacts(store, 'Examples')
  assert examples.uri.startswith(str(out / constants.PIPELINE_ROOT_NAME))

  # The re-run finds the schema the first run validated, in MySQL, and
  # reuses ExampleGen, DataChecks and StatisticsGen from MySQL's cache.
  second = local_run.run(*args, env=PASSWORD)
  assert second.returncode == 0, second.stderr[-3000:]
  assert '--freeze-schema: checking the data against' in second.stdout
  assert '✔ ImageExampleGen: 0.' in second.stdout
  assert second.stdout.count('(cached)') == 3
  states = mlmd.execution_states(_store(server, database))
  assert states['ImageExampleGen'] == states['StatisticsGen'] == states[
      'DataChecks'] == ['COMPLETE', 'CACHED']
  assert states['ImportSchemaGen'] == ['COMPLETE']

  inspect = subprocess.run(
      [sys.executable, '-m', 'inspector', 'runs', '--json',
       *server.flags(database)], capture_output=True, text=True,
      cwd=local_run.PROJECT_DIR, timeout=300,
      env={**os.environ, **PASSWORD})
  assert inspect.returncode == 0, inspect.stderr[-3000:]
  newest, oldest = json.loads(inspect.stdout)
  assert newest['state'] == oldest['state'] == 'COMPLETE'
  cached = {c['node'] for c in newest['components'] if c['cached']}
  assert cached == {'ImageExampleGen', 'DataChecks', 'StatisticsGen'}


def test_only_this_output_dirs_interrupted_executions_are_closed(
    server, tmp_path):
  """A shared store: a RUNNING execution that wrote nothing under this
  output directory may be another machine's live run; it is left alone."""
  database = 'mlmd_interrupted'
  config = inspect_store.connection_config(mysql=inspect_store.MySqlOptions(
      server.host, server.port, database, mariadb.USER, mariadb.PASSWORD))
  store = _store(server, database)
  pipeline = metadata_store_pb2.Context(
      name=constants.PIPELINE_NAME,
      type_id=store.put_context_type(metadata_store_pb2.ContextType(
          name='pipeline')))
  node_type = store.put_context_type(metadata_store_pb2.ContextType(
      name='node'))
  execution_type = store.put_execution_type(metadata_store_pb2.ExecutionType(
      name='Trainer'))
  [pipeline_id] = store.put_contexts([pipeline])
  ids = {}
  for who in ('ours', 'theirs'):
    [ids[who]] = store.put_executions([metadata_store_pb2.Execution(
        type_id=execution_type,
        last_known_state=metadata_store_pb2.Execution.RUNNING)])
    [node] = store.put_contexts([metadata_store_pb2.Context(
        name=f'{constants.PIPELINE_NAME}.Trainer{who}', type_id=node_type)])
    store.put_attributions_and_associations(
        [], [metadata_store_pb2.Association(context_id=c,
                                            execution_id=ids[who])
             for c in (pipeline_id, node)])
  root = tmp_path / 'out' / constants.PIPELINE_ROOT_NAME
  partial = root / 'Trainerours' / 'model' / str(ids['ours'])
  partial.mkdir(parents=True)

  closed = interrupted_runs.close_interrupted(config, str(root),
                                              shared_store=True)
  assert [c.execution_id for c in closed] == [ids['ours']]
  assert not partial.exists()
  states = {e.id: e.last_known_state for e in store.get_executions()}
  assert states == {ids['ours']: metadata_store_pb2.Execution.CANCELED,
                    ids['theirs']: metadata_store_pb2.Execution.RUNNING}


def test_wrong_password_is_one_line(server, tmp_path):
  result = local_run.run(
      '--data-dir', str(tmp_path), '--output-dir', str(tmp_path / 'out'),
      *server.flags('mlmd_refused'),
      env={inspect_store.MYSQL_PASSWORD_ENV: 'not-the-password'})
  assert result.returncode == 1
  assert result.stderr.strip() == (
      f'error: MySQL {mariadb.USER}@{server.host}:{server.port}/mlmd_refused: '
      f'cannot open as an ML Metadata store: the server refused user '
      f"'{mariadb.USER}' (wrong password in $MLMD_MYSQL_PASSWORD, or no "
      "access to database 'mlmd_refused')")


def test_wrong_password_in_an_option_file_names_the_file(server, tmp_path):
  option_file = tmp_path / 'my.cnf'
  option_file.write_text('[client]\npassword = not-the-password\n')
  result = local_run.run(
      '--data-dir', str(tmp_path), '--output-dir', str(tmp_path / 'out'),
      *server.flags('mlmd_refused'), '--mysql-defaults-file', str(option_file),
      env={inspect_store.MYSQL_PASSWORD_ENV: mariadb.PASSWORD})
  assert result.returncode == 1
  assert result.stderr.strip().endswith(
      f"(wrong password in --mysql-defaults-file {option_file}, or no "
      "access to database 'mlmd_refused')")


def test_unreachable_server_is_one_line(tmp_path):
  port = ports.free_port()
  result = local_run.run('--data-dir', str(tmp_path), '--output-dir',
                         str(tmp_path / 'out'), '--mysql-host', '127.0.0.1',
                         '--mysql-port', str(port))
  assert result.returncode == 1
  assert result.stderr.strip() == (
      f'error: MySQL root@127.0.0.1:{port}/mlmd: cannot connect: '
      'Connection refused')
  # A mistyped server binds the output directory to nothing.
  assert not (tmp_path / 'out' / local_store.MYSQL_MARKER).exists()


def test_the_store_is_checked_before_tensorflow_is_imported(tmp_path):
  # TensorFlow and TFX take seconds to import: a run whose store cannot be
  # used says so without waiting for them.
  port = ports.free_port()
  argv = ['--data-dir', str(tmp_path), '--output-dir', str(tmp_path / 'out'),
          '--mysql-host', '127.0.0.1', '--mysql-port', str(port)]
  code = ('import sys, local_runner; '
          f'assert local_runner.main({argv!r}) == 1; '
          'assert "tensorflow" not in sys.modules, "tensorflow was imported"')
  result = subprocess.run([sys.executable, '-c', code], capture_output=True,
                          text=True, cwd=local_run.PROJECT_DIR)
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'cannot connect' in result.stderr


def test_an_output_dir_stays_with_its_store(tmp_path):
  out = tmp_path / 'out'
  out.mkdir()
  (out / constants.METADATA_DB_NAME).touch()  # An earlier SQLite run's.
  result = local_run.run('--data-dir', str(tmp_path), '--output-dir', str(out),
                         '--mysql-host', '127.0.0.1')
  assert result.returncode == 1
  assert 'its artifacts are recorded in the SQLite store' in result.stderr

  other = tmp_path / 'other'
  other.mkdir()
  (other / local_store.MYSQL_MARKER).write_text('db.example.com:3306/mlmd\n')
  result = local_run.run('--data-dir', str(tmp_path), '--output-dir',
                         str(other))
  assert result.returncode == 1
  assert ('its artifacts are recorded in the MySQL store '
          'db.example.com:3306/mlmd') in result.stderr
