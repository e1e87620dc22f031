"""ImageExampleGen's driver: TFX's FileBasedExampleGen driver, whose input
fingerprint covers every span of the window.

TFX's driver resolves the newest span and fingerprints its files; the
fingerprint is an execution property, so the cache answers a run whose
input has not changed. With a span window the run also reads earlier spans
(span_window.py): their files are fingerprinted too, so that an earlier
span of the window rewritten, added or removed means a new execution, and
nothing changed means the cached one. Kubeflow Pipelines runs no driver
(driver_work.py runs this one's work in the executor there).
"""

import os
from typing import Any, Dict

from tfx.components.example_gen import driver
from tfx.components.example_gen import utils
from tfx.types import standard_component_specs
from tfx.utils import io_utils

from components.image_example_gen import span_window


def window_fingerprint(exec_properties: Dict[str, Any]) -> str:
  """The resolved fingerprint with the earlier spans' of the window added
  (the resolved one alone for a window of 1)."""
  fingerprint = exec_properties[utils.FINGERPRINT_PROPERTY_NAME]
  input_base = exec_properties[standard_component_specs.INPUT_BASE_KEY]
  window = span_window.of_execution(exec_properties)
  earlier = [io_utils.generate_fingerprint(
      f'{span.folder}/{split.name}', os.path.join(input_base, split.pattern))
             for span in window[:-1] for split in span.input_config.splits]
  return '\n'.join([*earlier, fingerprint])


class Driver(driver.FileBasedDriver):
  """TFX's FileBasedDriver, fingerprinting the whole span window."""

  def resolve_exec_properties(self, exec_properties, pipeline_info,
                              component_info) -> Dict[str, Any]:
    resolved = super().resolve_exec_properties(exec_properties, pipeline_info,
                                               component_info)
    resolved[utils.FINGERPRINT_PROPERTY_NAME] = window_fingerprint(resolved)
    return resolved
