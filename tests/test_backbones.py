"""Pretrained backbones (--backbone), without network: weights from a file
the test writes, the two training phases, the served model's signatures,
the offline error before the DAG starts, a wrong weights file, and nothing
changed without --backbone."""

import argparse
import dataclasses
import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from data import shapes
from modules import trainer
from modules.training import input_pipeline
from modules.training import model as model_lib
from modules.training import callbacks
from modules.training.config import (BACKBONES, Budget, DEFAULT_BACKBONE,  # pylint: disable=g-multiple-import
                                     ModelConfig, TrainingConfig)
from pipeline import knobs as knobs_lib
from records import features
from runs import flags
from tests import artifacts
from tests import local_run
from tests import ports
from tests import serving
from tests.absl_lines import absl_lines

NAME = 'mobilenet-v3-small'
SIZE = 32
CLASSES = shapes.SHAPES[:3]


def no_network(home) -> dict:
  """Environment of a machine without network and with an empty Keras
  cache: every HTTP(S) request goes to a proxy that refuses it, so the
  real internet is never reached."""
  proxy = f'http://127.0.0.1:{ports.free_port()}'
  return {'HOME': str(home), 'https_proxy': proxy, 'http_proxy': proxy,
          'HTTPS_PROXY': proxy, 'HTTP_PROXY': proxy, 'no_proxy': '',
          'NO_PROXY': ''}


@pytest.fixture(scope='module')
def weights_path(tmp_path_factory):
  """Weights of the backbone at its initialisation, saved as a user's
  weights file is."""
  path = tmp_path_factory.mktemp('weights') / 'backbone.weights.h5'
  model_lib.application(NAME, (SIZE, SIZE), None).save_weights(str(path))
  return str(path)


def test_the_weights_table_is_what_keras_applications_download():
  # Keras builds each URL inside the application's function; its module
  # constants hold the base URL and the hashes. A change there shows here.
  from tf_keras.src.applications import efficientnet, mobilenet_v2, mobilenet_v3, resnet  # pylint: disable=g-import-not-at-top,g-multiple-import
  tables = {'mobilenet-v3-small': (mobilenet_v3.BASE_WEIGHT_PATH,
                                   mobilenet_v3.WEIGHTS_HASHES[
                                       'small_224_1.0_float'][1]),
            'mobilenet-v3-large': (mobilenet_v3.BASE_WEIGHT_PATH,
                                   mobilenet_v3.WEIGHTS_HASHES[
                                       'large_224_1.0_float'][1]),
            'mobilenet-v2': (mobilenet_v2.BASE_WEIGHT_PATH, None),
            'efficientnet-b0': (efficientnet.BASE_WEIGHTS_PATH,
                                efficientnet.WEIGHTS_HASHES['b0'][1]),
            'resnet50': (resnet.BASE_WEIGHTS_PATH,
                         resnet.WEIGHTS_HASHES['resnet50'][1])}
  assert set(tables) == set(BACKBONES) == set(model_lib.APPLICATIONS)
  for name, (base_url, md5) in tables.items():
    weights = model_lib.APPLICATIONS[name][2]
    assert (weights.base_url, weights.md5) == (base_url, md5), name
    assert weights.url.endswith('.h5')
    assert callable(getattr(keras.applications,
                            model_lib.APPLICATIONS[name][0]))


def test_without_network_the_download_fails_in_one_line_with_the_way_out(
    tmp_path, monkeypatch):
  for key, value in no_network(tmp_path).items():
    monkeypatch.setenv(key, value)
  with pytest.raises(model_lib.WeightsError) as raised:
    model_lib.imagenet_weights(NAME)
  message = str(raised.value)
  assert '\n' not in message
  assert model_lib.APPLICATIONS[NAME][2].url in message
  assert '--weights PATH' in message and '--weights none' in message


def test_a_wrong_weights_file_is_named(tmp_path, weights_path):
  not_h5 = tmp_path / 'notes.h5'
  not_h5.write_text('not weights')
  for wrong, backbone in ((str(not_h5), NAME),
                          (weights_path, 'mobilenet-v2')):  # Another network's.
    config = ModelConfig(backbone=backbone, weights=wrong)
    with pytest.raises(model_lib.WeightsError,
                       match=f'--weights {wrong}: not weights of --backbone '
                       f'{backbone}') as raised:
      model_lib.application(backbone, (SIZE, SIZE),
                            model_lib.weights_file(config))
    assert '\n' not in str(raised.value)
  with pytest.raises(model_lib.WeightsError, match='no such file'):
    model_lib.weights_file(ModelConfig(backbone=NAME,
                                       weights=str(tmp_path / 'missing.h5')))


def _weights(layers):
  return [[w.copy() for w in layer.get_weights()] for layer in layers]


def _changed(before, after):
  return [any(not np.array_equal(b, a) for b, a in zip(old, new))
          for old, new in zip(before, after)]


def test_the_head_trains_first_then_only_the_top_of_the_backbone(
    weights_path):
  # MNIST-size grey images: repeated to RGB, resized up to 32x32.
  geometry = features.ImageGeometry(28, 28, 1)
  config = ModelConfig(backbone=NAME, weights=weights_path, augment=False,
                       input_size=(28, 28))
  model, backbone = model_lib.build_pretrained(
      geometry, 3, config, np.array([0.3]), np.array([0.04]))
  assert backbone.input_shape[1:] == (SIZE, SIZE, 3)
  initial = _weights(backbone.layers)
  file_weights = model_lib.application(NAME, (SIZE, SIZE), weights_path)
  for mine, saved in zip(backbone.get_weights(), file_weights.get_weights()):
    np.testing.assert_array_equal(mine, saved)
  rng = np.random.default_rng(0)
  images = rng.normal(size=(16, *geometry.shape)).astype(np.float32)
  labels = rng.integers(0, 3, size=16)
  after_phase = []

  def fit(epochs, initial_epoch, learning_rate):  # As the Trainer's fit.
    model_lib.compile_for_training(
        model, TrainingConfig(learning_rate=learning_rate), 3,
        (epochs - initial_epoch) * 2)
    head_before = model.get_layer('logits').get_weights()[0].copy()
    model.fit(images, labels, batch_size=8, epochs=epochs,
              initial_epoch=initial_epoch, verbose=0)
    assert not np.array_equal(head_before,
                              model.get_layer('logits').get_weights()[0])
    after_phase.append((learning_rate, _weights(backbone.layers)))

  trainer.train_phases(backbone, 2, config, 1e-2, fit)
  [(head_lr, head_only), (tune_lr, tuned)] = after_phase
  assert tune_lr == pytest.approx(head_lr * config.fine_tune_learning_rate_factor)
  assert not any(_changed(initial, head_only))  # Phase 1: frozen.
  first = trainer.first_trained_layer(backbone, config)
  assert 0 < first < len(backbone.layers)
  changed = _changed(head_only, tuned)
  assert not any(changed[:first]) and any(changed[first:])
  # Batch norm in inference mode: its ImageNet statistics stay.
  for layer, old, new in zip(backbone.layers, head_only, tuned):
    if isinstance(layer, keras.layers.BatchNormalization):
      np.testing.assert_array_equal(old[2:], new[2:])  # Moving mean, var.


@pytest.fixture(scope='module')
def served(tmp_path_factory, weights_path):
  """run_fn on a colour shapes folder through real ExampleGen and Transform,
  from the weights file: the serving model's directory and the data."""
  tmp = tmp_path_factory.mktemp('backbone')
  shapes.write(str(tmp / 'data'), per_class=8, size=SIZE, eval_per_class=4,
               shapes=CLASSES)
  patterns = artifacts.trainer_inputs(tmp / 'data', tmp,
                                      features.ImageGeometry(SIZE, SIZE, 3))
  config = TrainingConfig(
      budget=Budget(epochs=2), batch_size=8,
      model=ModelConfig(backbone=NAME, weights=weights_path,
                        input_size=(SIZE, SIZE)))
  with absl_lines(callbacks.EPOCH_LINE) as epochs:
    serving_dir = artifacts.run_trainer(tmp, patterns, config, train_steps=4)
  # One line per epoch of the run, numbered across both phases.
  assert [line.split(':')[0] for line in epochs] == ['Epoch 1/2', 'Epoch 2/2']
  return serving_dir, tmp / 'data'


def test_the_served_backbone_answers_every_signature(served):
  path, data = served
  with open(os.path.join(path, 'assets.extra', 'training_plan.json')) as f:
    plan = json.load(f)
  assert plan['architecture'] == NAME
  assert plan['backbone']['head_epochs'] == 1
  assert plan['backbone']['fine_tuning_epochs'] == 1
  assert plan['backbone']['input_size'] == [SIZE, SIZE]
  model = tf.saved_model.load(path)
  files = sorted((data / 'eval').glob('*/*.png'))
  from PIL import Image  # pylint: disable=g-import-not-at-top
  images = np.stack([np.asarray(Image.open(f).convert('RGB')) for f in files])
  probabilities, classes = serving.classify_images(model, images)
  assert probabilities.shape == (len(files), len(CLASSES))
  np.testing.assert_allclose(probabilities.sum(axis=1), 1, rtol=1e-5)
  out = model.signatures['serving_default'](
      examples=tf.constant(serving.serialized_examples(images)))
  np.testing.assert_allclose(out['probabilities'].numpy(), probabilities,
                             rtol=1e-4, atol=1e-5)
  out = model.signatures['serve_image_bytes'](
      image_bytes=tf.constant([f.read_bytes() for f in files]))
  np.testing.assert_array_equal(out['classes'].numpy(), classes)


def _knobs(*argv):
  parser = argparse.ArgumentParser()
  flags.add_flags(parser, 'data', 'data')
  return flags.knobs_from_args(parser.parse_args(list(argv)))


def test_without_backbone_nothing_changes_but_the_input_size_given():
  assert _knobs() == knobs_lib.Knobs()
  given = _knobs('--input-format', 'images', '--image-size', '64x64').training
  assert given == dataclasses.replace(
      TrainingConfig(), model=ModelConfig(input_size=(64, 64)))
  # --weights alone: the weights of the backbone auto would pick.
  alone = _knobs('--weights', 'none').training.model
  assert (alone.backbone, alone.backbone_weights) == (DEFAULT_BACKBONE, 'none')
  chosen = _knobs('--input-format', 'images', '--image-size', '64x64',
                  '--backbone', NAME).training.model
  assert (chosen.backbone, chosen.backbone_weights,
          chosen.input_size) == (NAME, 'imagenet', (64, 64))
  with pytest.raises(SystemExit):  # argparse: 'expected a fraction ...'.
    _knobs('--backbone', NAME, '--head-epochs-fraction', '2')
  # The config round-trips through the Trainer's custom_config.
  training = _knobs('--backbone', NAME, '--weights', 'w.h5').training
  assert TrainingConfig.from_dict(json.loads(json.dumps(
      training.to_dict()))) == training


def test_the_local_runner_stops_before_the_dag_without_network(tmp_path):
  shapes.write(str(tmp_path / 'data'), per_class=2, size=SIZE,
               eval_per_class=1, shapes=CLASSES)
  (tmp_path / 'home').mkdir()
  result = local_run.run(
      '--data-dir', str(tmp_path / 'data'), '--input-format', 'images',
      '--output-dir', str(tmp_path / 'out'), '--backbone', NAME,
      local_run.ONE_PROCESS, env=no_network(tmp_path / 'home'), timeout=300)
  assert result.returncode == 1
  assert '▶' not in result.stdout  # No component started.
  [line] = [l for l in result.stderr.splitlines() if l.startswith('error')]
  assert model_lib.APPLICATIONS[NAME][2].url in line
  assert '--weights PATH' in line


@pytest.mark.parametrize('model', ['backbone', 'auto'])
def test_the_tuner_tunes_the_network_the_trainer_trains(
    tmp_path, weights_path, model):
  # --backbone, or --model auto on colour photos with the weights at hand:
  # the trials build the pretrained backbone's model, as run_fn does, and
  # the best point names it.
  from tfx.components.trainer.fn_args_utils import FnArgs  # pylint: disable=g-import-not-at-top
  from modules import tuner as tuner_lib  # pylint: disable=g-import-not-at-top
  from modules.training import config as config_lib  # pylint: disable=g-import-not-at-top
  from modules.training.config import TuningConfig  # pylint: disable=g-import-not-at-top
  shapes.write(str(tmp_path / 'data'), per_class=8, size=SIZE,
               eval_per_class=4, shapes=CLASSES)
  patterns = artifacts.trainer_inputs(tmp_path / 'data', tmp_path,
                                      features.ImageGeometry(SIZE, SIZE, 3))
  # These small images count as photos here.
  config = TrainingConfig(batch_size=8, model=ModelConfig(
      backbone=NAME if model == 'backbone' else None, weights=weights_path,
      input_size=(SIZE, SIZE), photo_min_side=SIZE))
  with absl_lines(input_pipeline.INPUT_LINE) as inputs:
    result = tuner_lib.tuner_fn(FnArgs(
        train_files=[patterns['train']], eval_files=[patterns['eval']],
        train_steps=2, eval_steps=1, working_dir=str(tmp_path / 'tuner'),
        transform_graph_path=str(tmp_path / 'transform'),
        custom_config={'training': config.to_dict(),
                       'tuning': dataclasses.asdict(TuningConfig(trials=1))}))
  # The Tuner's log names its input plans as the Tuner's.
  assert inputs and all(line.startswith('Tuner input: ') for line in inputs)
  with absl_lines(callbacks.TRIAL_LINE) as trials:
    result.tuner.search(**result.fit_kwargs)
  [best] = result.tuner.get_best_hyperparameters()
  assert best.values[config_lib.TUNED_NETWORK] == NAME
  assert len(trials) == 1 and NAME in trials[0]
  # The Trainer applies it to its settings and still starts from the
  # backbone.
  tuned, _, _ = model_lib.auto(config_lib.with_tuned(config, best.values).model,
                               features.ImageGeometry(SIZE, SIZE, 3))
  assert tuned.backbone == NAME
