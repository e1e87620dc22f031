"""preprocessing_fn through real tf.Transform, and the Trainer's input_fn."""

import os

import numpy as np
import pytest
import tensorflow as tf

from components.image_example_gen.options import ImageExampleGenOptions
from modules import transform
from modules.training import input_pipeline
from records import decode
from records import features
from tests import artifacts
from tests import autograph_calls
from tests import datasets
from tests import examples_io

GREY = features.MNIST_GEOMETRY
RGB = features.ImageGeometry(12, 10, 3)


def _examples_and_transform(tmp_path, geometry, counts, num_shards):
  datasets.write_idx_dataset(str(tmp_path / 'in'), counts, geometry)
  examples = artifacts.run_example_gen(
      tmp_path / 'in', tmp_path / 'examples',
      ImageExampleGenOptions(num_shards=num_shards))
  train = os.path.join(examples.uri, 'Split-train', '*')
  output = artifacts.make_transform_output(train, geometry,
                                           str(tmp_path / 'transform'))
  return examples, output


@pytest.fixture(scope='module')
def grey(tmp_path_factory):
  return _examples_and_transform(tmp_path_factory.mktemp('grey'), GREY,
                                 {'train': 64, 't10k': 24}, num_shards=4)


@pytest.mark.parametrize('geometry', [GREY, RGB])
def test_preprocessing_normalises_each_channel(tmp_path, geometry):
  examples, output = _examples_and_transform(
      tmp_path, geometry, {'train': 30, 't10k': 10}, num_shards=2)
  spec = output.transformed_feature_spec()
  assert set(spec) == {features.IMAGE_KEY, features.LABEL_KEY,
                       transform.PIXEL_MEAN_KEY, transform.PIXEL_VARIANCE_KEY}
  assert spec[features.IMAGE_KEY].shape == list(geometry.shape)
  assert spec[features.IMAGE_KEY].dtype == tf.float32

  records = examples_io.read_split(examples.uri, 'train')
  raw = {k: tf.constant([[r[k]] for r in records], tf.int64)
         for k in (features.HEIGHT_KEY, features.WIDTH_KEY,
                   features.CHANNELS_KEY, features.LABEL_KEY)}
  raw[features.IMAGE_KEY] = tf.constant([[r['image'].tobytes()] for r in records])
  out = output.transform_features_layer()(raw)
  images = out[features.IMAGE_KEY].numpy()
  # Zero mean, unit variance per channel over the analysed (train) data.
  flat = images.reshape(-1, geometry.channels)
  np.testing.assert_allclose(flat.mean(axis=0), 0, atol=1e-4)
  np.testing.assert_allclose(flat.std(axis=0), 1, atol=1e-3)
  # An affine map of the pixels: brighter stays brighter.
  pixels = np.stack([r['image'] for r in records]).astype(np.float32)
  corr = np.corrcoef(pixels.ravel(), images.ravel())[0, 1]
  assert corr > 0.999
  np.testing.assert_array_equal(out[features.LABEL_KEY].numpy(),
                                [r['label'] for r in records])


@pytest.mark.parametrize('geometry', [GREY, RGB])
def test_normalise_with_the_constants_is_the_transform(tmp_path, geometry):
  # What serve_images computes on uint8 tensors is what the transform graph
  # computes on the records' bytes.
  examples, output = _examples_and_transform(
      tmp_path, geometry, {'train': 30, 't10k': 10}, num_shards=1)
  records = examples_io.read_split(examples.uri, 'eval')
  mean, variance = transform.normalisation_constants(
      output, features.make_example(bytes(geometry.num_bytes), geometry, 0,
                                    source='zeros'))
  assert mean.shape == variance.shape == (geometry.channels,)
  images = np.stack([r['image'] for r in records])
  pixels = images.reshape(-1, geometry.channels) / 255.0
  assert (pixels.mean(axis=0) != mean).all()  # Learnt on train, not eval.
  transformed = output.transform_features_layer()(tf.io.parse_example(
      [features.make_example(i.tobytes(), geometry, 0, source=str(n))
       for n, i in enumerate(images)],
      output.raw_feature_spec()))
  np.testing.assert_allclose(
      transform.normalise(tf.constant(images), mean, variance).numpy(),
      transformed[features.IMAGE_KEY].numpy(), rtol=1e-6, atol=1e-6)


def test_preprocessing_rejects_other_geometry(grey):
  _, output = grey
  raw = {features.IMAGE_KEY: tf.constant([[bytes(32 * 32)]]),
         features.HEIGHT_KEY: tf.constant([[32]], tf.int64),
         features.WIDTH_KEY: tf.constant([[32]], tf.int64),
         features.CHANNELS_KEY: tf.constant([[1]], tf.int64),
         features.LABEL_KEY: tf.constant([[0]], tf.int64)}
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match='image height differs from the configured geometry 28x28x1'):
    output.transform_features_layer()(raw)


def test_training_dataset_shapes_dtypes_and_coverage(grey):
  examples, output = grey
  dataset = input_pipeline.make_dataset(
      os.path.join(examples.uri, 'Split-train', '*'), output, batch_size=16,
      training=True, shuffle_buffer=1000)
  assert dataset.element_spec[0].shape.as_list() == [None, 28, 28, 1]
  assert dataset.element_spec[0].dtype == tf.float32
  assert dataset.element_spec[1].dtype == tf.int64
  for _ in range(2):  # Every record once per epoch, cached or not.
    labels = np.concatenate([l.numpy() for _, l in dataset])
    assert sorted(labels) == sorted(np.arange(64) % 10)


def test_eval_dataset_is_deterministic_and_interleaves_shards(grey):
  examples, output = grey
  files = input_pipeline.list_files(
      os.path.join(examples.uri, 'Split-eval', '*'))
  assert len(files) == 4
  first_of_each_file = []
  for path in files:
    record = next(iter(tf.data.TFRecordDataset(path, compression_type='GZIP')))
    first_of_each_file.append(record.numpy())

  def run():
    dataset = input_pipeline.make_dataset(files, output, batch_size=4,
                                          training=False, cache=False)
    return [images.numpy() for images, _ in dataset]

  batches = run()
  # The first batch holds the first record of each of the four shards:
  # the reads are interleaved, not one file after the other.
  parse = input_pipeline.parse_and_transform(output)
  expected, _ = parse(tf.constant(first_of_each_file))
  np.testing.assert_allclose(batches[0], expected.numpy(), rtol=1e-6)
  for a, b in zip(batches, run()):
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize('cache', [True, False], ids=['cached', 'streamed'])
def test_a_seeded_run_reads_its_training_data_in_the_same_order(grey, cache):
  examples, output = grey
  train = os.path.join(examples.uri, 'Split-train', '*')

  def two_epochs(ordered):
    tf.random.set_seed(1)  # As keras.utils.set_random_seed does (--seed).
    dataset = input_pipeline.make_dataset(
        train, output, batch_size=4, training=True, shuffle_buffer=16,
        cache=cache, ordered=ordered)
    return dataset, [l.numpy().tolist() for _ in range(2) for _, l in dataset]

  dataset, labels = two_epochs(ordered=True)
  assert labels == two_epochs(ordered=True)[1]
  assert labels[:16] != labels[16:]  # Still a new order each epoch.
  # Parallel reads and parses wait for their turn: nothing is taken
  # because it was ready first. Unordered, they are.
  assert _parallel_steps_deterministic(dataset) == {'true'}
  unordered, _ = two_epochs(ordered=False)
  assert _parallel_steps_deterministic(unordered) == {'false'}


def _parallel_steps_deterministic(dataset):
  """The `deterministic` settings of a dataset's parallel steps."""
  graph = tf.compat.v1.GraphDef.FromString(
      dataset._as_serialized_graph().numpy())  # pylint: disable=protected-access
  return {node.attr['deterministic'].s.decode() for node in graph.node
          if node.op.startswith('Parallel')}


def test_no_files_is_a_clear_error(tmp_path, grey):
  with pytest.raises(ValueError, match='no files match'):
    input_pipeline.make_dataset(str(tmp_path / 'nothing-*'), grey[1], 4, False)


@pytest.mark.parametrize('encoding', features.IMAGE_ENCODINGS)
def test_image_encodings_round_trip(tmp_path, encoding):
  # Smooth images, as photographs are: JPEG keeps them within a few levels.
  geometry = features.ImageGeometry(16, 12, 3)
  written = datasets.write_idx_dataset(str(tmp_path / 'in'),
                                       {'train': 12, 't10k': 4}, geometry)
  examples = artifacts.run_example_gen(
      tmp_path / 'in', tmp_path / 'examples',
      ImageExampleGenOptions(num_shards=2, image_encoding=encoding))
  assert examples.get_string_custom_property(
      features.IMAGE_ENCODING_PROPERTY) == encoding
  train = os.path.join(examples.uri, 'Split-train', '*')
  records = [r.numpy() for r in tf.data.TFRecordDataset(
      input_pipeline.list_files(train), compression_type='GZIP')]
  output = artifacts.make_transform_output(train, geometry,
                                           str(tmp_path / 'transform'),
                                           encoding)
  parsed = tf.io.parse_example(records, output.raw_feature_spec())
  decoded = decode.decode_images(parsed, geometry, encoding).numpy()
  labels = parsed[features.LABEL_KEY].numpy().ravel()
  images, want_labels = written['train']
  # Records come back in another order: match them by label and pixels.
  order = np.lexsort((np.abs(decoded.reshape(len(decoded), -1)).sum(axis=1),
                      labels))
  want_order = np.lexsort((images.reshape(len(images), -1).sum(axis=1),
                           want_labels))
  got, want = decoded[order].astype(int), images[want_order].astype(int)
  if encoding == 'jpeg':
    assert np.abs(got - want).mean() < 6
  else:  # Lossless: bit-exact.
    np.testing.assert_array_equal(got, want)
  dataset = input_pipeline.make_dataset(train, output, batch_size=5,
                                        training=False)
  batch, _ = next(iter(dataset))
  assert batch.shape[1:] == geometry.shape
  # The normalisation serve_images uses, read from an encoded record.
  mean, _ = transform.normalisation_constants(output, records[0])
  assert mean.shape == (3,)


def test_the_input_pipeline_runs_nothing_through_autograph(grey):
  examples, output = grey

  def plain(x):
    return x + 1

  with autograph_calls.converted_calls() as calls:
    dataset = input_pipeline.make_dataset(
        os.path.join(examples.uri, 'Split-train', '*'), output, batch_size=16,
        training=True, shuffle_buffer=1000)
    next(iter(dataset))
  # The project's own small functions only: no library code converted.
  assert [c for c in calls
          if not c.startswith(('modules.', 'records.'))] == []
  with autograph_calls.converted_calls() as calls:  # tf.data would convert.
    next(iter(tf.data.Dataset.range(2).map(plain)))
  assert calls


@pytest.mark.parametrize('training', [True, False])
def test_datasets_run_without_the_autotuner(grey, training):
  # Keras drops an iterator each epoch, and TF waits for the autotuner's
  # thread when one is dropped (input_pipeline.make_dataset says more).
  examples, output = grey
  dataset = input_pipeline.make_dataset(
      os.path.join(examples.uri, 'Split-train', '*'), output, batch_size=16,
      training=training, shuffle_buffer=1000 if training else None)
  assert dataset.options().autotune.enabled is False
