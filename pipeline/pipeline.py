"""The TFX DAG, in one screen."""

from typing import Optional, Sequence

from ml_metadata.proto import metadata_store_pb2
from tfx import v1 as tfx

from components.image_example_gen.component import ImageExampleGen
from components.validation_gate import ValidationGate
from pipeline import features


def create_pipeline(
    pipeline_name: str,
    pipeline_root: str,
    data_root: str,
    input_format: str = 'idx',
    class_names: Optional[Sequence[str]] = None,
    image_geometry: features.ImageGeometry = features.MNIST_GEOMETRY,
    num_shards: int = 16,
    schema_path: Optional[str] = None,
    beam_pipeline_args: Sequence[str] = (),
    metadata_connection_config: Optional[
        metadata_store_pb2.ConnectionConfig] = None,
    enable_cache: bool = True,
) -> tfx.dsl.Pipeline:
  """Raw images -> Examples -> statistics -> schema -> validated data."""
  example_gen = ImageExampleGen(
      input_base=data_root, input_format=input_format,
      class_names=class_names, image_geometry=image_geometry,
      num_shards=num_shards)

  statistics_gen = tfx.components.StatisticsGen(
      examples=example_gen.outputs['examples'])

  if schema_path:  # A curated schema beats an inferred one.
    schema_gen = tfx.components.ImportSchemaGen(schema_file=schema_path)
  else:
    schema_gen = tfx.components.SchemaGen(
        statistics=statistics_gen.outputs['statistics'],
        infer_feature_shape=True)

  example_validator = tfx.components.ExampleValidator(
      statistics=statistics_gen.outputs['statistics'],
      schema=schema_gen.outputs['schema'])

  # Nothing that trains or pushes may run on data with anomalies.
  validation_gate = ValidationGate(
      anomalies=example_validator.outputs['anomalies'])

  return tfx.dsl.Pipeline(
      pipeline_name=pipeline_name,
      pipeline_root=pipeline_root,
      components=[
          example_gen,
          statistics_gen,
          schema_gen,
          example_validator,
          validation_gate,
      ],
      enable_cache=enable_cache,
      metadata_connection_config=metadata_connection_config,
      beam_pipeline_args=list(beam_pipeline_args),
  )
