"""ImageExampleGen at scale: the parallel path (worker processes, each
writing its own shards) gives the records the in-memory path gives, bad
data found by a worker keeps its clear error, and the runner picks the
execution mode and StatisticsGen's sampling by the input's size."""

import gzip
import json
import os

import pytest
import tensorflow as tf

from components.image_example_gen import idx
from components.image_example_gen.errors import InputDataError
from components.image_example_gen.options import ImageExampleGenOptions
from pipeline import scale
from tests import artifacts
from tests import datasets
from tests import example_gen_standalone
from tests import examples_io

# Two worker processes, as on a 2-core machine whatever this one has.
MULTI_PROCESS = ['--direct_running_mode=multi_processing',
                 '--direct_num_workers=2']


def _shards(examples_uri, split):
  """Per shard file: its records, in order."""
  return [[raw.numpy() for raw in tf.data.TFRecordDataset(
      path, compression_type='GZIP')]
          for path in examples_io.split_files(examples_uri, split)]


def _run(data, out, beam_args):
  with artifacts._program_argv():  # pylint: disable=protected-access
    return example_gen_standalone.run_example_gen(
        data, out, ImageExampleGenOptions(num_shards=4), beam_args)


def test_worker_processes_write_the_records_in_memory_beam_writes(
    tmp_path, monkeypatch):
  # Chunks of 9 images: several per shard, the last one short.
  monkeypatch.setattr(idx, 'CHUNK_BYTES', 9 * 28 * 28)
  written = datasets.write_idx_dataset(str(tmp_path / 'in'),
                                       {'train': 101, 't10k': 30})
  in_memory = _run(tmp_path / 'in', tmp_path / 'mem', artifacts.IN_MEMORY)
  parallel = _run(tmp_path / 'in', tmp_path / 'mp', MULTI_PROCESS)
  for split, prefix in (('train', 'train'), ('eval', 't10k')):
    shards = _shards(parallel.uri, split)
    assert [len(s) for s in shards] == [len(s) for s in _shards(
        in_memory.uri, split)]
    # The same records in the same shards, in file order.
    assert shards == _shards(in_memory.uri, split)
    images, labels = written[prefix]
    records = examples_io.read_split(parallel.uri, split)
    assert [r['label'] for r in records] == [int(l) for l in labels]
    assert [r['image'][..., 0].tobytes() for r in records] == [
        i.tobytes() for i in images]
  assert [len(s) for s in _shards(parallel.uri, 'train')] == [25, 25, 25, 26]
  # Only the shards: no temporary files left beside them.
  assert sorted(os.listdir(os.path.join(parallel.uri, 'Split-train'))) == [
      f'data_tfrecord-0000{i}-of-00004.gz' for i in range(4)]


# Found by the workers as they read (not before Beam starts): in a worker
# process, and in memory.
@pytest.mark.parametrize('damage, message, beam_args', [
    ('truncate', r'train-images-idx3-ubyte.gz: corrupt or truncated gzip data',
     MULTI_PROCESS),
    ('trailing', r'train-images-idx3-ubyte.gz: file has data beyond the '
     r'62720 bytes its header declares for shape \(80, 28, 28\)',
     artifacts.IN_MEMORY),
])
def test_a_worker_names_the_damaged_file(tmp_path, damage, message,
                                         beam_args):
  data = str(tmp_path / 'in')
  datasets.write_idx_dataset(data, {'train': 80, 't10k': 10})
  images = os.path.join(data, 'train-images-idx3-ubyte.gz')
  raw = open(images, 'rb').read()
  if damage == 'truncate':
    raw = raw[:len(raw) // 2]
  else:
    raw = gzip.compress(gzip.decompress(raw) + b'extra')
  open(images, 'wb').write(raw)
  with pytest.raises(InputDataError, match=message):
    _run(data, tmp_path / 'out', beam_args)


def test_execution_mode_and_statistics_sampling_follow_the_input_size(
    tmp_path, monkeypatch):
  datasets.write_idx_dataset(str(tmp_path / 'idx'), {'train': 30, 't10k': 10})
  datasets.write_image_folder(str(tmp_path / 'images'),
                              per_class={'train': 2, 'eval': 1})
  # A sidecar and a Live Photo's video: left out, so neither counted.
  for litter in ('0.png.json', '0.MOV'):
    (tmp_path / 'images' / 'train' / 'cat' / litter).write_bytes(bytes(5000))
  idx_size = scale.measure(str(tmp_path / 'idx'), 'idx')
  # The pixels the headers declare, not the gzipped bytes on disk.
  assert (idx_size.records, idx_size.train_records, idx_size.bytes) == (
      40, 30, 40 * 28 * 28)
  folder_size = scale.measure(str(tmp_path / 'images'), 'images')
  assert (folder_size.records, folder_size.train_records) == (9, 6)
  assert folder_size.bytes == sum(
      os.path.getsize(os.path.join(root, name))
      for root, _, names in os.walk(tmp_path / 'images') for name in names
      if name.endswith(('.png', '.jpg')))

  for size in (idx_size, folder_size):
    assert scale.example_gen_beam_args(size) == list(
        scale.EXAMPLE_GEN_IN_MEMORY_BEAM_ARGS)
    assert scale.statistics_sample_rate(size) is None
    monkeypatch.setattr(scale, 'EXAMPLE_GEN_MULTI_PROCESS_MIN_BYTES',
                        size.bytes)
    assert scale.example_gen_beam_args(size) == list(
        scale.EXAMPLE_GEN_MULTI_PROCESS_BEAM_ARGS)
    monkeypatch.setattr(scale, 'STATISTICS_SAMPLE_ABOVE_RECORDS',
                        size.records - 1)
    monkeypatch.setattr(scale, 'STATISTICS_SAMPLE_RECORDS', 3)
    assert scale.statistics_sample_rate(size) == pytest.approx(
        3 / size.records)
    monkeypatch.undo()


def test_a_damaged_header_leaves_the_error_to_example_gen(tmp_path):
  datasets.write_idx_dataset(str(tmp_path / 'idx'))
  (tmp_path / 'idx' / 't10k-images-idx3-ubyte.gz').write_bytes(b'<html>')
  assert scale.measure(str(tmp_path / 'idx'), 'idx') is None


def test_statistics_gen_samples_at_the_rate_the_pipeline_is_given(tmp_path):
  from pipeline import knobs  # pylint: disable=g-import-not-at-top
  from pipeline import pipeline  # pylint: disable=g-import-not-at-top

  def stats_options(rate):
    dag = pipeline.create_pipeline(
        pipeline_name='p', pipeline_root=str(tmp_path / 'root'),
        data_root=str(tmp_path / 'data'),
        serving_model_dir=str(tmp_path / 'serving'),
        infrastructure=knobs.InfrastructureConfig(statistics_sample_rate=rate))
    statistics_gen, = [c for c in dag.components
                       if c.id == 'StatisticsGen']
    return statistics_gen.exec_properties.get('stats_options_json')

  assert json.loads(stats_options(None))['_sample_rate'] is None
  assert json.loads(stats_options(0.25))['_sample_rate'] == 0.25
  # Top-k and uniques from sketches whatever the rate (bounded memory).
  assert json.loads(stats_options(None))['_use_sketch_based_topk_uniques']


def test_the_components_that_analyse_the_records_run_in_one_process_on_a_small_input(
    tmp_path, monkeypatch):
  import local_runner  # pylint: disable=g-import-not-at-top
  datasets.write_idx_dataset(str(tmp_path / 'idx'), {'train': 30, 't10k': 10})

  def beam_args(*argv):
    args = local_runner.make_parser().parse_args(
        ['--data-dir', str(tmp_path / 'idx'),
         '--output-dir', str(tmp_path / 'out'), *argv])
    return {c.id: c.executor_spec.beam_pipeline_args
            for c in local_runner.build_pipeline(args).components
            if c.id in ('StatisticsGen', 'Transform', 'Evaluator')}

  def mode(args):  # Beam keeps the last value of a flag.
    return [a for a in args if a.startswith('--direct_running_mode')][-1]

  small = beam_args()
  assert len(small) == 3
  assert {mode(args) for args in small.values()} == {
      '--direct_running_mode=in_memory'}
  # --beam-args still win.
  assert {mode(args) for args in beam_args(
      '--beam-args=--direct_running_mode=multi_threading').values()} == {
          '--direct_running_mode=multi_threading'}
  monkeypatch.setattr(scale, 'ANALYSIS_MULTI_PROCESS_MIN_RECORDS', 40)
  assert {mode(args) for args in beam_args().values()} == {
      '--direct_running_mode=multi_processing'}
