"""The domains ImageSchemaGen adds to SchemaGen's inferred schema, and the
one it removes."""

import numpy as np
import tensorflow as tf
import tensorflow_data_validation as tfdv

from components.image_schema_gen import free_source
from components.image_schema_gen import pin_image_domains
from pipeline import constants
from records import features
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


def _records_statistics(tmp_path, name, sources):
  """TFDV's statistics, as StatisticsGen computes them, of records with
  these sources."""
  images = np.zeros((len(sources), 28, 28), np.uint8)
  images[:, 0, 0] = 255
  path = str(tmp_path / f'{name}.tfrecord')
  with tf.io.TFRecordWriter(path) as writer:
    for record in features.make_examples(
        images, np.arange(len(sources)) % 10, features.MNIST_GEOMETRY,
        sources=[s.encode() for s in sources]):
      writer.write(record)
  return tfdv.generate_statistics_from_tfrecord(
      path, stats_options=tfdv.StatsOptions(
          use_sketch_based_topk_uniques=True))


def test_source_gets_no_domain_so_new_files_are_no_anomaly(tmp_path):
  # Few records: TFDV would make the sources seen an enum of allowed values.
  train = _records_statistics(
      tmp_path, 'train', [f'train/{i % 10}/{i}.png' for i in range(40)])
  evaluation = _records_statistics(
      tmp_path, 'eval', [f'eval/{i % 10}/{i}.png' for i in range(20)])
  schema = tfdv.infer_schema(train, infer_feature_shape=True)
  [inferred] = [f for f in schema.feature if f.name == features.SOURCE_KEY]
  assert inferred.HasField('domain')  # What free_source is for.

  free_source(schema)

  [source] = [f for f in schema.feature if f.name == features.SOURCE_KEY]
  assert source.type == schema_pb2.BYTES and not source.HasField('domain')
  assert source.presence.min_fraction == 1
  assert not schema.string_domain
  assert not tfdv.validate_statistics(evaluation, schema).anomaly_info
  # The curated schema says the same of the source.
  curated = tfdv.load_schema_text(constants.MNIST_SCHEMA)
  assert features.SOURCE_KEY not in tfdv.validate_statistics(
      evaluation, curated).anomaly_info
