"""The run report (`inspect report`, OUT/report.html) of real tiny runs,
checked in its HTML and as a real headless Chromium draws it.

The runs are tests/tiny_runs.py's: a full run and its cached re-run, and a
run the ValidationGate stopped; every local run writes its report itself.
"""

import csv
import os
import re

import pytest

from inspector import charts
from inspector import report
from inspector import report_page
import local_runner
from metadata import local_store
from metadata import queries
from modules.training import devices as device_plans
from pipeline import constants
from runs import run_report
from tests import browser
from tests.tiny_runs import ACCURACY_THRESHOLD
from tests.tiny_runs import CLASS_RECORDS
from tests.tiny_runs import DATA_AND_TRAINING
from tests.tiny_runs import EPOCHS
from tests.tiny_runs import EVAL_RECORDS
from tests.tiny_runs import inspect
from tests.tiny_runs import inspect_json
from tests.tiny_runs import SPLIT_RECORDS

CLASSES = [str(i) for i in range(10)]


def _assert_self_contained(page):
  """Nothing the page shows comes from elsewhere: no URL, no script."""
  assert 'http:' not in page and 'https:' not in page
  assert '<script' not in page and '<link' not in page
  assert '@import' not in page
  references = (re.findall(r'\b(?:src|href)="([^"]*)"', page) +
                re.findall(r'url\(([^)]*)\)', page))
  for reference in references:
    # Pictures inline, links and SVG markers within the page; and the list
    # of input files, beside it.
    assert reference.startswith(('data:', '#')) or (
        reference.endswith(report.FILES_LIST_SUFFIX) and
        '/' not in reference), reference


def _assert_drawn(page_path, png_path):
  """Chromium draws the page: a laptop-sized picture, not blank (last in a
  test: without Chromium the rest of the test still runs)."""
  picture = browser.screenshot(str(page_path), str(png_path))
  assert picture.size == browser.WINDOW
  # Text, charts, the sample grid and the confusion matrix: many colours.
  assert browser.distinct_colours(picture) > 500
  return picture


def _text(html):
  return re.sub(r'\s+', ' ', re.sub(r'<[^>]+>', ' ', html)).strip()


def _rows(table):
  """The cells' text of each row of an HTML table."""
  return [[_text(cell) for cell in re.findall(r'<td[^>]*>(.*?)</td>', row,
                                               re.S)]
          for row in re.findall(r'<tr[^>]*>(.*?)</tr>', table, re.S)]


def _nodes(page):
  """component -> (state, cache hit) as the pipeline's table shows them."""
  table = page.split('id="pipeline"', 1)[1].split('</table>', 1)[0]
  return {row[0]: (row[1], row[3] == 'yes') for row in _rows(table) if row}


def _chart_texts(page, title):
  """The words and numbers of the chart under the heading `title`."""
  chart = page.split(f'<h3>{title}</h3>', 1)[1].split('</svg>', 1)[0]
  return re.findall(r'<text[^>]*>([^<]*)</text>', chart)


def _curve(page, metric):
  """The legend and the epochs of the `metric` per epoch chart."""
  texts = _chart_texts(page, f'{metric} per epoch')
  return ({t for t in texts if t in ('train', 'validation')},
          [int(t) for t in texts if t.isdigit() and int(t) <= EPOCHS])


# ------------------------------------------------------------- full run --


def test_the_report_of_a_run_that_trained_and_pushed(two_runs, first_report,
                                                     tmp_path):
  out = two_runs / 'out'
  facts, page_path = first_report  # `inspect report -2 --html first.html`.
  page = page_path.read_text()
  _assert_self_contained(page)

  # The outcome, at the top: blessed and pushed, and why.
  assert facts['outcome']['kind'] == 'pushed'
  [pushed] = [a for a in inspect_json(out, 'artifacts', '--type',
                                      'PushedModel')
              if a['run'] == facts['run']['id']]
  destination = pushed['properties']['pushed_destination']
  top = page.split('<nav>', 1)[0]
  assert 'outcome-pushed' in top and f'pushed to {destination}' in top
  assert f'at least the threshold {ACCURACY_THRESHOLD}' in top

  # The DAG: every component ran, none from the cache.
  nodes = _nodes(page)
  assert set(nodes) == set(DATA_AND_TRAINING) | {
      'latest_blessed_model_resolver', 'Evaluator', 'LabelCheck', 'Pusher'}
  assert all(state == 'COMPLETE' and not cached
             for state, cached in nodes.values())
  trainer = next(n for n in facts['dag']['nodes'] if n['node'] == 'Trainer')
  assert trainer['seconds'] > 1

  # The data: split counts, class balance, samples, statistics, anomalies.
  data = facts['data']
  assert data['examples']['properties']['splits'] == SPLIT_RECORDS
  assert data['class_balance']['classes'] == CLASSES
  assert data['class_balance']['splits'] == CLASS_RECORDS
  balance = page.split('<h3>Class balance</h3>', 1)[1].split('</table>')[0]
  assert _rows(balance)[1:] == [
      [c, *(str(CLASS_RECORDS[s][i]) for s in ('train', 'validation', 'eval'))]
      for i, c in enumerate(CLASSES)]
  bars = _chart_texts(page, 'Class balance')
  assert {'train', 'validation', 'eval', *CLASSES} <= set(bars)
  # Each bar's count above it (and the axis's ticks).
  for count in CLASS_RECORDS['train']:
    assert str(count) in bars
  assert data['samples']['counts'] == {c: report.SAMPLES_PER_CLASS
                                       for c in CLASSES}
  assert 'alt="sample images per class" src="data:image/png;base64,' in page
  features = {f['feature']: f for f in
              data['statistics']['splits']['train']['features']}
  assert (features['label']['min'], features['label']['max']) == (0, 9)
  assert f'{SPLIT_RECORDS["train"]} records' in page
  assert data['anomalies']['splits'] == {'train': [], 'validation': [],
                                         'eval': []}
  assert 'split <b>train</b>: <span class="ok">none</span>' in page

  # Training: a dot per epoch on each curve, the settings, the devices.
  training = facts['training']
  assert training['curves']['epochs'] == EPOCHS
  for metric in ('Loss', 'Accuracy'):
    assert _curve(page, metric) == ({'train', 'validation'},
                                    list(range(1, EPOCHS + 1)))
  assert training['settings']['training']['batch_size'] == 32
  assert training['settings']['train_steps'] == 60
  assert training['device_plan']['strategy'] == 'default'  # A CPU machine.
  assert 'training on CPU' in page
  # One precision, the one the Trainer used (its device plan).
  devices = page.split('<h3>Devices</h3>', 1)[1].split('</table>', 1)[0]
  precision, _ = device_plans.cpu_precision(device_plans.cpu_flags())
  assert ['precision', precision] in _rows(devices)
  assert 'mixed_precision' not in page
  # Which split decided what: validation chose the epoch, eval nothing.
  assert training['splits']['records'] == {
      'train': SPLIT_RECORDS['train'],
      'validation': SPLIT_RECORDS['validation']}
  assert (f'decided on validation ({SPLIT_RECORDS["validation"]} records)'
          in page)

  # Evaluation: accuracy, threshold, baseline (none: the first model),
  # blessing, confusion matrix, push.
  verdict = facts['evaluation']['verdict']
  assert verdict['blessed'] is True and verdict['baseline'] is None
  [check] = verdict['checks']
  assert check['metric'] == 'sparse_categorical_accuracy'
  assert check['lower_bound'] == float(ACCURACY_THRESHOLD)
  assert check['value'] >= check['lower_bound']
  assert f'threshold ≥ {ACCURACY_THRESHOLD}' in page
  assert '<span class="ok">blessed</span>' in page
  confusion = facts['evaluation']['confusion']
  assert confusion['examples_count'] == EVAL_RECORDS
  assert confusion['accuracy'] == pytest.approx(check['value'], abs=1e-6)
  # The chart's numbers: a count per cell, and the class names (digits
  # here) on both axes.
  drawn = [int(t) for t in _chart_texts(page, 'Confusion matrix')
           if t.isdigit()]
  assert sorted(drawn) == sorted(sum(confusion['matrix'], []) +
                                 [int(c) for c in CLASSES] * 2)
  assert sum(map(sum, confusion['matrix'])) == EVAL_RECORDS
  recall = page.split('precision and recall per class', 1)[1]
  assert _rows(recall.split('</table>', 1)[0])[1][0] == CLASSES[0]
  assert facts['evaluation']['push']['destination'] == destination
  # On-device: both TensorFlow Lite files with their size and accuracy,
  # measured on the same eval records as the SavedModel.
  lite = facts['evaluation']['on_device']
  assert lite['eval_records'] == EVAL_RECORDS
  table = page.split('On-device (TensorFlow Lite)', 1)[1].split('</table>')[0]
  rows = {row[0]: row for row in _rows(table)[1:]}
  assert set(rows) == {m['file'] for m in lite['models'].values()} == {
      'model_float32.tflite', 'model_dynamic_range.tflite'}
  for m in lite['models'].values():
    assert m['bytes'] > 0 and f'{m["bytes"]:,} B' == rows[m['file']][1]
  assert lite['models']['float32']['accuracy'] == pytest.approx(
      lite['saved_model_accuracy'], abs=0.005)

  # Lineage: from the PushedModel back to the input files.
  assert facts['lineage']['root'] == {'id': pushed['id'],
                                      'type': 'PushedModel'}
  lineage = page.split('id="lineage"', 1)[1]
  for name in ('train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz',
               't10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz',
               '← Pusher', '← Trainer', '← ImageExampleGen'):
    assert name in lineage, name
  # Every input file, in the CSV beside the page that the page links.
  assert '<a href="first-files.csv">first-files.csv</a>' in lineage
  with open(page_path.parent / 'first-files.csv', newline='') as f:
    listed = list(csv.DictReader(f))
  assert list(listed[0]) == list(report.FILES_LIST_COLUMNS)
  assert sorted((row['split'], os.path.basename(row['path']))
                for row in listed) == [
      ('eval', 't10k-images-idx3-ubyte.gz'),
      ('eval', 't10k-labels-idx1-ubyte.gz'),
      ('train', 'train-images-idx3-ubyte.gz'),
      ('train', 'train-labels-idx1-ubyte.gz')]
  for row in listed:
    assert int(row['bytes']) == os.path.getsize(row['path'])
    assert row['modified'].endswith('+00:00')

  # The first run of the store has no history to draw.
  assert 'id="history"' not in page and '#history' not in page

  # Nothing failed to build.
  assert 'Could not build' not in page
  _assert_drawn(page_path, tmp_path / 'first.png')


def test_every_run_writes_its_report_and_names_it(two_runs, tmp_path):
  out = two_runs / 'out'
  page_path = out / 'report.html'
  for number in (1, 2):
    assert f'Report: {page_path}' in (two_runs / f'run-{number}.out'
                                      ).read_text()
  assert not [f for f in os.listdir(out) if f.endswith('.tmp')]
  assert (out / 'report-files.csv').is_file()
  page = page_path.read_text()
  _assert_self_contained(page)

  # The latest run is the cached re-run: its report shows what it reused.
  runs = inspect_json(out, 'runs')
  assert f'run {runs[0]["run"]}' in page
  nodes = _nodes(page)
  assert all(nodes[n] == ('CACHED', True) for n in DATA_AND_TRAINING)
  assert f'reused from run {runs[1]["run"]}' in page
  assert 'trained by run ' + runs[1]['run'] in page
  assert _curve(page, 'Loss')[1] == list(range(1, EPOCHS + 1))
  # Its baseline, the last blessed model, was the model itself: evaluated
  # alone, as the page says; the Pusher found it already served.
  assert ('Baseline: this model itself, blessed before: evaluated alone, '
          'against the threshold.') in page
  assert ': at least the threshold 0.3, a fixed threshold' in page
  assert 'and the baseline is this model itself, blessed before' in page
  assert 'outcome-served' in page and 'not pushed again' in page
  # From the second run on, the history: both runs' accuracy, oldest left,
  # the first one's push marked, and the table `inspector history` prints.
  texts = _chart_texts(page, 'Accuracy per run')
  assert {'chosen model', 'served model', 'blessed', 'pushed'} <= set(texts)
  assert 'not blessed' not in texts
  assert texts.count('span 0') == 2
  section = page.split('id="history"', 1)[1].split('</section>', 1)[0]
  table = _rows(section.split('<table', 1)[1])
  assert [row[0] for row in table if row] == [runs[0]['run'], runs[1]['run']]
  assert 'Could not build' not in page
  _assert_drawn(page_path, tmp_path / 'latest.png')


def test_a_part_that_cannot_be_built_says_why(two_runs, tmp_path):
  # The Trainer's TensorBoard logs gone: the curves and device plan say so,
  # the log (stderr for the CLI) has the traceback, the rest is there.
  out = two_runs / 'out'
  [model_run] = inspect_json(out, 'artifacts', '--type', 'ModelRun')
  moved = model_run['uri'] + '.moved'
  os.rename(model_run['uri'], moved)
  try:
    result = inspect(out, 'report', 'latest', '--html',
                     str(tmp_path / 'r.html'))
  finally:
    os.rename(moved, model_run['uri'])
  assert 'Traceback' in result.stderr
  assert 'the training curves could not be built' in result.stderr
  page = (tmp_path / 'r.html').read_text()
  assert page.count('Could not build this part') == 2
  assert 'the training curves: ModelRun' in page
  assert 'the device plan:' in page
  assert '<span class="ok">blessed</span>' in page  # The rest is there.


# ----------------------------------------------------------- gated run --


def test_a_run_stopped_at_the_gate_gets_a_report_saying_why(stopped_run,
                                                           tmp_path):
  page_path = stopped_run / 'report.html'
  assert f'Report: {page_path}' in (stopped_run.parent / 'run.out'
                                    ).read_text()
  page = page_path.read_text()
  _assert_self_contained(page)

  top = page.split('<nav>', 1)[0]
  assert 'outcome-stopped' in top and 'Stopped at the ValidationGate' in top
  for split in ('train', 'eval'):
    for feature in ('height', 'width'):
      assert f'{split}: {feature}: Out-of-range values' in top

  nodes = _nodes(page)
  assert nodes['ValidationGate'][0] == 'FAILED'
  assert nodes['ImportSchemaGen'][0] == 'COMPLETE'  # --schema
  assert 'SchemaGen' not in nodes
  for node in ('Transform', 'Trainer', 'Evaluator', 'Pusher'):
    assert nodes[node][0] == report.NOT_RUN
  for section in ('training', 'evaluation'):
    part = page.split(f'id="{section}"', 1)[1].split('</section>', 1)[0]
    assert '<b>Not run.</b>' in part
    assert 'the ValidationGate stopped the run' in part
  # The data it stopped on is all there.
  data = page.split('id="data"', 1)[1].split('</section>', 1)[0]
  assert 'sample images per class' in data and '<svg' in data
  assert '<span class="bad">2 anomalies</span>' in data
  assert 'Could not build' not in page
  lineage = page.split('id="lineage"', 1)[1]
  assert 'ExampleAnomalies' in lineage
  assert 'train-images-idx3-ubyte.gz' in lineage
  _assert_drawn(page_path, tmp_path / 'stopped.png')


def test_a_report_that_cannot_be_written_does_not_fail_the_run(tmp_path,
                                                               caplog):
  # What local_runner.py prints instead of the report's path: why not; the
  # log has the traceback, and no report (or half of one) is left.
  # A SQLite store in an output directory that has none.
  line = run_report.write_report(local_store.for_run(str(tmp_path), None),
                                 str(tmp_path), constants.PIPELINE_NAME)
  assert line.startswith('Report: not written (InspectError: ')
  assert 'no ML Metadata store' in line
  assert 'Traceback' in caplog.text
  assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------ DAG --


@pytest.mark.parametrize('schema', [None, constants.MNIST_SCHEMA])
def test_the_report_knows_the_pipelines_dag(tmp_path, schema):
  # A run that stopped after its first components: the report still draws
  # the whole DAG pipeline/pipeline.py builds for the flags it ran with.
  args = local_runner.make_parser().parse_args(
      ['--data-dir', str(tmp_path), '--output-dir', str(tmp_path / 'out')]
      + (['--schema', schema] if schema else []))
  built = local_runner.build_pipeline(args).components
  ran = [queries.Execution(
      id=i, node=c.id, type='', state='COMPLETE', started_ms=0, ended_ms=0,
      run='run', pipeline=constants.PIPELINE_NAME, properties={})
         for i, c in enumerate(built[:2])]
  dag = report.pipeline_dag(queries.Run('run', constants.PIPELINE_NAME, ran))
  assert dag == {c.id: sorted(u.id for u in c.upstream_nodes) for c in built}


def test_charts_are_the_same_for_the_same_facts():
  draw = lambda: charts.lines(2, {'train': [0.5, 0.25]}, 'loss')
  assert draw() == draw()
  assert 'http' not in draw()


def test_a_section_that_cannot_be_drawn_says_so(stopped_run, tmp_path,
                                                caplog):
  # Facts of a shape the page does not expect (here: a training section
  # without its parts) break only that section of the page, and the log
  # has the traceback.
  facts = inspect_json(stopped_run, 'report', '--html',
                       str(tmp_path / 'r.html'))
  facts['training'] = {'status': 'ok'}
  page = report_page.page(facts)
  training = page.split('id="training"', 1)[1].split('</section>', 1)[0]
  assert 'Could not build this part' in training
  assert 'drawing the section' in training
  assert 'id="lineage"' in page and 'ExampleAnomalies' in page
  assert 'the Training section could not be drawn' in caplog.text
  assert 'Traceback' in caplog.text
