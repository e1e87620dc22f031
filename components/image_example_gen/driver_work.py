"""The FileBasedExampleGen driver's work, for orchestrators that run none.

LocalDagRunner and Vertex AI run TFX's driver before ImageExampleGen's
executor: it resolves the span and version to read (the newest, or
range_config's), puts them into the input patterns in place of `{SPAN}` and
`{VERSION}`, fingerprints the files read (so a cache knows when they
change), and records span, version and fingerprint on the Examples
artifact. Open-source Kubeflow Pipelines never runs that driver (it ignores
TFX's `lifecycle.pre_cache_check` hook), so the executor would read
`span-{SPAN}/...` literally and publish Examples with no span. When the
execution properties show that no driver ran, the executor calls this,
which does exactly what the driver does, with the driver's own code
(window_driver.py, TFX's driver and the span window's fingerprint).
"""

from typing import Any, Dict

from absl import logging
from tfx import types
from tfx.components.example_gen import driver
from tfx.components.example_gen import utils

from components.image_example_gen import window_driver


def driver_ran(exec_properties: Dict[str, Any]) -> bool:
  """Whether TFX's driver resolved the span (it always sets one)."""
  return exec_properties.get(utils.SPAN_PROPERTY_NAME) is not None


def resolve(exec_properties: Dict[str, Any],
            examples: types.Artifact) -> Dict[str, Any]:
  """The execution properties the driver would have passed, and the
  driver's span, version and fingerprint recorded on `examples`."""
  # The driver's own resolution; it needs no ML Metadata.
  resolved = window_driver.Driver(None).resolve_exec_properties(
      dict(exec_properties), None, None)
  driver.update_output_artifact(resolved, examples.mlmd_artifact)
  logging.info('No ExampleGen driver ran: resolved span %s, version %s, '
               'fingerprint %s here.', resolved[utils.SPAN_PROPERTY_NAME],
               resolved[utils.VERSION_PROPERTY_NAME],
               resolved[utils.FINGERPRINT_PROPERTY_NAME])
  return resolved
