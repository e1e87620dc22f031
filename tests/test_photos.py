"""Colour photos under `--model auto`: a scratch network trains on them
scaled down and serves them whole; the pretrained backbone starts them when
its weights are in Keras' cache; without weights the console says why and
how to give them. No network: weights the tests make, downloads refused."""

import hashlib
import json
import os
import urllib.request

import numpy as np
from PIL import Image
import pytest
import tensorflow as tf

from data import photos
from modules.training import model as model_lib
from modules.training import callbacks
from modules.training.config import (Budget, DEFAULT_BACKBONE, ModelConfig,  # pylint: disable=g-multiple-import
                                     SMALL_GAP_CNN, TrainingConfig)
from records import features
from tests import artifacts
from tests import ports
from tests import serving
from tests.absl_lines import absl_lines

WIDTH, HEIGHT = 160, 120
PHOTOS = features.ImageGeometry(HEIGHT, WIDTH, 3)


@pytest.fixture
def unreachable_weights(tmp_path, monkeypatch):
  """An empty Keras cache, and the default backbone's weights at a URL
  nothing answers (a closed loopback port): the download fails at once."""
  (tmp_path / 'home').mkdir()
  monkeypatch.setenv('HOME', str(tmp_path / 'home'))
  # Keras downloads through urllib's global opener, which keeps the proxies
  # of its first use: this test's must not outlive it.
  monkeypatch.setattr(urllib.request, '_opener', None)
  name, module, weights = model_lib.APPLICATIONS[DEFAULT_BACKBONE]
  monkeypatch.setitem(model_lib.APPLICATIONS, DEFAULT_BACKBONE, (
      name, module, model_lib.Weights(
          weights.file_name, f'http://127.0.0.1:{ports.free_port()}/',
          weights.md5)))
  return weights.file_name


def test_the_photo_tool_writes_class_folders_without_splits(tmp_path):
  photos.write(str(tmp_path / 'a'), per_class=2, size=(64, 48))
  photos.write(str(tmp_path / 'b'), per_class=2, size=(64, 48))
  assert sorted(os.listdir(tmp_path / 'a')) == sorted(photos.CLASSES)
  for name in photos.CLASSES:
    files = sorted(os.listdir(tmp_path / 'a' / name))
    assert files == ['00000.jpg', '00001.jpg']
    for file in files:
      with Image.open(tmp_path / 'a' / name / file) as image:
        assert (image.format, image.mode, image.size) == ('JPEG', 'RGB',
                                                          (64, 48))
      assert ((tmp_path / 'a' / name / file).read_bytes() ==
              (tmp_path / 'b' / name / file).read_bytes())


def test_a_scratch_network_sees_large_images_scaled_down():
  config = ModelConfig()
  assert model_lib.input_size(config, PHOTOS)[0] == (72, 96)
  model = model_lib.build(SMALL_GAP_CNN, PHOTOS, 5, config)
  assert model.input_shape == (None, HEIGHT, WIDTH, 3)
  assert model.get_layer('resize').output_shape == (None, 72, 96, 3)
  small = model_lib.build(SMALL_GAP_CNN, features.ImageGeometry(72, 96, 3),
                          5, config)
  assert model.count_params() == small.count_params()
  logits = model(np.zeros((2, HEIGHT, WIDTH, 3), np.float32))
  assert logits.shape == (2, 5)
  # Images within the bound, or a size given (--image-size), as they are.
  for geometry, given in ((features.ImageGeometry(28, 28, 1), None),
                          (PHOTOS, (HEIGHT, WIDTH))):
    built = model_lib.build(SMALL_GAP_CNN, geometry, 5,
                            ModelConfig(input_size=given))
    assert 'resize' not in [layer.name for layer in built.layers]


def test_auto_starts_photos_from_the_cached_pretrained_weights(
    tmp_path, unreachable_weights, monkeypatch):
  cache = tmp_path / 'home' / '.keras' / model_lib.CACHE_SUBDIR
  cache.mkdir(parents=True)
  path = cache / unreachable_weights
  model_lib.application(DEFAULT_BACKBONE, (32, 32), None).save_weights(
      str(path))
  # The table's checksum is the published file's; here, the test's file's.
  name, module, weights = model_lib.APPLICATIONS[DEFAULT_BACKBONE]
  monkeypatch.setitem(model_lib.APPLICATIONS, DEFAULT_BACKBONE, (
      name, module, model_lib.Weights(
          weights.file_name, weights.base_url,
          hashlib.md5(path.read_bytes()).hexdigest())))
  chosen, why, scratch_why = model_lib.auto(ModelConfig(), PHOTOS)
  assert chosen == ModelConfig(backbone=DEFAULT_BACKBONE)
  assert why.startswith('auto: colour photos') and not scratch_why
  # Not photos (grey, or small), or a network named: no backbone.
  for config, geometry in (
      (ModelConfig(), features.ImageGeometry(HEIGHT, WIDTH, 1)),
      (ModelConfig(), features.ImageGeometry(96, 96, 3)),
      (ModelConfig(architecture=SMALL_GAP_CNN), PHOTOS)):
    assert model_lib.auto(config, geometry) == (config, '', '')


def test_without_weights_photos_train_from_scratch_saying_how_to_give_them(
    tmp_path, unreachable_weights):
  for split, count in (('train', 6), ('eval', 2)):
    photos.write(str(tmp_path / 'data' / split), count, size=(WIDTH, HEIGHT))
  patterns = artifacts.trainer_inputs(tmp_path / 'data', tmp_path, PHOTOS)
  config = TrainingConfig(budget=Budget(epochs=1), batch_size=8)
  with absl_lines(callbacks.PLAN_LINE) as plan_lines:
    serving_dir = artifacts.run_trainer(tmp_path, patterns, config,
                                        train_steps=2)
  [why] = [line for line in plan_lines if 'from scratch' in line]
  assert '\n' not in why
  assert unreachable_weights in why and '--weights PATH' in why
  assert str(tmp_path / 'home' / '.keras' / model_lib.CACHE_SUBDIR) in why
  assert any('small-gap-cnn' in line and 'at 72x96' in line
             for line in plan_lines)
  with open(os.path.join(serving_dir, 'assets.extra',
                         'training_plan.json')) as f:
    plan = json.load(f)
  assert (plan['architecture'], plan['input_size']) == (SMALL_GAP_CNN,
                                                        [72, 96])
  # Served whole: the signatures take the photos at their stored size.
  files = sorted((tmp_path / 'data' / 'eval').glob('*/*.jpg'))
  images = np.stack([np.asarray(Image.open(f).convert('RGB')) for f in files])
  probabilities, _ = serving.classify_images(tf.saved_model.load(serving_dir),
                                             images)
  assert probabilities.shape == (len(files), len(photos.CLASSES))
