"""pipeline/startup.py: a block run without the garbage collector, what it
leaves behind frozen, the collector as it was before; an exit that leaves
what exists uncollected; TensorFlow's C++ log level set unless given; Beam
set up as every run's in each process where it runs."""

import gc
import os
import subprocess
import sys

from pipeline import startup
from tests import datasets
from tests.local_run import PROJECT_DIR


def test_the_block_runs_without_the_collector_and_its_objects_stay_frozen():
  assert gc.isenabled()
  before = gc.get_freeze_count()
  try:
    with startup.without_gc():
      assert not gc.isenabled()
      kept = [[] for _ in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + len(kept)
  finally:
    gc.unfreeze()


def test_a_collector_that_was_off_stays_off():
  gc.disable()
  try:
    with startup.without_gc():
      pass
    assert not gc.isenabled()
  finally:
    gc.enable()
    gc.unfreeze()


def test_exit_leaves_the_status_and_runs_exit_handlers():
  program = ('import atexit, gc\n'
             'from pipeline import startup\n'
             'atexit.register(lambda: print(gc.get_freeze_count() > 0))\n'
             'startup.exit_without_gc(3)\n')
  result = subprocess.run([sys.executable, '-c', program], cwd=PROJECT_DIR,
                          capture_output=True, text=True, check=False)
  assert result.returncode == 3, result.stderr
  assert result.stdout == 'True\n'  # The handler ran, on frozen objects.


def test_tensorflow_is_quiet_unless_the_user_says_otherwise(monkeypatch):
  monkeypatch.delenv('TF_CPP_MIN_LOG_LEVEL', raising=False)
  startup.quiet_tensorflow()
  assert os.environ['TF_CPP_MIN_LOG_LEVEL'] == '2'
  monkeypatch.setenv('TF_CPP_MIN_LOG_LEVEL', '0')
  startup.quiet_tensorflow()
  assert os.environ['TF_CPP_MIN_LOG_LEVEL'] == '0'


def test_a_local_run_loads_none_of_tfxs_google_cloud_extensions(tmp_path):
  # Any import of tfx.v1 imports TFX's Google Cloud extensions, about a
  # second of every run's start-up: the DAG and its executors take TFX's
  # names from their own modules instead. Building the DAG imports every
  # component's module and executor class.
  program = (
      'import sys\n'
      'import local_runner\n'
      'args = local_runner.make_parser().parse_args(\n'
      f'    ["--data-dir", {str(tmp_path)!r}, "--output-dir",\n'
      f'     {str(tmp_path / "out")!r}])\n'
      'local_runner.build_pipeline(args)\n'
      'from tfx.orchestration.local.local_dag_runner import LocalDagRunner\n'
      'from modules import trainer, tuner\n'
      'print(sorted(m for m in sys.modules if m.startswith(\n'
      '    ("tfx.v1", "tfx.extensions.google_cloud", "google.cloud.aip"))))\n')
  result = subprocess.run([sys.executable, '-c', program], cwd=PROJECT_DIR,
                          capture_output=True, text=True, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout == '[]\n'


def test_the_names_taken_from_tfxs_modules_are_its_public_ones():
  # Fails when TFX moves a name that tfx.v1 exports.
  from tfx import v1 as tfx  # pylint: disable=g-import-not-at-top
  from pipeline import pipeline, stages  # pylint: disable=g-import-not-at-top,g-multiple-import
  from components import validation_gate  # pylint: disable=g-import-not-at-top
  from modules import tuner  # pylint: disable=g-import-not-at-top
  assert stages.StatisticsGen is tfx.components.StatisticsGen
  assert stages.ImportSchemaGen is tfx.components.ImportSchemaGen
  assert stages.Trainer is tfx.components.Trainer
  assert stages.Resolver is tfx.dsl.Resolver
  assert (stages.LatestBlessedModelStrategy is
          tfx.dsl.experimental.LatestBlessedModelStrategy)
  assert stages.Channel is tfx.dsl.Channel
  assert stages.standard_artifacts.Model is tfx.types.standard_artifacts.Model
  assert stages.pusher_pb2.PushDestination is tfx.proto.PushDestination
  assert stages.trainer_pb2.TrainArgs is tfx.proto.TrainArgs
  assert stages.trainer_pb2.EvalArgs is tfx.proto.EvalArgs
  assert stages.Tuner is tfx.components.Tuner
  assert pipeline.ExampleValidator is tfx.components.ExampleValidator
  assert pipeline.pipeline_lib.Pipeline is tfx.dsl.Pipeline
  assert validation_gate.component is tfx.dsl.components.component
  assert validation_gate.InputArtifact is tfx.dsl.components.InputArtifact
  assert validation_gate.Parameter is tfx.dsl.components.Parameter
  assert tuner.TunerFnResult is tfx.components.TunerFnResult
  from tfx.orchestration.data_types import RuntimeParameter  # pylint: disable=g-import-not-at-top
  from tfx.orchestration.kubeflow.v2 import kubeflow_v2_dag_runner  # pylint: disable=g-import-not-at-top
  from tfx.orchestration.local.local_dag_runner import LocalDagRunner  # pylint: disable=g-import-not-at-top
  assert RuntimeParameter is tfx.dsl.experimental.RuntimeParameter
  assert (kubeflow_v2_dag_runner.KubeflowV2DagRunner is
          tfx.orchestration.experimental.KubeflowV2DagRunner)
  assert LocalDagRunner is tfx.orchestration.LocalDagRunner


# Beam as every run sets it up (startup.speed_up_beam), checked in the
# process after the entry's own start.
_BEAM_SET_UP = (
    'from apache_beam.io import tfrecordio\n'
    'from apache_beam.options import pipeline_options\n'
    'from apache_beam.transforms import core\n'
    'import google_crc32c\n'
    'assert tfrecordio._default_crc32c_fn.fn is google_crc32c.value\n'
    'assert hasattr(core.get_signature, "__wrapped__")\n'
    'assert hasattr(pipeline_options.PipelineOptions.view_as, "__wrapped__")\n'
    'print("set up")\n')


def _run(program: str) -> None:
  result = subprocess.run([sys.executable, '-c', program + _BEAM_SET_UP],
                          cwd=PROJECT_DIR, capture_output=True, text=True,
                          check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.endswith('set up\n')


def test_the_local_runners_process_sets_beam_up(tmp_path):
  datasets.write_idx_dataset(str(tmp_path / 'data'))
  # Set up before the DAG runs: an unknown --to-node stops it right there.
  _run('import local_runner\n'
       'try:\n'
       f'  local_runner.main(["--data-dir", {str(tmp_path / "data")!r},\n'
       f'                     "--output-dir", {str(tmp_path / "out")!r},\n'
       '                     "--to-node", "NoSuchComponent"])\n'
       'except SystemExit as e:\n'
       '  assert "NoSuchComponent" in str(e), e\n'
       'else:\n'
       '  raise AssertionError("the DAG ran")\n')


def test_a_kubeflow_tasks_process_sets_beam_up():
  _run('from kubeflow import container_entrypoint\n'
       'container_entrypoint._import_executor([])\n')


def test_every_beam_worker_sets_beam_up():
  # A worker imports pipeline/beam_worker.py at its start (--beam_plugins).
  _run('import pipeline.beam_worker\n')
