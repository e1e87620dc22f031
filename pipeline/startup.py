"""What the entry files (local_runner.py, kubeflow/kubeflow_runner.py, the
Kubeflow task entrypoint, the inspector, predict and benchmark commands) do
to start fast and end fast, and why.

* TensorFlow's C++ start-up chatter is noise on the console:
  `quiet_tensorflow` turns it off before TensorFlow loads (it reads the
  setting once, when loaded), and the Beam workers a run starts inherit it.
* Heavy imports wait for the function that needs them. TFX, and with it
  TensorFlow, Beam, TFDV, tf.Transform and TFMA, take seconds to import:
  the entry files import them, and the project's modules that import them
  (the DAG, the components, the console progress), only inside the
  functions that use them. `--help`, a wrong flag, a missing directory, a
  wrong password or a busy output directory are said in a fraction of a
  second. Those imports carry no comment of their own.
* TFX is imported without Python's garbage collector (`without_gc`). The
  import allocates millions of objects that live as long as the process.
  While it runs, the collector's full passes walk them again and again, and
  every full pass of the run after it walks them once more. Imported with
  the collector off and then frozen (`gc.freeze`: left out of every later
  pass), they cost no collector time at all; what the run itself allocates
  is collected as usual.
* The process ends without collecting (`exit_without_gc`). Python's shutdown
  garbage-collects, again and again while it unloads modules, everything
  TensorFlow, Beam and TFX allocated: seconds after the run is over. Frozen,
  those objects are left to the process's end (exit handlers still run).
* kubeflow_runner.py runs as a script from anywhere, so it puts the
  project first on sys.path itself (Python puts kubeflow/ there): the one
  trick not in this module, which is found through it. First on the path,
  the project's `kubeflow` package also comes before a Kubeflow SDK's of
  the same name (kubeflow/__init__.py).
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
