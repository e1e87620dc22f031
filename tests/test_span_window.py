"""--span-window N: the newest N spans on disk read into one Examples, each
split from each span, the newest span's eval alone in `eval` (what the
Evaluator, the TensorFlow Lite check and LabelCheck judge on), the spans
recorded on the artifact, and the cache keyed on every span of the window.
Tiny IDX files and image folders made here; real Beam, TFX and ML Metadata.
"""

import json
import os

from PIL import Image
import pytest
from tfx import v1 as tfx
from tfx.types import standard_component_specs
from tfx.utils import proto_utils

from components.evaluator import baseline_evaluator
from components.image_example_gen import folder_layout
from components.image_example_gen import console_lines
from components.image_example_gen import driver
from components.image_example_gen.component import default_input_config
from components.image_example_gen.component import ImageExampleGen
from components.image_example_gen.errors import InputDataError
from components.image_example_gen.options import ImageExampleGenOptions
from pipeline import constants
from tests import artifacts
from tests.absl_lines import absl_lines
from tests import datasets
from tests import examples_io
from tests import mlmd
from records import features

PATTERN = 'span-{SPAN}'


def _idx_spans(data, sizes):
  """span: (train, eval) records, each span its own IDX files."""
  for span, (train, held_out) in sizes.items():
    datasets.write_idx_dataset(str(data / f'span-{span}'),
                               {'train': train, 't10k': held_out})


def _run(data, out, window, input_format='idx', **options):
  return artifacts.run_example_gen(
      data, out, ImageExampleGenOptions(
          num_shards=2, input_format=input_format, span_window=window,
          **options),
      input_config=default_input_config(input_format, PATTERN))


def test_idx_window_reads_the_newest_spans_eval_apart(tmp_path):
  # Spans 1, 2 and 4 (no 3): a window of 2 is spans 2 and 4.
  _idx_spans(tmp_path / 'data', {1: (10, 5), 2: (12, 6), 4: (14, 7)})
  examples = _run(tmp_path / 'data', tmp_path / 'out', 2,
                  validation_percent=10)

  assert json.loads(examples.split_names) == [
      'train', 'validation', 'eval', features.EARLIER_EVAL_SPLIT]
  assert examples.get_int_custom_property('span') == 4
  assert json.loads(examples.get_string_custom_property('spans')) == [2, 4]
  counts = {split: len(examples_io.read_split(examples.uri, split))
            for split in json.loads(examples.split_names)}
  assert counts['train'] + counts['validation'] == 12 + 14
  assert counts['eval'] == 7 and counts['earlier_eval'] == 6
  sources = {split: {r['source'].split(':')[0] for r in
                     examples_io.read_split(examples.uri, split)}
             for split in ('train', 'eval', 'earlier_eval')}
  assert sources == {
      'train': {'span-2/train-images-idx3-ubyte.gz',
                'span-4/train-images-idx3-ubyte.gz'},
      'eval': {'span-4/t10k-images-idx3-ubyte.gz'},
      'earlier_eval': {'span-2/t10k-images-idx3-ubyte.gz'}}
  # Each span's part of a split is num_shards files of the split's.
  assert [os.path.basename(f) for f in
          examples_io.split_files(examples.uri, 'train')] == [
              f'data_tfrecord-0000{i}-of-00004.gz' for i in range(4)]
  assert len(examples_io.split_files(examples.uri, 'eval')) == 2

  # The Evaluator judges eval (the newest span's) and says so; the whole
  # window only when asked.
  input_dict = {standard_component_specs.EXAMPLES_KEY: [examples]}
  for whole, line in (
      (False, "judges on span 4's eval split (7 records); the window's "
              "older spans' eval is not judged"),
      (True, 'judges on the eval splits of spans 2, 4 (13 records), the '
             'whole window (--judge-window)')):
    judged = json.dumps(baseline_evaluator.judged_splits(whole))
    assert baseline_evaluator.judged_line(input_dict, {
        standard_component_specs.EXAMPLE_SPLITS_KEY: judged}) == line


def test_progress_counts_each_span_of_an_idx_window_apart(tmp_path,
                                                         monkeypatch):
  monkeypatch.setattr(console_lines, 'INTERVAL_SECONDS', 0)
  _idx_spans(tmp_path / 'data', {1: (10, 5), 2: (12, 6)})
  with absl_lines(console_lines.PROGRESS_LINE) as lines:
    _run(tmp_path / 'data', tmp_path / 'out', 2, validation_percent=0)
  assert {f'ImageExampleGen: span-{span}/{name}-images-idx3-ubyte.gz: '
          f'{n} of {n} images read (100%)'
          for span, name, n in ((1, 'train', 10), (2, 'train', 12),
                                (1, 't10k', 5), (2, 't10k', 6))} <= set(
                                    lines), lines
  assert all(int(line.rsplit('(', 1)[1].rstrip('%)')) <= 100
             for line in lines), lines


def _images(data, span, classes, splits=('train', 'eval'), per_class=3):
  for split in splits:
    for name in classes:
      folder = os.path.join(data, f'span-{span}', split, name)
      os.makedirs(folder)
      for i in range(per_class):
        Image.new('L', (6, 5), 30 * i + len(split)).save(
            os.path.join(folder, f'{i}.png'))


def test_image_window_of_fewer_spans_than_asked(tmp_path):
  data = tmp_path / 'data'
  # Span 1 gives a validation/ folder, span 2 has it carved out of train;
  # span-3/ is empty (a drop in progress) and passed over.
  _images(data, 1, ('cat', 'dog'), ('train', 'validation', 'eval'))
  _images(data, 2, ('cat', 'dog'), per_class=20)
  os.makedirs(data / 'span-3')
  with absl_lines(console_lines.NOTICE_LINE) as notices:
    examples = _run(data, tmp_path / 'out', 5, 'images',
                    validation_percent=20, eval_percent=20)

  assert json.loads(examples.get_string_custom_property('spans')) == [1, 2]
  assert examples.get_int_custom_property('span') == 2
  split_sources = {split: [r['source'] for r in examples_io.read_split(
      examples.uri, split)] for split in json.loads(examples.split_names)}
  assert list(split_sources) == ['train', 'validation', 'eval',
                                 'earlier_eval']
  assert {s.split('/')[0] for s in split_sources['train']} == {
      'span-1', 'span-2'}
  # Span 1's train and validation folders, span 2's train.
  assert len(split_sources['train']) + len(split_sources['validation']) == (
      6 + 6 + 40)
  validation = {s.split('/')[0] + '/' + s.split('/')[1]
                for s in split_sources['validation']}
  assert validation == {'span-1/validation', 'span-2/train'}
  assert sorted(split_sources['eval']) == sorted(
      f'span-2/eval/{c}/{i}.png' for c in ('cat', 'dog') for i in range(20))
  assert len(split_sources['earlier_eval']) == 6
  assert {s.split('/')[0] for s in split_sources['earlier_eval']} == {'span-1'}
  assert ('ImageExampleGen: span window 5: only 2 spans found (span-1, '
          'span-2); training on what there is') in notices


def test_spans_of_class_folders_are_each_split_by_path(tmp_path):
  data = tmp_path / 'data'
  for span in (1, 2):
    _images(data, span, ('cat', 'dog'), splits=('',), per_class=10)
  examples = artifacts.run_example_gen(
      data, tmp_path / 'out', ImageExampleGenOptions(
          num_shards=1, input_format='images', span_window=2,
          eval_percent=30, validation_percent=0),
      input_config=default_input_config('images', PATTERN, 'classes'),
      output_config=folder_layout.output_config('classes', 30))
  sources = {split: [r['source'] for r in examples_io.read_split(
      examples.uri, split)] for split in json.loads(examples.split_names)}
  assert list(sources) == ['train', 'eval', 'earlier_eval']
  assert sum(map(len, sources.values())) == 40
  assert {s.split('/')[0] for s in sources['train']} == {'span-1', 'span-2'}
  assert {s.split('/')[0] for s in sources['eval']} == {'span-2'}
  assert {s.split('/')[0] for s in sources['earlier_eval']} == {'span-1'}


def test_a_span_of_the_window_with_other_classes_is_named(tmp_path):
  data = tmp_path / 'data'
  _images(data, 1, ('cat', 'dog'))
  _images(data, 2, ('cat', 'dog', 'emu'))
  _images(data, 3, ('cat', 'dog', 'emu'))
  # Span 3 is like span 2; span 2, in the window, differs from span 1.
  with pytest.raises(InputDataError) as error:
    _run(data, tmp_path / 'out', 2, 'images')
  assert error.value.path == str(data / 'span-2')
  assert "class folders differ from span-1's: added 'emu'" in str(error.value)
  # A window that leaves span 2's change behind it reads the same classes.
  examples = _run(data, tmp_path / 'out2', 1, 'images')
  assert json.loads(examples.get_string_custom_property('spans')) == [3]
  # One span: --judge-window judges eval, the one there is, silently.
  input_dict = {standard_component_specs.EXAMPLES_KEY: [examples]}
  judged = baseline_evaluator.present_splits(input_dict, {
      standard_component_specs.EXAMPLE_SPLITS_KEY: json.dumps(
          baseline_evaluator.judged_splits(True))})
  assert json.loads(judged[standard_component_specs.EXAMPLE_SPLITS_KEY]) == [
      'eval']
  assert baseline_evaluator.judged_line(input_dict, judged) is None


def test_the_fingerprint_covers_the_window(tmp_path):
  data = tmp_path / 'data'
  _idx_spans(data, {1: (10, 5), 2: (10, 5), 3: (10, 5)})

  def fingerprint(window):
    properties = {
        standard_component_specs.INPUT_BASE_KEY: str(data),
        standard_component_specs.INPUT_CONFIG_KEY: json.dumps(
            {'splits': [{'name': 'train', 'pattern': 'span-{SPAN}/train-*'},
                        {'name': 'eval', 'pattern': 'span-{SPAN}/t10k-*'}]}),
        standard_component_specs.OUTPUT_CONFIG_KEY: '{}',
        standard_component_specs.CUSTOM_CONFIG_KEY: proto_utils.proto_to_json(
            ImageExampleGenOptions(num_shards=2, span_window=window)
            .to_custom_config())}
    return driver.Driver(None).resolve_exec_properties(
        properties, None, None)['input_fingerprint']

  newest_only, window = fingerprint(1), fingerprint(2)
  assert window.endswith(newest_only) and 'span-2/train' in window
  assert 'span-1/' not in window
  assert fingerprint(2) == window  # Nothing changed.
  os.utime(data / 'span-2' / 'train-images-idx3-ubyte.gz', (1, 1))
  assert fingerprint(2) != window and fingerprint(1) == newest_only


def test_the_cache_answers_until_a_new_span_lands(tmp_path):
  data, root = tmp_path / 'data', tmp_path / 'root'
  _idx_spans(data, {1: (10, 5), 2: (10, 5)})
  example_gen = ImageExampleGen(
      str(data), ImageExampleGenOptions(num_shards=2, span_window=3),
      span_dir_pattern=PATTERN)
  example_gen.with_beam_pipeline_args(
      [*artifacts.IN_MEMORY, *constants.LOCAL_BEAM_PIPELINE_ARGS])
  pipeline = tfx.dsl.Pipeline(
      pipeline_name='span_window_test', pipeline_root=str(root / 'pipeline'),
      components=[example_gen], enable_cache=True,
      metadata_connection_config=(
          tfx.orchestration.metadata.sqlite_metadata_connection_config(
              str(root / 'metadata.db'))))

  def run():
    tfx.orchestration.LocalDagRunner().run(pipeline)
    store = mlmd.open_store(str(root))
    return (mlmd.execution_states(store, 'span_window_test')[
        'ImageExampleGen'][-1],
            sorted(json.loads(a.custom_properties['spans'].string_value)
                   for a in mlmd.live_artifacts(store, 'Examples')))

  assert run() == ('COMPLETE', [[1, 2]])
  assert run() == ('CACHED', [[1, 2]])  # Nothing new.
  _idx_spans(data, {3: (10, 5)})
  assert run() == ('COMPLETE', [[1, 2], [1, 2, 3]])
