"""`python -m benchmarks --quick`: the benchmark itself works end to end.

No timing is asserted (timings belong in the benchmark's output, not in
tests); the report must be complete, well-formed and consistent (its
ratios are of the figures it prints), and the whole-DAG section must show a
re-run answered from the cache. One quick run of the core sections and the
time-to-accuracy section serves every test that reads a measured report;
the colour section, whose runs train on colour images, is rendered from
recorded figures.
"""

import re
import shutil
import subprocess
import sys

import pytest

from benchmarks import harness

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


def _median(cell: str) -> float:
  """The median of a 'median (min-max)' cell, or its one value."""
  return float(cell.split()[0].replace(',', ''))


def _assert_ratio(cell: str, numerator: float, denominator: float,
                  row: str) -> None:
  """A ratio cell ('2.5x' or '83%') is numerator / denominator, two figures
  the report prints to the unit: equal up to the rounding of all three."""
  if cell.endswith('%'):
    value, scale, half = float(cell[:-1]), 100, 0.5
  else:
    value, scale, half = float(cell.rstrip('x')), 1, 0.05
  low = scale * (numerator - 0.5) / (denominator + 0.5) - half
  high = scale * (numerator + 0.5) / (denominator - 0.5) + half
  assert low - 1e-9 <= value <= high + 1e-9, (row, cell, numerator,
                                                denominator)


@pytest.fixture(scope='module')
def quick(tmp_path_factory):
  """(The written report, stdout, the scratch space) of one
  `python -m benchmarks --quick --section core --section time-to-accuracy`
  on a tiny IDX dataset."""
  tmp_path = tmp_path_factory.mktemp('quick')
  datasets.write_idx_dataset(str(tmp_path / 'mnist'),
                             {'train': 2000, 't10k': 400})
  output = tmp_path / 'BENCHMARKS.md'
  result = subprocess.run(
      [sys.executable, '-m', 'benchmarks', '--quick', '--section', 'core',
       '--section', 'time-to-accuracy',
       '--data-dir', str(tmp_path / 'mnist'), '--output', str(output),
       '--work-dir', str(tmp_path / 'work')],
      cwd=PROJECT_DIR, capture_output=True, text=True, timeout=1200)
  print(result.stdout, result.stderr)
  assert result.returncode == 0
  return output.read_text(), result.stdout, tmp_path


def test_quick_run_prints_and_writes_every_block_with_its_goals(quick):
  report, stdout, tmp_path = quick
  head, block = report.split('<!-- section time-to-accuracy -->\n')
  assert head.rstrip('\n') in stdout  # Printed and written alike.
  assert block.split('<!-- end time-to-accuracy -->')[0] in stdout
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


def test_quick_conversion_and_input_tables_are_consistent(quick):
  report = quick[0]
  header, rows = _table(report, '## 1. Conversion')
  assert [r[0] for r in rows] == ['reference', 'ours', 'ours / reference']
  # The steady state is n/a when the tenth's median is not below the whole's.
  assert all(re.fullmatch(_NUMBER + r'( \(.*\))?( MB|x)?', c) or
             (i == 3 and c == 'n/a')
             for r in rows for i, c in enumerate(r)
             if i > 0), rows
  assert len(header) == 5

  header, rows = _table(report, '## 2. Input pipeline')
  assert header[2:5] == ['vs reference', 'vs bare read', 'CPU s per epoch']
  assert [r[0] for r in rows] == ['reference', 'ours, cold', 'bare read',
                                  'ours, cached']
  rate = {r[0]: _median(r[1]) for r in rows}
  for name, _, vs_reference, vs_bare, _ in rows:
    _assert_ratio(vs_reference, rate[name], rate['reference'], name)
    _assert_ratio(vs_bare, rate[name], rate['bare read'], name)
  cpu_per_epoch = {r[0]: _median(r[4]) for r in rows}
  # Where the cold epoch's CPU goes. Its "rest" is ours' total minus the
  # stages, so the row adds up whatever was measured: what can be wrong is
  # the measurements, each of which must be there and be a real figure,
  # and be the ones the table above shows.
  header, [cpu] = _table(report, '## 2. Input pipeline', which=1)
  assert header[:3] == ['reading (the bare read)', 'parse', 'transform']
  assert header[4] == 'ours, cold'
  assert all(re.fullmatch(r'-?\d+\.\d{3}', c) for c in cpu), cpu
  read, parse, transform, _, ours = (float(c) for c in cpu)
  assert parse > 0 and transform > 0 and read > 0 and ours > 0
  # The same medians as above (printed there to 2 decimals).
  assert read == pytest.approx(cpu_per_epoch['bare read'], abs=0.006)
  assert ours == pytest.approx(cpu_per_epoch['ours, cold'], abs=0.006)


def test_quick_training_and_whole_dag_with_a_cached_rerun(quick):
  report = quick[0]
  header, rows = _table(report, '## 3. Training')
  assert header[2] == 'vs in memory'
  assert [r[0] for r in rows] == ['ours', 'in memory']
  rate = {r[0]: _median(r[1]) for r in rows}
  for name, _, vs_memory in rows:
    _assert_ratio(vs_memory, rate[name], rate['in memory'], name)

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


def test_quick_time_to_accuracy_races_the_bare_script(quick):
  report = quick[0]
  heading = '## MNIST time to accuracy'
  assert re.search(r'CPU: .*; flags: .*The Trainer trains in '
                   r'(float32|mixed_bfloat16)', report)
  _, goals = _table(report, heading)
  assert len(goals) == 4
  assert all(verdict in ('met', '**not met**') for _, _, verdict in goals)
  # The checks ran and are priced: DataChecks at least.
  [checks] = [g for g in goals if g[0].startswith('the checks')]
  assert float(checks[1].split(' s,')[0]) > 0
  _, rows = _table(report, heading, which=1)
  script, pipeline = rows  # Quick mode: one seed.
  assert (script[0], pipeline[1]) == ('1', 'pipeline, defaults')
  # A script stopped short of the goal says its time is a lower bound.
  reached = float(script[6].rstrip('%')) >= 99.3
  assert script[1] == 'bare Keras script' + (
      '' if reached else ' (goal not reached: a lower bound)')
  _assert_ratio(pipeline[7], float(pipeline[2].removesuffix(' s')),
                float(script[2].removesuffix(' s')), 'ratio')
  assert re.fullmatch(r'\d+\.\d\d%', pipeline[6])
  header, components = _table(report, heading, which=2)
  assert header == ['component', 'defaults, seed 1']
  assert {'ImageExampleGen', 'Transform', 'Trainer', 'Evaluator',
          'whole run'} <= {r[0] for r in components}


def test_encodings_section_reports_every_encoding_and_keras(tmp_path):
  from benchmarks import encodings  # pylint: disable=g-import-not-at-top
  result = encodings.measure(str(tmp_path), per_class=3, repetitions=1,
                             batch_size=8, size=32, with_keras=True)
  report = encodings.SECTION.text({32: result}, harness.Context('CMD'))
  _, rows = _table(report, '## Encodings')
  assert [row[:2] for row in rows] == [
      ['32x32x3', 'raw'], ['32x32x3', 'png'], ['32x32x3', 'jpeg']]
  _, rows = _table(report, '## Encodings', which=1)
  assert [row[0] for row in rows] == [
      'keras', 'keras, cached', 'ours raw, cold', 'ours raw, cached',
      'ours png, cold', 'ours png, cached', 'ours jpeg, cold',
      'ours jpeg, cached']
  for row in rows:
    assert re.fullmatch(_NUMBER, row[1]) and re.fullmatch(_NUMBER, row[3])
    _assert_ratio(row[2], _median(row[1]), _median(rows[0][1]), row[0])
  assert '30 training images (3 per class)' in report


def test_photo_formats_decodes_the_same_photo_saved_as_each_format(capsys):
  from benchmarks import photo_formats  # pylint: disable=g-import-not-at-top
  assert photo_formats.main(['--width', '64', '--height', '48',
                             '--repeats', '1']) == 0
  out = capsys.readouterr().out
  rows = [line.split(' | ') for line in out.splitlines()
          if line.startswith('| ') and '---' not in line][1:]
  heic = shutil.which('heif-enc') is not None  # .ci/run installs it.
  assert [row[0].strip('| ') for row in rows] == [
      'JPEG (quality 90)', 'PNG', 'WebP (quality 80)', 'AVIF (quality 60)',
      *([photo_formats.HEIC] if heic else [])]
  assert ('HEIC not measured' in out) != heic
  for row in rows:
    assert re.fullmatch(r'\d+ ms', row[2]), row
  assert rows[0][3].strip('| ') == '1.0x'


def test_a_section_replaces_its_own_block_and_keeps_the_rest(tmp_path):
  path = str(tmp_path / 'BENCHMARKS.md')
  harness.write_head(path, '# Benchmarks\n\ncore figures 1\n')
  harness.write_section(path, 'shapes', '## Shapes\n\n84%\n')
  harness.write_section(path, 'encodings', '## Encodings\n\npng\n')
  with open(path, 'a') as f:  # Notes written by hand after the blocks.
    f.write('\n### Notes on encodings\n\nwhy png\n')
  # Run again: each replaces only its own part, in place.
  harness.write_section(path, 'shapes', '## Shapes\n\n97%\n')
  harness.write_head(path, '# Benchmarks\n\ncore figures 2\n')
  text = open(path).read()
  assert text.startswith('# Benchmarks\n\ncore figures 2\n')
  assert 'core figures 1' not in text and '84%' not in text
  assert text.index('97%') < text.index('## Encodings')
  assert text.count('<!-- section shapes -->') == 1
  assert text.count('<!-- end encodings -->') == 1
  assert text.endswith('### Notes on encodings\n\nwhy png\n')
  harness.write_section(path, 'scale', '## Scale\n')  # A new one.
  text = open(path).read()
  assert 'why png' in text and text.index('why png') < text.index('## Scale')


def _colour_variant(name, flags, trainer_s, epochs_run, kept_epoch, test):
  """A colour-time-to-accuracy variant as a quick run records it."""
  from benchmarks import colour_images  # pylint: disable=g-import-not-at-top
  stopping = {'enabled': True, 'stopped_early': False, 'epochs_run': epochs_run,
              'epochs_planned': 2, 'monitor': 'val_accuracy',
              'kept_epoch': kept_epoch, 'kept_value': 0.4, 'patience': 5,
              'split': 'eval'}
  return colour_images.Variant(
      name=name, flags=flags, whole_run_s=90.0, trainer_s=trainer_s,
      trainer_cpu_s=2 * trainer_s, load=(2.5, 3.0),
      epoch_s=[6.0, 4.0][:epochs_run], val_accuracy=[0.3, 0.4][:epochs_run],
      test_accuracy=test, precision='float32', output_dir='/scratch/x',
      plan={'train_records': 200, 'early_stopping': stopping})


def test_colour_time_to_accuracy_renders_goals_variants_and_the_bare_loop():
  from benchmarks import colour_images  # pylint: disable=g-import-not-at-top
  before = _colour_variant('before', ('--epochs', '2'), 30.0, 2, 2, 0.4)
  now = _colour_variant('now', ('--epochs', '2'), 12.0, 2, 2, 0.398)
  reference = {'train_records': 200, 'epoch_s': [5.0, 5.0], 'cpu_s': 8.0,
               'wall_s': 10.0, 'precision': 'float32', 'reached': False,
               'target': 0.4, 'load': (3.0, 3.5)}
  report = colour_images.COLOUR_TIME_TO_ACCURACY.text(
      {'variants': [before, now], 'reference': reference,
       'counts': (20, 4, 40)}, harness.Context('CMD', quick=True))
  heading = '## Colour time to accuracy'
  assert re.search(r'CPU flags: .*; the Trainer computed in float32', report)
  _, goals = _table(report, heading)
  assert [g[0].split(':')[0] for g in goals] == ['speed', 'time to accuracy']
  # The expected cells follow from the constructed variants above: the
  # speed compares 'now's upper-median epoch with the loop's, the time to
  # accuracy its Trainer seconds and test accuracy with 'before's.
  assert goals[0][1].startswith('83% (33.3 against 40.0 images/s')
  assert goals[0][2] == '**not met**'
  assert goals[1][1].startswith('39.8% against 40.0%; Trainer 40% of')
  assert goals[1][2] == 'met'
  _, variants = _table(report, heading, which=1)
  assert [v[0] for v in variants] == ['before', 'now']
  assert [v[2] for v in variants] == ['2 (2)', '2 (2)']
  [keras_row] = _table(report, heading, which=2)[1]
  assert keras_row[:4] == ['float32', '2', '40.0%', 'no']
  assert 'Now: trained all 2 of 2 epochs; kept the weights of epoch 2' in report


def test_time_to_accuracy_prices_the_checks_by_their_own_seconds():
  from benchmarks import time_to_accuracy as tta  # pylint: disable=g-import-not-at-top

  def run(seed, wall, label_check, scoring):
    return tta.PipelineRun(
        variant=tta.DEFAULTS, seed=seed, wall_s=wall,
        components={'DataChecks': 2.0, 'Trainer': 30.0,
                    'LabelCheck': label_check},
        epoch_s=[10.0, 10.0], val_accuracy=[0.99, 0.994], test_accuracy=0.994,
        label_scoring_s=scoring)

  scripts = [tta.ScriptRun(seed=s, wall_s=200.0, epoch_s=[40.0] * 5,
                           test_accuracy=[0.993]) for s in (1, 2)]
  # A run's cost is DataChecks', LabelCheck's and the Trainer's scoring
  # seconds, its share that over the run's wall time less them (the goal's)
  # and beside it over the whole run; the cell holds the medians of the two
  # runs below (6/60 and 8/72; 6/66 and 8/80).
  pipelines = [run(1, 66.0, 3.0, 1.0), run(2, 80.0, 3.0, 3.0)]
  report = tta.SECTION.text((scripts, pipelines), harness.Context('CMD'))
  _, goals = _table(report, '## MNIST time to accuracy')
  [checks] = [g for g in goals if g[0].startswith('the checks')]
  assert checks[1:] == ['7.0 s, 10.6% (9.5% of the whole run)', '**not met**']
