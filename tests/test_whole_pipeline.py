"""The whole DAG through Pusher on tiny data: real LocalDagRunner, TFT, Keras,
TFMA and ML Metadata, then the pushed model answered through both signatures.

The data are IDX files of 32x32 images, not MNIST's 28x28, and the run has
no geometry flags: Transform, Trainer and the serving model take the
geometry from the files' headers."""

import os
import re

import numpy as np
import pytest
import tensorflow as tf

from modules.training import devices
from records import features
from tests import datasets
from tests import examples_io
from tests import local_run
from tests import mlmd
from tests import serving

run = local_run.run

ALL_NODES = ['ImageExampleGen', 'StatisticsGen', 'SchemaGen',
             'ExampleValidator', 'DataChecks', 'ValidationGate', 'Transform',
             'Trainer',
             'latest_blessed_model_resolver', 'Evaluator', 'Pusher',
             'LabelCheck']
GEOMETRY = features.ImageGeometry(32, 32, 1)
# With the default Beam args (a worker process per core), as a user runs it:
# the console test below needs the workers (their start and their end).
TINY_TRAINING = ['--epochs', '2', '--train-steps', '60', '--batch-size', '32']
# What libraries printed on the console before issue 16, each on every run.
NOISE = ['Unable to register', 'cuFFT', 'cuDNN', 'cuBLAS', 'TensorRT',
         'Exception ignored', 'Traceback', 'AtomicFunction',
         'oneDNN custom operations', 'cpu_feature_guard']


@pytest.fixture(scope='module')
def pushed(tmp_path_factory):
  """One full run on tiny MNIST-format data with a low threshold."""
  tmp = tmp_path_factory.mktemp('run')
  written = datasets.write_idx_dataset(str(tmp / 'data'),
                                       {'train': 300, 't10k': 100}, GEOMETRY)
  # In a Python of its own, as a user's (tests/local_run.py): the console
  # test below reads what the run printed from its very start.
  result = run('--data-dir', str(tmp / 'data'), '--output-dir',
               str(tmp / 'out'), '--accuracy-threshold', '0.3', *TINY_TRAINING,
               fresh=True)
  return tmp, written, result


def test_every_component_runs_and_the_model_is_pushed(pushed):
  tmp, _, result = pushed
  assert result.returncode == 0
  assert '--image-size' not in result.args  # The geometry is the data's.
  for node in ALL_NODES:
    assert f'✔ {node}: ' in result.stdout
  assert 'blessed' in result.stdout
  store = mlmd.open_store(str(tmp / 'out'))
  states = mlmd.execution_states(store)
  assert all(states[n] == ['COMPLETE'] for n in ALL_NODES if 'resolver' not in n)
  [blessing] = mlmd.live_artifacts(store, 'ModelBlessing')
  assert blessing.custom_properties['blessed'].int_value == 1
  [pushed_model] = mlmd.live_artifacts(store, 'PushedModel')
  assert pushed_model.custom_properties['pushed'].int_value == 1
  destination = pushed_model.custom_properties['pushed_destination'].string_value
  assert destination.startswith(str(tmp / 'out' / 'serving_model') + '/')
  # TensorBoard logs go to the ModelRun artifact.
  [examples] = mlmd.live_artifacts(store, 'Examples')
  assert {key: examples.custom_properties[key].int_value
          for key in features.GEOMETRY_PROPERTIES} == GEOMETRY.to_dict()
  [model_run] = mlmd.live_artifacts(store, 'ModelRun')
  assert tf.io.gfile.glob(os.path.join(model_run.uri, '*', 'events.out.*'))


def test_the_console_shows_only_the_runs_own_lines(pushed):
  """Progress, the Trainer's epochs and the summary; no library noise (the
  full log has everything)."""
  _, _, result = pushed
  console = result.stdout + result.stderr
  for noise in NOISE:
    assert noise not in console, noise
  assert result.stderr == ''
  lines = result.stdout.splitlines()
  epochs = [l for l in lines if l.startswith('  Epoch ')]
  assert len(epochs) == 2
  for epoch, line in enumerate(epochs, 1):
    assert re.match(rf'  Epoch {epoch}/2: 30 steps, 960 examples in [\d.]+s '
                    r'\([\d,]+ examples/s\); loss [\d.]+, accuracy [\d.]+, '
                    r'val_loss [\d.]+, val_accuracy [\d.]+$', line), line
  # What the Trainer chose, precision from this CPU's flags.
  [plan, splits] = [l for l in lines if l.startswith('  Trainer: ')]
  precision, why = devices.cpu_precision(devices.cpu_flags())
  assert plan.endswith(f', 2 epochs, {precision} ({why})'), plan
  # Which split decides what: the 300 train records, a tenth or so held
  # out for validation.
  train, validation = map(int, re.fullmatch(
      r'  Trainer: trains on train \((\d+) records\); early stopping and the '
      r'kept epoch on validation \((\d+) records\)', splits).groups())
  assert train + validation == 300 and 0 < validation < 60
  # Keras's own output is off (the progress above replaces it).
  assert not [l for l in lines if re.match(r'\d+/\d+ - ', l)]
  assert not [l for l in lines if re.fullmatch(r'Epoch \d+/\d+', l)]
  log = re.search(r'^Full log: (.+)$', result.stdout, re.M).group(1)
  with open(log) as f:
    assert sum(f'Epoch {e}/2: 30 steps' in l for l in f for e in (1, 2)) == 2



def test_the_log_says_where_the_trainers_fixed_seconds_go(pushed):
  """One line in the full log (not on the console): each phase of the
  Trainer outside its epochs, and their sum."""
  _, _, result = pushed
  assert 'fixed part' not in result.stdout
  log = re.search(r'^Full log: (.+)$', result.stdout, re.M).group(1)
  with open(log) as f:
    [line] = [l for l in f if 'Trainer fixed part: ' in l]
  phases = dict((name, float(seconds)) for name, seconds in re.findall(
      r"(?:: |, )([A-Za-z' 0-9]+?) ([\d.]+) s", line))
  assert {'reading and planning', 'SavedModel export', 'TensorFlow Lite',
          "LabelCheck's predictions"} <= set(phases), line
  total = float(re.search(r'; ([\d.]+) s in all', line).group(1))
  assert abs(sum(phases.values()) - total) <= 0.05 * len(phases) + 0.05, line

def test_both_signatures_answer_and_agree(pushed):
  tmp, written, _ = pushed
  path = serving.latest_pushed_model(str(tmp / 'out' / 'serving_model'))
  model = tf.saved_model.load(path)
  assert set(model.signatures) == {'serving_default', 'serve_images',
                                  'serve_image_bytes'}
  with open(os.path.join(path, 'assets.extra', 'class_names.txt')) as f:
    assert f.read().split() == [str(i) for i in range(10)]

  images, labels = written['t10k']
  probabilities, classes = serving.classify_images(model, images)
  assert probabilities.shape == (100, 10) and probabilities.dtype == np.float32
  assert classes.shape == (100,) and classes.dtype == np.int64
  np.testing.assert_allclose(probabilities.sum(axis=1), 1, rtol=1e-5)
  np.testing.assert_array_equal(classes, probabilities.argmax(axis=1))
  # The tiny data is learnable (brightness encodes the label): far above
  # chance (0.1), which the threshold of the run (0.3) also demanded.
  assert (classes == labels).mean() >= 0.3

  # [N, H, W, 1] is the same request as [N, H, W].
  _, classes_4d = serving.classify_images(model, images[..., None])
  np.testing.assert_array_equal(classes_4d, classes)

  # serving_default on Examples, with and without labels, agrees.
  for with_labels in (labels, None):
    out = model.signatures['serving_default'](examples=tf.constant(
        serving.serialized_examples(images[:20], with_labels)))
    np.testing.assert_allclose(out['probabilities'].numpy(),
                               probabilities[:20], rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(out['classes'].numpy(), classes[:20])


def test_serving_takes_records_with_or_without_their_source(pushed):
  # Clients send no source (serving.serialized_examples leaves it out, as
  # every request above); the records ExampleGen wrote, which TFMA fed to
  # the same signature, carry theirs, and get the same answers.
  tmp, _, _ = pushed
  model = tf.saved_model.load(
      serving.latest_pushed_model(str(tmp / 'out' / 'serving_model')))
  [examples] = mlmd.live_artifacts(mlmd.open_store(str(tmp / 'out')),
                                   'Examples')
  files = examples_io.split_files(examples.uri, 'eval')
  written = [r.numpy() for r in tf.data.TFRecordDataset(
      files, compression_type='GZIP').take(10)]
  assert all(features.SOURCE_KEY in tf.train.Example.FromString(
      r).features.feature for r in written)
  records = examples_io.read_split(examples.uri, 'eval')[:10]
  without = serving.serialized_examples(np.stack([r['image']
                                                  for r in records]))
  assert features.SOURCE_KEY not in tf.train.Example.FromString(
      without[0]).features.feature
  serve = model.signatures['serving_default']
  np.testing.assert_allclose(
      serve(examples=tf.constant(written))['probabilities'].numpy(),
      serve(examples=tf.constant(without))['probabilities'].numpy(),
      rtol=1e-5, atol=1e-6)


def _op_types(concrete_function):
  """Every op type a signature runs, in its graph and the functions it calls."""
  graph_def = concrete_function.graph.as_graph_def()
  types = {node.op for node in graph_def.node}
  for function in graph_def.library.function:
    types.update(node.op for node in function.node_def)
  return types


def test_serve_images_computes_on_pixels_not_bytes(pushed):
  # Rebuilding the raw bytes cost a string per pixel: serve_images feeds the
  # uint8 tensors straight to the normalisation the transform learnt.
  tmp, _, _ = pushed
  model = tf.saved_model.load(
      serving.latest_pushed_model(str(tmp / 'out' / 'serving_model')))
  images_ops = _op_types(model.signatures['serve_images'])
  examples_ops = _op_types(model.signatures['serving_default'])
  assert 'DecodeRaw' in examples_ops and 'Conv2D' in images_ops
  assert not images_ops & {'DecodeRaw', 'ReduceJoin', 'StringJoin',
                           'ParseExampleV2'}


@pytest.fixture(scope='module')
def served(pushed):
  """The pushed model, loaded as a serving client would, and good requests."""
  tmp, written, _ = pushed
  model = tf.saved_model.load(
      serving.latest_pushed_model(str(tmp / 'out' / 'serving_model')))
  images = written['t10k'][0][:8]
  return model, images, serving.serialized_examples(images)


def _example(serialized: bytes, change) -> bytes:
  example = tf.train.Example.FromString(serialized)
  change(example.features.feature)
  return example.SerializeToString()


def _set_height(feature):
  feature['height'].int64_list.value[0] = 28


def _short_image(feature):
  feature['image'].bytes_list.value[0] = bytes(100)


def _no_image(feature):
  del feature['image']


def _float_image(feature):
  feature['image'].ClearField('bytes_list')
  feature['image'].float_list.value.append(0.5)


# (signature, what is wrong, the request, what the error says).
BAD_REQUESTS = [
    ('serve_images', 'wrong size',
     lambda images, examples: tf.zeros([2, 28, 28], tf.uint8),
     'image height differs from the configured geometry 32x32x1'),
    ('serve_images', 'wrong channel count',
     lambda images, examples: tf.zeros([2, 32, 32, 3], tf.uint8),
     'image channels differs from the configured geometry 32x32x1'),
    ('serve_images', 'no batch dimension',
     lambda images, examples: tf.constant(images[0]),
     'images must be uint8 [N, H, W] or [N, H, W, C]'),
    ('serve_images', 'float pixels',
     lambda images, examples: tf.constant(images / 255.0, tf.float32),
     'expected to be a uint8 tensor but is a float tensor'),
    ('serving_default', 'not a tf.Example',
     lambda images, examples: tf.constant([examples[0], b'not an Example']),
     "Could not parse example input, value: 'not an Example'"),
    ('serving_default', 'image of the wrong byte length',
     lambda images, examples: tf.constant(
         [examples[0], _example(examples[1], _short_image)]),
     'image must hold 1024 bytes: raw uint8 pixels of the configured geometry '
     '32x32x1'),
    ('serving_default', 'height of another geometry',
     lambda images, examples: tf.constant([_example(examples[0], _set_height)]),
     'image height differs from the configured geometry 32x32x1'),
    ('serving_default', 'no image',
     lambda images, examples: tf.constant([_example(examples[0], _no_image)]),
     'Feature: image (data type: string) is required but could not be found'),
    ('serving_default', 'image as floats',
     lambda images, examples: tf.constant([_example(examples[0], _float_image)]),
     "Key: image, Index: 0.  Data types don't match. Data type: float but "
     'expected type: string'),
    ('serving_default', 'floats instead of strings',
     lambda images, examples: tf.zeros([2], tf.float32),
     'expected to be a string tensor but is a float tensor'),
]


@pytest.mark.parametrize('signature, problem, request_fn, message', BAD_REQUESTS,
                         ids=[f'{s}: {p}' for s, p, _, _ in BAD_REQUESTS])
def test_malformed_requests_are_rejected_and_serving_goes_on(
    served, signature, problem, request_fn, message):
  del problem  # In the test id.
  model, images, examples = served
  answer_images = model.signatures['serve_images'](images=tf.constant(images))
  answer_examples = model.signatures['serving_default'](
      examples=tf.constant(examples))

  with pytest.raises((tf.errors.InvalidArgumentError, TypeError, ValueError),
                     match=re.escape(message)):
    request = request_fn(images, examples)
    key = 'images' if signature == 'serve_images' else 'examples'
    model.signatures[signature](**{key: request})

  # The same model keeps answering good requests, with the same answers.
  again_images = model.signatures['serve_images'](images=tf.constant(images))
  again_examples = model.signatures['serving_default'](
      examples=tf.constant(examples))
  for before, after in ((answer_images, again_images),
                        (answer_examples, again_examples)):
    np.testing.assert_array_equal(after['classes'].numpy(),
                                  before['classes'].numpy())
    np.testing.assert_allclose(after['probabilities'].numpy(),
                               before['probabilities'].numpy(), rtol=1e-6)
