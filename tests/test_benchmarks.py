"""`python -m benchmarks --quick`: the benchmark itself works end to end.

No timing is asserted (timings belong in the benchmark's output, not in
tests); the report must be complete and well-formed, and the whole-DAG
section must show a re-run answered from the cache.
"""

import re
import subprocess
import sys

from tests import datasets
from tests.local_run import PROJECT_DIR

_NUMBER = r'[\d,.]+'


def _table(report: str, heading: str, which: int = 0):
  """(header cells, row cells) of the `which`th table in the section
  `heading` opens."""
  tables, lines = [], []
  for line in report.split(heading, 1)[1].splitlines()[1:] + ['']:
    if line.startswith('#'):
      break
    if line.startswith('|'):
      lines.append([c.strip() for c in line.strip('|').split('|')])
    elif lines:
      tables.append(lines)
      lines = []
  lines = tables[which]
  assert lines[1][0].startswith('---')
  return lines[0], lines[2:]


def test_quick_benchmark_writes_a_complete_report(tmp_path):
  datasets.write_idx_dataset(str(tmp_path / 'mnist'),
                             {'train': 2000, 't10k': 400})
  output = tmp_path / 'BENCHMARKS.md'
  result = subprocess.run(
      [sys.executable, '-m', 'benchmarks', '--quick',
       '--data-dir', str(tmp_path / 'mnist'), '--output', str(output),
       '--work-dir', str(tmp_path / 'work')],
      cwd=PROJECT_DIR, capture_output=True, text=True, timeout=900)
  print(result.stdout, result.stderr)
  assert result.returncode == 0
  report = output.read_text()
  assert report in result.stdout  # Printed and written alike.
  assert report.startswith('# Benchmarks (quick mode')
  assert re.search(r'\d+ CPU cores', report)
  assert 'python -m benchmarks --quick' in report
  # Paths inside the scratch space stay out of the report.
  assert str(tmp_path / 'work') + '/' not in report

  _, goals = _table(report, '## Goals')
  assert len(goals) == 6
  for goal, measured, verdict in goals:
    assert re.search(r'\d', measured), goal
    assert verdict in ('met', '**not met**'), goal

  header, rows = _table(report, '## 1. Conversion')
  assert [r[0] for r in rows] == ['reference', 'ours', 'ours / reference']
  assert all(re.fullmatch(_NUMBER + r'( \(.*\))?( MB|x)?', c)
             for r in rows for c in r[1:]), rows
  assert len(header) == 5

  _, rows = _table(report, '## 2. Input pipeline')
  assert [r[0] for r in rows] == ['reference', 'ours, cold', 'bare read',
                                  'ours, cached']
  assert [r[3] for r in rows][2] == '100%'
  # Where the cold epoch's CPU goes: the stages add up to ours' total.
  header, [cpu] = _table(report, '## 2. Input pipeline', which=1)
  assert header[:3] == ['reading (the bare read)', 'parse', 'transform']
  read, parse, transform, rest, ours = (float(c) for c in cpu)
  assert parse > 0 and transform > 0 and read > 0
  assert abs(read + parse + transform + rest - ours) < 0.003

  _, rows = _table(report, '## 3. Training')
  assert [r[0] for r in rows] == ['ours', 'in memory']
  assert rows[1][2] == '100%'

  _, rows = _table(report, '## 4. Whole DAG')
  by_name = {r[0]: r for r in rows}
  for component in ('ImageExampleGen', 'StatisticsGen', 'SchemaGen',
                    'Transform', 'Trainer', 'Evaluator', 'Pusher'):
    assert re.fullmatch(_NUMBER, by_name[component][1]), component
  # Nothing changed between the runs: the data half and training are reused.
  for component in ('ImageExampleGen', 'StatisticsGen', 'Transform',
                    'Trainer'):
    assert by_name[component][3] == 'yes', component
  assert rows[-1][0] == 'whole run'


def test_folder_input_benchmark_reports_every_variant(tmp_path):
  from benchmarks import folder_input  # pylint: disable=g-import-not-at-top
  report = folder_input.run(str(tmp_path), per_class=3, repetitions=1,
                            batch_size=8)
  _, rows = _table(report, '## Image folders at 96x96x3')
  assert [row[0] for row in rows] == [
      'keras', 'keras, cached', 'ours raw, cold', 'ours raw, cached',
      'ours png, cold', 'ours png, cached']
  for row in rows:
    assert re.fullmatch(_NUMBER, row[1]) and re.fullmatch(_NUMBER, row[2])
  assert '30 training images' in report
