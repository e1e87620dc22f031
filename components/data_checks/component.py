"""DataChecks: copies within and across splits, and cheap image issues.

The artifact's contents: records/data_check_results.py. Why and how:
docs/data-checks.md.
"""

from tfx import types
from tfx.dsl.components.base import base_beam_component
from tfx.dsl.components.base import executor_spec
from tfx.types import component_spec
from tfx.types import standard_artifacts

from components.data_checks import executor
from records import data_check_results as results


class DataCheckResults(types.Artifact):
  """Copies and image issues found in an Examples artifact."""
  # module.Class: the form Kubeflow's compiler asks of a custom type, and
  # the path a task's entrypoint imports it by (components/__init__.py).
  TYPE_NAME = 'components.DataCheckResults'


class DataChecksSpec(types.ComponentSpec):
  """DataChecks' input Examples and its DataCheckResults output."""
  PARAMETERS = {}
  INPUTS = {
      executor.EXAMPLES_KEY: component_spec.ChannelParameter(
          type=standard_artifacts.Examples),
  }
  OUTPUTS = {
      results.OUTPUT_KEY: component_spec.ChannelParameter(
          type=DataCheckResults),
  }


class DroppingCopiesSpec(DataChecksSpec):
  """DataChecksSpec, plus the held-out splits without their copies."""
  OUTPUTS = {
      **DataChecksSpec.OUTPUTS,
      # The held-out splits without their copies of training images.
      executor.WITHOUT_COPIES_KEY: component_spec.ChannelParameter(
          type=standard_artifacts.Examples),
  }


class DataChecks(base_beam_component.BaseBeamComponent):
  """Finds copies across and within splits, and image issues."""

  SPEC_CLASS = DataChecksSpec
  EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

  def __init__(self, examples: types.BaseChannel):
    super().__init__(spec=DataChecksSpec(
        examples=examples,
        data_checks=types.Channel(type=DataCheckResults)))


class DataChecksDroppingCopies(base_beam_component.BaseBeamComponent):
  """DataChecks, with the held-out splits without copies as a second output.

  The second output, examples_without_copies, holds the held-out splits
  without their copies of training images, for the Evaluator. It is a class
  of its own, so that runs that keep the copies publish no second Examples
  artifact.
  """

  SPEC_CLASS = DroppingCopiesSpec
  EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

  def __init__(self, examples: types.BaseChannel):
    super().__init__(spec=DroppingCopiesSpec(
        examples=examples,
        data_checks=types.Channel(type=DataCheckResults),
        examples_without_copies=types.Channel(
            type=standard_artifacts.Examples)))


def node(examples: types.BaseChannel, drop_held_out_copies: bool
         ) -> base_beam_component.BaseBeamComponent:
  """Returns the DataChecks node, whose id is 'DataChecks' either way.

  Args:
    examples: the Examples to check.
    drop_held_out_copies: whether the node also outputs the held-out splits
      without their copies of training images (DataChecksDroppingCopies).
  """
  if drop_held_out_copies:
    return DataChecksDroppingCopies(examples).with_id('DataChecks')
  return DataChecks(examples)
