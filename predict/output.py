"""Prediction rows as CSV or JSON Lines, written as they come.

The columns: docs/serving.md#batch-predictions-image-pipeline-predict.
"""

import json
from typing import IO, List, Optional, Sequence, Tuple

from records import csv_cells

FORMATS = ('csv', 'jsonl')

Ranked = Sequence[Tuple[str, float]]  # (class name, probability), best first.


def format_for(path: Optional[str]) -> str:
  """Returns the format a file name asks for.

  That is JSON Lines for .jsonl and .json, CSV otherwise and on stdout.
  """
  return 'jsonl' if path and path.lower().endswith(('.jsonl', '.json')) else 'csv'


class Writer:
  """Writes prediction rows to a stream in one of FORMATS."""

  def __init__(self, stream: IO[str], format_: str, top_k: int):
    self._stream, self._format, self._top_k = stream, format_, top_k
    if format_ == 'csv':
      self._csv = csv_cells.writer(stream, lineterminator='\n')
      header: List[str] = ['path', 'class', 'probability']
      for rank in range(2, top_k + 1):
        header += [f'class_{rank}', f'probability_{rank}']
      self._csv.writerow(header + ['error'])

  def row(self, path: str, ranked: Ranked = (), error: str = '') -> None:
    """Writes the row of one file, with its ranked classes or its error.

    Args:
      path: the image file, as its argument named it.
      ranked: (class name, probability) pairs, best first, top_k of them
        at most.
      error: why the file has no prediction; '' when it has one.
    """
    if self._format == 'jsonl':
      top = [{'class': name, 'probability': round(p, 6)} for name, p in ranked]
      self._stream.write(json.dumps({
          'path': path,
          'class': top[0]['class'] if top else None,
          'probability': top[0]['probability'] if top else None,
          'top_k': top, 'error': error or None}) + '\n')
      return
    cells = [path]
    for rank in range(self._top_k):
      if rank < len(ranked):
        cells += [ranked[rank][0], f'{ranked[rank][1]:.6f}']
      else:
        cells += ['', '']
    self._csv.writerow(cells + [error])
