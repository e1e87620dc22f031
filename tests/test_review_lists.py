"""The CSV lists a person opens (docs/review-lists.md) hold no cell a
spreadsheet runs as a formula, whatever the class folders and files are
named; numbers stay numbers, and the project reads back what it wrote."""

import csv
import json
import re
from typing import List

import numpy as np
import tensorflow as tf

from components.label_check import executor as executor_lib
from components.label_check import scoring as scoring_lib
from inspector import history
from inspector import labels
from records import csv_cells
from records import features
from records import label_check_results

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


def _split_of(directory, sources):
  """One shard of records named by `sources`; returns the split's folder."""
  geometry = features.ImageGeometry(height=2, width=2, channels=1)
  split_uri = directory / 'Split-eval'
  split_uri.mkdir(parents=True)
  with tf.io.TFRecordWriter(
      str(split_uri / 'data_tfrecord-00000-of-00001.gz'), 'GZIP') as writer:
    for source in sources:
      writer.write(features.make_example(bytes(4), geometry, 0,
                                         source=source))
  return split_uri


def test_the_suspects_lists_escape_the_class_and_file_names(tmp_path):
  # LabelCheck's suspects.csv and `inspector labels --csv`, on a class
  # folder and files named to run in a spreadsheet.
  classes = ['=HYPERLINK("http:evil","x")', '+cmd']
  sources = [f'{classes[0]}/{name}.png' for name in DANGEROUS] + list(
      DANGEROUS)
  split_uri = _split_of(tmp_path, sources)
  count = len(sources)
  probabilities = np.tile([[0.1, 0.9]], (count, 1))
  rows, _ = scoring_lib.suspects_rows(
      'eval', str(split_uri), np.arange(count), np.zeros(count, np.int64),
      probabilities, classes, executor_lib.TRAINING_RUN,
      averaged_over_run=True)
  assert sorted(r['source'] for r in rows) == sorted(sources)
  label_check_results.write_suspects(str(tmp_path / 'suspects'), rows)
  review = tmp_path / 'review.csv'
  labels.write_csv(str(review), rows + [{**rows[0], 'score': -0.5}])
  for path in (tmp_path / 'suspects' / label_check_results.SUSPECTS_CSV_FILE,
               review):
    assert formula_cells(path) == [], path
    with open(path, newline='', encoding='utf-8') as f:
      read = list(csv_cells.dict_rows(f))
    assert [r['source'] for r in read[:count]] == [r['source'] for r in rows]
    assert {r['given_name'] for r in read} == {classes[0]}
    assert {r['suggested_name'] for r in read} == {classes[1]}
    assert [float(r['score']) for r in read[:count]] == [r['score']
                                                        for r in rows]
  assert read[-1]['score'] == '-0.5'  # A number, as a spreadsheet reads it.
  # The JSON holds the names as they are.
  assert label_check_results.read_suspects(str(tmp_path / 'suspects')) == rows
  with open(tmp_path / 'suspects' / label_check_results.SUSPECTS_FILE) as f:
    assert json.load(f)[0]['given_name'] == classes[0]


def test_the_history_list_escapes_what_it_is_given(tmp_path):
  path = tmp_path / 'runs.csv'
  history.write_csv(str(path), [{
      'run': '=1+1', 'started': '@now', 'spans': [2, 3],
      'records': {'train': 10, 'eval': 4}, 'accuracy': 0.5,
      'label_drift': -0.25}])
  assert formula_cells(path) == []
  with open(path, newline='', encoding='utf-8') as f:
    [row] = csv_cells.dict_rows(f)
  assert (row['run'], row['started'], row['records_eval']) == (
      '=1+1', '@now', '4')
  assert row['label_drift'] == '-0.25'
