"""--keep-runs K on Kubeflow Pipelines: what the KeepRuns step deletes,
decided from run folders laid out as KFP 2 lays them out, built here on the
local disk; and the step in the compiled spec.

The same decision on a real S3 server, and scheduled runs with the step at
their end, are in tests/test_kubeflow_on_s3.py."""

import json
import os

import pytest

from components import push_once
from components.keep_runs import run_folders
from kubeflow import open_source_kfp
from pipeline import constants
from tests import kubeflow_specs

PIPELINE = constants.KUBEFLOW_PIPELINE_NAME
LARGE = ['ImageExampleGen/examples', 'Pusher/pushed_model',
         'ServedModel/model', 'Trainer/model', 'WarmStartModel/model']
LINEAGE = ['ImageExampleGen/examples', 'Pusher/pushed_model', 'Trainer/model']
MODEL = 'Trainer/model'
MODEL_FILES = {'saved_model.pb': b'graph', 'variables/variables.index': b'i'}
# What each output of a run holds: a file, or a SavedModel (the model's
# Format-Serving, or the Pusher's copy).
OUTPUT_FILES = {
    'ImageExampleGen/examples': {'Split-train/data_tfrecord-0.gz': b'r'},
    'StatisticsGen/statistics': {'Split-train/FeatureStats.pb': b's'},
    'Trainer/model': {f'Format-Serving/{k}': v for k, v in MODEL_FILES.items()},
    'Trainer/model_run': {'logs.txt': b'l'},
    'Pusher/pushed_model': MODEL_FILES,
    'ServedModel/model': {f'Format-Serving/{k}': v
                          for k, v in MODEL_FILES.items()},
}


def _weights(run):
  """A model's variables: each run trains its own."""
  return f'weights of {run}'.encode()


def run_files(run, outputs, salted=True):
  """{path under the pipeline folder: bytes} of a run that wrote `outputs`,
  laid out as KFP 2.4 on (salted) or 2.1 to 2.3."""
  files = {}
  for output in outputs:
    task, key = output.split('/')
    folder = f'{run}/{task}/' + (f'{run}-{task}-uuid/' if salted else '')
    for name, data in OUTPUT_FILES[output].items():
      if name.endswith('variables.data') or name.endswith('variables.index'):
        data = _weights(run if output != 'ServedModel/model' else 'served')
      files[f'{folder}{key}/{name}'] = data
  return files


def served_files(run):
  """The files of a served version of `run`'s model."""
  return {name: _weights(run) if name.startswith('variables/') else data
          for name, data in MODEL_FILES.items()}


def write_local(root, files, second):
  """Writes `files` under `root`, modified at `second` since the epoch."""
  for path, data in files.items():
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'wb') as f:
      f.write(data)
    os.utime(full, (second, second))


def left(root):
  """Every file under `root`, relative to it."""
  return {os.path.relpath(os.path.join(folder, name), root)
          for folder, _, names in os.walk(root) for name in names}


FULL_RUN = ['ImageExampleGen/examples', 'StatisticsGen/statistics',
            'Trainer/model', 'Trainer/model_run', 'Pusher/pushed_model',
            'ServedModel/model']
# Failed after ExampleGen: its Examples and statistics only.
FAILED_RUN = ['ImageExampleGen/examples', 'StatisticsGen/statistics']


def _schedule(tmp_path, salted=True):
  """Three runs, oldest first: 'run-c' pushed the served model, 'run-b'
  failed after ExampleGen, 'run-a' is collecting. Their ids sort the other
  way round from their age, as random run ids may."""
  pipeline_dir = str(tmp_path / 'root' / PIPELINE)
  serving = str(tmp_path / 'serving')
  write_local(pipeline_dir, run_files('run-c', FULL_RUN, salted), 1_000)
  write_local(os.path.join(serving, '1700000000'), served_files('run-c'),
              1_001)
  write_local(pipeline_dir, run_files('run-b', FAILED_RUN, salted), 2_000)
  write_local(pipeline_dir, run_files('run-a', FULL_RUN, salted), 3_000)
  return pipeline_dir, serving


@pytest.mark.parametrize('salted', [True, False], ids=['kfp-2.4-on',
                                                        'kfp-2.1-to-2.3'])
def test_keeps_the_newest_run_and_the_served_lineage_collects_a_failed_run(
    tmp_path, salted):
  pipeline_dir, serving = _schedule(tmp_path, salted)
  before = left(pipeline_dir)
  plan = run_folders.collect(pipeline_dir, 'run-a', 1, LARGE, LINEAGE, MODEL,
                             serving)
  assert plan.kept_runs == ['run-a']
  assert plan.served_version == '1700000000'
  assert plan.served_runs == ['run-c']
  assert plan.going_runs == []
  gone = before - left(pipeline_dir)
  # The failed run's Examples; the served run's copy of the model served
  # before it (its baseline), which is not its lineage.
  assert {path.split('/')[0] + ':' + path.split('/')[1] for path in gone} == {
      'run-b:ImageExampleGen', 'run-c:ServedModel'}
  # Small artifacts stay, of every run; the serving directory is untouched.
  assert all('StatisticsGen' not in path and 'model_run' not in path
             for path in gone)
  assert os.listdir(serving) == ['1700000000']
  # Nothing left to do: a second collection deletes nothing.
  assert run_folders.collect(pipeline_dir, 'run-a', 1, LARGE, LINEAGE, MODEL,
                             serving).deleted == []


def test_the_newest_runs_are_the_ones_that_started_last(tmp_path):
  pipeline_dir, serving = _schedule(tmp_path)
  # Keep 2: this run and the failed one before it; nothing served goes.
  plan = run_folders.plan(pipeline_dir, 'run-a', 2, LARGE, LINEAGE, MODEL,
                          serving)
  assert plan.kept_runs == ['run-a', 'run-b']
  assert [p.split(PIPELINE + '/')[1].split('/')[1] for p in plan.deleted] == [
      'ServedModel']
  # Another run's model served: run-c's lineage goes too.
  write_local(serving, {f'1800000000/{k}': v
                        for k, v in MODEL_FILES.items()}, 4_000)
  plan = run_folders.plan(pipeline_dir, 'run-a', 2, LARGE, LINEAGE, MODEL,
                          serving)
  assert plan.served_runs == []
  assert sorted(p.split(PIPELINE + '/')[1].split('/')[1]
                for p in plan.deleted) == [
                    'ImageExampleGen', 'Pusher', 'ServedModel', 'Trainer']


def test_a_run_still_writing_is_left_for_a_later_run(tmp_path):
  pipeline_dir, serving = _schedule(tmp_path)
  # run-b started before run-a but wrote after run-a started: it is going.
  write_local(pipeline_dir, run_files('run-b', ['Trainer/model']), 3_500)
  plan = run_folders.plan(pipeline_dir, 'run-a', 1, LARGE, LINEAGE, MODEL,
                          serving)
  assert plan.going_runs == ['run-b']
  assert not [p for p in plan.deleted if '/run-b/' in p]


def test_an_unreadable_serving_directory_deletes_nothing(tmp_path):
  pipeline_dir, _ = _schedule(tmp_path)
  not_a_directory = tmp_path / 'serving-file'
  not_a_directory.write_text('')
  before = left(pipeline_dir)
  with pytest.raises(push_once.ServingDirectoryError):
    run_folders.collect(pipeline_dir, 'run-a', 1, LARGE, LINEAGE, MODEL,
                        str(not_a_directory))
  assert left(pipeline_dir) == before


def test_a_serving_directory_among_the_run_folders_is_never_touched(
    tmp_path):
  pipeline_dir, serving = _schedule(tmp_path)
  inside = os.path.join(pipeline_dir, 'serving')
  os.rename(serving, inside)
  run_folders.collect(pipeline_dir, 'run-a', 1, LARGE, LINEAGE, MODEL, inside)
  assert os.listdir(inside) == ['1700000000']


@pytest.mark.parametrize('uri, expected', [
    (f's3://b/tfx/{PIPELINE}/run-1/KeepRuns/1b2c/kept_runs',
     (f's3://b/tfx/{PIPELINE}', 'run-1')),
    (f'/data/tfx/{PIPELINE}/run-1/KeepRuns/kept_runs',
     (f'/data/tfx/{PIPELINE}', 'run-1')),
])
def test_the_run_folder_of_an_output_uri(uri, expected):
  assert run_folders.run_folder_of(uri, PIPELINE, 'KeepRuns') == expected


def test_a_layout_other_than_kfps_deletes_nothing():
  # Vertex AI's: <root>/<project number>/<job>/<task>_<execution id>/<output>.
  with pytest.raises(run_folders.LayoutError, match='nothing deleted'):
    run_folders.run_folder_of(
        f'gs://b/tfx/123/{PIPELINE}-2026/KeepRuns_42/kept_runs', PIPELINE,
        'KeepRuns')


# ------------------------------------------------------- the compiled step --


def test_the_step_comes_last_never_cached_and_kfp_runs_it(tmp_path):
  spec = kubeflow_specs.compile_spec(
      tmp_path / 'p.yaml', *kubeflow_specs.CLUSTER_PATHS, '--keep-runs', '3',
      '--warm-start', '--eval-copies', 'drop')
  open_source_kfp.check(spec)
  tasks = spec['root']['dag']['tasks']
  step = tasks['KeepRuns']
  assert set(step['dependentTasks']) == set(tasks) - {'KeepRuns'}
  assert step['cachingOptions'] == {'enableCache': False}
  params = {key: value['runtimeValue']['constant']
            for key, value in step['inputs']['parameters'].items()}
  assert params['keep_runs'] == 3
  assert params['serving_model_dir'] == 'gs://bucket/tfx/serving_model'
  assert params['pipeline_name'] == spec['pipelineInfo']['name']
  # Read off the DAG: its large outputs, and the served model's lineage,
  # which stops at the baseline and the warm start (other models).
  assert json.loads(params['large_outputs']) == [
      'DataChecks/examples_without_copies', 'ImageExampleGen/examples',
      'Pusher/pushed_model', 'ServedModel/model', 'Trainer/model',
      'WarmStartModel/model']
  assert json.loads(params['lineage_outputs']) == [
      'DataChecks/examples_without_copies', 'ImageExampleGen/examples',
      'Pusher/pushed_model', 'Trainer/model']
  assert params['model_output'] == 'Trainer/model'
  plain = kubeflow_specs.compile_spec(tmp_path / 'plain.yaml',
                                      *kubeflow_specs.CLUSTER_PATHS)
  assert 'KeepRuns' not in plain['root']['dag']['tasks']


@pytest.mark.parametrize('flags, message', [
    (['--target', 'vertex'], '--keep-runs: --target kubeflow only'),
    (['--serving-model-dir', f'gs://bucket/tfx/{PIPELINE}/serving'],
     'where Kubeflow Pipelines puts the run folders'),
])
def test_keep_runs_where_run_folders_cannot_be_told_apart_is_refused(
    tmp_path, flags, message):
  with pytest.raises(SystemExit, match=message):
    kubeflow_specs.compile_spec(tmp_path / 'p.yaml',
                                *kubeflow_specs.CLUSTER_PATHS, '--keep-runs',
                                '1', *flags)
