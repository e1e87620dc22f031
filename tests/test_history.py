"""`python -m inspector history` against real ML Metadata stores made by
real runs (tests/tiny_runs.py): a full run and its cached re-run, and a run
the ValidationGate stopped; and the label drift from statistics TFDV
computed."""

import csv
import os
import shutil

from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2
import numpy as np
import pandas as pd
import tensorflow_data_validation as tfdv

from inspector import history
from metadata import queries
from pipeline import constants
from records import features
from records import serving_model
from tests import mlmd
from tests import tiny_runs
from tests.tiny_runs import inspect
from tests.tiny_runs import inspect_json


def _run_names(out_dir):
  store = mlmd.open_store(str(out_dir))
  return [c.name for c in sorted(store.get_contexts_by_type('pipeline_run'),
                                 key=lambda c: c.id)]


def test_history_of_a_run_and_its_cached_rerun(two_runs, tmp_path):
  out = two_runs / 'out'
  first, second = _run_names(out)
  result = inspect_json(out, 'history')
  assert result['pipeline'] == constants.PIPELINE_NAME
  newest, oldest = result['runs']
  assert [newest['run'], oldest['run']] == [second, first]

  [model] = mlmd.live_artifacts(mlmd.open_store(str(out)), 'Model')
  for row in (newest, oldest):
    assert row['state'] == 'COMPLETE' and row['blessed'] is True
    assert row['records'] == tiny_runs.SPLIT_RECORDS
    assert row['spans'] == [0]  # IDX files without spans: span 0.
    assert row['model'] == model.id
    # The training's wall time, also where the re-run reused the model.
    assert row['trainer_seconds'] == oldest['trainer_seconds'] > 0
    assert row['start'] == 'cold'  # Without --warm-start.
  # The first run pushed its model; in the re-run the model in service is
  # the same model, evaluated once: the served accuracy is its own, and
  # the Pusher found it already served.
  metrics = inspect_json(out, 'metrics', str(model.id))
  [accuracy] = [m['value'] for s in metrics['slices'] if s['slice'] ==
                'Overall' for m in s['metrics']
                if m['metric'] == 'sparse_categorical_accuracy']
  assert oldest['accuracy'] == newest['accuracy'] == accuracy
  assert oldest['outcome'] == 'pushed' and oldest['served_accuracy'] is None
  assert not oldest['trainer_cached'] and newest['trainer_cached']
  assert newest['outcome'] == 'already served' and newest['already_served']
  assert newest['served_accuracy'] == accuracy
  assert newest['served_model'] == model.id
  # The same data: no drift; the oldest run has no run before it.
  assert newest['label_drift'] == 0 and newest['drift_against_run'] == first
  assert oldest['label_drift'] is None

  # The console: one aligned line per run, newest first.
  lines = inspect(out, 'history', '--csv', str(tmp_path / 'h.csv')
                  ).stdout.splitlines()
  header = next(line for line in lines if line.startswith('run '))
  rows = [line for line in lines if line.startswith((first, second))]
  assert [row.split()[0] for row in rows] == [second, first]
  for column in ('train', 'accuracy', 'served', 'label drift'):
    # Right-aligned under their headings.
    end = header.index(column) + len(column)
    assert all(row[end - 1] != ' ' and row[end:end + 1] in ('', ' ')
               for row in rows), (column, header, rows)
  assert 'already served' in rows[0] and '(cached)' in rows[0]
  assert f'{accuracy:.4f}' in rows[1] and ' pushed ' in rows[1]
  assert ' cold ' in rows[0]

  with open(tmp_path / 'h.csv', newline='', encoding='utf-8') as f:
    written = list(csv.DictReader(f))
  assert [r['run'] for r in written] == [second, first]
  assert written[1]['records_train'] == str(tiny_runs.SPLIT_RECORDS['train'])
  assert written[0]['outcome'] == 'already served'


def test_history_reads_the_window_of_spans_and_the_warm_start(two_runs,
                                                              tmp_path):
  # A copy of the store in which the runs recorded what --span-window and
  # --warm-start record: the spans an Examples artifact holds, and where
  # the Model started from; and whose newest evaluation's files are gone,
  # as garbage collection leaves an old run.
  store_path = tmp_path / constants.METADATA_DB_NAME
  shutil.copyfile(two_runs / 'out' / constants.METADATA_DB_NAME, store_path)
  config = metadata_store_pb2.ConnectionConfig()
  config.sqlite.filename_uri = str(store_path)
  store = metadata_store.MetadataStore(config)
  [examples] = store.get_artifacts_by_type('Examples')
  examples.custom_properties[history.SPANS_PROPERTY].string_value = '[4,2,3]'
  [model] = store.get_artifacts_by_type('Model')
  model.custom_properties[serving_model.WARM_START_FROM].string_value = (
      os.path.join('serving_model', '1'))
  newest_evaluation = max(store.get_artifacts_by_type('ModelEvaluation'),
                          key=lambda a: a.id)
  newest_evaluation.uri = str(tmp_path / 'collected')
  store.put_artifacts([examples, model, newest_evaluation])
  del store

  rows = inspect_json(two_runs, 'history', '--store', str(store_path))['runs']
  assert [r['spans'] for r in rows] == [[2, 3, 4]] * 2
  assert [r['start'] for r in rows] == ['warm'] * 2
  assert rows[0]['warm_start_from'] == os.path.join('serving_model', '1')
  # What ML Metadata holds is still shown; the accuracy is gone with the
  # files, and the text says so.
  assert rows[0]['accuracy'] is None and rows[1]['accuracy'] is not None
  assert rows[0]['blessed'] is True and rows[0]['outcome'] == 'already served'
  assert rows[0]['gone'] == [f'evaluation {tmp_path / "collected"}']
  # The newest run alone, its drift still against the run before.
  text = inspect(two_runs, 'history', '--store', str(store_path),
                 '--limit', '1').stdout
  assert ' 2-4 ' in text and ' warm ' in text and ' 0.000' in text
  assert rows[1]['run'] not in text and ': 1 run, newest first' in text
  assert f'gone from disk, so not shown: evaluation {tmp_path}' in text


def test_history_of_a_run_stopped_at_the_gate(stopped_run):
  [row] = inspect_json(stopped_run, 'history')['runs']
  assert row['state'] == 'FAILED' and row['outcome'] == 'stopped at the gate'
  assert set(row['records']) == {'train', 'validation', 'eval'}
  assert sum(row['records'].values()) == 40 + 20
  for key in ('accuracy', 'served_accuracy', 'blessed', 'pushed',
              'trainer_seconds', 'label_drift'):
    assert row[key] is None, key
  [line] = [line for line in inspect(stopped_run, 'history').stdout
            .splitlines() if line.startswith(row['run'])]
  assert 'stopped at the gate' in line


def _statistics(tmp_path, name, labels):
  """An ExampleStatistics artifact of TFDV's statistics of `labels`."""
  frame = pd.DataFrame({features.LABEL_KEY: np.asarray(labels, np.int64)})
  split = tmp_path / name / f'Split-{history.DRIFT_SPLIT}'
  split.mkdir(parents=True)
  (split / 'FeatureStats.pb').write_bytes(
      tfdv.generate_statistics_from_dataframe(frame).SerializeToString())
  return queries.Artifact(
      id=len(os.listdir(tmp_path)), type='ExampleStatistics',
      uri=str(tmp_path / name), state='LIVE', created_ms=0,
      properties={'split_names': f'["{history.DRIFT_SPLIT}"]'})


def test_label_drift_is_the_largest_change_of_a_class_share(tmp_path):
  even = _statistics(tmp_path, 'even', np.repeat(np.arange(10), 20))
  # Class 0 from a tenth to over a quarter of the records.
  skewed = _statistics(tmp_path, 'skewed', np.repeat(
      np.arange(10), [60] + [15] * 9))
  assert abs(history.label_drift(skewed, even) - (60 / 195 - 0.1)) < 0.01
  assert history.label_drift(even, even) == 0
  # Three classes, then a fourth: its share is the drift.
  three = _statistics(tmp_path, 'three', np.repeat(np.arange(3), 30))
  four = _statistics(tmp_path, 'four', np.repeat(np.arange(4), 30))
  assert abs(history.label_drift(four, three) - 0.25) < 0.01
