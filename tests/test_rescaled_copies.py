"""DataChecks finds copies in eval of training images cut by a border and
resized back, or saved smaller and enlarged again, as 'rescaled' pairs;
distinct scribbles that look alike stay unpaired, and so does a cropped
copy within train."""

import numpy as np
from PIL import Image, ImageDraw
import pytest

from components.data_checks import alignment
from components.image_example_gen import idx
from components.image_example_gen.options import ImageExampleGenOptions
from records import data_checks as results
from tests import artifacts
from tests import test_data_checks

COPIES = 8


def scribbles(count: int, seed: int) -> np.ndarray:
  """[count, 28, 28] uint8: a few white strokes each on black, in the
  middle 20x20 pixels, as MNIST's digits are."""
  rng = np.random.default_rng(seed)
  images = []
  for _ in range(count):
    canvas = Image.new('L', (112, 112))
    points = [tuple(rng.uniform(20, 92, 2)) for _ in range(4)]
    ImageDraw.Draw(canvas).line(points, fill=255, width=10, joint='curve')
    images.append(np.asarray(canvas.resize((28, 28), Image.BOX)))
  return np.stack(images)


def cropped(image: np.ndarray, rng) -> np.ndarray:
  left, top, right, bottom = rng.integers(1, 4, 4)
  part = image[top:28 - bottom, left:28 - right]
  return np.asarray(Image.fromarray(part).resize((28, 28), Image.BILINEAR))


def shrunk(image: np.ndarray, rng) -> np.ndarray:
  side = int(rng.integers(18, 23))
  small = Image.fromarray(image).resize((side, side), Image.BILINEAR)
  return np.asarray(small.resize((28, 28), Image.BILINEAR))


@pytest.fixture(scope='module')
def checked(tmp_path_factory):
  tmp = tmp_path_factory.mktemp('rescaled')
  rng = np.random.default_rng(3)
  train, evaluation = scribbles(200, seed=1), scribbles(60, seed=2)
  for number in range(COPIES):
    evaluation[number] = cropped(train[number], rng)
    evaluation[COPIES + number] = shrunk(train[COPIES + number], rng)
  train[-1] = cropped(train[-2], rng)  # Within a split: not looked for.
  data = tmp / 'data'
  data.mkdir()
  for prefix, images in (('train', train), ('t10k', evaluation)):
    idx.write(str(data / f'{prefix}-images-idx3-ubyte.gz'), images)
    idx.write(str(data / f'{prefix}-labels-idx1-ubyte.gz'),
              np.ones(len(images), np.uint8))
  examples = artifacts.run_example_gen(
      data, tmp / 'examples', ImageExampleGenOptions(input_format='idx',
                                                     num_shards=2))
  return test_data_checks.run_data_checks(examples, tmp / 'checks')


def _pairs(output):
  return {(row['source_a'].rsplit(':', 1)[1], row['source_b'].rsplit(':', 1)[1],
           row['kind']) for row in results.read_pairs(output.uri)}


def test_cropped_copies_are_found_as_rescaled_and_nothing_else(checked):
  pairs = _pairs(checked)
  assert all(row['split_a'] != row['split_b']
             for row in results.read_pairs(checked.uri))
  planted = {(str(n), str(n), 'rescaled') for n in range(2 * COPIES)}
  assert pairs <= planted
  found_cropped = [n for n in range(COPIES)
                   if (str(n), str(n), 'rescaled') in pairs]
  assert len(found_cropped) >= COPIES - 1
  held_out = results.json_property(checked, results.HELD_OUT_PROPERTY)
  assert held_out['eval']['images'] == len(pairs)


def test_the_console_line_names_the_kind():
  row = {'split_a': 'train', 'source_a': 'train/7/a.png', 'split_b': 'eval',
         'source_b': 'eval/7/b.png', 'kind': 'rescaled',
         'correlation': '0.97', 'record_a': '', 'record_b': ''}
  assert 'cropped or rescaled' in results.describe_pair(row)


def test_a_copy_is_closer_than_a_look_alike_either_way():
  rng = np.random.default_rng(5)
  images = scribbles(40, seed=4).astype(np.float32)
  copies = np.stack([cropped(image.astype(np.uint8), rng)
                     for image in images]).astype(np.float32)
  shape = (28, 28)
  details = alignment.details(images)
  aligned, _ = alignment.differences(details, alignment.details(copies), shape)
  swapped, _ = alignment.differences(alignment.details(copies), details, shape)
  np.testing.assert_allclose(aligned, swapped, rtol=1e-5)
  others, shrunk_others = alignment.differences(
      details, np.roll(details, 1, axis=0), shape)
  assert aligned.max() < others.min()
  assert np.median(aligned) < 0.5 < shrunk_others.min()
