"""The lines the project logs through absl with one format string, caught
while a block runs (console lines, progress lines, epoch lines)."""

import contextlib
import logging
from typing import Iterator, List


class _Lines(logging.Handler):

  def __init__(self, template: str):
    super().__init__(level=logging.INFO)
    self.template = template
    self.lines: List[str] = []

  def emit(self, record):
    if record.msg == self.template:
      self.lines.append(record.getMessage())


@contextlib.contextmanager
def absl_lines(template: str) -> Iterator[List[str]]:
  """Yields the list the lines logged with `template` are added to."""
  handler = _Lines(template)
  logger = logging.getLogger('absl')
  level = logger.level
  logger.setLevel(logging.INFO)
  logger.addHandler(handler)
  try:
    yield handler.lines
  finally:
    logger.removeHandler(handler)
    logger.setLevel(level)
