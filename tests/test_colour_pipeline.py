"""A colour image-folder run at 64x64 through Pusher, on tiny data: the
small GAP CNN and augmentation chosen from the geometry, trained on records
holding PNG files, and both signatures answering (serving_default decoding
PNG Examples), the same answers every time (augmentation acts in training
only). Accuracy is not asserted on data this small."""

import json
import os

import numpy as np
from PIL import Image
import pytest
import tensorflow as tf

from data import shapes
from tests import local_run
from tests import serving

CLASSES = shapes.SHAPES[:4]
SIZE = 64


@pytest.fixture(scope='module')
def pushed(tmp_path_factory):
  tmp = tmp_path_factory.mktemp('colour')
  shapes.write(str(tmp / 'data'), per_class=10, size=SIZE, eval_per_class=4,
               shapes=CLASSES)
  result = local_run.run(
      '--data-dir', str(tmp / 'data'), '--input-format', 'images',
      '--image-size', f'{SIZE}x{SIZE}', '--channels', '3',
      '--image-encoding', 'png',
      '--output-dir', str(tmp / 'out'), '--accuracy-threshold', '0',
      '--epochs', '2', '--train-steps', '6', '--batch-size', '8',
      local_run.ONE_PROCESS)
  assert result.returncode == 0
  return tmp, result


def test_the_small_gap_cnn_is_chosen_logged_and_recorded(pushed):
  tmp, result = pushed
  assert 'pushed to' in result.stdout
  path = serving.latest_pushed_model(str(tmp / 'out' / 'serving_model'))
  with open(os.path.join(path, 'assets.extra', 'training_plan.json')) as f:
    plan = json.load(f)
  assert plan['architecture'] == 'small-gap-cnn'
  assert plan['why'] == 'auto: colour images'
  assert plan['geometry'] == f'{SIZE}x{SIZE}x3'
  assert plan['augment'] is True and plan['augment_why'] == 'auto: colour images'
  # One of the training images is hashed into the validation split.
  assert plan['records'] == {'train': 10 * len(CLASSES) - 1, 'validation': 1}
  assert plan['train_records'] == 10 * len(CLASSES) - 1
  # Two planned epochs: both run (patience is longer), the best one kept.
  stopping = plan['early_stopping']
  assert (stopping['epochs_planned'], stopping['epochs_run']) == (2, 2)
  assert not stopping['stopped_early'] and stopping['kept_epoch'] in (1, 2)
  assert (f'Training: trained all 2 of 2 epochs; kept the weights of epoch '
          f'{stopping["kept_epoch"]} (val_accuracy') in result.stdout
  logs = list((tmp / 'out' / 'logs').glob('*.log'))
  assert any('small-gap-cnn (auto: colour images)' in log.read_text()
             for log in logs)


def test_both_signatures_answer_the_same_every_time(pushed):
  tmp, _ = pushed
  model = tf.saved_model.load(
      serving.latest_pushed_model(str(tmp / 'out' / 'serving_model')))
  images = np.stack([
      np.asarray(Image.open(tmp / 'data' / 'eval' / name / f'{i:05d}.png'))
      for name in CLASSES for i in range(4)])
  assert images.shape == (16, SIZE, SIZE, 3) and images.dtype == np.uint8
  probabilities, classes = serving.classify_images(model, images)
  assert probabilities.shape == (16, len(CLASSES))
  np.testing.assert_allclose(probabilities.sum(axis=1), 1, rtol=1e-5)
  again, classes_again = serving.classify_images(model, images)
  np.testing.assert_array_equal(again, probabilities)
  np.testing.assert_array_equal(classes_again, classes)
  out = model.signatures['serving_default'](
      examples=tf.constant(serving.serialized_examples(images,
                                                       encoding='png')))
  np.testing.assert_allclose(out['probabilities'].numpy(), probabilities,
                             rtol=1e-4, atol=1e-5)
  np.testing.assert_array_equal(out['classes'].numpy(), classes)
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match='image channels differs from the configured '
                     f'geometry {SIZE}x{SIZE}x3'):
    model.signatures['serve_images'](images=tf.constant(images[..., 0]))
