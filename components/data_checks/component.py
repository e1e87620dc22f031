"""DataChecks: copies within and across splits, and cheap image issues.

Reads every split of ImageExampleGen's Examples (whatever the split names)
and writes a DataCheckResults artifact: the pairs of exact and near copies
and the images with issues, as CSV files, with the counts as custom
properties (records/data_checks.py). The ValidationGate stops the run when too many
held-out images have a copy in train (components/validation_gate.py).
How copies are told from look-alikes: matching.py.
"""

from tfx import types
from tfx.dsl.components.base import base_beam_component
from tfx.dsl.components.base import executor_spec
from tfx.types import component_spec
from tfx.types import standard_artifacts

from components.data_checks import executor


class DataCheckResults(types.Artifact):
  """Copies and image issues found in an Examples artifact."""
  # namespace.Name: the form Kubeflow's compiler asks of a custom type.
  TYPE_NAME = 'image_pipeline.DataCheckResults'


class DataChecksSpec(types.ComponentSpec):
  PARAMETERS = {}
  INPUTS = {
      executor.EXAMPLES_KEY: component_spec.ChannelParameter(
          type=standard_artifacts.Examples),
  }
  OUTPUTS = {
      executor.DATA_CHECKS_KEY: component_spec.ChannelParameter(
          type=DataCheckResults),
  }


class DataChecks(base_beam_component.BaseBeamComponent):
  """Finds copies across and within splits, and image issues."""

  SPEC_CLASS = DataChecksSpec
  EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

  def __init__(self, examples: types.BaseChannel):
    super().__init__(spec=DataChecksSpec(
        examples=examples,
        data_checks=types.Channel(type=DataCheckResults)))
