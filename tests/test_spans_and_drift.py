"""Data that arrives in spans, and a new span unlike the old ones: through
local_runner.py, real LocalDagRunner, Beam, TFDV and ML Metadata.

The schema the new data is checked against comes from the earlier, good data
(--freeze-schema, or a curated --schema); a span that breaks it is reported
by ExampleValidator and stopped by the ValidationGate before anything trains
or pushes on it, and the earlier spans' artifacts stay as they were.
"""

import hashlib
import os
import re

import numpy as np

from components.image_example_gen import idx
from pipeline import constants
from records import features
from tests import datasets
from tests import local_run
from tests import mlmd
from tests import tiny_runs

MODEL_HALF = ['Transform', 'Trainer', 'Evaluator', 'Pusher']
# Enough training settings for a run to get through quickly if it ever got
# past the gate (it must not).
TINY_TRAINING = ['--epochs', '1', '--train-steps', '2', '--batch-size', '8']


def _training_records(stdout: str, span: int) -> int:
  """The span's training records, a hash-chosen tenth of them validation,
  as the run summary gives them."""
  counts = re.search(rf'span {span}; train: (\d+) records in \d+ shards; '
                     r'validation: (\d+) records', stdout)
  assert counts, stdout
  return sum(map(int, counts.groups()))


def _scale_pixels(span_dir: str, factor: float) -> None:
  """Rewrites a span's images with every pixel multiplied by `factor`."""
  for name in os.listdir(span_dir):
    if '-images-' in name:
      path = os.path.join(span_dir, name)
      images = idx.read_all(idx.validate(path))
      idx.write(path, (images * factor).astype(np.uint8))


def _tree_digest(path: str) -> str:
  """One hash over every file's name and bytes under `path`."""
  digest = hashlib.sha256()
  for root, _, files in sorted(os.walk(path)):
    for name in sorted(files):
      digest.update(os.path.relpath(os.path.join(root, name), path).encode())
      with open(os.path.join(root, name), 'rb') as f:
        digest.update(f.read())
  return digest.hexdigest()


def _examples_by_span(store):
  return {a.custom_properties['span'].int_value: a
          for a in mlmd.live_artifacts(store, 'Examples')}


def test_new_spans_that_drift_are_stopped_at_the_gate(tmp_path):
  data, out = tmp_path / 'data', tmp_path / 'out'

  def run_span(span: int, *extra: str):
    return local_run.run(
        '--data-dir', str(data), '--span-dir-pattern', 'span-{SPAN}',
        '--freeze-schema', '--output-dir', str(out), local_run.ONE_PROCESS,
        *extra)

  # Span 1, good data: checks out (the data half is enough), and its
  # schema, inferred and pinned, becomes the one later spans must meet.
  datasets.write_idx_dataset(str(data / 'span-1'))
  first = run_span(1, '--to-node', 'ValidationGate')
  assert first.returncode == 0
  assert 'no run has passed validation yet; inferring the schema' in first.stdout
  assert _training_records(first.stdout, 1) == 40
  store = mlmd.open_store(str(out))
  [span_1] = mlmd.live_artifacts(store, 'Examples')
  assert span_1.custom_properties['span'].int_value == 1
  [schema] = mlmd.live_artifacts(store, 'Schema')
  schema_file = os.path.join(schema.uri, 'schema.pbtxt')
  span_1_digest = _tree_digest(span_1.uri)
  schema_digest = _tree_digest(schema.uri)

  def new_label_and_scaled_pixels(span_dir):
    datasets.write_idx_dataset(span_dir, num_classes=11)
    _scale_pixels(span_dir, 0.5)

  # Two drifted spans in a row: the second is still checked against span
  # 1's schema. Each anomaly is named whatever else is wrong with the span.
  drifts = {
      # span: (how the new data differs, how to write it, the features the
      # anomalies must name)
      2: ('a new label value, and pixels scaled to 0..127',
          new_label_and_scaled_pixels,
          [features.LABEL_KEY, features.PIXEL_MAX_KEY]),
      3: ('another image size',
          lambda d: datasets.write_idx_dataset(
              d, geometry=features.ImageGeometry(32, 32, 1)),
          [features.HEIGHT_KEY, features.WIDTH_KEY]),
  }
  for span, (drift, write, drifted_features) in drifts.items():
    write(str(data / f'span-{span}'))  # The newest data drop.
    # The whole DAG, as a scheduled run would: the gate must stop it.
    result = run_span(span, *TINY_TRAINING)
    assert result.returncode == 1, drift
    assert f'checking the data against {schema_file}' in result.stdout
    assert '✘ ValidationGate' in result.stdout, drift
    assert 'ExampleValidator found anomalies' in result.stderr, drift
    for feature in drifted_features:
      assert f"train: feature '{feature}'" in result.stderr, drift
      assert f"eval: feature '{feature}'" in result.stderr, drift

    store = mlmd.open_store(str(out))
    # The newest span was read, and its anomalies are published in MLMD.
    assert _examples_by_span(store)[span].custom_properties[
        'span'].int_value == span
    anomalies = max(mlmd.live_artifacts(store, 'ExampleAnomalies'),
                    key=lambda a: a.id)
    assert anomalies.custom_properties['blessed'].struct_value['train'] == 0
    # The inspection tool tells the same story about the run.
    inspected = tiny_runs.inspect(out, 'anomalies', 'latest').stdout
    for feature in drifted_features:
      assert re.search(rf'\b{feature}\b', inspected), (drift, inspected)
    states = mlmd.execution_states(store)
    assert states['ValidationGate'][-1] == 'FAILED', drift
    # Nothing downstream of the gate ever ran, nothing was trained or pushed.
    assert not set(MODEL_HALF) & set(states), drift
    assert mlmd.live_artifacts(store, 'Model') == []
    assert not (out / constants.SERVING_MODEL_DIR_NAME).exists()

  # Span 1's artifacts are untouched, and still in ML Metadata as they were.
  store = mlmd.open_store(str(out))
  assert _examples_by_span(store)[1].uri == span_1.uri
  assert _tree_digest(span_1.uri) == span_1_digest
  assert _tree_digest(schema.uri) == schema_digest

  # A new span like the first passes the frozen schema: no false alarm.
  datasets.write_idx_dataset(str(data / 'span-4'))
  good = run_span(4, '--to-node', 'ValidationGate')
  assert good.returncode == 0
  assert f'checking the data against {schema_file}' in good.stdout
  assert _training_records(good.stdout, 4) == 40
  assert 'no anomalies' in good.stdout

  # Still span 1's schema file (not span 4's imported copy of it), so
  # running again changes nothing and the cache answers every component.
  again = run_span(4, '--to-node', 'ValidationGate')
  assert again.returncode == 0
  assert f'checking the data against {schema_file}' in again.stdout
  assert again.stdout.count('(cached)') == 6  # With DataChecks.


def test_curated_schema_catches_labels_and_pixel_range(tmp_path):
  # Labels 0..10 and images scaled to 0..127, against the curated MNIST
  # schema (labels 0..9, brightest pixel of an image at least 128).
  datasets.write_idx_dataset(str(tmp_path / 'data' / 'span-7'), num_classes=11)
  _scale_pixels(str(tmp_path / 'data' / 'span-7'), 0.5)
  result = local_run.run(
      '--data-dir', str(tmp_path / 'data'), '--span-dir-pattern', 'span-{SPAN}',
      '--schema', constants.MNIST_SCHEMA, '--output-dir', str(tmp_path / 'out'),
      local_run.ONE_PROCESS, '--to-node', 'ValidationGate')
  assert result.returncode == 1
  assert '✘ ValidationGate' in result.stdout
  for feature in (features.LABEL_KEY, features.PIXEL_MAX_KEY):
    assert f"train: feature '{feature}'" in result.stderr
  assert "feature 'height'" not in result.stderr
  store = mlmd.open_store(str(tmp_path / 'out'))
  [examples] = mlmd.live_artifacts(store, 'Examples')
  assert examples.custom_properties['span'].int_value == 7
