"""ImageExampleGen's console lines: progress every few seconds per split
('train-*: 30,000 of 60,000 images read (50%)'), and notices of what it found.

Counts are per process; runners/run_summary.py shows PROGRESS_LINE's lines.
"""

import threading
import time
from typing import Dict, Tuple

from absl import logging

# The absl message of a progress line; runners/run_summary.py looks for it.
PROGRESS_LINE = 'ImageExampleGen: %s: %s of %s images read (%d%%)'
# What ImageExampleGen found or chose that its user should read: the
# classes and splits of image folders, the geometry it chose for them.
# Shown on the console like progress lines.
NOTICE_LINE = 'ImageExampleGen: %s'
INTERVAL_SECONDS = 5.0

_lock = threading.Lock()
# Per split pattern in this process: (images so far, time of the last line
# or of the first count).
_state: Dict[str, Tuple[int, float]] = {}


def notice(text: str) -> None:
  """Shows `text` on the console, as NOTICE_LINE."""
  logging.info(NOTICE_LINE, text)


def reset() -> None:
  """Forgets earlier counts of this process (call before a pipeline)."""
  with _lock:
    _state.clear()


class SplitProgress:
  """Counts the images of one split made in this process; logs now and then.

  Holds plain values only: Beam pickles it with the DoFn that uses it.
  """

  def __init__(self, split_pattern: str, total: int):
    self._split_pattern = split_pattern
    self._total = total

  def add(self, count: int) -> None:
    """Counts `count` more images; logs a line if one is due."""
    now = time.monotonic()
    with _lock:
      done, last = _state.get(self._split_pattern, (0, now))
      done += count
      due = now - last >= INTERVAL_SECONDS
      _state[self._split_pattern] = (done, now if due else last)
    if due:
      logging.info(PROGRESS_LINE, self._split_pattern, f'{done:,}',
                   f'{self._total:,}',
                   100 * done // self._total if self._total else 100)
