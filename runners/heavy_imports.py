"""Importing TFX (and with it TensorFlow, Beam, TFDV, tf.Transform, TFMA)
without Python's garbage collector.

The import allocates millions of objects that live as long as the process.
While it runs, the collector's full passes walk them again and again, and
every full pass of the run after it walks them once more. Imported with the
collector off and then frozen (`gc.freeze`: left out of every later pass),
they cost no collector time at all; what the run itself allocates is
collected as usual.
"""

import contextlib
import gc
from typing import Iterator


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
