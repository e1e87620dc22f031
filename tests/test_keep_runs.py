"""--keep-runs K: after many runs the disk holds K runs' large artifacts, the
served model and its lineage, and ML Metadata still lists every run.

Three tiny runs, one span each, through local_runner.py as a schedule would
run them, all with --keep-runs 1: the first model is pushed, the next two
are not blessed (an accuracy threshold no model reaches), so what is served
comes from a run outside the newest one.

The runs check their data against the curated MNIST schema (--schema), as a
scheduled run would: they also show that the whole DAG reads MNIST-format
records through it.
"""

import os

from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2 as pb
import pytest
import tensorflow as tf

from components import push_once
import local_runner
from pipeline import constants
from pipeline import knobs
from records import features
from runs import flags
from runs import keep_runs_local
from metadata import local_store
from tests import datasets
from tests import local_run
from tests import mlmd
from tests import serving
from tests import tiny_runs

RUNS = 3
KEEP = 1
TINY_TRAINING = ['--epochs', '1', '--train-steps', '2', '--batch-size', '8',
                 '--no-label-check', local_run.ONE_PROCESS]
# Accuracy is at most 1: no model is blessed, none pushed.
NEVER_BLESSED = '1.01'


@pytest.fixture(scope='module')
def kept(tmp_path_factory):
  """The output directory after RUNS runs with --keep-runs KEEP, and what
  each run printed."""
  tmp = tmp_path_factory.mktemp('keep_runs')
  data, out = tmp / 'data', tmp / 'out'
  printed = []
  for span in range(1, RUNS + 1):
    datasets.write_idx_dataset(str(data / f'span-{span}'))
    threshold = '0' if span == 1 else NEVER_BLESSED
    result = local_run.run(
        '--data-dir', str(data), '--span-dir-pattern', 'span-{SPAN}',
        '--schema', constants.MNIST_SCHEMA, '--dataset', 'fashion-mnist',
        '--output-dir', str(out), '--accuracy-threshold', threshold,
        '--keep-runs', str(KEEP), *TINY_TRAINING)
    assert result.returncode == 0, result.stderr[-3000:]
    printed.append(result.stdout)
  return out, printed


def _by_span(store, type_name):
  """{span of the Examples it came from: artifact} of a type's artifacts,
  whatever their state."""
  examples = {a.id: a.custom_properties['span'].int_value
              for a in store.get_artifacts_by_type('Examples')}
  found = {}
  for artifact in store.get_artifacts_by_type(type_name):
    if type_name == 'Examples':
      found[examples[artifact.id]] = artifact
      continue
    # The producing execution's Examples input names the span.
    [event] = [e for e in store.get_events_by_artifact_ids([artifact.id])
               if e.type == e.OUTPUT][:1]
    inputs = [e.artifact_id for e in store.get_events_by_execution_ids(
        [event.execution_id]) if e.type == e.INPUT]
    spans = {examples[i] for i in inputs if i in examples}
    found[max(spans)] = artifact
  return found


def test_a_curated_schema_takes_mnist_format_data_through_the_whole_dag(
    kept):
  # Transform, Trainer and Evaluator read the records through the curated
  # schema (every feature of the format, the source too).
  out, printed = kept
  assert all('no anomalies' in stdout for stdout in printed)
  store = mlmd.open_store(str(out))
  states = mlmd.execution_states(store)
  assert 'ImportSchemaGen' in states and 'SchemaGen' not in states
  assert states['Evaluator'] == states['Pusher'] == ['COMPLETE'] * RUNS
  for examples in mlmd.live_artifacts(store, 'Examples'):
    assert features.decode_class_names(
        examples.custom_properties['class_names'].string_value) == (
            knobs.DATASETS['fashion-mnist']['class_names'])


def test_only_the_newest_runs_and_the_served_lineage_stay_on_disk(kept):
  out, printed = kept
  store = mlmd.open_store(str(out))
  deleted, live = 'DELETED', 'LIVE'
  state = lambda a: a.State.Name(a.state)
  examples = _by_span(store, 'Examples')
  models = _by_span(store, 'Model')
  # Every run's records are still in ML Metadata.
  assert sorted(examples) == sorted(models) == list(range(1, RUNS + 1))
  for span in range(1, RUNS + 1):
    newest, served = span > RUNS - KEEP, span == 1
    for artifact in (examples[span], models[span]):
      assert state(artifact) == (live if newest or served else deleted), span
      assert os.path.isdir(artifact.uri) == (newest or served), span
  # The small artifacts of every run stay.
  assert all(state(a) == live for a in store.get_artifacts_by_type(
      'ExampleStatistics'))
  assert 'marked DELETED in ML Metadata' in printed[-1]
  assert 'the served model (version ' in printed[-1]
  # A second collection finds nothing more to delete.
  again = keep_runs_local.collect(
      local_store.for_run(str(out), None).connection_config,
      constants.PIPELINE_NAME, KEEP,
      str(out / constants.SERVING_MODEL_DIR_NAME),
      str(out / constants.PIPELINE_ROOT_NAME))
  assert again.deleted == [] and len(again.kept_runs) == KEEP


def test_the_served_model_still_answers(kept):
  out, _ = kept
  path = serving.latest_pushed_model(
      os.path.join(out, constants.SERVING_MODEL_DIR_NAME))
  images, _ = datasets.images_and_labels(4)
  probabilities, classes = serving.classify_images(tf.saved_model.load(path),
                                                   images)
  assert probabilities.shape == (4, 10) and classes.shape == (4,)


def test_the_inspector_lists_every_run_and_the_deleted_artifacts(kept):
  out, _ = kept
  assert len(tiny_runs.inspect_json(out, 'runs')) == RUNS
  states = {(a['type'], a['state'])
            for a in tiny_runs.inspect_json(out, 'artifacts')}
  assert ('Examples', 'DELETED') in states and ('Model', 'DELETED') in states
  tiny_runs.inspect(out, 'lineage', 'latest-model')
  # The oldest run's report: its Examples and Model stay (they are served).
  # The middle run's: its deleted parts say so, the rest is written.
  page = out / 'middle.html'
  tiny_runs.inspect(out, 'report', '-2', '--html', str(page))
  assert 'deleted to free disk (--keep-runs)' in page.read_text()
  # Run with --no-label-check: beside the confusion matrix, one line on
  # why no mistakes are shown.
  evaluation = page.read_text().split('id="evaluation"', 1)[1].split(
      '</section>', 1)[0]
  mistakes = evaluation.split('<h3>Images the model gets wrong</h3>', 1)[1]
  assert mistakes.split('</div>', 1)[0].strip() == (
      '<div class="notrun"><b>Not run.</b> LabelCheck was turned off '
      '(--no-label-check)')


def test_nothing_is_deleted_when_what_is_served_cannot_be_read(tmp_path):
  serving_model_dir = tmp_path / 'serving_model'
  serving_model_dir.write_text('a file, not a directory of versions')
  with pytest.raises(push_once.ServingDirectoryError):
    keep_runs_local.collect(
        local_store.for_run(str(tmp_path), None).connection_config,
        constants.PIPELINE_NAME, KEEP, str(serving_model_dir),
        str(tmp_path / constants.PIPELINE_ROOT_NAME))


def test_keep_runs_is_off_by_default_and_at_least_one():
  parse = local_runner.make_parser().parse_args
  assert flags.runner_config(parse([]), knobs.DiskConfig).keep_runs is None
  assert flags.runner_config(parse(['--keep-runs', '2']),
                             knobs.DiskConfig).keep_runs == 2
  with pytest.raises(SystemExit):
    parse(['--keep-runs', '0'])


def _record_runs(store, root, serving_dir, runs):
  """Writes `runs` runs into `store` as LocalDagRunner records them: each
  trains a Model under `root`, evaluates it against the run before's as its
  baseline, and pushes it to `serving_dir`/<run>. Returns {run: its Model}."""
  type_ids = {name: store.put_artifact_type(pb.ArtifactType(name=name))
              for name in ('Model', 'PushedModel')}
  context_types = {name: store.put_context_type(pb.ContextType(name=name))
                   for name in ('pipeline', 'pipeline_run', 'node')}

  def context(type_name, name):
    made = pb.Context(type_id=context_types[type_name], name=name)
    [made.id] = store.put_contexts([made])
    return made

  pipeline = context('pipeline', constants.PIPELINE_NAME)
  nodes = {}
  models = {}
  for run in range(1, runs + 1):
    run_context = context('pipeline_run', f'run-{run}')

    def execute(node, inputs, outputs):
      if node not in nodes:
        nodes[node] = context('node', f'{constants.PIPELINE_NAME}.{node}')
      execution = pb.Execution(
          type_id=store.put_execution_type(pb.ExecutionType(name=node)),
          last_known_state=pb.Execution.COMPLETE)
      events = []
      for kind, artifacts in ((pb.Event.INPUT, inputs),
                              (pb.Event.OUTPUT, outputs)):
        for key, artifact in artifacts:
          event = pb.Event(type=kind)
          event.path.steps.add().key = key
          events.append((artifact, event))
      _, ids, _ = store.put_execution(execution, events,
                                      [pipeline, run_context, nodes[node]])
      for artifact, artifact_id in zip((a for a, _ in events), ids):
        artifact.id = artifact_id

    model_dir = root / 'Trainer' / 'model' / str(run)
    model_dir.mkdir(parents=True)
    model = pb.Artifact(type_id=type_ids['Model'], uri=str(model_dir),
                        state=pb.Artifact.LIVE)
    execute('Trainer', [], [('model', model)])
    if run > 1:
      execute('Evaluator', [('model', model), ('baseline_model',
                                               models[run - 1])], [])
    destination = serving_dir / str(run)
    destination.mkdir(parents=True)
    (destination / 'saved_model.pb').write_bytes(b'graph')  # A whole push.
    push_dir = root / 'Pusher' / 'pushed_model' / str(run)
    push_dir.mkdir(parents=True)
    pushed = pb.Artifact(type_id=type_ids['PushedModel'], uri=str(push_dir),
                         state=pb.Artifact.LIVE)
    pushed.custom_properties['pushed_destination'].string_value = str(
        destination)
    execute('Pusher', [('model', model)], [('pushed_model', pushed)])
    models[run] = model
  return models


def test_a_kept_runs_baseline_goes_unless_it_is_served(tmp_path):
  # Every run pushes, so the newest is served; the one run kept read the run
  # before's model as its baseline, which goes with the rest of that run.
  store = metadata_store.MetadataStore(
      local_store.for_run(str(tmp_path), None).connection_config)
  root = tmp_path / constants.PIPELINE_ROOT_NAME
  serving_dir = tmp_path / constants.SERVING_MODEL_DIR_NAME
  models = _record_runs(store, root, serving_dir, 3)
  collected = keep_runs_local.collect(
      local_store.for_run(str(tmp_path), None).connection_config,
      constants.PIPELINE_NAME, 1, str(serving_dir), str(root))
  assert collected.kept_runs == ['run-3'] and collected.served_version == '3'
  on_disk = {run: os.path.isdir(model.uri) for run, model in models.items()}
  assert on_disk == {1: False, 2: False, 3: True}
