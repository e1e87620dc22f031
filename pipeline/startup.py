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
