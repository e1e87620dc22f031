"""The scaled MNIST generator (data/scaled_mnist.py): layout, determinism,
deformation bounds, and a 3x tiny dataset through the whole DAG (the run
tests/tiny_runs.py's tuned_run shares with tests/test_tuning_run.py)."""

import gzip
import os
import re

import numpy as np
import pytest

from components.image_example_gen import idx
from data import scaled_mnist
from pipeline import constants
from tests import datasets
from tests import tiny_runs


def _train(directory):
  return tuple(idx.read_all(idx.validate(os.path.join(directory, name)))
               for name in ('train-images-idx3-ubyte.gz',
                            'train-labels-idx1-ubyte.gz'))


@pytest.fixture
def source(tmp_path):
  """A tiny stand-in for MNIST's four files, under their names."""
  directory = tmp_path / 'mnist'
  datasets.write_idx_dataset(str(directory), {'train': 50, 't10k': 20})
  return directory


def test_copies_are_deformed_originals_and_the_same_seed_the_same_bytes(
    tmp_path, source):
  assert scaled_mnist.main(['--copies', '3', '--out', str(tmp_path / 'a'),
                            '--source', str(source)]) == 0
  images, labels = _train(tmp_path / 'a')
  originals, original_labels = _train(source)
  assert images.shape == (150, 28, 28)
  np.testing.assert_array_equal(labels, np.tile(original_labels, 3))
  copies = images.reshape(3, 50, 28, 28)
  np.testing.assert_array_equal(copies[0], originals)  # Copy 0 unchanged.
  for deformed in copies[1:]:
    changed = (deformed != originals).reshape(50, -1).any(axis=1)
    assert changed.all()
  assert (copies[1] != copies[2]).any()
  # The official test set, byte for byte.
  for name in ('t10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz'):
    assert ((tmp_path / 'a' / name).read_bytes() ==
            (source / name).read_bytes())
  assert sorted(os.listdir(tmp_path / 'a')) == sorted(os.listdir(source))

  scaled_mnist.write_idx(str(tmp_path / 'b'), 3, str(source), progress=False)
  scaled_mnist.write_idx(str(tmp_path / 'c'), 3, str(source), seed=1,
                         progress=False)
  name = 'train-images-idx3-ubyte.gz'
  pixels = {d: gzip.decompress((tmp_path / d / name).read_bytes())
            for d in 'abc'}
  assert pixels['b'] == pixels['a']
  assert pixels['c'] != pixels['a']


def test_deformations_stay_within_their_bounds():
  params = scaled_mnist.deformation(seed=0, copy=1, block=0, count=10_000)
  rotation = np.deg2rad(scaled_mnist.MAX_ROTATION_DEGREES)
  for values, low, high in (
      (params.rotation, -rotation, rotation),
      (params.scale_y, 1 - scaled_mnist.MAX_SCALE_CHANGE,
       1 + scaled_mnist.MAX_SCALE_CHANGE),
      (params.scale_x, 1 - scaled_mnist.MAX_SCALE_CHANGE,
       1 + scaled_mnist.MAX_SCALE_CHANGE),
      (params.shift_y, -scaled_mnist.MAX_SHIFT_PIXELS,
       scaled_mnist.MAX_SHIFT_PIXELS),
      (params.shift_x, -scaled_mnist.MAX_SHIFT_PIXELS,
       scaled_mnist.MAX_SHIFT_PIXELS)):
    assert low <= values.min() and values.max() <= high
    # Spread over the range, not stuck at one value.
    assert values.min() < low + 0.1 * (high - low)
    assert values.max() > high - 0.1 * (high - low)


def _deform_one(image, rotation=0.0, scale=1.0, shift=(0.0, 0.0)):
  params = scaled_mnist.Deformation(
      np.array([rotation]), np.array([scale]), np.array([scale]),
      np.array([shift[0]]), np.array([shift[1]]))
  return scaled_mnist.deform(image[None], params)[0]


def test_the_affine_map_moves_pixels_where_its_parameters_say():
  image = np.zeros((28, 28), np.uint8)
  image[5:9, 14:16] = 255  # A bar above the centre (13.5, 13.5).
  np.testing.assert_array_equal(_deform_one(image), image)
  # A shift of whole pixels: the bar moves, nothing else changes.
  np.testing.assert_array_equal(_deform_one(image, shift=(2, -1)),
                                np.roll(image, (2, -1), axis=(0, 1)))

  def centre(pixels):
    ys, xs = np.nonzero(pixels > 127)
    return np.array([ys.mean(), xs.mean()]) - 13.5

  # A quarter turn takes the bar from above the centre to a side of it,
  # at the same distance; a scale of 1.1 takes it 10% further out.
  above = centre(image)
  turned = centre(_deform_one(image, rotation=np.pi / 2))
  assert abs(np.linalg.norm(turned) - np.linalg.norm(above)) < 0.3
  assert abs(turned @ above) < 0.3 * np.linalg.norm(above) ** 2
  np.testing.assert_allclose(centre(_deform_one(image, scale=1.1)),
                             above * 1.1, atol=0.3)


def test_image_folder_format(tmp_path, source):
  assert scaled_mnist.main(['--copies', '2', '--out', str(tmp_path / 'f'),
                            '--source', str(source), '--format',
                            'images']) == 0
  _, labels = _train(source)
  for split, count in (('train', 100), ('eval', 20)):
    files = [os.path.join(root, name)
             for root, _, names in os.walk(tmp_path / 'f' / split)
             for name in names]
    assert len(files) == count and all(f.endswith('.png') for f in files)
  assert len(os.listdir(tmp_path / 'f' / 'train' / str(labels[0]))) == 2 * int(
      (labels == labels[0]).sum())


def test_default_source_is_where_the_pipeline_keeps_mnist():
  assert scaled_mnist.DEFAULT_SOURCE == constants.MNIST_DIR


def test_3x_tiny_scaled_dataset_through_the_whole_dag(tuned_run):
  # tests/tiny_runs.py's tuned_run (its --tune is tests/test_tuning_run.py's
  # subject): 3 copies of each training image, the eval images as they are.
  out, stdout = tuned_run
  source = tiny_runs.SCALED_SOURCE
  train, validation = map(int, re.search(
      r'train: (\d+) records in 16 shards; validation: (\d+) records in 16 '
      rf'shards; eval: {source["t10k"]} records', stdout).groups())
  assert tiny_runs.SCALED_COPIES == 3
  assert train + validation == 3 * source['train'] and 0 < validation < 60
  assert os.listdir(out / constants.SERVING_MODEL_DIR_NAME)
  # Transform computed no statistics of its own (StatisticsGen's are the
  # data's; pipeline/pipeline.py says why): its statistics outputs
  # hold no file, where TFX's default writes pre- and post-transform ones.
  transform_dir = out / constants.PIPELINE_ROOT_NAME / 'Transform'
  for output in ('pre_transform_stats', 'post_transform_stats'):
    assert not [name for _, _, names in os.walk(transform_dir / output)
                for name in names]
  assert os.listdir(transform_dir / 'transform_graph')
