"""Imported by every Beam worker process at its start (--beam_plugins, see
configs.BEAM_PIPELINE_ARGS): lets the worker end without a traceback.

tf.Transform's DoFns load the transform graph once per worker through
`apache_beam.utils.shared.Shared`, whose module-level map keeps the last
object acquired alive on purpose (so that the next bundle finds it). The
graph holds TensorFlow functions. tf.Transform releases that reference on
one worker only (its "WaitAndClearSharedKeepAlives" step is a single
element), so any other worker still holds it when its Python interpreter
shuts down, and the functions are deleted after TensorFlow's modules have
been torn down: every such worker printed

  Exception ignored in: <function AtomicFunction.__del__ ...>
  TypeError: 'NoneType' object is not subscriptable

At exit, while every module is still whole, this releases the reference
the same way tf.Transform does (acquiring a fresh, empty Shared object) and
collects the graph, so the functions are deleted while TensorFlow can still
delete them.
"""

import atexit
import gc

from apache_beam.utils import shared


def _release_shared_objects() -> None:
  shared.Shared().acquire(lambda: None)
  gc.collect()


atexit.register(_release_shared_objects)
