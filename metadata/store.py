"""Connecting to a pipeline's ML Metadata store, and the MySQL flags (here
once, for the inspector and local_runner.py).

SQLite (`OUT/metadata.db`) is opened READONLY: looking never changes a
store, and a mistyped path is an error instead of a new, empty database.
"""

import argparse
import configparser
import contextlib
import dataclasses
import os
import socket
import tempfile
from typing import Any, Callable, Iterator, List, Optional

from ml_metadata import errors as mlmd_errors
from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2

from pipeline import constants


class InspectError(Exception):
  """A problem the user can fix (missing store, unknown id or run...): the
  command line prints it on one line, without a traceback."""


_READONLY = metadata_store_pb2.SqliteMetadataSourceConfig.READONLY


# The password comes from the environment or from the MySQL client's option
# file ([client] password=...), never from the command line, where every
# user of the machine sees it (ps, /proc/PID/cmdline).
MYSQL_PASSWORD_ENV = 'MLMD_MYSQL_PASSWORD'


@dataclasses.dataclass(frozen=True)
class MySqlOptions:
  """Where a MySQL or MariaDB store is, and how to log in to it."""
  host: str
  port: int = 3306
  database: str = 'mlmd'
  user: str = 'root'
  password: str = dataclasses.field(default='', repr=False)
  # Where the password came from, for messages.
  password_source: str = f'${MYSQL_PASSWORD_ENV}'

  def describe(self) -> str:
    """user@host:port/database, for messages (never the password)."""
    return f'{self.user}@{self.host}:{self.port}/{self.database}'


def add_mysql_flags(group: Any,
                    default: Callable[[Any], Any] = lambda value: value
                    ) -> None:
  """--mysql-host, --mysql-port, --mysql-database, --mysql-user and
  --mysql-defaults-file on `group`; `default` maps each default to the one
  to declare."""
  group.add_argument(
      '--mysql-host', default=default(None), metavar='HOST',
      help='Use the ML Metadata store in MySQL (or MariaDB) on this host '
      'instead of SQLite; the password is read from --mysql-defaults-file, '
      f'else ${MYSQL_PASSWORD_ENV} (default: empty).')
  group.add_argument('--mysql-port', type=int, default=default(3306),
                     metavar='PORT', help='MySQL port (default: 3306).')
  group.add_argument(
      '--mysql-database', default=default('mlmd'), metavar='NAME',
      help='MySQL database, created when missing (default: mlmd).')
  group.add_argument('--mysql-user', default=default('root'), metavar='USER',
                     help='MySQL user (default: root).')
  group.add_argument(
      '--mysql-defaults-file', default=default(None), metavar='PATH',
      help='A MySQL option file (as the mysql client\'s own --defaults-file) '
      'whose [client] section holds password=...; readable by you only.')


def read_defaults_file(path: str) -> Optional[str]:
  """The [client] password of a MySQL option file, None if it has none;
  InspectError if it cannot be read."""
  # As the mysql client reads them: no interpolation, keys without values
  # (skip-ssl), quotes around a value stripped.
  parser = configparser.ConfigParser(allow_no_value=True, interpolation=None,
                                     strict=False)
  try:
    with open(path) as f:
      parser.read_file(f)
  except OSError as e:
    raise InspectError(f'--mysql-defaults-file {path}: cannot read it: '
                       f'{e.strerror}') from None
  except configparser.Error as e:
    raise InspectError(f'--mysql-defaults-file {path}: not a MySQL option '
                       f'file: {e.message.splitlines()[0]}') from None
  password = parser.get('client', 'password', fallback=None)
  if password and len(password) > 1 and password[0] == password[-1] and (
      password[0] in '\'"'):
    password = password[1:-1]
  return password


def mysql_options(args: argparse.Namespace) -> Optional[MySqlOptions]:
  """The MySQL store `args` name, or None for SQLite; the password is
  --mysql-defaults-file's, else $MLMD_MYSQL_PASSWORD, else ''."""
  if not args.mysql_host:
    return None
  defaults_file = getattr(args, 'mysql_defaults_file', None)
  password = read_defaults_file(defaults_file) if defaults_file else None
  if password is not None:
    source = f'--mysql-defaults-file {defaults_file}'
  else:
    password = os.environ.get(MYSQL_PASSWORD_ENV, '')
    source = f'${MYSQL_PASSWORD_ENV}'
  return MySqlOptions(
      host=args.mysql_host, port=args.mysql_port,
      database=args.mysql_database, user=args.mysql_user,
      password=password, password_source=source)


def sqlite_path(store: Optional[str] = None,
                output_dir: Optional[str] = None) -> str:
  """`store`, else `<output_dir>/metadata.db`, else the default output dir's."""
  if store:
    return store
  return os.path.join(output_dir or constants.OUTPUT_DIR,
                      constants.METADATA_DB_NAME)


def connection_config(sqlite: Optional[str] = None,
                      mysql: Optional[MySqlOptions] = None
                      ) -> metadata_store_pb2.ConnectionConfig:
  """MySQL if given (MLMD creates the database if missing), else SQLite
  read-only."""
  if mysql:
    return metadata_store_pb2.ConnectionConfig(
        mysql=metadata_store_pb2.MySQLDatabaseConfig(
            host=mysql.host, port=mysql.port, database=mysql.database,
            user=mysql.user, password=mysql.password))
  return metadata_store_pb2.ConnectionConfig(
      sqlite=metadata_store_pb2.SqliteMetadataSourceConfig(
          filename_uri=sqlite, connection_mode=_READONLY))


def open_store(sqlite: Optional[str] = None,
               mysql: Optional[MySqlOptions] = None
               ) -> metadata_store.MetadataStore:
  """A store to read from; InspectError naming the store if it cannot be.
  (local_runner.py checks a MySQL store so: MLMD connects, creating the
  database and its tables when missing, in the constructor.)"""
  if mysql:
    where = f'MySQL {mysql.describe()}'
    unreachable = _unreachable(mysql)
    if unreachable:
      raise InspectError(f'{where}: cannot connect: {unreachable}')
  else:
    where = sqlite
    if not os.path.isfile(sqlite):
      raise InspectError(
          f'{sqlite}: no ML Metadata store there (run the pipeline first, or '
          'pass --store PATH or --output-dir DIR)')
  native_log: List[str] = []
  try:
    with _native_stderr_to(native_log):
      store = metadata_store.MetadataStore(connection_config(sqlite, mysql))
  except (mlmd_errors.StatusError, RuntimeError) as e:
    # MLMD appends the failing SQL to the reason; the reason is enough.
    reason = str(e).split(' query:')[0].strip() or type(e).__name__
    if mysql and 'mysql_real_connect failed' in reason:
      # MLMD's client reports no cause; the server answered (see
      # _unreachable), so it refused the login or the database.
      reason = (f'the server refused user {mysql.user!r} (wrong password in '
                f'{mysql.password_source}, or no access to database '
                f'{mysql.database!r})')
    raise InspectError(
        f'{where}: cannot open as an ML Metadata store: {reason}') from e
  # Whatever MLMD had to say about a connection that worked is worth seeing.
  if native_log and native_log[0]:
    os.write(2, native_log[0].encode())
  return store


def _unreachable(mysql: MySqlOptions, timeout: float = 10) -> str:
  """Why nothing answers on mysql.host:mysql.port, or '' when something
  does (MLMD's client says only "mysql_real_connect failed")."""
  try:
    with socket.create_connection((mysql.host, mysql.port), timeout=timeout):
      return ''
  except socket.gaierror as e:
    return f'unknown host {mysql.host!r} ({e.strerror})'
  except socket.timeout:
    return f'no answer within {timeout:g}s'
  except OSError as e:
    return e.strerror or str(e)


@contextlib.contextmanager
def _native_stderr_to(captured: List[str]) -> Iterator[None]:
  """Catches what native code (MLMD's glog) writes to file descriptor 2
  into `captured`: a failed connection is reported in one line instead."""
  with tempfile.TemporaryFile() as buffer:
    saved = os.dup(2)
    os.dup2(buffer.fileno(), 2)
    try:
      yield
    finally:
      os.dup2(saved, 2)
      os.close(saved)
      buffer.seek(0)
      captured.append(buffer.read().decode(errors='replace'))
