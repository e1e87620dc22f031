"""The ML Metadata store a local run writes to: SQLite in the output
directory (the default), or a MySQL store a team shares.

`bind_output_dir` keeps an output directory to one store.
Why and how: docs/metadata.md, "ML Metadata in MySQL".
"""

import dataclasses
import os
from typing import Optional

from ml_metadata.proto import metadata_store_pb2

from metadata import store as inspect_store
from pipeline import constants

# In OUT: which MySQL store the artifacts there belong to.
MYSQL_MARKER = '.mlmd_mysql'


class StoreMismatchError(RuntimeError):
  """The output directory belongs to another ML Metadata store."""


@dataclasses.dataclass(frozen=True)
class LocalStore:
  """Where a run's ML Metadata goes.

  Attributes:
    connection_config: for TFX and MLMD.
    description: for the summary, e.g. '(SQLite): OUT/metadata.db'.
    shared: whether other output directories may use the store too (MySQL):
      then only what this directory holds is this run's to clean up.
    mysql: the MySQL options, or None for SQLite.
  """
  connection_config: metadata_store_pb2.ConnectionConfig
  description: str
  shared: bool
  mysql: Optional[inspect_store.MySqlOptions] = None


def sqlite_path(output_dir: str) -> str:
  """The SQLite store of a local run's output directory."""
  return os.path.join(output_dir, constants.METADATA_DB_NAME)


def for_run(output_dir: str,
            mysql: Optional[inspect_store.MySqlOptions]) -> LocalStore:
  """The store of a run on `output_dir`: MySQL if given, else OUT's SQLite."""
  if mysql:
    return LocalStore(inspect_store.connection_config(mysql=mysql),
                      f'(MySQL): {_mysql_address(mysql)}', shared=True,
                      mysql=mysql)
  config = metadata_store_pb2.ConnectionConfig()
  # What tfx.orchestration.metadata.sqlite_metadata_connection_config makes.
  config.sqlite.filename_uri = sqlite_path(output_dir)
  config.sqlite.connection_mode = (
      metadata_store_pb2.SqliteMetadataSourceConfig.READWRITE_OPENCREATE)
  return LocalStore(config, f'(SQLite): {sqlite_path(output_dir)}',
                    shared=False)


def _mysql_address(mysql: inspect_store.MySqlOptions) -> str:
  # Not the user: teammates sharing a store log in as themselves.
  return f'{mysql.host}:{mysql.port}/{mysql.database}'


def check_output_dir(output_dir: str, store: LocalStore) -> None:
  """StoreMismatchError if `output_dir` belongs to another store than `store`.

  Args:
    output_dir: the run's output directory.
    store: the ML Metadata store the run is to record in.

  Raises:
    StoreMismatchError: `output_dir`'s artifacts are recorded in another
      store: MySQL's for SQLite, SQLite's or another MySQL's for MySQL.
  """
  recorded = _recorded_mysql(output_dir)
  if store.mysql is None:
    if recorded:
      raise StoreMismatchError(
          f'{output_dir}: its artifacts are recorded in the MySQL store '
          f'{recorded} ({MYSQL_MARKER}); pass the same --mysql-* flags, or '
          'use another --output-dir')
    return
  address = _mysql_address(store.mysql)
  if os.path.exists(sqlite_path(output_dir)):
    raise StoreMismatchError(
        f'{output_dir}: its artifacts are recorded in the SQLite store '
        f'{sqlite_path(output_dir)}; use another --output-dir with MySQL')
  if recorded and recorded != address:
    raise StoreMismatchError(
        f'{output_dir}: its artifacts are recorded in the MySQL store '
        f'{recorded}, not {address}; use another --output-dir')


def bind_output_dir(output_dir: str, store: LocalStore) -> None:
  """Records `store` as `output_dir`'s (check_output_dir first).

  Call it holding the output directory's lock (interrupted_runs), once the
  store has answered: a mistyped host must not bind the directory.

  Args:
    output_dir: the run's output directory.
    store: the ML Metadata store the run records in; only MySQL's is
      written down (SQLite's file is in `output_dir`).

  Raises:
    StoreMismatchError: as check_output_dir.
  """
  check_output_dir(output_dir, store)
  if store.mysql is not None and not _recorded_mysql(output_dir):
    with open(os.path.join(output_dir, MYSQL_MARKER), 'w') as f:
      f.write(_mysql_address(store.mysql) + '\n')


def _recorded_mysql(output_dir: str) -> Optional[str]:
  marker = os.path.join(output_dir, MYSQL_MARKER)
  if not os.path.exists(marker):
    return None
  with open(marker) as f:
    return f.read().strip() or None
