"""The data half of the DAG through local_runner.py: real LocalDagRunner,
real Beam, real ML Metadata in SQLite, on tiny data the tests write."""

import json
import os
import pathlib
import re

from PIL import Image
import pytest

from pipeline import constants
from records import features
from tests import datasets
from tests import examples_io
from tests import local_run
from tests import mlmd
from tests import tiny_runs

run = local_run.run

DATA_HALF = ['ImageExampleGen', 'StatisticsGen', 'SchemaGen',
             'ExampleValidator', 'DataChecks', 'ValidationGate']
MODEL_HALF = ['Transform', 'Trainer', 'Evaluator', 'Pusher']
TO_GATE = ['--to-node', 'ValidationGate']
ONE_PROCESS = local_run.ONE_PROCESS


def test_idx_run_then_cached_rerun(tmp_path):
  datasets.write_idx_dataset(str(tmp_path / 'mnist'), {'train': 60, 't10k': 20})
  args = ['--data-dir', str(tmp_path / 'mnist'), '--output-dir',
          str(tmp_path / 'out'), '--num-shards', '8', *TO_GATE]

  first = run(*args)  # Default Beam args: multi-processing, a worker a core.
  assert first.returncode == 0
  for node in DATA_HALF:
    assert f'▶ {node}' in first.stdout
    assert f'✔ {node}: ' in first.stdout
  # A tenth of train, by a hash of each image, is the validation split.
  assert ('train: 49 records in 8 shards; validation: 11 records in 8 shards; '
          'eval: 20 records in 8 shards') in first.stdout

  store = mlmd.open_store(str(tmp_path / 'out'))
  assert mlmd.execution_states(store) == {n: ['COMPLETE'] for n in DATA_HALF}
  [examples] = mlmd.live_artifacts(store, 'Examples')
  assert examples.uri.startswith(
      str(tmp_path / 'out' / constants.PIPELINE_ROOT_NAME))
  assert len(examples_io.split_files(examples.uri, 'train')) == 8
  assert len(examples_io.read_split(examples.uri, 'eval')) == 20
  assert features.decode_class_names(
      examples.custom_properties['class_names'].string_value) == list('0123456789')

  second = run(*args)
  assert second.returncode == 0
  # Each component answered from the cache, however long that took.
  for node in DATA_HALF:
    assert re.search(rf'^✔ {node}: [\d.]+s \(cached\)$', second.stdout,
                     re.MULTILINE), node
  assert second.stdout.count('(cached)') == len(DATA_HALF)
  assert mlmd.execution_states(mlmd.open_store(str(tmp_path / 'out'))) == {
      n: ['COMPLETE', 'CACHED'] for n in DATA_HALF}


def test_image_folder_as_people_have_them(tmp_path):
  # PNG and JPEG, a WebP, a BMP, and what macOS and Windows leave behind.
  data = tmp_path / 'pets'
  datasets.write_image_folder(str(data))
  for name, fmt in (('4.webp', 'WEBP'), ('5.BMP', 'BMP')):
    Image.new('RGB', (20, 20), (200, 10, 10)).save(data / 'train' / 'cat' / name,
                                                    fmt)
  for litter in ('train/cat/.DS_Store', 'train/dog/._0.png',
                 'eval/fish/Thumbs.db'):
    (data / litter).write_bytes(b'\x00\x05\x16\x07')
  result = run('--data-dir', str(data), '--input-format', 'images',
               '--image-size', '16x16', '--channels', '3',
               '--output-dir', str(tmp_path / 'out'), ONE_PROCESS, *TO_GATE)
  assert result.returncode == 0
  assert ('left out 3 hidden, OS or sidecar files (not images), listed in '
          'os_files_left_out.json') in result.stdout
  assert f'  {data}/train/cat/.DS_Store' in result.stdout
  [examples] = mlmd.live_artifacts(mlmd.open_store(str(tmp_path / 'out')),
                                   'Examples')
  assert examples.custom_properties['os_files_left_out'].int_value == 3
  # 14 images in train/, two of them hashed into validation.
  train = examples_io.read_split(examples.uri, 'train')
  assert len(train) == 12
  assert len(examples_io.read_split(examples.uri, 'validation')) == 2
  assert train[0]['image'].shape == (16, 16, 3)
  assert features.decode_class_names(
      examples.custom_properties['class_names'].string_value) == ['cat', 'dog', 'fish']

  # The inspect tool shows them on the Examples too, not only the summary.
  [shown] = tiny_runs.inspect_json(tmp_path / 'out', 'artifacts', '--type',
                                   'Examples')
  assert shown['properties']['os_files_left_out'] == 3
  assert {f['path'] for f in shown['properties']['os_files_left_out_list']} == {
      f'{data}/{litter}' for litter in ('train/cat/.DS_Store',
                                        'train/dog/._0.png',
                                        'eval/fish/Thumbs.db')}
  text = tiny_runs.inspect(tmp_path / 'out', 'artifacts', '--type',
                           'Examples').stdout
  assert '3 hidden, OS or sidecar files left out' in text
  assert 'Thumbs.db' in text


# A curated schema taking MNIST-format data through the whole DAG:
# tests/test_keep_runs.py's runs.


def test_anomalies_stop_the_run_and_say_why(stopped_run):
  # tests/tiny_runs.py's run (shared with the inspection tests): 32x32
  # images checked against the MNIST schema (28x28); it ended with 1.
  stdout = (stopped_run.parent / 'run.stdout').read_text()
  stderr = (stopped_run.parent / 'run.stderr').read_text()
  assert '✘ ValidationGate' in stdout
  assert 'ExampleValidator found anomalies' in stderr
  assert "train: feature 'height'" in stderr
  assert "eval: feature 'width'" in stderr
  # Each record's own source is no anomaly.
  assert "feature 'source'" not in stderr

  store = mlmd.open_store(str(stopped_run))
  states = mlmd.execution_states(store)
  assert states['ExampleValidator'] == ['COMPLETE']
  assert states['ValidationGate'] == ['FAILED']
  # Nothing trained or pushed on that data.
  assert not set(MODEL_HALF) & set(states)
  assert mlmd.live_artifacts(store, 'Model') == []
  # The anomalies stay published for whoever inspects the run.
  [anomalies] = mlmd.live_artifacts(store, 'ExampleAnomalies')
  assert anomalies.custom_properties['blessed'].struct_value['train'] == 0


# Through the program, one case per kind of check that stops a run: a
# damaged IDX file (truncated gzip), IDX contents (labels outside the
# classes), an image that does not decode (in a multi-process Beam worker),
# a folder's listing (a stray file; an unreadable folder). The message of
# every other kind of damage is tested where it is raised:
# tests/test_idx.py, tests/test_image_folder.py, tests/test_image_example_gen.py.
@pytest.mark.parametrize('layout, damage, message', [
    ('idx', 'truncate', 'train-images-idx3-ubyte.gz: corrupt or truncated gzip data'),
    ('idx', 'label', 'train-labels-idx1-ubyte.gz: 28 labels outside the '
     'class range 0..2 (first: label 3 of record 3)'),
    ('images', 'corrupt', 'train/dog/2.png: cannot decode image'),
    ('images', 'not_image', 'train/cat/notes.txt: not an image file'),
    ('images', 'nested', 'train/cat/2019: a folder inside a class folder'),
    ('images', 'unreadable', "train/fish: cannot read class folder 'fish'"),
])
def test_bad_input_fails_cleanly(tmp_path, layout, damage, message):
  data = tmp_path / 'data'
  if damage == 'unreadable' and local_run.permissions_enforceable():
    pytest.skip(local_run.permissions_enforceable())
  if layout == 'idx':
    datasets.write_idx_dataset(str(data))
  else:
    datasets.write_image_folder(str(data))
  class_names = []
  if damage == 'truncate':
    path = data / 'train-images-idx3-ubyte.gz'
    path.write_bytes(path.read_bytes()[:-300])
  elif damage == 'label':  # Labels 0..9 in the files, three classes named.
    class_names = ['--class-names', 'a,b,c']
  elif damage == 'corrupt':
    path = data / 'train' / 'dog' / '2.png'
    path.write_bytes(path.read_bytes()[:50])
  elif damage == 'not_image':
    (data / 'train' / 'cat' / 'notes.txt').write_text('shot on a Tuesday')
  elif damage == 'nested':  # A photo library's folder of a year.
    (data / 'train' / 'cat' / '2019').mkdir()
    (data / 'train' / 'cat' / '0.png').rename(
        data / 'train' / 'cat' / '2019' / '0.png')
  elif damage == 'unreadable':
    (data / 'train' / 'fish').chmod(0)

  try:
    result = run('--data-dir', str(data), '--input-format', layout,
                 '--output-dir', str(tmp_path / 'out'), *class_names,
                 *([ONE_PROCESS] if damage != 'corrupt' else []),
                 obey_permissions=damage == 'unreadable')
  finally:
    if damage == 'unreadable':
      (data / 'train' / 'fish').chmod(0o755)  # So that pytest can clean up.
  assert result.returncode == 1
  assert '✘ ImageExampleGen' in result.stdout
  # One line, naming the file and the problem.
  [error] = [l for l in result.stderr.splitlines() if l.startswith('error')]
  assert error.startswith(f'error in ImageExampleGen: {data}/{message}')

  store = mlmd.open_store(str(tmp_path / 'out'))
  assert mlmd.execution_states(store) == {'ImageExampleGen': ['FAILED']}
  assert mlmd.live_artifacts(store, 'Examples') == []
  examples_dir = tmp_path / 'out' / 'pipeline' / 'ImageExampleGen' / 'examples'
  assert not examples_dir.exists() or not any(examples_dir.iterdir())


def test_skip_bad_images_skips_records_and_reports(tmp_path):
  data = tmp_path / 'pets'
  datasets.write_image_folder(str(data))
  bad = {data / 'train' / 'dog' / '2.png': 'cannot decode image',
         data / 'train' / 'cat' / 'notes.txt': 'not an image file',
         data / 'eval' / 'fish' / '1.jpg': 'empty file (0 bytes)'}
  (data / 'train' / 'dog' / '2.png').write_bytes(b'\x89PNG\r\n\x1a\n broken')
  (data / 'train' / 'cat' / 'notes.txt').write_text('shot on a Tuesday')
  (data / 'eval' / 'fish' / '1.jpg').write_bytes(b'')
  result = run('--data-dir', str(data), '--input-format', 'images',
               '--skip-bad-images', '--output-dir', str(tmp_path / 'out'),
               ONE_PROCESS, '--to-node', 'StatisticsGen')
  assert result.returncode == 0
  # Two of train's images are hashed into validation (dog/3.jpg, fish/1.jpg).
  assert ('train: 9 records in 16 shards; validation: 2 records in 16 shards; '
          'eval: 5 records in 16 shards') in result.stdout
  assert 'skipped 3 unreadable images, listed in skipped_images.json' in result.stdout
  for path, reason in bad.items():
    assert f'  {path}: {reason}' in result.stdout

  store = mlmd.open_store(str(tmp_path / 'out'))
  [examples] = mlmd.live_artifacts(store, 'Examples')
  assert examples.custom_properties['skipped_images'].int_value == 3
  listed = json.loads(
      examples.custom_properties['skipped_images_list'].string_value)
  with open(os.path.join(examples.uri, 'skipped_images.json')) as f:
    assert json.load(f) == listed
  assert len(listed) == 3
  for skipped in listed:
    assert skipped['reason'].startswith(bad[pathlib.Path(skipped['path'])])
  # The choice is on the execution too, for whoever audits the run.
  [execution] = [e for e in store.get_executions()
                 if e.type.endswith('.ImageExampleGen')]
  config = json.loads(execution.custom_properties['custom_config'].string_value)
  assert config['custom_config']['value']['skip_bad_images'] is True


def test_skip_bad_images_is_for_image_folders(tmp_path):
  datasets.write_idx_dataset(str(tmp_path / 'mnist'))
  result = run('--data-dir', str(tmp_path / 'mnist'), '--skip-bad-images',
               '--output-dir', str(tmp_path / 'out'))
  assert result.returncode != 0
  assert ('error: --skip-bad-images applies to image folders only'
          in result.stderr)


@pytest.mark.parametrize('flag', [['--image-size', '32x32'], ['--channels', '3']])
def test_geometry_flags_are_for_image_folders(tmp_path, flag):
  datasets.write_idx_dataset(str(tmp_path / 'mnist'))
  result = run('--data-dir', str(tmp_path / 'mnist'), *flag,
               '--output-dir', str(tmp_path / 'out'))
  assert result.returncode != 0
  assert ('error: --image-size and --channels apply to image folders only '
          '(--input-format images); IDX files declare their geometry in their '
          'headers') in result.stderr
  assert not (tmp_path / 'out' / constants.METADATA_DB_NAME).exists()


def test_to_node_must_name_a_component(tmp_path):
  datasets.write_idx_dataset(str(tmp_path / 'mnist'))
  result = run('--data-dir', str(tmp_path / 'mnist'), '--output-dir',
               str(tmp_path / 'out'), '--to-node', 'Nope')
  assert result.returncode != 0
  assert '--to-node Nope: not a component of the pipeline' in result.stderr


def test_missing_data_dir(tmp_path):
  result = run('--data-dir', str(tmp_path / 'nowhere'), '--output-dir',
               str(tmp_path / 'out'))
  assert result.returncode != 0
  assert f'{tmp_path}/nowhere: no such directory' in result.stderr
  assert not (tmp_path / 'out' / constants.METADATA_DB_NAME).exists()


def test_unreadable_data_dir(tmp_path):
  if local_run.permissions_enforceable():
    pytest.skip(local_run.permissions_enforceable())
  datasets.write_idx_dataset(str(tmp_path / 'mnist'))
  (tmp_path / 'mnist').chmod(0)
  try:
    result = run('--data-dir', str(tmp_path / 'mnist'), '--output-dir',
                 str(tmp_path / 'out'), obey_permissions=True)
  finally:
    (tmp_path / 'mnist').chmod(0o755)
  assert result.returncode != 0
  assert (f'error: --data-dir {tmp_path}/mnist: permission denied'
          in result.stderr)
  # Stopped before anything ran: nothing in ML Metadata.
  assert not (tmp_path / 'out' / constants.METADATA_DB_NAME).exists()


def test_help_explains_every_flag():
  result = run('--help')
  assert result.returncode == 0
  for flag in ('--data-dir', '--input-format', '--dataset', '--output-dir', '--beam-args',
               '--schema', '--class-names', '--image-size', '--channels',
               '--num-shards', '--no-cache', '--verbose', '--epochs',
               '--train-steps', '--batch-size', '--learning-rate',
               '--accuracy-threshold', '--to-node', '--span-dir-pattern',
               '--freeze-schema', '--skip-bad-images', '--model', '--augment',
               '--image-encoding', '--mysql-host', '--mysql-port',
               '--mysql-database', '--mysql-user'):
    assert flag in result.stdout
  # The password comes from the environment, never the command line.
  assert '--mysql-password' not in result.stdout
  assert '$MLMD_MYSQL_PASSWORD' in result.stdout
