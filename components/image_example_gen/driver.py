"""ImageExampleGen's driver: TFX's FileBasedDriver, fingerprinting every span
of the window, so that a change to any of them means a new execution."""

import os
from typing import Any, Dict

from absl import logging
from tfx import types
from tfx.components.example_gen import driver
from tfx.components.example_gen import utils
from tfx.types import standard_component_specs
from tfx.utils import io_utils

from components.image_example_gen import span_window


class Driver(driver.FileBasedDriver):
  """TFX's FileBasedDriver, fingerprinting the whole span window."""

  def resolve_exec_properties(self, exec_properties, pipeline_info,
                              component_info) -> Dict[str, Any]:
    """TFX's resolution, with the earlier spans' fingerprints added."""
    resolved = super().resolve_exec_properties(exec_properties, pipeline_info,
                                               component_info)
    input_base = resolved[standard_component_specs.INPUT_BASE_KEY]
    earlier = [io_utils.generate_fingerprint(
        f'{span.folder}/{split.name}', os.path.join(input_base, split.pattern))
               for span in span_window.of_execution(resolved)[:-1]
               for split in span.input_config.splits]
    resolved[utils.FINGERPRINT_PROPERTY_NAME] = '\n'.join(
        [*earlier, resolved[utils.FINGERPRINT_PROPERTY_NAME]])
    return resolved


def driver_ran(exec_properties: Dict[str, Any]) -> bool:
  """Whether TFX's driver resolved the span (it always sets one)."""
  return exec_properties.get(utils.SPAN_PROPERTY_NAME) is not None


def resolve(exec_properties: Dict[str, Any],
            examples: types.Artifact) -> Dict[str, Any]:
  """Does the driver's work where none ran (Kubeflow Pipelines), on `examples`.

  Returns:
    The execution properties the driver would have passed.
  """
  resolved = Driver(None).resolve_exec_properties(  # Needs no ML Metadata.
      dict(exec_properties), None, None)
  driver.update_output_artifact(resolved, examples.mlmd_artifact)
  logging.info('No ExampleGen driver ran: resolved span %s, version %s, '
               'fingerprint %s here.', resolved[utils.SPAN_PROPERTY_NAME],
               resolved[utils.VERSION_PROPERTY_NAME],
               resolved[utils.FINGERPRINT_PROPERTY_NAME])
  return resolved
