"""The `kubeflow` target, two scheduled runs, all on a real S3 server.

The spec kubeflow_runner.py compiles for open-source Kubeflow Pipelines runs
through tests/kfp_launcher.py in its 'kubeflow' mode (the backend's
contract: no resolver, no lifecycle hook, inputs without their types, KFP's
cache), with data, pipeline root and serving directory on s3:// of a moto
server on loopback, as a cluster's MinIO:

  1. span 1 of the data: the model is blessed on the threshold alone
     (nothing served yet) and pushed;
  2. span 2 lands under the same data_root, and the threshold is one no
     model reaches: ImageExampleGen is not answered from KFP's cache, reads
     span 2, the Evaluator compares the new model with the served one (its
     baseline), blesses nothing, and the served model stays the newest
     version. Its Trainer starts from the served model (--warm-start).
     (Two runs, not three: each costs minutes of CI.)
Both are compiled with --keep-runs 1, so each ends with the KeepRuns step.
Between them, a run that failed after ExampleGen leaves its folder (made
by copying run 1's first outputs to a run id of its own): run 2 collects
its Examples, keeps run 1's lineage, whose model is the one served, and
its own outputs.
"""

import json
import os
import sys
import uuid

import pytest

from components.keep_runs import component as keep_runs
from kubeflow import kubeflow_runner
from pipeline import constants
from tests import datasets
from tests import kfp_launcher
from tests import preloaded_python
from tests import s3_server
from tests import test_kubeflow_keep_runs as keep_runs_cases

BUCKET = 'pipelines'
ROOT = f's3://{BUCKET}/tfx'
DATA = f's3://{BUCKET}/data'
SERVING = f'{ROOT}/serving_model'
KUBEFLOW_PARSER = kubeflow_runner.make_parser()
ONE_PROCESS = ('--beam-args=--direct_running_mode=in_memory '
               '--direct_num_workers=1')
# Few files per split: every file is S3 requests in each task that reads it.
FEW_SHARDS = ['--num-shards', '2']
# (spec, threshold, training, records of the span) of each run. Run 1
# trains as the local whole-pipeline test does: its model must reach 0.3.
# No model reaches run 2's threshold, so what it learns does not matter:
# it trains the fewest steps, on a smaller span.
RUNS = [
    ('pipeline.yaml', 0.3,
     ['--epochs', '2', '--train-steps', '60', '--batch-size', '32'],
     {'train': 300, 't10k': 100}),
    ('impossible.yaml', 1.01,
     ['--epochs', '1', '--train-steps', '2', '--batch-size', '8',
      '--warm-start'],
     {'train': 40, 't10k': 20}),
]


def _compile(preloaded, tmp, endpoint, name, threshold, training):
  path, log = str(tmp / name), str(tmp / f'{name}.log')
  status = preloaded.run(
      [sys.executable, os.path.join(constants.PROJECT_DIR, 'kubeflow',
                                    'kubeflow_runner.py'),
       '--output', path, '--image', 'unused:local', '--pipeline-root', ROOT,
       '--data-dir', DATA, '--span-dir-pattern', 'span-{SPAN}',
       '--s3-endpoint', endpoint, '--accuracy-threshold', str(threshold),
       '--keep-runs', '1', *training, *FEW_SHARDS, ONE_PROCESS],
      kfp_launcher.task_environment(), str(tmp), log, timeout=300)
  with open(log) as f:
    assert status == 0, f.read()[-3000:]
  return path


def _served_versions(endpoint):
  keys = s3_server.list_keys(endpoint, BUCKET, 'tfx/serving_model/')
  return sorted({k.split('/')[2] for k in keys}, key=int)


def _span(examples):
  # A custom property named like the Examples type's `span` property, which
  # TFX's entrypoint writes with the `custom:` prefix.
  return examples.metadata['custom:span']


def _only(launcher, task, key):
  [artifact] = launcher.outputs[task][key]
  return artifact


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
  """An S3 server with the bucket, and the Python the tasks run in
  (preloaded_python.py): {'endpoint', 'preloaded', 'tmp'}."""
  tmp = tmp_path_factory.mktemp('kubeflow_s3')
  with s3_server.running(str(tmp / 's3.log')) as endpoint, \
      preloaded_python.Server(kfp_launcher.task_environment()) as preloaded:
    s3_server.client(endpoint).create_bucket(Bucket=BUCKET)
    yield dict(endpoint=endpoint, preloaded=preloaded, tmp=tmp)


def _fail_after_example_gen(endpoint, launcher):
  """A run that failed after ExampleGen and StatisticsGen: their outputs
  (run 1's, copied) in a run folder of its own. Returns its run id."""
  s3 = s3_server.client(endpoint)
  run_id = uuid.uuid4().hex[:12]
  prefix = f'tfx/{constants.KUBEFLOW_PIPELINE_NAME}/'
  for key in s3_server.list_keys(endpoint, BUCKET,
                                 f'{prefix}{launcher.run_id}/'):
    if key.split('/')[3] in ('ImageExampleGen', 'StatisticsGen'):
      s3.copy_object(Bucket=BUCKET, Key=key.replace(launcher.run_id, run_id),
                     CopySource={'Bucket': BUCKET, 'Key': key})
  return run_id


@pytest.fixture(scope='module')
def runs(cluster):
  """The two runs, in order, on one S3 server and one KFP backend, and the
  failed run between them.

  Returns {'endpoint', 'launchers': [run 1, 2], 'served': the served
  versions before run 1 and after each run, 'failed': the failed run's id,
  'preloaded': the Python the tasks ran in, 'tmp': the fixture's
  directory}.
  """
  endpoint, preloaded, tmp = (cluster['endpoint'], cluster['preloaded'],
                              cluster['tmp'])
  backend = kfp_launcher.Backend()
  launchers, served, failed = [], [_served_versions(endpoint)], None
  for span, (name, threshold, training, records) in enumerate(RUNS, start=1):
    spec = _compile(preloaded, tmp, endpoint, name, threshold, training)
    # A new span lands before each scheduled run.
    datasets.write_idx_dataset(str(tmp / f'span-{span}'), records)
    s3_server.upload_dir(endpoint, str(tmp / f'span-{span}'), BUCKET,
                         f'data/span-{span}')
    if launchers:
      failed = _fail_after_example_gen(endpoint, launchers[-1])
    # The credentials reach the tasks only as the cluster would give
    # them: the spec's PlatformSpec maps the namespace's secret to env.
    launcher = kfp_launcher.LocalLauncher(
        spec, ROOT, mode='kubeflow', backend=backend,
        log_dir=str(tmp / f'run-{span}'), preloaded=preloaded,
        secrets={KUBEFLOW_PARSER.get_default('s3_credentials_secret'): dict(
            zip(KUBEFLOW_PARSER.get_default('s3_credentials_keys').split(','),
                (s3_server.ACCESS_KEY, s3_server.SECRET_KEY)))})
    launcher.run()
    launchers.append(launcher)
    served.append(_served_versions(endpoint))
  return dict(endpoint=endpoint, launchers=launchers, served=served,
              failed=failed, preloaded=preloaded, tmp=tmp)


def test_first_run_reads_s3_writes_every_artifact_there_and_pushes(runs):
  launcher, endpoint = runs['launchers'][0], runs['endpoint']
  assert set(launcher.states.values()) == {'COMPLETE'}
  examples = _only(launcher, 'ImageExampleGen', 'examples')
  assert _span(examples) == 1
  # Every artifact under <root>/<pipeline>/<run>/<task>/<uuid>/<output>.
  for task, outputs in launcher.outputs.items():
    for key, artifacts in outputs.items():
      for artifact in artifacts:
        run_root, attempt, output = artifact.uri.rsplit('/', 2)
        assert run_root == (f'{ROOT}/{constants.KUBEFLOW_PIPELINE_NAME}/'
                            f'{launcher.run_id}/{task}')
        assert output == key and str(uuid.UUID(attempt)) == attempt
  keys = s3_server.list_keys(endpoint, BUCKET, 'tfx/')
  run_prefix = f'tfx/{constants.KUBEFLOW_PIPELINE_NAME}/{launcher.run_id}/'
  for task in ('ImageExampleGen', 'Transform', 'Trainer', 'Evaluator'):
    assert any(k.startswith(run_prefix + task + '/') for k in keys), task
  # Nothing served before: blessed on the threshold alone, then pushed.
  assert runs['served'][0] == []
  assert _only(launcher, 'ServedModel', 'model').metadata[
      'served_version'] == ''
  blessing = _only(launcher, 'Evaluator', 'blessing')
  assert blessing.metadata['blessed'] == 1
  assert 'baseline_model_id' not in blessing.metadata
  pushed = _only(launcher, 'Pusher', 'pushed_model')
  assert pushed.metadata['pushed'] == 1
  assert pushed.metadata['pushed_destination'] == (
      f'{SERVING}/{runs["served"][1][0]}')
  assert len(runs['served'][1]) == 1


def test_second_run_reads_the_new_span_and_compares_with_the_served_model(
    runs):
  launcher = runs['launchers'][1]
  [served] = runs['served'][1]
  # Never from KFP's cache: its key does not see the new files.
  assert launcher.states['ImageExampleGen'] == 'COMPLETE'
  assert _span(_only(launcher, 'ImageExampleGen', 'examples')) == 2
  baseline = _only(launcher, 'ServedModel', 'model')
  assert baseline.metadata['served_version'] == served
  blessing = _only(launcher, 'Evaluator', 'blessing')
  # Compared with the served model: the Evaluator names it as baseline.
  assert blessing.metadata['baseline_model_id'] == baseline.name


def test_a_model_below_the_threshold_pushes_nothing(runs):
  launcher = runs['launchers'][1]
  assert _only(launcher, 'Evaluator', 'blessing').metadata['blessed'] == 0
  assert _only(launcher, 'Pusher', 'pushed_model').metadata['pushed'] == 0
  assert runs['served'][2] == runs['served'][1]


def test_the_served_model_answers_from_s3(runs):
  endpoint = runs['endpoint']
  newest = runs['served'][2][-1]
  check = (
      'import sys, tensorflow as tf, tensorflow_io\n'
      'model = tf.saved_model.load(sys.argv[1])\n'
      'out = model.signatures["serve_images"](\n'
      '    images=tf.zeros([3, 28, 28], tf.uint8))\n'
      'print(tuple(out["probabilities"].shape))\n')
  script, log = runs['tmp'] / 'check.py', runs['tmp'] / 'check.log'
  script.write_text(check)
  # A new process, as a model server is.
  runs['preloaded'].run(
      [sys.executable, str(script), f'{SERVING}/{newest}'],
      dict(kfp_launcher.task_environment(),
           **s3_server.pod_environment(endpoint)),
      str(runs['tmp']), str(log), timeout=300)
  # tensorflow-io's S3 client may abort at exit (134); the output counts.
  assert '(3, 10)' in log.read_text(), log.read_text()[-3000:]


def test_second_run_starts_from_the_served_model(runs):
  launcher = runs['launchers'][1]
  [served] = runs['served'][1]
  # Read anew, not from KFP's cache, and handed to the Trainer.
  assert launcher.states['WarmStartModel'] == 'COMPLETE'
  start = _only(launcher, 'WarmStartModel', 'model')
  assert start.metadata['served_from'] == f'{SERVING}/{served}'
  model = _only(launcher, 'Trainer', 'model')
  assert model.metadata['warm_start_from'] == f'{SERVING}/{served}'


def _large_outputs(endpoint, run_id):
  """{'task/output'} of the large outputs a run folder still holds."""
  found = set()
  for key in s3_server.list_keys(
      endpoint, BUCKET, f'tfx/{constants.KUBEFLOW_PIPELINE_NAME}/{run_id}/'):
    task, _, output = key.split('/')[3:6]
    if f'{task}/{output}' in keep_runs_cases.LARGE:
      found.add(f'{task}/{output}')
  return found


def _kept(endpoint, launcher):
  """What a run's KeepRuns step recorded (components/keep_runs/component.py)."""
  uri = _only(launcher, keep_runs.NODE_ID, keep_runs.KEPT_RUNS_KEY).uri
  key = f'{uri[len(f"s3://{BUCKET}/"):]}/{keep_runs.RECORD_FILE}'
  return json.loads(s3_server.client(endpoint).get_object(
      Bucket=BUCKET, Key=key)['Body'].read())


def test_each_run_ends_with_keep_runs_which_keeps_the_served_lineage(runs):
  endpoint = runs['endpoint']
  first, second = runs['launchers']
  for launcher in (first, second):
    assert launcher.executed[-1] == keep_runs.NODE_ID
    assert launcher.states[keep_runs.NODE_ID] == 'COMPLETE'
  assert _kept(endpoint, first)['deleted'] == []  # Nothing before it.
  kept = _kept(endpoint, second)
  assert kept['kept_runs'] == [second.run_id]
  assert kept['served_version'] == runs['served'][2][-1]
  assert kept['served_runs'] == [first.run_id]
  # Run 1 pushed the served model: its Examples, model and push stay.
  assert _large_outputs(endpoint, first.run_id) >= {
      'ImageExampleGen/examples', 'Trainer/model', 'Pusher/pushed_model'}
  # Run 2 is the newest run (K=1): all of it stays. (It pushed nothing.)
  assert _large_outputs(endpoint, second.run_id) == {
      'ImageExampleGen/examples', 'Trainer/model', 'ServedModel/model',
      'WarmStartModel/model'}


def test_the_next_run_collects_a_failed_run(runs):
  endpoint, failed = runs['endpoint'], runs['failed']
  assert _large_outputs(endpoint, failed) == set()
  # Its small artifacts stay, as every run's.
  assert s3_server.list_keys(
      endpoint, BUCKET,
      f'tfx/{constants.KUBEFLOW_PIPELINE_NAME}/{failed}/StatisticsGen/')


# What KeepRuns decides, on run folders built on the S3 server (the same as
# tests/test_kubeflow_keep_runs.py's on the local disk), in a task's Python.
_COLLECT = """
import json, os, sys
import tensorflow_io  # s3://, as kubeflow/container_entrypoint.py
from components.keep_runs import run_folders
plan = run_folders.collect(*sys.argv[1:3], 1, *map(json.loads, sys.argv[3:5]),
                           *sys.argv[5:])
print(json.dumps(plan.__dict__))
sys.stdout.flush()
os._exit(0)  # Before tensorflow-io's S3 client aborts the teardown.
"""


def test_on_s3_keep_runs_decides_as_on_a_disk(cluster):
  endpoint, bucket = cluster['endpoint'], 'decisions'
  cases = keep_runs_cases
  s3 = s3_server.client(endpoint)
  s3.create_bucket(Bucket=bucket)
  files = {**cases.run_files('run-c', cases.FULL_RUN),
           **{f'../serving/1700000000/{path}': data for path, data in
              cases.served_files('run-c').items()},
           **cases.run_files('run-b', cases.FAILED_RUN),
           **cases.run_files('run-a', cases.FULL_RUN)}
  # Written in this order: the object store's clock orders the runs.
  pipeline = constants.KUBEFLOW_PIPELINE_NAME
  for path, data in files.items():
    s3.put_object(Bucket=bucket, Key=os.path.normpath(
        f'tfx/{pipeline}/{path}'), Body=data)
  before = set(s3_server.list_keys(endpoint, bucket))
  script = cluster['tmp'] / 'collect.py'
  log = cluster['tmp'] / 'collect.log'
  script.write_text(_COLLECT)
  cluster['preloaded'].run(
      [sys.executable, str(script), f's3://{bucket}/tfx/{pipeline}', 'run-a',
       json.dumps(cases.LARGE), json.dumps(cases.LINEAGE), cases.MODEL,
       f's3://{bucket}/tfx/serving'],
      dict(kfp_launcher.task_environment(),
           **s3_server.pod_environment(endpoint)),
      str(cluster['tmp']), str(log), timeout=300)
  lines = [l for l in log.read_text().splitlines() if l.startswith('{')]
  assert lines, log.read_text()[-3000:]
  plan = json.loads(lines[-1])
  gone = before - set(s3_server.list_keys(endpoint, bucket))
  assert plan['served_runs'] == ['run-c']
  assert plan['kept_runs'] == ['run-a']
  assert {key.split('/')[2] + ':' + key.split('/')[3] for key in gone} == {
      'run-b:ImageExampleGen', 'run-c:ServedModel'}
