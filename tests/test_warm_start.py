"""--warm-start: the Trainer starts from the model in service.

The served model is the one tests/tiny_runs.py's `two_runs` pushed. The
loading function is checked on it directly: the weights it gives are the
served model's, a class added (in sorted order, so shifting the others)
keeps the known classes' classifier columns, and a served model that does
not fit says why and gives none. Then a run with --warm-start on a copy
of that output directory (tests/tiny_runs.py's warm_run) starts from it.
"""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from modules.training import model as model_lib
from modules.training import plan as training_plan
from modules.training import warm_start
from modules.training.config import Budget, ModelConfig, TrainingConfig
from pipeline import warm_start_model
from records import features
from records.serving_model import EXTRA_DIR, TRAINING_PLAN_FILE
from records import serving_model
from tests import kubeflow_specs
from tests import mlmd
from tests import serving
from tests import tiny_runs

DIGITS = [str(digit) for digit in range(10)]
MNIST_GEOMETRY = features.ImageGeometry(28, 28, 1)
ARCHITECTURE = 'small-bn-cnn'  # auto's choice for 28x28 grey images.


def _served(two_runs) -> str:
  return serving.latest_pushed_model(str(two_runs / 'out' / 'serving_model'))


def _variables(saved_model_dir):
  return os.path.join(saved_model_dir, 'variables', 'variables')


def _tensors(checkpoint):
  """Object path -> value of the variables in `checkpoint`."""
  reader = tf.train.load_checkpoint(checkpoint)
  return {key: reader.get_tensor(key)
          for key in reader.get_variable_to_shape_map()
          if key.endswith('VARIABLE_VALUE')}


def _start(two_runs, class_names=DIGITS, geometry=MNIST_GEOMETRY,
           config=ModelConfig()):
  served = _served(two_runs)
  return warm_start.start(served, '', ARCHITECTURE, geometry, class_names,
                          config)


def _model_with(start, class_names, tmp_path):
  """A model with the start's weights, and its checkpoint's tensors (the
  same object paths as the served SavedModel's variables)."""
  model = model_lib.build(ARCHITECTURE, MNIST_GEOMETRY, len(class_names),
                          ModelConfig())
  start.apply(model)
  model.save_weights(str(tmp_path / 'start'))
  return model, _tensors(str(tmp_path / 'start'))


def test_the_start_is_the_served_models_weights(two_runs, tmp_path):
  start = _start(two_runs)
  assert start.warm, start.why
  assert start.served_from == _served(two_runs)
  _, tensors = _model_with(start, DIGITS, tmp_path)
  served = _tensors(_variables(_served(two_runs)))
  assert len(tensors) > 2  # More than the classifier's.
  for key in tensors:
    np.testing.assert_array_equal(tensors[key], served[key], err_msg=key)


def test_a_class_added_keeps_what_the_others_knew(two_runs, tmp_path):
  # Sorted as names, '35' comes between '3' and '4': '4'..'9' move up one.
  grown = sorted(DIGITS + ['35'])
  start = _start(two_runs, class_names=grown)
  assert start.warm and start.why == 'classes added: 35'
  model, _ = _model_with(start, grown, tmp_path)
  old = model_lib.build(ARCHITECTURE, MNIST_GEOMETRY, 10, ModelConfig())
  old.load_weights(_variables(_served(two_runs))).expect_partial()
  kernel, bias = model.get_layer(model_lib.LOGITS_LAYER).get_weights()
  old_kernel, old_bias = old.get_layer(model_lib.LOGITS_LAYER).get_weights()
  for old_index, name in enumerate(DIGITS):
    np.testing.assert_array_equal(kernel[:, grown.index(name)],
                                  old_kernel[:, old_index])
    assert bias[grown.index(name)] == old_bias[old_index]
  new_column = kernel[:, grown.index('35')]
  assert not any(np.array_equal(new_column, old_kernel[:, i])
                 for i in range(10))
  np.testing.assert_array_equal(model.get_layer('conv1').get_weights()[0],
                                old.get_layer('conv1').get_weights()[0])


@pytest.mark.parametrize('change, why', [
    (dict(class_names=DIGITS[:9]), 'the served model knows classes these '
     'Examples do not have (9): its classifier cannot grow into this one'),
    (dict(geometry=features.ImageGeometry(32, 32, 1)),
     'the served model takes 28x28x1 images, these are 32x32x1'),
    (dict(config=ModelConfig(bn_conv_filters=(16, 32, 64))),
     'the served model\'s weights do not fit this network: '),
])
def test_a_served_model_that_does_not_fit_gives_no_start(two_runs, change,
                                                          why):
  start = _start(two_runs, **change)
  assert not start.warm and start.served_from == ''
  assert start.why.startswith(why)
  assert '\n' not in start.why


def test_another_network_or_nothing_served_gives_no_start(two_runs, tmp_path):
  start = warm_start.start(_served(two_runs), '', 'mnist-cnn',
                           MNIST_GEOMETRY, DIGITS, ModelConfig())
  assert start.why == ('the served model is a small-bn-cnn, this run trains '
                       'a mnist-cnn')
  for nothing in (None, str(tmp_path)):
    start = warm_start.start(nothing, '', ARCHITECTURE, MNIST_GEOMETRY,
                             DIGITS, ModelConfig())
    assert (start.warm, start.why) == (False, 'nothing is served yet')


def test_a_served_model_without_its_training_plan_gives_no_start(two_runs,
                                                                 tmp_path):
  copy = str(tmp_path / 'served')
  shutil.copytree(_served(two_runs), copy)
  plan = os.path.join(copy, EXTRA_DIR, TRAINING_PLAN_FILE)
  os.remove(plan)
  start = warm_start.start(copy, '', ARCHITECTURE, MNIST_GEOMETRY, DIGITS,
                           ModelConfig())
  assert (start.warm, start.why) == (
      False, f'the served model has no {plan}: its network is unknown')


def test_a_warm_start_gets_a_fine_tuning_budget():
  budget = Budget()
  # MNIST's 3 epochs from scratch, a few thousand images' 30.
  assert training_plan.epochs_for(budget, 60_000, warm=True) == 1
  assert training_plan.epochs_for(budget, 3_000, warm=True) == 6
  assert training_plan.epochs_for(Budget(epochs=4), 3_000, warm=True) == 4
  smaller_steps = Budget(warm_start_learning_rate_factor=0.3)
  plan = training_plan.plan(smaller_steps, ModelConfig(), MNIST_GEOMETRY,
                            60_000, warm_start_from='serving/1',
                            start_why='why')
  assert plan.learning_rate_factor == 0.3
  assert plan.describe_start() == 'warm start from serving/1 (why)'
  cold = training_plan.plan(budget, ModelConfig(), MNIST_GEOMETRY, 60_000)
  assert (cold.epochs, cold.learning_rate_factor) == (3, 1.0)


def test_a_warm_run_starts_from_the_served_model(warm_run):
  # tests/tiny_runs.py's warm_run: on a copy of two_runs' output, to the
  # Trainer (its --validation-percent 0 is tests/test_validation_runs.py's).
  out, stdout = warm_run
  served = serving.latest_pushed_model(str(out / 'serving_model'))
  assert (f'warm start from {served} (the same network, geometry and '
          'classes)') in stdout
  store = mlmd.open_store(str(out))
  [model] = [m for m in mlmd.live_artifacts(store, 'Model')
             if serving_model.WARM_START_FROM in
             m.custom_properties]
  assert model.custom_properties[
      serving_model.WARM_START_FROM].string_value == served
  with open(os.path.join(model.uri, 'Format-Serving', EXTRA_DIR,
                         TRAINING_PLAN_FILE)) as f:
    plan = json.load(f)
  assert (plan['start'], plan['warm_start_from']) == ('warm', served)
  assert plan['learning_rate'] == pytest.approx(
      TrainingConfig().learning_rate * tiny_runs.WARM_LEARNING_RATE_FACTOR)


def test_on_kubeflow_the_trainer_gets_the_served_model(tmp_path):
  spec = kubeflow_specs.compile_spec(tmp_path / 'warm.yaml', '--warm-start',
                                     *kubeflow_specs.CLUSTER_PATHS)
  tasks = spec['root']['dag']['tasks']
  node = warm_start_model.NODE_ID
  # Read anew each run, as the baseline's ServedModel is.
  assert tasks[node]['cachingOptions'] == {'enableCache': False}
  base_model = tasks['Trainer']['inputs']['artifacts']['base_model']
  assert base_model['taskOutputArtifact']['producerTask'] == node
  assert kubeflow_specs.container(spec, 'Trainer')['args'][1] == (
      'modules.training.warm_start.Executor')
