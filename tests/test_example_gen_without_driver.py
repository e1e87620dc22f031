"""ImageExampleGen where no TFX driver runs (open-source Kubeflow Pipelines):
the executor resolves the newest span itself, reads it, and records span,
version and input fingerprint on the Examples, as the driver would."""

from tfx.components.example_gen import utils

from components.image_example_gen import driver
from components.image_example_gen.component import default_input_config
from components.image_example_gen.options import ImageExampleGenOptions
from tests import artifacts
from tests import datasets
from tests import examples_io


def test_the_newest_span_is_read_and_recorded(tmp_path):
  data = tmp_path / 'in'
  datasets.write_idx_dataset(str(data / 'span-1'), {'train': 30, 't10k': 10})
  datasets.write_idx_dataset(str(data / 'span-2'), {'train': 20, 't10k': 6})
  input_config = default_input_config('idx', 'span-{SPAN}')
  examples = artifacts.run_example_gen(
      data, tmp_path / 'out', ImageExampleGenOptions(num_shards=2),
      input_config=input_config)
  assert examples.get_int_custom_property(utils.SPAN_PROPERTY_NAME) == 2
  assert len(examples_io.read_split(examples.uri, 'train')) == 20
  assert len(examples_io.read_split(examples.uri, 'eval')) == 6
  # The fingerprint TFX's driver would record: span 2's files.
  assert examples.get_string_custom_property(
      utils.FINGERPRINT_PROPERTY_NAME) == (
          utils.calculate_splits_fingerprint_span_and_version(
              str(data), input_config.splits)[0])


def test_what_a_driver_resolved_is_left_alone(tmp_path):
  assert driver.driver_ran({utils.SPAN_PROPERTY_NAME: 0})
  assert not driver.driver_ran({})
  assert not driver.driver_ran({utils.SPAN_PROPERTY_NAME: None})
