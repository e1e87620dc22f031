"""How the entry files start fast and end fast.

Used by local_runner.py, kubeflow/kubeflow_runner.py, the Kubeflow task
entrypoint, the inspector, predict and benchmark commands.
Why and how: docs/development.md, "How a process starts and ends".
"""

import contextlib
import gc
import os
import sys
from typing import Iterator, NoReturn


def speed_up_beam() -> None:
  """Sets up this process's Beam as every run's: TFRecord CRCs by
  google-crc32c (tfrecord_crc.py), and what Beam would work out again at each
  step remembered (beam_caches.py). Called where Beam runs: the local
  runner's process, a Kubeflow task's, each Beam worker's."""
  from pipeline import beam_caches
  from pipeline import tfrecord_crc
  tfrecord_crc.use_google_crc32c()
  beam_caches.install()


def quiet_tensorflow() -> None:
  """Keeps TensorFlow's C++ info and warning lines off the console, unless
  TF_CPP_MIN_LOG_LEVEL already says otherwise. Call before TensorFlow loads.
  """
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')


@contextlib.contextmanager
def without_gc() -> Iterator[None]:
  """Runs the block with the collector off; what exists when it ends is
  frozen, and the collector is on again (if it was before)."""
  enabled = gc.isenabled()
  gc.disable()
  try:
    yield
  finally:
    gc.freeze()
    if enabled:
      gc.enable()


def exit_without_gc(status: int) -> NoReturn:
  """Ends the process with `status`, leaving what exists uncollected.

  Args:
    status: the process's exit status.
  """
  gc.freeze()
  sys.exit(status)
