"""ImageExampleGen's console lines: progress per split every few seconds, and
notices of what it found; runs/run_summary.py shows both."""

import threading
import time
from typing import Dict, Tuple

from absl import logging

PROGRESS_LINE = 'ImageExampleGen: %s: %s of %s images read (%d%%)'
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
  """Counts the images of one split made in this process; logs now and then."""

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
