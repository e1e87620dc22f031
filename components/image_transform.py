"""ImageTransform: TFX's Transform, told the images' geometry by the data.

It hands the preprocessing_fn the geometry and encoding of the Examples (or
of the schema). Why and how: docs/input-data.md.
"""

from typing import Any, Dict, List, Optional

from absl import logging
from tfx import types
from tfx.components.transform import component as transform_component
from tfx.components.transform import executor as transform_executor
from tfx.dsl.components.base import executor_spec
from tfx.types import artifact_utils
from tfx.types import standard_component_specs
from tfx.utils import io_utils
from tfx.utils import json_utils

from records import features
from tensorflow_metadata.proto.v0 import schema_pb2

# Each geometry property and the feature that holds it in the records.
_SCHEMA_KEYS = dict(zip(features.GEOMETRY_PROPERTIES, (
    features.HEIGHT_KEY, features.WIDTH_KEY, features.CHANNELS_KEY)))


def _from_examples(examples: types.Artifact) -> Optional[features.ImageGeometry]:
  if not all(examples.has_custom_property(key)
             for key in features.GEOMETRY_PROPERTIES):
    return None
  return features.ImageGeometry.from_dict(
      {key: examples.get_int_custom_property(key)
       for key in features.GEOMETRY_PROPERTIES})


def _from_schema(schema: schema_pb2.Schema) -> Optional[features.ImageGeometry]:
  domains = {f.name: f.int_domain for f in schema.feature
             if f.HasField('int_domain')}
  values = {}
  for key, feature in _SCHEMA_KEYS.items():
    domain = domains.get(feature)
    if domain is None or domain.min != domain.max:
      return None
    values[key] = domain.min
  return features.ImageGeometry.from_dict(values)


def data_geometry(examples: types.Artifact,
                  schema: schema_pb2.Schema) -> features.ImageGeometry:
  """Returns the geometry of `examples`' images, from the artifact or schema.

  Raises:
    ValueError: neither says.
  """
  geometry = _from_examples(examples) or _from_schema(schema)
  if geometry is None:
    raise ValueError(
        f'the Examples at {examples.uri} do not say their image geometry '
        f'(custom properties {", ".join(features.GEOMETRY_PROPERTIES)}), and '
        'the schema pins no single height, width and channel count')
  return geometry


def image_encoding(examples: types.Artifact) -> str:
  """Returns how `examples` hold their pixels ('raw' unless they say)."""
  if examples.has_custom_property(features.IMAGE_ENCODING_PROPERTY):
    return examples.get_string_custom_property(
        features.IMAGE_ENCODING_PROPERTY)
  return 'raw'  # Examples without the property hold raw pixels.


class Executor(transform_executor.Executor):
  """Transform's executor, with the data's geometry in the custom_config."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    """Runs TFX's Transform with the geometry and encoding in custom_config.

    Raises:
      ValueError: neither the Examples nor the schema give the geometry.
    """
    examples = input_dict[standard_component_specs.EXAMPLES_KEY][0]
    schema_path = io_utils.get_only_uri_in_dir(artifact_utils.get_single_uri(
        input_dict[standard_component_specs.SCHEMA_KEY]))
    schema = io_utils.SchemaReader().read(schema_path)
    geometry = data_geometry(examples, schema)
    encoding = image_encoding(examples)
    logging.info('Transform: images of %s in %s records, from the data.',
                 geometry, encoding)
    custom_config = json_utils.loads(exec_properties.get(
        standard_component_specs.CUSTOM_CONFIG_KEY) or 'null') or {}
    exec_properties = {
        **exec_properties,
        standard_component_specs.CUSTOM_CONFIG_KEY: json_utils.dumps(
            {**custom_config, **geometry.to_dict(),
             features.IMAGE_ENCODING_PROPERTY: encoding})}
    super().Do(input_dict, output_dict, exec_properties)


class ImageTransform(transform_component.Transform):
  """Transform whose preprocessing_fn learns the geometry from the data."""

  EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(Executor)
