"""Device plans (chosen on a CPU-only machine for any GPU count), the
networks, which one a geometry gets, augmentation and the training budget."""

import argparse
import dataclasses
import importlib
import json

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from modules import trainer
from modules.training import devices
from modules.training import model as model_lib
from modules.training import plan as training_plan
from modules.training.config import (Budget, ModelConfig, SMALL_BN_CNN,  # pylint: disable=g-multiple-import
                                     TrainingConfig)
from pipeline import stages
from records import features
from runs import flags
from tests import autograph_calls

CONFIG = ModelConfig()


AVX2_ONLY = ('sse4_2', 'avx', 'avx2', 'fma')
AVX512_BF16 = (*AVX2_ONLY, 'avx512f', 'avx512_bf16')
AMX = (*AVX2_ONLY, 'avx512f', 'amx_tile', 'amx_bf16')


def test_cpu_plan_trains_in_float32_without_native_bfloat16():
  plan = devices.plan([], batch_size=128, flags=AVX2_ONLY)
  assert (plan.strategy, plan.precision, plan.global_batch_size) == (
      'default', 'float32', 128)
  assert 'CPU' in plan.describe() and 'no native bfloat16' in plan.describe()
  assert devices.make_strategy(plan) is tf.distribute.get_strategy()


@pytest.mark.parametrize('flags', [AVX512_BF16, AMX])
def test_cpu_plan_trains_in_bfloat16_where_the_cpu_computes_it(flags):
  plan = devices.plan([], batch_size=128, flags=flags)
  assert plan.precision == 'mixed_bfloat16'
  assert 'bf16' in plan.describe()
  off = devices.plan([], batch_size=128, mixed_precision=False, flags=flags)
  assert off.precision == 'float32' and 'off' in off.describe()
  several = devices.plan([], batch_size=64, workers=2, flags=flags)
  assert several.precision == 'mixed_bfloat16'
  # oneDNN capped below its bfloat16 kernels: they would be emulated.
  assert devices.cpu_precision(flags, isa_cap='avx2') == (
      'float32', 'ONEDNN_MAX_CPU_ISA=AVX2 leaves out bfloat16')
  assert devices.cpu_precision(flags, isa_cap='AVX512_CORE_AMX')[0] == (
      'mixed_bfloat16')


def test_this_machine_gets_the_plan_its_cpu_flags_give():
  flags = devices.cpu_flags()
  assert 'fpu' in flags  # Every x86 CPU's /proc/cpuinfo says so.
  plan = devices.plan(devices.visible_gpus(), 128)
  assert plan == devices.plan([], 128, flags=flags)
  assert devices.cpu_flags('/no/such/cpuinfo') == frozenset()


def test_a_bfloat16_trained_model_is_served_in_float32_with_its_weights():
  """After a few bfloat16 steps each batch norm's gamma, beta and moving
  mean and variance are off their start (1, 0, 0, 1): the copy must carry
  each to its own place, or its outputs would differ."""
  geometry = features.ImageGeometry(12, 12, 1)
  # Few filters, and moving statistics that move within a few steps.
  config = dataclasses.replace(CONFIG, bn_conv_filters=(8, 16),
                               batch_norm_momentum=0.5)
  rng = np.random.default_rng(0)
  # Off centre and wide, as unnormalised pixels: far from the start values.
  images = rng.normal(3.0, 2.0, size=(48, *geometry.shape)).astype(np.float32)
  labels = rng.integers(0, 3, size=48)
  keras.mixed_precision.set_global_policy('mixed_bfloat16')
  try:
    keras.utils.set_random_seed(0)
    trained = model_lib.build('small-bn-cnn', geometry, 3, config)
    assert trained.get_layer('conv1').compute_dtype == 'bfloat16'
    optimizer, loss = keras.optimizers.Adam(0.05), model_lib.loss(3)
    # Eager steps: no graph to trace, a second at most.
    for batch in range(6):
      x, y = images[batch * 8:][:8], labels[batch * 8:][:8]
      with tf.GradientTape() as tape:
        step_loss = loss(y, trained(x, training=True))
      optimizer.apply_gradients(zip(
          tape.gradient(step_loss, trained.trainable_weights),
          trained.trainable_weights))
  finally:
    keras.mixed_precision.set_global_policy('float32')
  norms = [layer for layer in trained.layers
           if isinstance(layer, keras.layers.BatchNormalization)]
  assert norms
  for layer in norms:
    for value, start in zip(layer.get_weights(), (1, 0, 0, 1)):
      assert np.abs(value - start).max() > 0.05, layer.name

  served = trainer.float32_copy(
      trained, model_lib.build('small-bn-cnn', geometry, 3, config))
  assert {layer.compute_dtype for layer in served.layers} == {'float32'}
  # Layer by layer, weight by weight (not the flat lists the copy uses).
  for layer, copy in zip(trained.layers, served.layers, strict=True):
    for mine, copied in zip(layer.weights, copy.weights, strict=True):
      np.testing.assert_array_equal(copied.numpy(), mine.numpy(),
                                    err_msg=mine.name)
  expected = trained(images[:8], training=False).numpy()
  np.testing.assert_allclose(served(images[:8], training=False).numpy(),
                             expected, atol=0.05 * np.abs(expected).max())


def test_the_plan_is_recorded_for_the_run_report(tmp_path):
  plan = devices.plan(['/gpu:0', '/gpu:1'], batch_size=64)
  plan.write(str(tmp_path / 'model_run'))
  recorded = json.loads((tmp_path / 'model_run' / devices.PLAN_FILE
                         ).read_text())
  assert recorded == {'strategy': 'mirrored', 'devices': ['/gpu:0', '/gpu:1'],
                      'precision': 'mixed_float16', 'global_batch_size': 128,
                      'workers': 1, 'precision_why': '',
                      'description': plan.describe()}


def test_several_workers_multiply_the_batch_and_mirror():
  cpu = devices.plan([], batch_size=64, workers=3, flags=AVX2_ONLY)
  assert (cpu.strategy, cpu.precision, cpu.global_batch_size, cpu.workers) == (
      'multi_worker', 'float32', 192, 3)
  assert cpu.describe().startswith('training on 3 workers, each on CPU')
  gpus = devices.plan(['/gpu:0', '/gpu:1'], batch_size=64, workers=3)
  assert (gpus.precision, gpus.global_batch_size) == ('mixed_float16', 384)
  # Made first thing in a worker's process, never from a plan.
  with pytest.raises(ValueError, match='make_multi_worker_strategy'):
    devices.make_strategy(cpu)


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


@pytest.mark.parametrize('geometry', [
    features.MNIST_GEOMETRY, features.ImageGeometry(5, 9, 1)])
def test_small_bn_cnn_is_conv_blocks_and_a_dense_head(geometry):
  model = model_lib.build('small-bn-cnn', geometry, 10, CONFIG)
  assert model(np.zeros((2, *geometry.shape), np.float32)).shape == (2, 10)
  convs = [layer for layer in model.layers
           if isinstance(layer, keras.layers.Conv2D)]
  assert [c.filters for c in convs] == list(CONFIG.bn_conv_filters)
  assert all(c.kernel_size == (3, 3) and not c.use_bias for c in convs)
  assert len([layer for layer in model.layers if isinstance(
      layer, keras.layers.BatchNormalization)]) == len(convs)
  if geometry == features.MNIST_GEOMETRY:
    # 28 -> 14 -> 7: the dense head reads 7 x 7 x 128 features, and the
    # whole network is a small fraction of mnist-cnn's weights.
    assert model.get_layer('logits').kernel.shape == (7 * 7 * 128, 10)
    assert model.count_params() * 10 < model_lib.build_cnn(
        geometry, 10, CONFIG).count_params()


def test_logits_stay_float32_under_mixed_precision():
  keras.mixed_precision.set_global_policy('mixed_float16')
  try:
    model = model_lib.build_cnn(features.MNIST_GEOMETRY, 10, CONFIG)
    assert model.get_layer('conv1').compute_dtype == 'float16'
    assert model.output.dtype == tf.float32
  finally:
    keras.mixed_precision.set_global_policy('float32')


@pytest.mark.parametrize('geometry, architecture', [
    (features.MNIST_GEOMETRY, 'small-bn-cnn'),
    (features.ImageGeometry(32, 32, 1), 'small-bn-cnn'),
    (features.ImageGeometry(33, 32, 1), 'small-gap-cnn'),
    (features.ImageGeometry(28, 28, 3), 'small-gap-cnn'),
    (features.ImageGeometry(96, 96, 3), 'small-gap-cnn'),
])
def test_auto_picks_the_network_from_the_geometry(geometry, architecture):
  chosen, why = model_lib.choose(CONFIG, geometry)
  assert chosen == architecture and why.startswith('auto: ')
  forced = ModelConfig(architecture='mnist-cnn')
  assert model_lib.choose(forced, geometry) == ('mnist-cnn', 'as configured')


@pytest.mark.parametrize('channels, augment', [(1, False), (3, True)])
def test_auto_augments_colour_images_only(channels, augment):
  geometry = features.ImageGeometry(96, 96, channels)
  chosen, why = model_lib.choose_augment(CONFIG, geometry)
  assert chosen is augment and why.startswith('auto: ')
  model = model_lib.build('small-gap-cnn', geometry, 10, CONFIG)
  assert any(layer.name == 'augmentation' for layer in model.layers) is augment
  for forced in (True, False):
    config = ModelConfig(augment=forced)
    assert model_lib.choose_augment(config, geometry) == (forced,
                                                           'as configured')


def test_small_gap_cnn_does_not_grow_with_the_image():
  sizes = {}
  for side in (28, 64, 96):
    geometry = features.ImageGeometry(side, side, 3)
    model = model_lib.build('small-gap-cnn', geometry, 10, CONFIG)
    assert model(np.zeros((2, *geometry.shape), np.float32)).shape == (2, 10)
    sizes[side] = model.count_params()
  assert len(set(sizes.values())) == 1 and sizes[96] < 1_500_000
  assert model.get_layer('bn1') and model.get_layer('gap')
  # Moving averages that keep up with a few thousand images' training.
  assert {layer.momentum for layer in model.layers
          if isinstance(layer, keras.layers.BatchNormalization)} == {
              ModelConfig().batch_norm_momentum} == {0.9}
  # Against the Flatten -> Dense head at 96x96: 37.7M parameters.
  mnist = model_lib.build_cnn(features.ImageGeometry(96, 96, 3), 10, CONFIG)
  assert mnist.count_params() > 37_000_000


def _receptive_field(model: keras.Model) -> int:
  """Pixels (per side) of the input one feature before the head sees."""
  field, jump = 1, 1
  for layer in model.layers:
    if isinstance(layer, keras.layers.Conv2D):
      size, stride = layer.kernel_size[0], layer.strides[0]
    elif isinstance(layer, keras.layers.MaxPool2D):
      size, stride = layer.pool_size[0], layer.strides[0]
    else:
      continue
    field += (size - 1) * jump
    jump *= stride
  return field


def test_small_gap_cnn_sees_whole_shapes_at_96x96():
  # The shapes (data/shapes.py) are 38 to 73 pixels across at 96x96: a
  # feature that sees less can only pool pieces of outlines.
  geometry = features.ImageGeometry(96, 96, 3)
  model = model_lib.build('small-gap-cnn', geometry, 10, CONFIG)
  assert _receptive_field(model) >= 73
  assert model.get_layer('conv1').strides == (2, 2)
  assert model.get_layer('gap').input.shape[1:3] == (6, 6)


@pytest.mark.parametrize('architecture',
                         ['small-bn-cnn', 'mnist-cnn', 'small-gap-cnn'])
def test_augmentation_acts_in_training_only(architecture):
  geometry = features.ImageGeometry(32, 32, 3)
  augmented = model_lib.build(
      architecture, geometry, 5,
      ModelConfig(augment=True))
  plain = model_lib.build(architecture, geometry, 5,
                          ModelConfig(augment=False))
  assert augmented.get_layer('augmentation')
  assert all(layer.name != 'augmentation' for layer in plain.layers)
  plain.set_weights(augmented.get_weights())  # Augmentation has none.
  images = np.random.default_rng(0).normal(size=(4, *geometry.shape)).astype(
      np.float32)
  at_inference = augmented(images, training=False).numpy()
  np.testing.assert_array_equal(augmented(images, training=False).numpy(),
                                at_inference)
  np.testing.assert_allclose(plain(images, training=False).numpy(),
                             at_inference, rtol=1e-6, atol=1e-6)
  # In training the images change (and batch norm uses batch statistics:
  # compare the augmentation itself).
  layer = augmented.get_layer('augmentation')
  assert not np.allclose(layer(images, training=True).numpy(), images)
  np.testing.assert_array_equal(layer(images, training=False).numpy(), images)


@pytest.mark.parametrize('records, epochs', [
    (60_000, 3), (3_000, 30), (10_000, 18), (1_000_000, 3)])
def test_the_budget_scales_with_the_dataset(records, epochs):
  budget = Budget()
  assert training_plan.epochs_for(budget, records) == epochs
  # Set explicitly, epochs are what they say.
  assert training_plan.epochs_for(Budget(epochs=8), records) == 8


def test_the_learning_rate_warms_up_then_falls_to_zero():
  schedule = model_lib.one_cycle(0.01, 0.2, total_steps=100)
  rates = [float(schedule(step)) for step in range(101)]
  assert rates[0] == pytest.approx(0.001)
  assert max(rates) == pytest.approx(0.01) == rates[20]
  assert rates[20:] == sorted(rates[20:], reverse=True)
  assert rates[100] == pytest.approx(0.0, abs=1e-9)


def test_the_plan_says_what_and_why():
  config = TrainingConfig()
  plan = training_plan.plan(config.budget, config.model,
                            features.ImageGeometry(64, 64, 3), 3_000)
  assert (plan.architecture, plan.epochs) == ('small-gap-cnn', 30)
  assert 'colour images' in plan.describe()


def test_a_dataset_preset_brings_its_epochs_and_flags_win():
  parser = argparse.ArgumentParser()
  flags.add_flags(parser, 'data', 'data')

  def epochs(*argv):
    args = parser.parse_args(list(argv))
    return flags.knobs_from_args(args).training.budget.epochs

  assert epochs('--dataset', 'fashion-mnist') == 8
  assert epochs('--dataset', 'fashion-mnist', '--epochs', '3') == 3
  assert epochs('--dataset', 'mnist') is None  # The budget decides.
  assert epochs() is None


def _converted_calls_updating(metric) -> list:
  with autograph_calls.converted_calls() as calls:
    metric.update_state(tf.constant([0, 1, 1]),
                        tf.constant([[.9, .1], [.2, .8], [.6, .4]]))
  return calls


def test_the_evaluators_accuracy_is_keras_without_autograph():
  # As TFMA finds it: the eval config's module and class.
  config = stages.eval_config(0.5).metrics_specs[0].metrics[1]
  ours = getattr(importlib.import_module(config.module), config.class_name)()
  keras_own = keras.metrics.SparseCategoricalAccuracy()
  assert _converted_calls_updating(ours) == []
  assert _converted_calls_updating(keras_own)  # Keras still converts.
  assert ours.name == keras_own.name == 'sparse_categorical_accuracy'
  assert float(ours.result()) == float(keras_own.result())
  assert float(ours.result()) == pytest.approx(2 / 3)


def _library_calls_converted_fitting(model) -> list:
  data = tf.data.Dataset.from_tensor_slices(
      (np.zeros((4, 8, 8, 1), np.float32), [0, 1, 2, 0])).batch(2)
  with autograph_calls.converted_calls() as calls:  # As the Trainer fits.
    model.fit(data, epochs=1, verbose=0, validation_data=data)
  # What Keras's steps call: the layers, the loss and the optimizer.
  return [c for c in calls if c.startswith(
      ('tf_keras.src.layers.', 'tf_keras.src.losses.',
       'tf_keras.src.optimizers.', 'modules.'))]


def test_training_steps_run_nothing_through_autograph():
  ours, plain = (model_lib.build(SMALL_BN_CNN,
                                 features.ImageGeometry(8, 8, 1), 3, CONFIG)
                 for _ in range(2))
  model_lib.compile_for_training(ours, TrainingConfig(), 3, total_steps=4)
  plain.compile(optimizer='adam', metrics=['accuracy'],
                loss=model_lib.loss(3, label_smoothing=0.1))
  assert _library_calls_converted_fitting(ours) == []
  assert _library_calls_converted_fitting(plain)  # Keras alone converts.


def test_the_first_epoch_traces_the_training_step_once():
  model = model_lib.build(SMALL_BN_CNN,
                          features.ImageGeometry(8, 8, 1), 3, CONFIG)
  model_lib.compile_for_training(model, TrainingConfig(), 3, total_steps=4)
  images = np.zeros((8, 8, 8, 1), np.float32)
  batches = tf.data.Dataset.from_tensor_slices(
      (images, np.arange(8) % 3)).batch(4)
  model.fit(batches, epochs=1, verbose=0)
  # Adam's variables were made before the step: a step that makes them
  # is traced twice.
  assert model.train_function.experimental_get_tracing_count() == 1
