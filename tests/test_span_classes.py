"""A span whose class folders differ from the earlier span's: labels are
indices in the sorted class names, so the run stops before anything is
written, naming the span folder, the classes added or missing and
--class-names; explicit class names fix every label."""

import os

import pytest
from PIL import Image
from tfx.components.example_gen import driver
from tfx.components.example_gen import utils as example_gen_utils
from tfx.types import standard_component_specs
from tfx.utils import proto_utils

from components.image_example_gen import folder_layout
from components.image_example_gen import folder_plan
from components.image_example_gen.errors import InputDataError
from tests import local_run
from tests import mlmd

PATTERN = 'span-{SPAN}'


def _span(data, span, classes, splits=('train', 'eval'), per_class=2):
  for split in splits:
    for name in classes:
      folder = os.path.join(data, f'span-{span}', split, name)
      os.makedirs(folder)
      for i in range(per_class):
        Image.new('L', (6, 5), 40 * i).save(os.path.join(folder, f'{i}.png'))


def _plan(data, class_names=None, layout=folder_layout.SPLITS):
  """folder_plan.plan on the span TFX's own driver resolves (the newest)."""
  config = folder_layout.input_config(layout, PATTERN)
  resolved = driver.FileBasedDriver(None).resolve_exec_properties({
      standard_component_specs.INPUT_BASE_KEY: str(data),
      standard_component_specs.INPUT_CONFIG_KEY:
          proto_utils.proto_to_json(config),
      standard_component_specs.OUTPUT_CONFIG_KEY: '{}'}, None, None)
  resolved_config = proto_utils.json_to_proto(
      resolved[standard_component_specs.INPUT_CONFIG_KEY], type(config)())
  return folder_plan.plan(
      str(data), resolved_config,
      folder_layout.output_config(layout, 20), class_names,
      resolved[example_gen_utils.SPAN_PROPERTY_NAME])


def test_an_added_class_is_named_with_the_span(tmp_path):
  _span(tmp_path, 1, ('cat', 'dog'))
  _span(tmp_path, 2, ('bird', 'cat', 'dog'))
  with pytest.raises(InputDataError) as error:
    _plan(tmp_path)
  assert error.value.path == str(tmp_path / 'span-2')
  assert "class folders differ from span-1's: added 'bird';" in str(
      error.value)
  assert str(error.value).endswith('--class-names cat,dog,bird')


def test_a_missing_class_is_named_against_the_newest_earlier_span(tmp_path):
  _span(tmp_path, 1, ('cat', 'dog'))
  _span(tmp_path, 3, ('cat', 'dog', 'fish'))
  _span(tmp_path, 4, ('cat', 'fish'))
  with pytest.raises(InputDataError) as error:
    _plan(tmp_path)
  assert error.value.path == str(tmp_path / 'span-4')
  assert "differ from span-3's: missing 'dog';" in str(error.value)
  assert 'added' not in str(error.value)
  assert str(error.value).endswith('--class-names cat,dog,fish')


def test_the_same_classes_created_in_another_order_pass(tmp_path):
  _span(tmp_path, 1, ('dog', 'cat', 'fish'))
  _span(tmp_path, 2, ('fish', 'cat', 'dog'))
  assert _plan(tmp_path).class_names == ['cat', 'dog', 'fish']


def test_spans_of_class_folders_without_splits_are_compared(tmp_path):
  _span(tmp_path, 1, ('cat', 'dog'), splits=('',), per_class=6)
  _span(tmp_path, 2, ('cat', 'dog', 'emu'), splits=('',), per_class=6)
  with pytest.raises(InputDataError, match="added 'emu'"):
    _plan(tmp_path, layout=folder_layout.CLASSES)


def test_explicit_class_names_accept_a_new_class(tmp_path):
  _span(tmp_path, 1, ('cat', 'dog'))
  _span(tmp_path, 2, ('bird', 'cat', 'dog'))
  plan = _plan(tmp_path, class_names=['cat', 'dog', 'bird'])
  assert plan.class_names == ['cat', 'dog', 'bird']


def test_explicit_class_names_missing_a_folder_name_it(tmp_path):
  _span(tmp_path, 1, ('cat', 'dog'))
  _span(tmp_path, 2, ('bird', 'cat', 'dog'))
  with pytest.raises(InputDataError) as error:
    _plan(tmp_path, class_names=['cat', 'dog'])
  assert error.value.path == str(tmp_path / 'span-2' / 'train' / 'bird')
  assert "class folder 'bird' is not one of the configured class names" in str(
      error.value)


def test_a_span_adding_a_class_stops_the_run(tmp_path):
  data, out = tmp_path / 'data', tmp_path / 'out'
  _span(data, 1, ('cat', 'dog'))
  _span(data, 2, ('cat', 'dog', 'emu'))
  result = local_run.run('--data-dir', str(data), '--input-format', 'images',
                         '--span-dir-pattern', PATTERN, '--output-dir',
                         str(out), local_run.ONE_PROCESS, '--to-node',
                         'ImageExampleGen')
  assert result.returncode == 1, result.stderr[-3000:]
  [error] = [l for l in result.stderr.splitlines() if l.startswith('error')]
  assert error.startswith(f'error in ImageExampleGen: {data / "span-2"}: '
                          "class folders differ from span-1's: added 'emu';")
  store = mlmd.open_store(str(out))
  assert mlmd.execution_states(store) == {'ImageExampleGen': ['FAILED']}
  assert mlmd.live_artifacts(store, 'Examples') == []


def test_the_suggested_class_names_keep_a_dropped_class_label(tmp_path):
  _span(tmp_path, 1, ('cat', 'dog', 'fish'))
  _span(tmp_path, 2, ('cat', 'fish'))
  plan = _plan(tmp_path, class_names=['cat', 'dog', 'fish'])
  assert plan.class_names.index('fish') == 2


def test_an_earlier_span_with_no_images_is_passed_over(tmp_path):
  _span(tmp_path, 1, ('cat', 'dog'))
  os.makedirs(tmp_path / 'span-2')
  _span(tmp_path, 3, ('cat', 'dog', 'emu'))
  with pytest.raises(InputDataError, match="differ from span-1's: added 'emu'"):
    _plan(tmp_path)
