"""A run killed half-way: the next run finishes the job and ML Metadata stays
sound (nothing left RUNNING, nothing half-written published or left on disk).

The runs are SIGKILLed with every process they started, as the OOM killer or
a power cut would end them: nothing gets a chance to clean up. Where they
are killed is not left to timing: each run is held at a known point of the
component under test (tests/pause.py) until the test has killed it there.
"""

import glob
import os

from tests import datasets
from tests import local_run
from tests import mlmd
from tests import pause

DATA_HALF = ['ImageExampleGen', 'StatisticsGen', 'SchemaGen',
             'ExampleValidator', 'DataChecks', 'ValidationGate']
# Where the run is killed and what it resumes matter, not what it learns:
# the fewest steps, a threshold any model meets (so that it is pushed), and
# no LabelCheck after the Trainer.
TRAINING = ['--epochs', '1', '--train-steps', '2', '--batch-size', '8',
            '--accuracy-threshold', '0', '--no-label-check',
            local_run.ONE_PROCESS]
# Trained, its TensorBoard logs written, the model not yet saved.
TRAINER_EXPORTS = 'modules.training.export:export_serving_model'
# Inside ExampleGen's Beam pipeline (in this process: ONE_PROCESS), the
# first shard file written whole, about to be closed (still under its
# temporary name) in the execution's output directory.
EXAMPLE_GEN_WRITES = ('components.image_example_gen.tfrecord_sink:'
                      '_GzipWriter.close')


def _node_outputs(out, node_id, key):
  path = out / 'pipeline' / node_id / key
  return sorted(os.listdir(path)) if path.exists() else []


def test_killed_during_training_resumes_from_the_cache(tmp_path):
  datasets.write_idx_dataset(str(tmp_path / 'data'), {'train': 40, 't10k': 20})
  out = tmp_path / 'out'
  args = ['--data-dir', str(tmp_path / 'data'), '--output-dir', str(out),
          *TRAINING]
  first = local_run.start(
      *args, env=pause.environment(TRAINER_EXPORTS, str(tmp_path / 'pause')))
  pause.reached(first, str(tmp_path / 'pause'))

  # A second run on the same output directory is refused while one runs.
  second = local_run.run(*args)
  assert second.returncode == 1
  assert 'another local_runner run is using this output directory' in (
      second.stderr)

  local_run.kill(first)
  store = mlmd.open_store(str(out))
  assert mlmd.execution_states(store)['Trainer'] == ['RUNNING']
  assert mlmd.live_artifacts(store, 'Model') == []
  [killed_dir] = _node_outputs(out, 'Trainer', 'model')
  # What the killed Trainer had written: its logs, and no model.
  assert glob.glob(str(out / 'pipeline' / 'Trainer' / 'model_run' /
                       killed_dir / '*' / 'events.out.*'))
  assert not os.listdir(out / 'pipeline' / 'Trainer' / 'model' / killed_dir)

  result = local_run.run(*args)
  assert result.returncode == 0, result.stderr
  assert (f'Trainer (execution {killed_dir}) was left running by an '
          'interrupted run: marked CANCELED') in result.stdout
  states = mlmd.execution_states(mlmd.open_store(str(out)))
  # ExampleGen to Transform are not recomputed.
  for node in DATA_HALF + ['Transform']:
    assert states[node] == ['COMPLETE', 'CACHED'], node
  assert states['Trainer'] == ['CANCELED', 'COMPLETE']
  assert states['Evaluator'] == ['COMPLETE']
  assert states['Pusher'] == ['COMPLETE']
  # The killed execution's half-written model is gone; the new one is live.
  [model] = mlmd.live_artifacts(mlmd.open_store(str(out)), 'Model')
  assert _node_outputs(out, 'Trainer', 'model') == [os.path.basename(model.uri)]
  assert killed_dir not in _node_outputs(out, 'Trainer', 'model_run')
  assert len(os.listdir(out / 'serving_model')) == 1


def test_killed_during_example_gen_publishes_nothing(tmp_path):
  datasets.write_idx_dataset(str(tmp_path / 'data'), {'train': 40, 't10k': 20})
  out = tmp_path / 'out'
  args = ['--data-dir', str(tmp_path / 'data'), '--output-dir', str(out),
          '--to-node', 'ValidationGate', local_run.ONE_PROCESS]
  first = local_run.start(
      *args, env=pause.environment(EXAMPLE_GEN_WRITES, str(tmp_path / 'pause')))
  pause.reached(first, str(tmp_path / 'pause'))
  local_run.kill(first)
  store = mlmd.open_store(str(out))
  assert mlmd.execution_states(store) == {'ImageExampleGen': ['RUNNING']}
  assert mlmd.live_artifacts(store, 'Examples') == []
  # Killed while writing: a shard file begun (not yet renamed) is on disk.
  [killed_dir] = _node_outputs(out, 'ImageExampleGen', 'examples')
  assert glob.glob(str(out / 'pipeline' / 'ImageExampleGen' / 'examples' /
                       killed_dir / '**' / '*.gz.temp-*'), recursive=True)

  result = local_run.run(*args)
  assert result.returncode == 0, result.stderr
  states = mlmd.execution_states(mlmd.open_store(str(out)))
  assert states['ImageExampleGen'] == ['CANCELED', 'COMPLETE']
  assert all(states[node] == ['COMPLETE'] for node in DATA_HALF[1:])
  # Only the finished ExampleGen's examples are on disk, all of them.
  [examples] = mlmd.live_artifacts(mlmd.open_store(str(out)), 'Examples')
  assert _node_outputs(out, 'ImageExampleGen', 'examples') == [
      os.path.basename(examples.uri)]
  # Validation: the train files' records hashed into it, a tenth or so.
  assert ('train: 31 records in 16 shards; validation: 9 records in 16 '
          'shards; eval: 20 records') in result.stdout
