"""The Transform module's analysis run on its own, outside a TFX pipeline.

What the Transform component does with `materialize=False`: analyze the
train split with `preprocessing_fn` through tf.Transform on Beam and write
the transform graph, plus the raw schema beside it. For the benchmarks and
the tests: no orchestrator, no ML Metadata.
"""

import os
from typing import Sequence

import apache_beam as beam
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from tensorflow_transform.tf_metadata import dataset_metadata
from tensorflow_transform.tf_metadata import metadata_io
from tfx.utils import io_utils
from tfx_bsl.public import tfxio

from modules import transform
from pipeline import constants
from records import features
from tensorflow_metadata.proto.v0 import schema_pb2


def mnist_schema(geometry: features.ImageGeometry) -> schema_pb2.Schema:
  """The curated MNIST schema, with `geometry` as the image size."""
  schema = io_utils.parse_pbtxt_file(constants.MNIST_SCHEMA,
                                     schema_pb2.Schema())
  for feature in schema.feature:
    value = {features.HEIGHT_KEY: geometry.height,
             features.WIDTH_KEY: geometry.width,
             features.CHANNELS_KEY: geometry.channels}.get(feature.name)
    if value is not None:
      feature.int_domain.min = feature.int_domain.max = value
  return schema


def analyze(train_pattern: str, geometry: features.ImageGeometry,
            output_dir: str, beam_pipeline_args: Sequence[str],
            encoding: str = 'raw') -> tft.TFTransformOutput:
  """Analyzes `train_pattern` with the project's preprocessing_fn."""
  schema = mnist_schema(geometry)
  # What the Transform executor passes.
  config = {**geometry.to_dict(), features.IMAGE_ENCODING_PROPERTY: encoding}
  source = tfxio.TFExampleRecord(file_pattern=train_pattern,
                                 telemetry_descriptors=['standalone'],
                                 schema=schema)
  with beam.Pipeline(argv=list(beam_pipeline_args)) as pipeline:
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
