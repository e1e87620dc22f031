"""One boto3 client per process for Beam's S3 filesystem, not one per file.

Called where Beam runs: the Kubeflow task entrypoint and each Beam worker
process (beam_worker.py). Why: docs/kubeflow.md, "Storage".
"""

import threading
from typing import Any, Dict, Tuple


class _OneClientPerSettings:
  """Stands for boto3 in Beam's S3 client module.

  That module asks `boto3.session.Session().client(**settings)` for each
  file operation; this answers with the client made for the same settings
  before.
  """

  def __init__(self, boto3_module):
    self._boto3 = boto3_module
    self.session = self  # Beam reads `boto3.session.Session`.
    self._clients: Dict[Tuple[Tuple[str, Any], ...], Any] = {}
    self._lock = threading.Lock()

  def Session(self):  # pylint: disable=invalid-name
    return self

  def client(self, **settings):
    key = tuple(sorted(settings.items()))
    with self._lock:
      if key not in self._clients:
        self._clients[key] = self._boto3.session.Session().client(**settings)
      return self._clients[key]


def share() -> None:
  """Makes Beam's S3 filesystem reuse one client per settings in this
  process. Does nothing without boto3 (no s3:// support) or when done."""
  try:
    # pylint: disable=g-import-not-at-top
    from apache_beam.io.aws.clients.s3 import boto3_client
  except ImportError:
    return
  module = boto3_client.boto3
  if module is None or isinstance(module, _OneClientPerSettings):
    return
  boto3_client.boto3 = _OneClientPerSettings(module)
