"""Where Transform learns the images' geometry: the Examples, else the schema."""

import pytest
from tfx.types import standard_artifacts

from components import image_transform
from records import features
from tests import transform_analysis

GEOMETRY = features.ImageGeometry(32, 24, 3)


def _examples(geometry=None):
  examples = standard_artifacts.Examples()
  examples.uri = 'examples/1'
  for key, value in (geometry.to_dict() if geometry else {}).items():
    examples.set_int_custom_property(key, value)
  return examples


def test_the_examples_say_it():
  schema = transform_analysis.mnist_schema(features.MNIST_GEOMETRY)
  # The data's word wins over the (here contradicting) schema.
  assert image_transform.data_geometry(_examples(GEOMETRY), schema) == GEOMETRY


def test_else_the_schema_pins_it():
  schema = transform_analysis.mnist_schema(GEOMETRY)
  assert image_transform.data_geometry(_examples(), schema) == GEOMETRY


def test_else_a_clear_error():
  schema = transform_analysis.mnist_schema(GEOMETRY)
  for feature in schema.feature:
    if feature.name == features.WIDTH_KEY:
      feature.int_domain.max = 64  # A range: no one width.
  with pytest.raises(ValueError, match='do not say their image geometry'):
    image_transform.data_geometry(_examples(), schema)
