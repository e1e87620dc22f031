"""The inspection CLI against real ML Metadata stores made by real runs.

One store holds two runs of the whole DAG on tiny data (the second reuses the
data half and the Trainer from the cache); a second store holds a run that
the ValidationGate stopped (tests/tiny_runs.py makes them). Every subcommand
runs as a user runs it: `python -m inspector ...` in a subprocess.
"""

import io
import json
import os
import subprocess
import sys

from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2
import numpy as np
from PIL import Image
import pytest
import rich.console

from inspector import lineage
from metadata import queries
from inspector import render
from inspector import report_page
from pipeline import constants
from records import features
from tests import examples_io
from tests import local_run
from tests import mlmd
from tests import tiny_runs
from tests.tiny_runs import DATA_AND_TRAINING
from tests.tiny_runs import EVAL_RECORDS
from tests.tiny_runs import inspect
from tests.tiny_runs import inspect_json


def _run_names(out_dir):
  store = mlmd.open_store(str(out_dir))
  return [c.name for c in sorted(store.get_contexts_by_type('pipeline_run'),
                                 key=lambda c: c.id)]


# ------------------------------------------------------------------ runs --


def test_runs_newest_first_with_the_cached_components_marked(two_runs):
  out = two_runs / 'out'
  first, second = _run_names(out)
  runs = inspect_json(out, 'runs')
  assert [r['run'] for r in runs] == [second, first]
  newest, oldest = runs
  for run in runs:
    assert run['state'] == 'COMPLETE'
    assert run['pipeline'] == constants.PIPELINE_NAME
    assert run['started'] <= run['ended'] and run['seconds'] >= 0
  states = {c['node']: c for c in oldest['components']}
  assert all(states[n]['state'] == 'COMPLETE' and not states[n]['cached']
             for n in [*DATA_AND_TRAINING, 'Evaluator', 'LabelCheck',
                       'Pusher'])
  # Its duration is its execution's, as ML Metadata recorded it.
  [trainer] = mlmd.open_store(str(out)).get_executions_by_id(
      [states['Trainer']['execution_id']])
  assert states['Trainer']['seconds'] == (
      trainer.last_update_time_since_epoch -
      trainer.create_time_since_epoch) / 1000
  assert states['Trainer']['seconds'] > 0
  states = {c['node']: c for c in newest['components']}
  assert all(states[n]['state'] == 'CACHED' and states[n]['cached']
             for n in DATA_AND_TRAINING)
  assert newest['states']['CACHED'] >= len(DATA_AND_TRAINING)

  text = inspect(out, 'runs').stdout
  assert text.index(second) < text.index(first)
  assert 'CACHED' in text
  # The flags also work before the subcommand, and --limit keeps the newest.
  result = subprocess.run(
      [sys.executable, '-m', 'inspector', '--json', '--store',
       str(out / constants.METADATA_DB_NAME), 'runs', '--limit', '1'],
      capture_output=True, text=True, cwd=local_run.PROJECT_DIR, check=True)
  assert [r['run'] for r in json.loads(result.stdout)] == [second]


def test_runs_shows_where_a_run_stopped(stopped_run):
  [run] = inspect_json(stopped_run, 'runs')
  assert run['state'] == 'FAILED'
  states = {c['node']: c['state'] for c in run['components']}
  assert states['ExampleValidator'] == 'COMPLETE'
  assert states['ValidationGate'] == 'FAILED'
  assert 'Trainer' not in states


# ------------------------------------------------------------- artifacts --


def test_artifacts_with_their_key_properties(two_runs):
  out = two_runs / 'out'
  first, second = _run_names(out)
  [examples] = inspect_json(out, 'artifacts', '--type', 'Examples')
  assert examples['producer'] == 'ImageExampleGen'
  assert examples['run'] == first and examples['reused_by_runs'] == [second]
  assert examples['properties']['splits'] == tiny_runs.SPLIT_RECORDS
  assert examples['properties']['class_names'] == [str(i) for i in range(10)]
  assert os.path.isdir(examples['uri'])

  blessings = inspect_json(out, 'artifacts', '--type', 'ModelBlessing')
  assert blessings and all(b['properties']['blessed'] for b in blessings)
  for pushed in inspect_json(out, 'artifacts', '--type', 'PushedModel'):
    assert pushed['properties']['pushed']
    destination = pushed['properties']['pushed_destination']
    assert destination.startswith(str(out / 'serving_model') + os.sep)
    assert os.path.isdir(destination)

  # A run's artifacts include what it reused from the cache.
  latest = inspect_json(out, 'artifacts', '--run', 'latest')
  assert {a['type'] for a in latest} >= {
      'Examples', 'ExampleStatistics', 'Schema', 'ExampleAnomalies',
      'TransformGraph', 'Model'}
  assert examples['id'] in {a['id'] for a in latest}
  assert inspect_json(out, 'artifacts', '--run', '-2', '--type', 'Model') == \
      inspect_json(out, 'artifacts', '--run', second, '--type', 'Model')

  text = inspect(out, 'artifacts', '--type', 'Examples').stdout
  assert ('train: {train}, validation: {validation}, eval: {eval}'.format(
      **tiny_runs.SPLIT_RECORDS)) in text and examples['uri'] in text



def test_record_counts_are_those_of_the_check_that_reads_every_record(
    two_runs, tmp_path):
  # On a large input StatisticsGen counts only the sample it reads
  # (pipeline/scale.py); DataChecks reads every record. Made to disagree in
  # a copy of the store, the counts shown are DataChecks'.
  import shutil  # pylint: disable=g-import-not-at-top
  (tmp_path / 'out').mkdir()
  shutil.copy(two_runs / 'out' / 'metadata.db', tmp_path / 'out')
  store = metadata_store.MetadataStore(metadata_store_pb2.ConnectionConfig(
      sqlite=metadata_store_pb2.SqliteMetadataSourceConfig(
          filename_uri=str(tmp_path / 'out' / 'metadata.db'))))
  [checks] = [a for a in store.get_artifacts()
              if 'images' in a.custom_properties]
  every_record = {split: n * 1000 for split, n in
                  tiny_runs.SPLIT_RECORDS.items()}
  checks.custom_properties['images'].string_value = json.dumps(every_record)
  store.put_artifacts([checks])
  [examples] = inspect_json(tmp_path / 'out', 'artifacts', '--type',
                            'Examples')
  assert examples['properties']['splits'] == every_record


def test_class_balance_is_data_checks_count_else_every_label_read(
    two_runs, tmp_path):
  # DataChecks counts each split's labels as it reads every record, and the
  # report shows its counts (made to differ here, in a copy of the store).
  # A run from before it counted them has none: the report reads the labels.
  import shutil  # pylint: disable=g-import-not-at-top
  from inspector import report  # pylint: disable=g-import-not-at-top
  shutil.copy(two_runs / 'out' / 'metadata.db', tmp_path)
  store = metadata_store.MetadataStore(metadata_store_pb2.ConnectionConfig(
      sqlite=metadata_store_pb2.SqliteMetadataSourceConfig(
          filename_uri=str(tmp_path / 'metadata.db'))))
  [checks] = [a for a in store.get_artifacts()
              if 'labels' in a.custom_properties]

  def balance():
    md = queries.Metadata(store, 'test')
    return report.data_section(md, md.run('-1'))['class_balance']['splits']

  assert balance() == tiny_runs.CLASS_RECORDS
  counted = {split: [n * 1000 + 1 for n in counts]
             for split, counts in tiny_runs.CLASS_RECORDS.items()}
  checks.custom_properties['labels'].string_value = json.dumps(
      {split: {str(label): n for label, n in enumerate(counts)}
       for split, counts in counted.items()})
  store.put_artifacts([checks])
  assert balance() == counted
  del checks.custom_properties['labels']
  store.put_artifacts([checks])
  assert balance() == tiny_runs.CLASS_RECORDS

def test_artifacts_of_a_stopped_run_show_its_anomalies(stopped_run):
  [anomalies] = inspect_json(stopped_run, 'artifacts', '--type',
                             'ExampleAnomalies')
  assert anomalies['properties']['anomalies_in'] == ['eval', 'train',
                                                     'validation']


# --------------------------------------------------------------- lineage --


def _walk(tree):
  """Every node of a lineage tree, depth first."""
  yield tree
  for child in (tree.get('producer') or {}).get('inputs', []):
    yield from _walk(child)


def test_lineage_of_the_latest_model_reaches_the_input_files(two_runs):
  out = two_runs / 'out'
  tree = inspect_json(out, 'lineage', 'latest-model')
  # latest-model: the newest PushedModel that was pushed.
  pushed = inspect_json(out, 'artifacts', '--type', 'PushedModel')
  assert tree['artifact']['id'] == pushed[-1]['id']
  nodes = [entry['producer']['node'] for entry in _walk(tree)
           if entry.get('producer')]
  for node in ('Pusher', 'Evaluator', 'Trainer', 'Transform', 'SchemaGen',
               'StatisticsGen', 'ImageExampleGen'):
    assert node in nodes
  # Every artifact is expanded once; repeats are marked, not walked again.
  expanded = [entry['artifact']['id'] for entry in _walk(tree)
              if not entry.get('seen')]
  assert len(expanded) == len(set(expanded))
  assert any(entry.get('seen') for entry in _walk(tree))

  [source] = [entry['producer']['input_data'] for entry in _walk(tree)
            if 'input_data' in (entry.get('producer') or {})]
  assert source['input_base'] == str(two_runs / 'data')
  assert source['span'] == 0
  splits = {s['name']: s for s in source['splits']}
  assert set(splits) == {'train', 'eval'}
  for name, prefix in (('train', 'train-'), ('eval', 't10k-')):
    files = [os.path.basename(f['path']) for f in splits[name]['first_files']]
    assert len(files) == 2 and all(f.startswith(prefix) for f in files)
    assert splits[name]['recorded']['num_files'] == 2
    assert splits[name]['now']['num_files'] == 2
    assert splits[name]['unchanged'] is True
    assert 'files_now' not in splits[name]  # Without --all-files.
  [every] = [entry['producer']['input_data'] for entry in _walk(
      inspect_json(out, 'lineage', 'latest-model', '--all-files'))
             if 'input_data' in (entry.get('producer') or {})]
  assert [s['files_now'] for s in every['splits']] == [
      s['first_files'] for s in source['splits']]

  text = inspect(out, 'lineage', 'latest-model').stdout
  for expected in ('PushedModel', '← Pusher', '← Trainer', '← ImageExampleGen',
                   str(two_runs / 'data'), 'train-images-idx3-ubyte.gz',
                   '(shown above)'):
    assert expected in text


def test_lineage_notices_changed_input_files(two_runs, tmp_path):
  out = two_runs / 'out'
  examples = inspect_json(out, 'artifacts', '--type', 'Examples')[0]['id']
  labels = two_runs / 'data' / 't10k-labels-idx1-ubyte.gz'
  stat = os.stat(labels)
  os.utime(labels, ns=(stat.st_atime_ns, stat.st_mtime_ns + 3600 * 10**9))
  try:
    tree = inspect_json(out, 'lineage', str(examples))
  finally:
    # To the nanosecond (float seconds can round across a whole second):
    # the other tests must find the files as the runs read them.
    os.utime(labels, ns=(stat.st_atime_ns, stat.st_mtime_ns))
  assert tree['producer']['node'] == 'ImageExampleGen'
  assert tree['producer']['inputs'] == []
  splits = {s['name']: s['unchanged']
            for s in tree['producer']['input_data']['splits']}
  assert splits == {'train': True, 'eval': False}


# ------------------------------------------------------ stats, anomalies --


def test_stats_of_a_run_with_tfdv_html(two_runs, tmp_path):
  out = two_runs / 'out'
  html = tmp_path / 'stats.html'
  stats = inspect_json(out, 'stats', 'latest', '--html', str(html))
  # StatisticsGen was cached in the latest run: its statistics are the
  # first run's.
  assert stats['cached_in_this_run'] is True
  first = inspect_json(out, 'artifacts', '--run', '-2', '--type',
                       'ExampleStatistics')
  assert stats['statistics']['id'] in {a['id'] for a in first}
  assert {s: v['records'] for s, v in stats['splits'].items()
          } == tiny_runs.SPLIT_RECORDS
  by_name = {f['feature']: f for f in stats['splits']['train']['features']}
  assert set(by_name) == set(features.FEATURE_KEYS)
  assert (by_name['label']['min'], by_name['label']['max']) == (0, 9)
  assert by_name['height']['min'] == by_name['height']['max'] == 28
  assert all(f['missing'] == 0 for f in by_name.values())
  page = html.read_text()
  assert '<facets-overview' in page and 'Statistics of run' in page


def test_anomalies_none_in_good_data(two_runs, tmp_path):
  out = two_runs / 'out'
  html = tmp_path / 'anomalies.html'
  result = inspect_json(out, 'anomalies', '-1', '--html', str(html))
  assert result['splits'] == {'train': [], 'validation': [], 'eval': []}
  assert 'No anomalies found' in html.read_text()
  assert 'split train: no anomalies' in inspect(out, 'anomalies', '-2').stdout


def test_anomalies_of_the_run_the_gate_stopped(stopped_run):
  result = inspect_json(stopped_run, 'anomalies', 'latest')
  for split in ('train', 'eval'):
    by_feature = {a['feature']: a for a in result['splits'][split]}
    assert {'height', 'width'} <= set(by_feature)
    assert by_feature['height']['description']
  text = inspect(stopped_run, 'anomalies', 'latest', '--split', 'eval').stdout
  assert 'split eval:' in text and 'height' in text and 'split train' not in text


# --------------------------------------------------------------- metrics --


def test_metrics_of_the_newest_evaluated_model(two_runs):
  out = two_runs / 'out'
  [model] = inspect_json(out, 'artifacts', '--type', 'Model')
  result = inspect_json(out, 'metrics')
  assert result['model']['id'] == model['id']
  assert result['blessed'] is True and result['validation_ok'] is True
  assert result['validation_failures'] == []
  [overall] = result['slices']
  values = {m['metric']: m for m in overall['metrics']}
  assert values['example_count']['value'] == EVAL_RECORDS
  assert 0.3 <= values['sparse_categorical_accuracy']['value'] <= 1
  # The newest evaluation is the re-run's, whose baseline, the last
  # blessed model, is this model itself: evaluated alone, no diff.
  assert result['baseline']['id'] == model['id']
  assert result['baseline']['is_this_model'] is True
  assert set(values['sparse_categorical_accuracy']) == {'metric', 'value'}
  text = inspect(out, 'metrics').stdout
  assert 'baseline: this model itself, blessed before' in text
  assert 'diff' not in text
  # The model's PushedModel names the same model.
  pushed = inspect_json(out, 'artifacts', '--type', 'PushedModel')[-1]
  assert inspect_json(out, 'metrics', str(pushed['id']))['model'] == \
      result['model']


# -------------------------------------------------------------- pictures --


def test_samples_grid_shows_each_class_in_its_row(two_runs, tmp_path):
  out = two_runs / 'out'
  [examples] = inspect_json(out, 'artifacts', '--type', 'Examples')
  png = tmp_path / 'samples.png'
  result = inspect_json(out, 'samples', str(examples['id']), '--png', str(png),
                        '--per-class', '3')
  assert [(c['label'], c['name'], c['count']) for c in result['classes']] == \
      [(i, str(i), 3) for i in range(10)]
  picture = np.asarray(Image.open(png).convert('L'))
  grid = result['png']['grid']
  assert picture.shape == (result['png']['height'], result['png']['width'])
  assert picture.shape[0] >= 10 * 28 and picture.shape[1] >= 3 * 28

  # Row r, column c is the c-th record of label r in the split, scaled up.
  records = examples_io.read_split(examples['uri'], 'train')
  scale = grid['scale']
  for label in range(10):
    mine = [r['image'][..., 0] for r in records if r['label'] == label][:3]
    for column, image in enumerate(mine):
      top = grid['top'] + label * grid['step_y']
      left = grid['left'] + column * grid['step_x']
      cell = picture[top:top + 28 * scale:scale, left:left + 28 * scale:scale]
      np.testing.assert_array_equal(cell, image)


def test_confusion_matrix_agrees_with_the_evaluator(two_runs, tmp_path):
  out = two_runs / 'out'
  png = tmp_path / 'confusion.png'
  result = inspect_json(out, 'confusion', '--png', str(png))
  [model] = inspect_json(out, 'artifacts', '--type', 'Model')
  assert result['model']['id'] == model['id']  # latest-model's Model.
  assert result['examples']['split'] == 'eval'
  matrix = np.array(result['matrix'])
  labels = [r['label'] for r in examples_io.read_split(
      result['examples']['uri'], 'eval')]
  assert matrix.shape == (10, 10)
  np.testing.assert_array_equal(matrix.sum(axis=1), np.bincount(labels, minlength=10))
  accuracy = inspect_json(out, 'metrics')['slices'][0]['metrics']
  tfma_accuracy = {m['metric']: m['value'] for m in accuracy}[
      'sparse_categorical_accuracy']
  assert result['accuracy'] == pytest.approx(tfma_accuracy, abs=1e-6)
  # The matrix itself, not only the accuracy printed beside it, agrees.
  assert np.trace(matrix) / matrix.sum() == pytest.approx(tfma_accuracy,
                                                          abs=1e-6)
  assert result['per_class'][0]['recall'] == matrix[0, 0] / matrix[0].sum()
  with Image.open(png) as picture:
    assert picture.format == 'PNG'
    assert picture.width >= 10 * 44 and picture.height >= 10 * 44
    assert (picture.width, picture.height) == (result['png']['width'],
                                               result['png']['height'])


# ---------------------------------------------------------------- errors --


def _error(out_dir, *args):
  result = inspect(out_dir, *args, expect_rc=1)
  assert result.stdout == ''
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith('error: '), result.stderr
  return lines[0]


def test_a_missing_store_is_an_error_and_is_not_created(tmp_path):
  message = _error(tmp_path / 'nowhere', 'runs')
  assert str(tmp_path / 'nowhere' / constants.METADATA_DB_NAME) in message
  assert 'no ML Metadata store' in message
  assert not (tmp_path / 'nowhere').exists()


def test_an_empty_store_is_an_error(tmp_path):
  config = metadata_store_pb2.ConnectionConfig()
  config.sqlite.filename_uri = str(tmp_path / constants.METADATA_DB_NAME)
  metadata_store.MetadataStore(config)  # Creates the (empty) schema.
  assert 'holds no pipeline runs' in _error(tmp_path, 'runs')
  assert 'holds no artifacts' in _error(tmp_path, 'artifacts')
  assert 'holds no models' in _error(tmp_path, 'lineage', 'latest-model')
  assert 'holds no pipeline runs' in _error(tmp_path, 'stats', 'latest')


def test_unknown_ids_and_runs_are_errors(two_runs):
  out = two_runs / 'out'
  assert 'no artifact with id 9999' in _error(out, 'lineage', '9999')
  assert 'not an artifact id' in _error(out, 'lineage', 'model')
  assert "no run 'nope'" in _error(out, 'stats', 'nope')
  assert 'only 2 run(s)' in _error(out, 'anomalies', '-3')
  assert "no artifacts of type 'Exampels'" in _error(
      out, 'artifacts', '--type', 'Exampels')
  [model] = inspect_json(out, 'artifacts', '--type', 'Model')
  assert 'not Examples' in _error(out, 'samples', str(model['id']), '--png',
                                  str(out / 'x.png'))
  assert not (out / 'x.png').exists()


# Apart from the errors above: a test of both shared runs would put them on
# one xdist worker (tests/xdist_groups.py).
def test_a_run_that_never_trained_has_no_metrics_or_models(stopped_run):
  # The stopped run never trained: nothing to evaluate or to trace.
  assert 'no model has been evaluated' in _error(stopped_run, 'metrics')
  assert 'holds no models' in _error(stopped_run, 'confusion')


def test_text_listings_do_not_load_tensorflow(two_runs):
  # TensorFlow takes seconds to import; these read MLMD and small protos.
  code = ('import sys; from inspector import commands; '
          f'[commands.main(["--output-dir", {str(two_runs / "out")!r}, *a]) '
          'for a in '
          '(["runs"], ["artifacts"], ["lineage", "latest-model"], '
          '["stats", "latest"], ["anomalies", "latest"])]; '
          'assert "tensorflow" not in sys.modules, "tensorflow was imported"')
  subprocess.run([sys.executable, '-c', code], cwd=local_run.PROJECT_DIR,
                 check=True, capture_output=True)


def _input_folder(root, counts):
  """Image-folder-like input: counts[split] files of 1, 2, ... bytes, and
  the ExampleGen execution that read it (no fingerprint recorded)."""
  for split, count in counts.items():
    (root / split / 'cat').mkdir(parents=True)
    for i in range(count):
      (root / split / 'cat' / f'{i:03d}.png').write_bytes(b'x' * (i + 1))
  config = {'splits': [{'name': split, 'pattern': f'{split}/*/*'}
                       for split in counts]}
  return queries.Execution(
      id=7, node='ImageExampleGen', type='', state='COMPLETE', started_ms=0,
      ended_ms=1000, run='r', pipeline='p',
      properties={'input_base': str(root),
                  'input_config': json.dumps(config)})


def test_lineage_names_a_few_input_files_per_split_and_counts_the_rest(
    tmp_path):
  execution = _input_folder(tmp_path / 'data', {'train': 12, 'eval': 3})
  seen = []
  data = lineage.input_data(execution, on_file=lambda *file: seen.append(
      (file[0], file[1], os.path.basename(file[2].path))))
  train, held_out = data['splits']
  assert train['now'] == {'num_files': 12, 'total_bytes': sum(range(1, 13))}
  assert [os.path.basename(f['path']) for f in train['first_files']] == [
      f'{i:03d}.png' for i in range(lineage.NAMED_FILES)]
  assert 'files_now' not in train
  assert lineage.more_files(train) == f'and {12 - lineage.NAMED_FILES} more files'
  assert lineage.more_files(held_out) == ''
  assert lineage.split_facts(train) == (
      'no input fingerprint recorded; there now: 12 files, 78 bytes')
  # Every file reaches on_file (the report's CSV), named or not.
  assert sorted(seen) == sorted(
      [(7, 'train', f'{i:03d}.png') for i in range(12)] +
      [(7, 'eval', f'{i:03d}.png') for i in range(3)])

  every = lineage.input_data(execution, all_files=True)['splits'][0]
  assert [os.path.basename(f['path']) for f in every['files_now']] == [
      f'{i:03d}.png' for i in range(12)]
  assert lineage.more_files(every) == ''

  # The console and the page name the first few and count the rest.
  tree = {'key': None, 'artifact': {'id': 1, 'type': 'Examples', 'uri': 'u',
                                    'state': 'LIVE', 'properties': {}},
          'producer': {'id': 7, 'node': 'ImageExampleGen',
                       'state': 'COMPLETE', 'seconds': 1.0, 'run': 'r',
                       'inputs': [], 'input_data': data}}
  console = rich.console.Console(file=io.StringIO(), width=200)
  render.lineage(console, tree)
  text = console.file.getvalue()
  assert '004.png' in text and '005.png' not in text
  assert '... and 7 more files; --all-files lists them' in text
  page = report_page._section('lineage', 'Lineage', {  # pylint: disable=protected-access
      'status': 'ok', 'root': {'id': 1, 'type': 'Examples'},
      'named_files': lineage.NAMED_FILES, 'tree': tree,
      'files_csv': 'report-files.csv'})
  assert '004.png' in page and '005.png' not in page
  assert '… and 7 more files' in page
  assert '<a href="report-files.csv">report-files.csv</a>' in page
