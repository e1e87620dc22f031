"""The domains ImageSchemaGen adds to SchemaGen's inferred schema."""

from components.image_schema_gen import pin_image_domains
from tensorflow_metadata.proto.v0 import schema_pb2
from tensorflow_metadata.proto.v0 import statistics_pb2


def _statistics(ranges):
  """One split's statistics with these {feature: (min, max)}."""
  dataset = statistics_pb2.DatasetFeatureStatistics()
  for name, (low, high) in ranges.items():
    feature = dataset.features.add()
    feature.path.step.append(name)
    feature.type = statistics_pb2.FeatureNameStatistics.INT
    feature.num_stats.min, feature.num_stats.max = low, high
  return dataset


def test_domains_cover_every_split_and_leave_other_features_alone():
  schema = schema_pb2.Schema()
  for name in ('image', 'height', 'width', 'channels', 'label', 'pixel_min',
               'pixel_max', 'extra'):
    schema.feature.add(name=name, type=schema_pb2.INT)
  train = _statistics({'height': (28, 28), 'width': (28, 28),
                       'channels': (1, 1), 'label': (0, 8),
                       'pixel_min': (0, 3), 'pixel_max': (250, 255),
                       'extra': (5, 9)})
  evaluation = _statistics({'height': (28, 28), 'width': (28, 28),
                            'channels': (1, 1), 'label': (1, 9),
                            'pixel_min': (0, 7), 'pixel_max': (241, 255),
                            'extra': (1, 2)})
  pin_image_domains(schema, [train, evaluation])
  domains = {f.name: (f.int_domain.min, f.int_domain.max)
             for f in schema.feature if f.HasField('int_domain')}
  assert domains == {
      'height': (28, 28), 'width': (28, 28), 'channels': (1, 1),
      'label': (0, 9),
      # Only the side that says "narrower range" is learned.
      'pixel_min': (0, 7), 'pixel_max': (241, 255),
  }
