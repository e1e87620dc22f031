"""The Vertex AI target's compiled PipelineSpec runs: every task, in
dependency order, through its own container command (TFX's
kubeflow_v2_run_executor, and the FileBasedExampleGen driver before
ImageExampleGen), with inputs and output locations handed over as Vertex AI
does (tests/kfp_launcher.py, mode 'vertex'), on tiny data on the local
filesystem; then the artifacts are checked, down to the pushed model
answering `serve_images`. The open-source Kubeflow Pipelines target runs in
tests/test_kubeflow_on_s3.py."""

import glob
import os
import sys

import pytest
import tensorflow as tf

from pipeline import constants
from pipeline.knobs import DataConfig
from records import features
from tests import datasets
from tests import kfp_launcher
from tests import preloaded_python
from tests import serving
from tests import test_whole_pipeline

# The training settings of the local whole-pipeline test, for Kubeflow.
TINY_TRAINING = ['--epochs', '2', '--train-steps', '60', '--batch-size', '32',
                 '--accuracy-threshold', '0.3',
                 '--beam-args=--direct_running_mode=in_memory '
                 '--direct_num_workers=1']


@pytest.fixture(scope='module')
def run(tmp_path_factory):
  """Compiles with kubeflow_runner.py as a user does, then runs the spec."""
  tmp = tmp_path_factory.mktemp('kubeflow_run')
  written = datasets.write_idx_dataset(str(tmp / 'data'),
                                       {'train': 300, 't10k': 100})
  with preloaded_python.Server(kfp_launcher.task_environment()) as preloaded:
    status = preloaded.run(
        [sys.executable, os.path.join(constants.PROJECT_DIR, 'kubeflow',
                                      'kubeflow_runner.py'),
         '--target', 'vertex',
         '--output', str(tmp / 'pipeline.yaml'), '--image', 'unused:local',
         '--pipeline-root', str(tmp / 'root'), '--data-dir', str(tmp / 'data'),
         '--serving-model-dir', str(tmp / 'serving'), '--allow-local-paths',
         *TINY_TRAINING], kfp_launcher.task_environment(), str(tmp),
        str(tmp / 'compile.log'), timeout=300)
    assert status == 0, (tmp / 'compile.log').read_text()[-3000:]
    launcher = kfp_launcher.LocalLauncher(
        str(tmp / 'pipeline.yaml'), str(tmp / 'root'), mode='vertex',
        log_dir=str(tmp / 'logs'), preloaded=preloaded)
    outputs = launcher.run()
  return tmp, written, launcher, outputs


def only(outputs, task, key):
  [artifact] = outputs[task][key]
  return artifact


def test_every_task_ran_in_dependency_order(run):
  _, _, launcher, _ = run
  spec = launcher.spec
  assert sorted(launcher.executed) == sorted(spec.root.dag.tasks)
  position = {name: i for i, name in enumerate(launcher.executed)}
  for name, task in spec.root.dag.tasks.items():
    for upstream in kfp_launcher.task_dependencies(task):
      assert position[upstream] < position[name], (upstream, name)
  # Every local component is a task, and the resolver's two ran.
  for node in test_whole_pipeline.ALL_NODES:
    assert node in position or node + '-model-resolver' in position


def test_examples_carry_shards_class_names_and_the_driver_span(run):
  _, _, _, outputs = run
  examples = only(outputs, 'ImageExampleGen', 'examples')
  for split in ('train', 'validation', 'eval'):
    shards = glob.glob(os.path.join(examples.uri, f'Split-{split}',
                                    'data_tfrecord-*.gz'))
    assert len(shards) == DataConfig().num_shards
  records = sum(1 for _ in tf.data.TFRecordDataset(
      glob.glob(os.path.join(examples.uri, 'Split-eval', '*.gz')),
      compression_type='GZIP'))
  assert records == 100
  assert features.read_class_names(os.path.join(
      examples.uri, features.CLASS_NAMES_FILE)) == [str(i) for i in range(10)]
  metadata = dict(examples.metadata)
  assert features.decode_class_names(metadata['class_names']) == [
      str(i) for i in range(10)]
  assert metadata['split_names'] == '["train", "validation", "eval"]'
  # Set by the FileBasedExampleGen driver (pre-cache check), kept through.
  assert 'input_fingerprint' in metadata


def test_schema_transform_graph_and_model(run):
  _, _, _, outputs = run
  schema = only(outputs, 'SchemaGen', 'schema')
  assert os.path.exists(os.path.join(schema.uri, 'schema.pbtxt'))
  graph = only(outputs, 'Transform', 'transform_graph')
  assert os.path.exists(os.path.join(graph.uri, 'transform_fn',
                                     'saved_model.pb'))
  model = only(outputs, 'Trainer', 'model')
  assert os.path.exists(os.path.join(model.uri, 'Format-Serving',
                                     'saved_model.pb'))


def test_first_run_has_no_baseline_and_the_model_is_blessed_and_pushed(run):
  tmp, _, _, outputs = run
  assert outputs['latest_blessed_model_resolver-model-resolver'] == {
      'model': []}
  blessing = only(outputs, 'Evaluator', 'blessing')
  assert blessing.metadata['blessed'] == 1
  assert os.path.exists(os.path.join(blessing.uri, 'BLESSED'))
  pushed = only(outputs, 'Pusher', 'pushed_model')
  assert pushed.metadata['pushed'] == 1
  destination = pushed.metadata['pushed_destination']
  assert os.path.dirname(destination) == str(tmp / 'serving')


def test_pushed_model_serves_images(run):
  tmp, written, _, _ = run
  model = tf.saved_model.load(serving.latest_pushed_model(str(tmp / 'serving')))
  images, labels = written['t10k']
  probabilities, classes = serving.classify_images(model, images)
  assert probabilities.shape == (100, 10)
  # Learnable tiny data and a threshold of 0.3: well above chance (0.1).
  assert (classes == labels).mean() >= 0.3
