"""The ValidationGate's reading of TFDV's anomalies: a schema written before
records named their source still checks the rest, and nothing else is let
through."""

import numpy as np
import tensorflow as tf
import tensorflow_data_validation as tfdv

from components import validation_gate
from pipeline import constants
from records import features

from tensorflow_metadata.proto.v0 import anomalies_pb2


def _statistics(tmp_path):
  """TFDV's statistics of a few MNIST-format records, each with a source."""
  rng = np.random.default_rng(0)
  images = rng.integers(0, 256, (20, 28, 28), np.uint8)
  labels = np.arange(20) % 10
  path = str(tmp_path / 'records.tfrecord')
  with tf.io.TFRecordWriter(path) as writer:
    for index, (image, label) in enumerate(zip(images, labels)):
      writer.write(features.make_example(
          image.tobytes(), features.MNIST_GEOMETRY, int(label),
          source=f'train-images-idx3-ubyte.gz:{index}'))
  return tfdv.generate_statistics_from_tfrecord(data_location=path)


def _schema_without_source():
  schema = tfdv.load_schema_text(constants.MNIST_SCHEMA)
  kept = [f for f in schema.feature if f.name != features.SOURCE_KEY]
  del schema.feature[:]
  schema.feature.extend(kept)
  return schema


def test_an_older_schema_without_the_source_still_checks_the_rest(tmp_path):
  statistics = _statistics(tmp_path)
  schema = _schema_without_source()
  anomalies = tfdv.validate_statistics(statistics, schema)
  # TFDV does report the new column; the gate does not stop for it.
  assert features.SOURCE_KEY in anomalies.anomaly_info
  assert validation_gate.split_problems('train', anomalies) == []

  # Any other anomaly still stops the run, and the source is not listed.
  tfdv.get_feature(schema, features.LABEL_KEY).int_domain.max = 4
  anomalies = tfdv.validate_statistics(statistics, schema)
  problems = validation_gate.split_problems('train', anomalies)
  assert len(problems) == 1 and repr(features.LABEL_KEY) in problems[0]


def test_a_split_not_blessed_without_anomalies_is_named():
  assert validation_gate.split_problems('eval', anomalies_pb2.Anomalies()) == [
      '  eval: not blessed by ExampleValidator']
