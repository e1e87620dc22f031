"""features.make_examples: many records at once, the same as one by one,
with each record's source."""

import numpy as np
import pytest
import tensorflow as tf

from components.image_example_gen import tfrecord_sink
from records import features


@pytest.mark.parametrize('source_prefix', [b'', b'train-images-idx3-ubyte:'])
@pytest.mark.parametrize('geometry', [features.MNIST_GEOMETRY,
                                      features.ImageGeometry(5, 3, 3)])
def test_make_examples_equals_make_example(geometry, source_prefix):
  rng = np.random.default_rng(0)
  # Labels past 127 take a two-byte varint: the templates differ in length.
  labels = np.array([0, 7, 127, 128, 300, 7, 0], np.int64)
  images = rng.integers(0, 256, (len(labels), *geometry.shape), np.uint8)
  # Pixel ranges of one and two varint bytes, and constant images (whose
  # pixels could be mistaken for other bytes of the record).
  images[1] = 0
  images[2] = 200
  images[3] = rng.integers(3, 131, geometry.shape, np.uint8)
  images[4] = 10

  # Sources of several lengths (the header's length changes with them),
  # one of a two-byte varint length, one not ASCII.
  rests = ['train/cat/0.png', 'x', '12345', 'a/' * 70 + 'deep.png',
           'été/çà.jpg', '', 'x']
  sources = [source_prefix.decode() + rest for rest in rests]

  records = features.make_examples(
      images, labels, geometry, sources=[rest.encode() for rest in rests],
      source_prefix=source_prefix)

  assert records == [features.make_example(i.tobytes(), geometry, int(l),
                                           source=s)
                     for i, l, s in zip(images, labels, sources)]
  spec = {features.IMAGE_KEY: tf.io.FixedLenFeature([], tf.string),
          features.SOURCE_KEY: tf.io.FixedLenFeature([], tf.string),
          features.LABEL_KEY: tf.io.FixedLenFeature([], tf.int64),
          features.HEIGHT_KEY: tf.io.FixedLenFeature([], tf.int64),
          features.WIDTH_KEY: tf.io.FixedLenFeature([], tf.int64),
          features.CHANNELS_KEY: tf.io.FixedLenFeature([], tf.int64)}
  parsed = tf.io.parse_example(records, spec)
  pixels = tf.io.decode_raw(parsed[features.IMAGE_KEY], tf.uint8).numpy()
  np.testing.assert_array_equal(pixels.reshape(images.shape), images)
  np.testing.assert_array_equal(parsed[features.LABEL_KEY], labels)
  assert [s.decode() for s in parsed[features.SOURCE_KEY].numpy()] == sources
  assert set(parsed[features.CHANNELS_KEY].numpy()) == {geometry.channels}
  # What protobuf itself reads: one features map, every feature once.
  for record, source in zip(records, sources):
    example = tf.train.Example.FromString(record)
    assert sorted(example.features.feature) == sorted(features.FEATURE_KEYS)
    assert example.features.feature[features.SOURCE_KEY].bytes_list.value == [
        source.encode()]
    # Nothing twice: protobuf writes as many bytes (in its own map order).
    assert len(example.SerializeToString()) == len(record)


@pytest.mark.parametrize('encoding', ['png', 'jpeg'])
def test_encoded_records_carry_their_source(encoding):
  geometry = features.ImageGeometry(5, 3, 3)
  images = np.random.default_rng(0).integers(0, 256, (2, *geometry.shape),
                                             np.uint8)
  records = features.make_examples(images, np.array([1, 2]), geometry,
                                   encoding, sources=[b'a.png', b'c.png'],
                                   source_prefix=b'b/')
  assert [tf.train.Example.FromString(r).features.feature[
      features.SOURCE_KEY].bytes_list.value[0] for r in records] == [
          b'b/a.png', b'b/c.png']


def test_make_examples_needs_a_source_per_image():
  with pytest.raises(ValueError, match='2 images but 1 sources'):
    features.make_examples(np.zeros((2, 28, 28), np.uint8), np.zeros(2),
                           features.MNIST_GEOMETRY, sources=[b'a'])


def test_make_examples_rejects_the_wrong_size():
  with pytest.raises(ValueError, match='784'):
    features.make_examples(np.zeros((2, 27, 28), np.uint8), np.zeros(2),
                           features.MNIST_GEOMETRY, sources=[b'a', b'b'])


def test_frame_reads_back_as_tfrecords(tmp_path):
  records = [b'', b'a', b'xyz' * 1000, b'b']
  path = tmp_path / 'data.tfrecord'
  path.write_bytes(tfrecord_sink.frame(records))
  assert [r.numpy() for r in tf.data.TFRecordDataset(str(path))] == records
