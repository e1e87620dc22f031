"""Loopback ports for the tests' own servers and for refused connections."""

import socket


def free_port() -> int:
  """A loopback port nothing listens on when this returns: for a server
  the test starts next, or for a connection that must be refused."""
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]
