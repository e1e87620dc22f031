"""Lets every Beam worker process end without a traceback, and share its
S3 client (s3_clients.py).

Each worker imports this at its start (--beam_plugins, see
configs.BEAM_PIPELINE_ARGS).

tf.Transform's DoFns load the transform graph once per worker through
`apache_beam.utils.shared.Shared`, which keeps the last object acquired
alive. tf.Transform releases it on one worker only. On the others the
graph's TensorFlow functions would be deleted after TensorFlow's modules
were torn down, which prints "Exception ignored in: <function
AtomicFunction.__del__ ...>". At exit, while every module is still whole,
this releases the reference as tf.Transform does and collects the graph.
"""

import atexit
import gc

from apache_beam.utils import shared

from pipeline import s3_clients


def _release_shared_objects() -> None:
  shared.Shared().acquire(lambda: None)
  gc.collect()


atexit.register(_release_shared_objects)
s3_clients.share()
