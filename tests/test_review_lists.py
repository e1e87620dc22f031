"""The CSV lists a person opens (docs/review-lists.md) hold no cell a
spreadsheet runs as a formula, whatever the class folders and files are
named; numbers stay numbers, and the project reads back what it wrote."""

import csv
import os
import re
from typing import List

from records import csv_cells

# Names a user had: OWASP's leading characters, a formula after a space, a
# value that is its own escape mark, and one that splits the line at a CR.
DANGEROUS = ('=HYPERLINK("http:evil","x")', '+cmd', '-2+3', '@SUM(A1)',
             '\tTAB', ' =1+1', "'quoted", "''", '\r=CR')
# Text a spreadsheet reads as a number, never as a formula.
NUMBERS = ('-0.5', '+3', '-1e-05', '0')
_NUMBER = re.compile(r'[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?')


def formula_cells(path) -> List[str]:
  """The cells of the CSV file at `path` a spreadsheet would run: those
  starting with = + - @ (after any whitespace) that are no number, or with
  a tab or carriage return."""
  # Lines end at a bare CR too, as in a spreadsheet.
  with open(path, newline='', encoding='utf-8') as f:
    cells = [cell for row in csv.reader(f) for cell in row]
  return [cell for cell in cells
          if cell[:1] in ('\t', '\r') or (
              cell.lstrip()[:1] in ('=', '+', '-', '@')
              and not _NUMBER.fullmatch(cell))]


def test_a_cell_a_spreadsheet_runs_is_marked_and_read_back(tmp_path):
  path = tmp_path / 'cells.csv'
  values = DANGEROUS + NUMBERS + ('plain', 'a=b', '')
  with open(path, 'w', newline='', encoding='utf-8') as f:
    rows = csv_cells.writer(f, lineterminator='\n')
    rows.writerow(['name', 'number'])
    rows.writerows([value, -0.25] for value in values)
  assert formula_cells(path) == []
  with open(path, newline='', encoding='utf-8') as f:
    written = list(csv.DictReader(f))
    f.seek(0)
    read = list(csv_cells.dict_rows(f))
  # A spreadsheet shows the text after the mark; numbers are left alone.
  assert [r['name'] for r in written] == [
      "'" + v for v in DANGEROUS] + list(NUMBERS) + ['plain', 'a=b', '']
  assert {r['number'] for r in written} == {'-0.25'}
  assert [r['name'] for r in read] == list(values)
