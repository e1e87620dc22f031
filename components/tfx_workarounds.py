"""The few things the project needs from TFX that TFX has no public API for.

Each is a fact about TFX 1.16's internals, kept here and nowhere else;
tests/test_tfx_workarounds.py fails loudly when an upgrade changes one.
"""

import abc
import contextlib
import importlib
import os
from typing import Any, Dict, Iterator, Optional

from absl import flags
from tfx import types
from tfx.dsl.components.base import base_driver
from tfx.orchestration import data_types_utils
from tfx.orchestration import metadata
from tfx.orchestration.portable import base_driver as portable_base_driver
from tfx.orchestration.portable import data_types as portable_data_types
from tfx.proto.orchestration import driver_output_pb2

from records import serving_model

# tfx_bsl's flag (defined in tfx_bsl.coders.batch_util): its TFXIO sources
# then batch records by their bytes, not by a count Beam tunes up from 1.
BYTE_SIZE_BATCHING_FLAG = 'tfxio_use_byte_size_batching'


def mark_pushed(model_push: types.Artifact, destination: str,
                version: Optional[str] = None) -> None:
  """Records on `model_push` that the model is served, as TFX's Pusher does.

  Args:
    model_push: the PushedModel artifact.
    destination: where the model is served from.
    version: the served version, if known.
  """
  model_push.set_int_custom_property(serving_model.PUSHED_PROPERTY, 1)
  model_push.set_string_custom_property(
      serving_model.PUSHED_DESTINATION_PROPERTY, destination)
  if version is not None:
    model_push.set_string_custom_property(
        serving_model.PUSHED_VERSION_PROPERTY, version)


class ExecPropertiesDriver(base_driver.BaseDriver,
                           portable_base_driver.BaseDriver):
  """A DRIVER_CLASS that adds exec properties when the node is about to run.

  The properties added change the cache key on LocalDagRunner. Kubeflow
  Pipelines runs no driver, so a component using this must not rely on it
  there. Turn caching off for its task instead.
  """

  def __init__(self, metadata_handle: metadata.Metadata):
    base_driver.BaseDriver.__init__(self, metadata_handle)
    portable_base_driver.BaseDriver.__init__(self, metadata_handle)

  @abc.abstractmethod
  def exec_properties(self, given: Dict[str, Any]) -> Dict[str, Any]:
    """Returns the properties to set, from the node's own."""

  def run(self, execution_info: portable_data_types.ExecutionInfo
          ) -> driver_output_pb2.DriverOutput:
    """Returns a DriverOutput holding `exec_properties` of the node's own."""
    result = driver_output_pb2.DriverOutput()
    for key, value in self.exec_properties(
        dict(execution_info.exec_properties)).items():
      data_types_utils.set_metadata_value(result.exec_properties[key], value)
    return result


def output_dir(pipeline_root: str, node_id: str, output_key: str,
               execution_id: int) -> str:
  """Returns the directory LocalDagRunner gives an execution's output.

  Args:
    pipeline_root: the pipeline's root directory.
    node_id: the node that ran.
    output_key: the output's key.
    execution_id: the execution's ML Metadata id.
  """
  return os.path.join(pipeline_root, node_id, output_key, str(execution_id))


@contextlib.contextmanager
def byte_size_batching() -> Iterator[None]:
  """Has TFXIO sources started within batch records by their bytes.

  For TFX's Evaluator, which makes its source itself with no batch size
  (docs/architecture.md, "What the project takes from TFX's internals").
  absl's flags are marked parsed, each keeping its value, and this one is
  restored on leaving.
  """
  importlib.import_module('tfx_bsl.coders.batch_util')  # Defines the flag.
  if not flags.FLAGS.is_parsed():
    flags.FLAGS.mark_as_parsed()
  flag = flags.FLAGS[BYTE_SIZE_BATCHING_FLAG]
  before = flag.value
  flag.value = True
  try:
    yield
  finally:
    flag.value = before
