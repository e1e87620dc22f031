"""Lets every Beam worker process end without a traceback, share its S3
client (s3_clients.py), check TFRecords with google-crc32c
(tfrecord_crc.py) and remember what Beam would work out again at each step
(beam_caches.py).

Each worker imports this at its start (--beam_plugins, see
constants.BEAM_PIPELINE_ARGS). Why: docs/development.md.
"""

import atexit
import gc

from apache_beam.utils import shared

from pipeline import s3_clients
from pipeline import startup


def _release_shared_objects() -> None:
  shared.Shared().acquire(lambda: None)
  gc.collect()


atexit.register(_release_shared_objects)
s3_clients.share()
startup.speed_up_beam()
