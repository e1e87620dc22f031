"""ServedModel: the model being served, as the Evaluator's baseline.

It copies the newest version under the Pusher's destination into its Model
artifact's `Format-Serving/`. Why and how: docs/serving.md#the-baseline.
"""

import os
from typing import Any, Dict, List, Optional

from absl import logging
from tfx import types
from tfx.dsl.components.base import base_component
from tfx.dsl.components.base import base_executor
from tfx.dsl.components.base import executor_spec
from tfx.dsl.io import fileio
from tfx.types import artifact_utils
from tfx.types import component_spec
from tfx.types import standard_artifacts
from tfx.utils import io_utils
from tfx.utils import path_utils

from components import push_once
from components import tfx_workarounds
from records import serving_model

SERVING_MODEL_DIR_KEY = 'serving_model_dir'
# Set by the driver: the version served when the cache was looked up.
SERVED_VERSION_KEY = 'served_version'
MODEL_KEY = 'model'
# Custom property of the Model artifact: which version it copies (empty
# when nothing was served); from where: serving_model.SERVED_FROM_PROPERTY.
SERVED_VERSION_PROPERTY = 'served_version'


def served_version(serving_model_dir: str) -> Optional[str]:
  """Returns the version a model server would load, None if nothing is served.

  Raises:
    push_once.ServingDirectoryError: `serving_model_dir` cannot be read.
  """
  return push_once.newest_version(serving_model_dir)


def holds_model(model: types.Artifact) -> bool:
  """Whether a Model artifact holds a SavedModel (anything was served)."""
  return fileio.exists(os.path.join(
      path_utils.serving_model_path(model.uri), serving_model.SAVED_MODEL_FILE))


class ServedModelSpec(component_spec.ComponentSpec):
  """ServedModel's parameters and its Model output."""
  PARAMETERS = {
      SERVING_MODEL_DIR_KEY: component_spec.ExecutionParameter(type=str),
      SERVED_VERSION_KEY: component_spec.ExecutionParameter(
          type=str, optional=True),
  }
  INPUTS = {}
  OUTPUTS = {
      MODEL_KEY: component_spec.ChannelParameter(
          type=standard_artifacts.Model),
  }


class Driver(tfx_workarounds.ExecPropertiesDriver):
  """Records the served version in the execution properties (the cache key)."""

  def exec_properties(self, given: Dict[str, Any]) -> Dict[str, Any]:
    """Returns the version served now, '' if none."""
    return {SERVED_VERSION_KEY:
                served_version(given[SERVING_MODEL_DIR_KEY]) or ''}


class Executor(base_executor.BaseExecutor):
  """Copies the newest served version into the Model artifact."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    """Copies the served model into the Model artifact, if any is served.

    Raises:
      push_once.ServingDirectoryError: the serving directory cannot be read.
    """
    del input_dict  # None.
    serving_model_dir = exec_properties[SERVING_MODEL_DIR_KEY]
    model = artifact_utils.get_single_instance(output_dict[MODEL_KEY])
    # Read again, not taken from the driver: on Kubeflow no driver runs.
    version = served_version(serving_model_dir)
    if version is None:
      logging.info('Nothing is served under %s yet: no baseline.',
                   serving_model_dir)
      model.set_string_custom_property(SERVED_VERSION_PROPERTY, '')
      model.set_string_custom_property(
          serving_model.SERVED_FROM_PROPERTY, '')
      return
    source = os.path.join(serving_model_dir, version)
    io_utils.copy_dir(source, path_utils.serving_model_dir(model.uri))
    model.set_string_custom_property(SERVED_VERSION_PROPERTY, version)
    model.set_string_custom_property(serving_model.SERVED_FROM_PROPERTY,
                                     source)
    logging.info('Baseline: the served model %s.', source)


class ServedModel(base_component.BaseComponent):
  """The model served from `serving_model_dir`, as a Model artifact."""

  SPEC_CLASS = ServedModelSpec
  EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(Executor)
  DRIVER_CLASS = Driver

  def __init__(self, serving_model_dir: str):
    super().__init__(spec=ServedModelSpec(
        serving_model_dir=serving_model_dir,
        model=types.Channel(type=standard_artifacts.Model)))
