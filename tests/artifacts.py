"""Real artifacts for the tests: Examples from the ImageExampleGen executor
and a transform graph from tf.Transform, both through real Beam."""

import os

import apache_beam as beam
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from tensorflow_transform.tf_metadata import dataset_metadata
from tensorflow_transform.tf_metadata import metadata_io
from tfx.dsl.components.base import base_beam_executor
from tfx.proto import example_gen_pb2
from tfx.types import standard_artifacts
from tfx.types import standard_component_specs
from tfx.utils import io_utils
from tfx.utils import proto_utils
from tfx_bsl.public import tfxio

from components.image_example_gen import executor
from components.image_example_gen.component import default_input_config
from modules import transform
from tensorflow_metadata.proto.v0 import schema_pb2

IN_MEMORY = ['--direct_running_mode=in_memory']


def run_example_gen(input_base, output_uri, options, input_config=None):
  """Runs the ImageExampleGen executor; returns its Examples artifact."""
  input_config = input_config or default_input_config(options.input_format)
  exec_properties = {
      standard_component_specs.INPUT_BASE_KEY: str(input_base),
      standard_component_specs.INPUT_CONFIG_KEY:
          proto_utils.proto_to_json(input_config),
      standard_component_specs.OUTPUT_CONFIG_KEY:
          proto_utils.proto_to_json(example_gen_pb2.Output()),
      standard_component_specs.CUSTOM_CONFIG_KEY:
          proto_utils.proto_to_json(options.to_custom_config()),
  }
  examples = standard_artifacts.Examples()
  examples.uri = str(output_uri)
  context = base_beam_executor.BaseBeamExecutor.Context(
      beam_pipeline_args=IN_MEMORY)
  executor.Executor(context).Do({}, {'examples': [examples]}, exec_properties)
  return examples


def mnist_schema(geometry) -> schema_pb2.Schema:
  """The curated MNIST schema, with `geometry` as the image size."""
  from pipeline import configs  # pylint: disable=g-import-not-at-top
  schema = io_utils.parse_pbtxt_file(configs.MNIST_SCHEMA, schema_pb2.Schema())
  for feature in schema.feature:
    value = {'height': geometry.height, 'width': geometry.width,
             'channels': geometry.channels}.get(feature.name)
    if value is not None:
      feature.int_domain.min = feature.int_domain.max = value
  return schema


def make_transform_output(train_pattern: str, geometry, output_dir: str
                          ) -> tft.TFTransformOutput:
  """Analyzes `train_pattern` with the project's preprocessing_fn."""
  schema = mnist_schema(geometry)
  config = {'image_height': geometry.height, 'image_width': geometry.width,
            'image_channels': geometry.channels}
  source = tfxio.TFExampleRecord(file_pattern=train_pattern,
                                 telemetry_descriptors=['tests'],
                                 schema=schema)
  with beam.Pipeline(argv=IN_MEMORY) as pipeline:
    with tft_beam.Context(temp_dir=os.path.join(output_dir, 'tmp')):
      transform_fn = (
          (pipeline | source.BeamSource(), source.TensorAdapterConfig())
          | tft_beam.AnalyzeDataset(
              lambda inputs: transform.preprocessing_fn(inputs, config)))
      _ = transform_fn | tft_beam.WriteTransformFn(output_dir)
  # The raw schema goes beside the graph, as the Transform component does.
  metadata_io.write_metadata(
      dataset_metadata.DatasetMetadata(schema),
      os.path.join(output_dir, tft.TFTransformOutput.RAW_METADATA_DIR))
  return tft.TFTransformOutput(output_dir)
