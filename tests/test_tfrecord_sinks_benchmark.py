"""benchmarks/tfrecord_sinks.py compares like with like and writes its
section: Beam's sink writes the same records in as many shards as ours, and
`python -m benchmarks --section tfrecord-sinks` leaves a complete,
well-formed section."""

import glob
import os
import re
import subprocess
import sys

import tensorflow as tf

from benchmarks import harness
from benchmarks import tfrecord_sinks
from components.image_example_gen.options import ImageExampleGenOptions
from tests import datasets
from tests import example_gen_standalone
from tests.local_run import PROJECT_DIR

NUM_SHARDS = 4


def _split_records(examples_uri, split):
  files = sorted(glob.glob(os.path.join(examples_uri, f'Split-{split}', '*')))
  records = [r.numpy() for r in tf.data.TFRecordDataset(
      files, compression_type='GZIP')]
  return len(files), sorted(records)


def test_beam_sink_writes_the_same_records_in_as_many_shards(tmp_path):
  data = str(tmp_path / 'mnist')
  datasets.write_idx_dataset(data, {'train': 120, 't10k': 30})
  args = harness.example_gen_beam_args(data)
  options = ImageExampleGenOptions(num_shards=NUM_SHARDS)
  ours = example_gen_standalone.run_example_gen(
      data, str(tmp_path / 'ours'), options, args)
  beam = example_gen_standalone.run_example_gen(
      data, str(tmp_path / 'beam'), options, args,
      example_gen=tfrecord_sinks.beam_sink_executor(args))
  for split, count in (('train', 120), ('eval', 30)):
    shards, records = _split_records(beam.uri, split)
    assert (shards, records) == _split_records(ours.uri, split)
    assert shards == NUM_SHARDS and len(records) == count


def test_a_run_writes_its_section(tmp_path):
  datasets.write_idx_dataset(str(tmp_path / 'mnist'),
                             {'train': 200, 't10k': 40})
  output = tmp_path / 'BENCHMARKS.md'
  output.write_text('# Benchmarks\n\nNotes kept as they are.\n')
  result = subprocess.run(
      [sys.executable, '-m', 'benchmarks', '--section', 'tfrecord-sinks',
       '--data-dir', 'mnist', '--repetitions', '1', '--work-dir', 'work',
       '--output', 'BENCHMARKS.md'],
      cwd=tmp_path, capture_output=True, text=True, timeout=600,
      env={**os.environ, 'PYTHONPATH': PROJECT_DIR})
  assert result.returncode == 0, result.stderr
  text = output.read_text()
  assert text.startswith('# Benchmarks\n\nNotes kept as they are.\n')
  assert str(tmp_path) not in text  # No path of this machine.
  block = text.split('<!-- section tfrecord-sinks -->\n', 1)[1]
  assert block.endswith('<!-- end tfrecord-sinks -->\n')
  rows = [line for line in block.splitlines()
          if line.startswith('| mnist |')]
  assert [row.split(' | ')[1] for row in rows] == [
      tfrecord_sinks.BEAM, tfrecord_sinks.OURS]
  for row in rows:
    runs, wall, cpu, peak, output_gb = row.split(' | ')[2:7]
    assert runs == '1', row
    assert all(re.fullmatch(r'\d+\.\d+', c)
               for c in (wall, cpu, peak, output_gb)), row
  assert re.search(r'- mnist: wall \d+\.\d\dx, CPU \d+\.\d\dx', block)


def test_the_section_shows_each_sink_per_input_and_their_ratios():
  def run(wall, cpu, killed=()):
    return tfrecord_sinks.Run(
        wall=harness.Figure([wall, wall + 2]), cpu=harness.Figure([cpu]),
        peak_gib=harness.Figure([1.5]), output_bytes=2 * 10**9,
        load=['1.0', '2.0'], killed=list(killed))

  text = tfrecord_sinks.SECTION.text(dict(
      results={'mnist10': {tfrecord_sinks.BEAM: run(30.0, 60.0),
                           tfrecord_sinks.OURS: run(10.0, 30.0)},
               'mnist100': {tfrecord_sinks.BEAM: tfrecord_sinks.Run(
                   killed=['90']), tfrecord_sinks.OURS: run(100.0, 300.0)}},
      cap_bytes=4 * 10**9, capped=True, beam=tfrecord_sinks.BEAM,
      ours=tfrecord_sinks.OURS), harness.Context('python -m benchmarks CMD'))
  assert 'under a 4.00 GB memory limit per run (a cgroup)' in text
  assert (f'| mnist10 | {tfrecord_sinks.BEAM} | 2 | 31.0 (30.0-32.0) | 60.0 '
          '| 1.50 | 2.00 | 1.0, 2.0 |') in text
  assert (f'| mnist100 | {tfrecord_sinks.BEAM} | 0; OOM-killed after 90 s '
          '| - | - | - | - |  |') in text
  assert '- mnist10: wall 2.82x, CPU 2.00x' in text  # 31 / 11 s, 60 / 30 s.
  assert '- mnist100: wall -, CPU -' in text
