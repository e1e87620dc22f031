"""CSV a person opens in a spreadsheet: no cell it would run as a formula.

Every CSV the project writes, and reads back, goes through this module.
Why and which cells: docs/review-lists.md.
"""

import csv
import numbers
import re
from typing import IO, Any, Dict, Iterable, Iterator

# What marks a cell as text to a spreadsheet; a value starting with it gets
# one more, so that reading strips exactly one.
TEXT_MARK = "'"
# OWASP's CSV injection: a formula starts with one of these, leading
# whitespace aside, or the cell starts with a tab or a carriage return.
FORMULA_STARTS = ('=', '+', '-', '@')
CONTROL_STARTS = ('\t', '\r')
# A plain number, a spreadsheet's number too: -0.5, +3, 1e-05.
_NUMBER = re.compile(r'[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?')


def escape(value: Any) -> Any:
  """Returns `value` as a spreadsheet reads it as text, not a formula.

  A number (int, float, NumPy's) or None is returned as is, and so is text
  that is a plain number ('-0.5'). Other text gets a leading `TEXT_MARK`
  where a spreadsheet would read it as a formula, or where it starts with
  the mark itself, so that `unescape` gives back exactly what came in.
  """
  if value is None or isinstance(value, numbers.Number):
    return value
  text = str(value)
  if (text.startswith((TEXT_MARK,) + CONTROL_STARTS)
      or (text.lstrip().startswith(FORMULA_STARTS)
          and not _NUMBER.fullmatch(text))):
    return TEXT_MARK + text
  return text


def unescape(text: Any) -> Any:
  """Returns the value `escape` was given for the cell `text`."""
  if isinstance(text, str) and text.startswith(TEXT_MARK):
    return text[len(TEXT_MARK):]
  return text


class _Writer:
  """csv.writer's rows, each cell through `escape`.

  A row with a carriage return in a cell is written all quoted: csv.writer
  quotes only the line terminator's characters, and a spreadsheet starts a
  new row at a bare one, whose first cell then escapes nothing.
  """

  def __init__(self, stream: IO[str], **options):
    self._rows = csv.writer(stream, **options)
    self._quoted = csv.writer(stream, **{**options,
                                         'quoting': csv.QUOTE_ALL})

  def writerow(self, row: Iterable[Any]):
    cells = [escape(cell) for cell in row]
    rows = (self._quoted if any(isinstance(cell, str) and '\r' in cell
                                for cell in cells) else self._rows)
    return rows.writerow(cells)

  def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
    for row in rows:
      self.writerow(row)


def writer(stream: IO[str], **options) -> _Writer:
  """Returns a csv.writer on `stream` (with `options`) that escapes."""
  return _Writer(stream, **options)


class DictWriter(csv.DictWriter):
  """csv.DictWriter whose rows, the header too, go through `writer`."""

  def __init__(self, stream: IO[str], fieldnames, restval='',
               extrasaction='raise', **options):
    super().__init__(stream, fieldnames, restval, extrasaction, **options)
    self.writer = _Writer(stream, **options)


def dict_rows(stream: IO[str]) -> Iterator[Dict[str, Any]]:
  """Yields the rows of a CSV file with a header, as written: unescaped."""
  for row in csv.DictReader(stream):
    yield {key: unescape(value) for key, value in row.items()}
