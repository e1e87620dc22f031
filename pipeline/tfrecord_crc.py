"""Beam's TFRecord reads check each record's CRC32C with google-crc32c.

Beam 2.59 takes a fast CRC32C only from python-snappy, which has no wheel for
Python 3.11, and otherwise uses crcmod. Beam has no public switch; this is
the one place that sets it, and tests/test_tfrecord_crc.py fails when Beam
changes. Why: docs/development.md, "How a process starts and ends".
"""

from typing import Callable

from apache_beam.io import tfrecordio
import google_crc32c


def set_crc32c(crc32c: Callable[[bytes], int]) -> None:
  """Makes this process's Beam compute TFRecord CRC32Cs with `crc32c`."""
  tfrecordio._default_crc32c_fn.fn = crc32c  # pylint: disable=protected-access


def use_google_crc32c() -> None:
  """Makes this process's Beam use google-crc32c's C code, where it has it.

  Without it (its pure-Python fallback is slower than crcmod), Beam keeps
  choosing for itself.
  """
  if google_crc32c.implementation == 'c':
    set_crc32c(google_crc32c.value)
