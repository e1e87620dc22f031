"""A real MariaDB server for the tests: a fresh data directory, loopback only.

Debian's mariadb-server package provides the binaries (.ci/run installs it
when missing); without them the tests that need a server are skipped, saying
so. The server listens on 127.0.0.1 on a free port and has one user with a
password, as a team's server would.
"""

import dataclasses
import os
import shutil
import subprocess
import time
from typing import List, Optional

from tests import ports

USER = 'pipeline'
PASSWORD = 'tests-only-secret'
_SBIN = os.pathsep.join([os.environ.get('PATH', ''), '/usr/sbin', '/sbin'])


def _binary(name: str) -> Optional[str]:
  return shutil.which(name, path=_SBIN)


def missing() -> str:
  """'' when a server can be started here, else why not."""
  absent = [b for b in ('mariadb-install-db', 'mariadbd', 'mariadb')
            if not _binary(b)]
  if absent:
    return (f'MariaDB binaries missing ({", ".join(absent)}): apt-get install '
            'mariadb-server (.ci/run does)')
  return ''


@dataclasses.dataclass
class Server:
  """A running server; `stop` ends it."""
  process: subprocess.Popen
  port: int
  socket_path: str
  log_path: str
  host: str = '127.0.0.1'

  def sql(self, statement: str) -> str:
    """Runs `statement` as the server's root, over the socket."""
    result = subprocess.run(
        [_binary('mariadb'), '--no-defaults', f'--socket={self.socket_path}',
         '--user=root', '--batch', '--skip-column-names', '-e', statement],
        capture_output=True, text=True, timeout=60)
    if result.returncode:
      raise RuntimeError(f'{statement}: {result.stderr.strip()}')
    return result.stdout

  def flags(self, database: str) -> List[str]:
    """local_runner's and inspect's flags for `database` (password: env)."""
    return ['--mysql-host', self.host, '--mysql-port', str(self.port),
            '--mysql-database', database, '--mysql-user', USER]

  def stop(self) -> None:
    self.process.terminate()
    try:
      self.process.wait(timeout=60)
    except subprocess.TimeoutExpired:
      self.process.kill()
      self.process.wait()


def start(directory: str, timeout: float = 120) -> Server:
  """Initialises a data directory in `directory` and starts a server on it."""
  datadir = os.path.join(directory, 'data')
  # mariadbd refuses to run as root unless told to.
  as_user = ['--user=root'] if os.geteuid() == 0 else []
  subprocess.run(
      [_binary('mariadb-install-db'), '--no-defaults', f'--datadir={datadir}',
       '--auth-root-authentication-method=normal', '--skip-test-db',
       *as_user], check=True, capture_output=True, timeout=300)
  port = ports.free_port()
  socket_path = os.path.join(directory, 'mariadb.sock')
  log_path = os.path.join(directory, 'mariadb.log')
  process = subprocess.Popen(
      [_binary('mariadbd'), '--no-defaults', f'--datadir={datadir}',
       f'--socket={socket_path}', f'--port={port}',
       '--bind-address=127.0.0.1', f'--pid-file={directory}/mariadb.pid',
       f'--log-error={log_path}', '--skip-name-resolve', *as_user],
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  server = Server(process, port, socket_path, log_path)
  deadline = time.monotonic() + timeout
  while True:
    if process.poll() is not None:
      with open(log_path) as f:
        raise RuntimeError(f'mariadbd exited with {process.returncode}:\n'
                           + f.read()[-3000:])
    try:
      server.sql('SELECT 1')
      break
    except RuntimeError:
      if time.monotonic() > deadline:
        server.stop()
        raise
      time.sleep(0.3)
  server.sql(f"CREATE USER '{USER}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}'; "
             f"GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'127.0.0.1'")
  return server
