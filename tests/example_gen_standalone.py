"""Running the ImageExampleGen executor on its own, outside a TFX pipeline.

The same executor, exec properties and Beam pipeline that the component
runs, for the benchmarks and the tests: no orchestrator, no ML Metadata.
"""

from typing import Optional, Sequence

from tfx.dsl.components.base import base_beam_executor
from tfx.proto import example_gen_pb2
from tfx.types import standard_artifacts
from tfx.types import standard_component_specs
from tfx.utils import proto_utils

from components.image_example_gen import executor
from components.image_example_gen.component import default_input_config
from components.image_example_gen.options import ImageExampleGenOptions
from pipeline import constants


def make_executor(beam_pipeline_args: Sequence[str]) -> executor.Executor:
  """The executor as TFX's Beam executor operator builds it, with the
  dependency flag local_runner.py adds (else TFX builds, and leaves in
  /tmp, an sdist of itself: constants.LOCAL_BEAM_PIPELINE_ARGS)."""
  return executor.Executor(base_beam_executor.BaseBeamExecutor.Context(
      beam_pipeline_args=[*beam_pipeline_args,
                          *constants.LOCAL_BEAM_PIPELINE_ARGS]))


def run_example_gen(
    input_base: str, output_uri: str, options: ImageExampleGenOptions,
    beam_pipeline_args: Sequence[str],
    input_config: Optional[example_gen_pb2.Input] = None,
    example_gen: Optional[executor.Executor] = None,
    output_config: Optional[example_gen_pb2.Output] = None,
) -> standard_artifacts.Examples:
  """Runs the executor's Do; returns the Examples artifact it wrote.

  `example_gen`: an executor from make_executor, to time Do alone.
  """
  input_config = input_config or default_input_config(options.input_format)
  exec_properties = {
      standard_component_specs.INPUT_BASE_KEY: str(input_base),
      standard_component_specs.INPUT_CONFIG_KEY:
          proto_utils.proto_to_json(input_config),
      standard_component_specs.OUTPUT_CONFIG_KEY:
          proto_utils.proto_to_json(output_config or example_gen_pb2.Output()),
      standard_component_specs.CUSTOM_CONFIG_KEY:
          proto_utils.proto_to_json(options.to_custom_config()),
  }
  examples = standard_artifacts.Examples()
  examples.uri = str(output_uri)
  example_gen = example_gen or make_executor(beam_pipeline_args)
  example_gen.Do({}, {standard_component_specs.EXAMPLES_KEY: [examples]},
                 exec_properties)
  return examples
