"""Connecting to the ML Metadata store of a pipeline.

SQLite (what local runs write, `OUT/metadata.db`) is opened READONLY: looking
never changes a store, and a mistyped path is an error instead of a new,
empty database. MySQL is what Kubeflow-style deployments use.
"""

import dataclasses
import os
from typing import Optional

from ml_metadata import errors as mlmd_errors
from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2

from pipeline import configs
from inspector.errors import InspectError

_READONLY = metadata_store_pb2.SqliteMetadataSourceConfig.READONLY


@dataclasses.dataclass(frozen=True)
class MySqlOptions:
  host: str
  port: int = 3306
  database: str = 'mlmd'
  user: str = 'root'
  password: str = ''


def sqlite_path(store: Optional[str] = None,
                output_dir: Optional[str] = None) -> str:
  """`store`, else `<output_dir>/metadata.db`, else the default output dir's."""
  if store:
    return store
  return os.path.join(output_dir or configs.OUTPUT_DIR,
                      configs.METADATA_DB_NAME)


def connection_config(sqlite: Optional[str] = None,
                      mysql: Optional[MySqlOptions] = None
                      ) -> metadata_store_pb2.ConnectionConfig:
  config = metadata_store_pb2.ConnectionConfig()
  if mysql:
    config.mysql.host = mysql.host
    config.mysql.port = mysql.port
    config.mysql.database = mysql.database
    config.mysql.user = mysql.user
    config.mysql.password = mysql.password
  else:
    config.sqlite.filename_uri = sqlite
    config.sqlite.connection_mode = _READONLY
  return config


def open_store(sqlite: Optional[str] = None,
               mysql: Optional[MySqlOptions] = None
               ) -> metadata_store.MetadataStore:
  """A store to read from; InspectError naming the store if it cannot be."""
  if mysql:
    where = f'MySQL {mysql.user}@{mysql.host}:{mysql.port}/{mysql.database}'
  else:
    where = sqlite
    if not os.path.isfile(sqlite):
      raise InspectError(
          f'{sqlite}: no ML Metadata store there (run the pipeline first, or '
          'pass --store PATH or --output-dir DIR)')
  try:
    return metadata_store.MetadataStore(connection_config(sqlite, mysql))
  except (mlmd_errors.StatusError, RuntimeError) as e:
    # MLMD appends the failing SQL to the reason; the reason is enough.
    reason = str(e).split(' query:')[0].strip() or type(e).__name__
    raise InspectError(
        f'{where}: cannot open as an ML Metadata store: {reason}') from e
