"""run_fn on several workers (--trainer-workers N): real worker processes
on loopback under MultiWorkerMirroredStrategy, on tiny data."""

import copy
import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import psutil
import pytest
import tensorflow as tf

from components.image_example_gen.options import ImageExampleGenOptions
from kubeflow import vertex_training
from modules import local_workers
from modules import trainer
from modules.training import devices
from modules.training.config import Budget, TrainingConfig
from pipeline import constants
from records import features
from records import serving_model
from tests import artifacts
from tests import datasets
from tests import examples_io
from tfx.components.trainer.fn_args_utils import FnArgs
from tfx.extensions.google_cloud_ai_platform import training_clients
from tfx.extensions.google_cloud_ai_platform.trainer import executor as trainer_executor
from tfx.types import artifact_utils
from tfx.types import standard_artifacts

TRAIN, EVAL = 256, 64
# More shards than workers: each worker reads its own files.
SHARDS = 4
# Small images of 4 well-apart brightness bands: quick to learn, to the
# same accuracy whatever the number of workers.
GEOMETRY = features.ImageGeometry(12, 12, 1)
CLASSES = 4


@pytest.fixture(scope='module')
def data(tmp_path_factory):
  """Examples (4 shards per split) and their transform graph."""
  tmp = tmp_path_factory.mktemp('multi_worker')
  datasets.write_idx_dataset(str(tmp / 'in'), {'train': TRAIN, 't10k': EVAL},
                             GEOMETRY, num_classes=CLASSES)
  examples = artifacts.run_example_gen(
      tmp / 'in', tmp / 'examples', ImageExampleGenOptions(num_shards=SHARDS))
  train = os.path.join(examples.uri, 'Split-train', '*')
  artifacts.make_transform_output(train, GEOMETRY,
                                  str(tmp / 'transform'))
  return examples.uri, str(tmp / 'transform')


def _fn_args(data, out, workers, timeout=600, epochs=4) -> FnArgs:
  examples_uri, transform_dir = data
  # Seeded (--seed): the same weights, shuffles and dropout every run, so
  # the accuracy bounds below are met or missed alike in CI and here.
  config = TrainingConfig(budget=Budget(epochs=epochs), batch_size=16,
                          learning_rate=3e-3, workers=workers,
                          workers_timeout_seconds=timeout, seed=1)
  return FnArgs(
      working_dir=str(out / 'work'),
      train_files=[os.path.join(examples_uri, 'Split-train', '*')],
      eval_files=[os.path.join(examples_uri, 'Split-eval', '*')],
      transform_graph_path=transform_dir,
      serving_model_dir=str(out / 'model' / 'Format-Serving'),
      model_run_dir=str(out / 'model_run'),
      custom_config={'training': config.to_dict()})


def _accuracy(model_dir, examples_uri) -> float:
  records = examples_io.read_split(examples_uri, 'eval')
  images = np.stack([r['image'] for r in records])
  labels = np.array([r['label'] for r in records])
  model = tf.saved_model.load(model_dir)
  classes = model.signatures[serving_model.IMAGES_SIGNATURE](
      images=tf.constant(images))[serving_model.CLASSES].numpy()
  return float(np.mean(classes == labels))


def _saved_models(root):
  return sorted(glob.glob(os.path.join(root, '**', 'saved_model.pb'),
                          recursive=True))


def test_two_workers_train_as_well_as_one_and_export_once(
    data, tmp_path, monkeypatch):
  # The workers' temporary folders land here, where the test can see them.
  monkeypatch.setenv('TMPDIR', str(tmp_path / 'tmp'))
  (tmp_path / 'tmp').mkdir()
  one = _fn_args(data, tmp_path / 'one', workers=1)
  # As many steps as one worker (the global batch is twice as large): the
  # learning rate's cycle spans the steps, not the examples.
  two = _fn_args(data, tmp_path / 'two', workers=2, epochs=8)
  trainer.run_fn(one)
  local_workers.run_fn(two)

  accuracy_one = _accuracy(one.serving_model_dir, data[0])
  accuracy_two = _accuracy(two.serving_model_dir, data[0])
  print(f'eval accuracy: 1 worker {accuracy_one:.3f}, 2 workers '
        f'{accuracy_two:.3f}')
  # The brightness bands are easy: both learn them; noise is a few records.
  assert accuracy_one >= 0.9
  assert abs(accuracy_two - accuracy_one) <= 0.1
  # One model, the chief's; the other worker's copy was removed.
  assert _saved_models(str(tmp_path)) == sorted(
      [os.path.join(one.serving_model_dir, 'saved_model.pb'),
       os.path.join(two.serving_model_dir, 'saved_model.pb')])
  assert os.listdir(tmp_path / 'tmp') == []
  # The chief's TensorBoard logs and plan; each worker's output.
  plan = (tmp_path / 'two' / 'model_run' / devices.PLAN_FILE).read_text()
  assert '"strategy": "multi_worker"' in plan
  assert '"global_batch_size": 32' in plan
  assert glob.glob(str(tmp_path / 'two' / 'model_run' / 'train' / '*tfevents*'))
  logs = sorted(os.listdir(tmp_path / 'two' / 'model_run' /
                           local_workers.LOGS_DIR))
  assert logs == ['worker-0.log', 'worker-1.log']
  for i in range(2):
    log = (tmp_path / 'two' / 'model_run' / local_workers.LOGS_DIR /
           f'worker-{i}.log').read_text()
    assert f'worker {i} of 2 training tasks' in log
    # Each worker read its half of the records (its 2 of the 4 files) in
    # batches of 16: 8 steps of the global batch of 32 per epoch (the
    # whole split each would be 16 steps).
    assert f'Epoch 1/8: {TRAIN // 32} steps' in log


def _workers():
  """This test process's Trainer workers, by index."""
  workers = {}
  for process in psutil.Process().children(recursive=True):
    if local_workers.WORKER_MODULE in ' '.join(process.cmdline()):
      task = devices.parse_tf_config(process.environ().get(devices.TF_CONFIG))
      workers[task.task_index] = process
  return workers


def _is_training(worker) -> bool:
  """Whether `worker` joined its cluster and started training."""
  # A worker's stdout is its log file (local_workers.py).
  with open(os.readlink(f'/proc/{worker.pid}/fd/1'), errors='replace') as f:
    return ' training tasks (chief)): training on 2 workers' in f.read()


def test_a_killed_worker_ends_the_run_with_an_error_naming_it(data, tmp_path):
  # Long enough to be killed while training.
  fn_args = _fn_args(data, tmp_path, workers=2, timeout=300, epochs=20)
  killed = []

  def kill_worker_1_once_the_chief_trains():
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not killed:
      try:
        workers = _workers()
        if len(workers) == 2 and _is_training(workers[0]):
          workers[1].send_signal(signal.SIGKILL)
          killed.append(workers[1].pid)
      except (psutil.NoSuchProcess, FileNotFoundError):
        pass  # Starting up or already gone: look again.
      time.sleep(0.2)

  killer = threading.Thread(
      target=kill_worker_1_once_the_chief_trains)
  killer.start()
  started = time.monotonic()
  try:
    with pytest.raises(local_workers.WorkerError) as error:
      local_workers.run_fn(fn_args)
  finally:
    killer.join()
  assert killed, 'the test never saw the chief train'
  message = str(error.value)
  assert message.startswith(
      'Trainer worker 1 of 2 (worker) was killed by SIGKILL'), message
  # Before the workers' timeout: the run did not wait for it.
  assert time.monotonic() - started < 300
  # No worker is left behind, and no model.
  assert _workers() == {}
  assert not os.path.exists(fn_args.serving_model_dir)


def test_local_workers_import_this_copy_of_the_project():
  # First on the workers' PYTHONPATH: the checkout the run's code is from,
  # not an installed copy of it.
  assert local_workers.PROJECT_ROOT == constants.PROJECT_DIR


def test_tf_config_of_vertex_and_of_local_workers():
  vertex = ('{"cluster": {"chief": ["c:2222"], "worker": ["w0:2222", '
            '"w1:2222"]}, "task": {"type": "worker", "index": 0}}')
  task = devices.parse_tf_config(vertex)
  assert (task.workers, task.is_chief) == (3, False)
  assert devices.parse_tf_config(vertex.replace('"type": "worker"',
                                                '"type": "chief"')).is_chief
  local = [local_workers.local_tf_config(['a:1', 'b:2'], i) for i in (0, 1)]
  assert devices.parse_tf_config(local[0]).is_chief
  assert not devices.parse_tf_config(local[1]).is_chief
  # One task, or none: one process trains alone.
  assert devices.parse_tf_config('{"cluster": {"chief": ["c:1"]}, '
                                 '"task": {"type": "chief", "index": 0}}'
                                 ) is None
  assert devices.parse_tf_config(None) is None
  with pytest.raises(ValueError, match='TF_CONFIG is not a JSON object'):
    devices.parse_tf_config('chief')


def test_more_workers_than_files_is_refused_before_any_starts(data,
                                                              tmp_path):
  fn_args = _fn_args(data, tmp_path, workers=SHARDS + 1)
  with pytest.raises(ValueError, match=(
      f'{SHARDS + 1} Trainer workers need at least {SHARDS + 1} files per '
      f'split, and the train split has {SHARDS} ')):
    local_workers.run_fn(fn_args)
  assert _workers() == {}
  assert not os.path.exists(fn_args.model_run_dir)


def test_the_trainer_alone_refuses_workers_no_cluster_names(
    data, tmp_path, monkeypatch):
  # Training alone while the settings say two workers would go unnoticed.
  monkeypatch.delenv('TF_CONFIG', raising=False)
  fn_args = _fn_args(data, tmp_path, workers=2)
  with pytest.raises(ValueError, match='2 Trainer workers need a cluster'):
    trainer.run_fn(fn_args)
  assert _workers() == {}
  assert not os.path.exists(fn_args.serving_model_dir)


def _vertex_tf_config(addresses, task_type):
  """TF_CONFIG as Vertex AI sets it in a custom job's replicas: pool 0 is
  the chief, pool 1 the workers."""
  return json.dumps({
      'cluster': {'chief': addresses[:1], 'worker': addresses[1:]},
      'task': {'type': task_type, 'index': 0, 'trial': ''},
      'job': '{}', 'environment': 'cloud'})


def test_vertex_replicas_train_as_chief_and_worker(data, tmp_path):
  """The command every replica of the Trainer's Vertex AI custom job runs
  (TFX's Trainer executor through tfx.scripts.run_executor, as TFX's
  Vertex job client writes it from our custom_config), run here: one
  process per replica, each with the TF_CONFIG Vertex AI gives it."""
  examples_uri, transform_dir = data
  examples = standard_artifacts.Examples()
  examples.uri = examples_uri
  examples.split_names = artifact_utils.encode_split_names(['train', 'eval'])
  graph = standard_artifacts.TransformGraph()
  graph.uri = transform_dir
  model = standard_artifacts.Model()
  model.uri = str(tmp_path / 'model')
  model_run = standard_artifacts.ModelRun()
  model_run.uri = str(tmp_path / 'model_run')
  custom_config = {
      # As many steps as one worker's 4 epochs, as in the test above: at
      # half as many, what two replicas learn is left to chance.
      'training': _fn_args(data, tmp_path, workers=2, epochs=8).custom_config[
          'training'],
      **vertex_training.trainer_custom_config(
          'project', 'region', 'image', 2, 'machine')}
  exec_properties = {'run_fn': constants.RUN_FN, 'train_args': '{}',
                     'eval_args': '{}',
                     'custom_config': json.dumps(custom_config)}
  job_args = copy.deepcopy(custom_config[trainer_executor.TRAINING_ARGS_KEY])
  job_args.pop('project')  # What TFX's runner does before this call.
  # TFX's own job construction; the client is not initialised, so nothing
  # is sent anywhere.
  job = object.__new__(training_clients.VertexJobClient).create_training_job(
      {'examples': [examples], 'transform_graph': [graph]},
      {'model': [model], 'model_run': [model_run]}, exec_properties,
      'tfx.components.trainer.executor.GenericExecutor', job_args, None, None)
  pools = job['job_spec']['worker_pool_specs']
  assert [pool['replica_count'] for pool in pools] == [1, 1]

  addresses = [f'127.0.0.1:{port}' for port in local_workers.free_ports(2)]
  processes = []
  for task_type, pool in zip(('chief', 'worker'), pools):
    command = pool['container_spec']['command']
    assert command[:3] == ['python', '-m', 'tfx.scripts.run_executor']
    with open(tmp_path / f'{task_type}.log', 'w') as log:
      processes.append(subprocess.Popen(
          [sys.executable, *command[1:]], stdout=log,
          stderr=subprocess.STDOUT, cwd=tmp_path,
          env={**os.environ,
               devices.TF_CONFIG: _vertex_tf_config(addresses, task_type)}))
  try:
    codes = [process.wait(timeout=600) for process in processes]
  finally:
    for process in processes:
      process.kill()
  logs = {t: (tmp_path / f'{t}.log').read_text() for t in ('chief', 'worker')}
  # Both executors succeeded: the worker's too, which checks that the
  # serving model exists once run_fn returns (the chief wrote it).
  assert codes == [0, 0], {t: log[-3000:] for t, log in logs.items()}
  assert 'chief 0 of 2 training tasks (chief)' in logs['chief']
  assert 'worker 0 of 2 training tasks' in logs['worker']
  assert _saved_models(str(tmp_path)) == [
      str(tmp_path / 'model' / 'Format-Serving' / 'saved_model.pb')]
  assert _accuracy(str(tmp_path / 'model' / 'Format-Serving'),
                   examples_uri) >= 0.9
