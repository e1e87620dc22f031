"""Device plans (chosen on a CPU-only machine for any GPU count) and the CNN."""

import json

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from modules import devices
from modules import model as model_lib
from pipeline import pipeline
from records import features

CONFIG = pipeline.training_config().model


def test_cpu_plan_trains_in_float32_with_the_default_strategy():
  plan = devices.plan([], batch_size=128)
  assert (plan.strategy, plan.precision, plan.global_batch_size) == (
      'default', 'float32', 128)
  assert 'CPU' in plan.describe()
  # On this CPU-only machine that is what the Trainer gets.
  assert devices.plan(devices.visible_gpus(), 128) == plan
  assert devices.make_strategy(plan) is tf.distribute.get_strategy()


def test_the_plan_is_recorded_for_the_run_report(tmp_path):
  plan = devices.plan(['/gpu:0', '/gpu:1'], batch_size=64)
  plan.write(str(tmp_path / 'model_run'))
  recorded = json.loads((tmp_path / 'model_run' / devices.PLAN_FILE
                         ).read_text())
  assert recorded == {'strategy': 'mirrored', 'devices': ['/gpu:0', '/gpu:1'],
                      'precision': 'mixed_float16', 'global_batch_size': 128,
                      'description': plan.describe()}


def test_one_gpu_trains_alone_in_mixed_precision():
  plan = devices.plan(['/gpu:0'], batch_size=128)
  assert (plan.strategy, plan.precision, plan.global_batch_size) == (
      'one_device', 'mixed_float16', 128)


def test_several_gpus_mirror_and_scale_the_batch():
  plan = devices.plan(['/gpu:0', '/gpu:1', '/gpu:2'], batch_size=64)
  assert (plan.strategy, plan.global_batch_size) == ('mirrored', 192)
  assert devices.plan(['/gpu:0'], 64, mixed_precision=False).precision == 'float32'


@pytest.mark.parametrize('geometry', [
    features.MNIST_GEOMETRY,
    features.ImageGeometry(32, 32, 3),
    features.ImageGeometry(20, 36, 1),
])
def test_cnn_builds_for_any_geometry(geometry):
  model = model_lib.build_cnn(geometry, num_classes=7, config=CONFIG)
  images = np.zeros((2, *geometry.shape), np.float32)
  assert model(images).shape == (2, 7)
  conv1 = model.get_layer('conv1')
  assert conv1.kernel.shape == (5, 5, geometry.channels, 32)
  assert model.get_layer('dense').units == 1024


def test_classic_mnist_cnn_size():
  model = model_lib.build_cnn(features.MNIST_GEOMETRY, 10, CONFIG)
  # conv 5x5x1x32 + conv 5x5x32x64 + dense 3136x1024 + dense 1024x10.
  assert model.count_params() == (
      (25 * 32 + 32) + (25 * 32 * 64 + 64) + (7 * 7 * 64 * 1024 + 1024) +
      (1024 * 10 + 10))


def test_logits_stay_float32_under_mixed_precision():
  keras.mixed_precision.set_global_policy('mixed_float16')
  try:
    model = model_lib.build_cnn(features.MNIST_GEOMETRY, 10, CONFIG)
    assert model.get_layer('conv1').compute_dtype == 'float16'
    assert model.output.dtype == tf.float32
  finally:
    keras.mixed_precision.set_global_policy('float32')
