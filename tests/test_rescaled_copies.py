"""DataChecks finds copies in eval of training images cut by a border and
resized back, or saved smaller and enlarged again, and of photos cut to part
of their frame, as 'rescaled' pairs; distinct scribbles that look alike and
distinct photos stay unpaired, and so does a cropped copy within train."""

import os


import numpy as np
from PIL import Image, ImageDraw
import pytest

from components.data_checks import alignment
from components.data_checks import matching
from components.image_example_gen import idx
from components.image_example_gen.options import ImageExampleGenOptions
from data import photos
from data import planted
from records import data_check_results as results
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
  """`image` with a border of 1-3 pixels cut from each side, resized back."""
  return np.asarray(planted.cropped(Image.fromarray(image), rng,
                                    border=(1, 3)))


def shrunk(image: np.ndarray, rng) -> np.ndarray:
  """`image` saved at 50-85% of its side and enlarged again, by one of
  Pillow's resamplers."""
  return np.asarray(planted.shrunk(Image.fromarray(image), rng))


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


def test_cropped_and_shrunk_copies_are_found_and_nothing_else(checked):
  pairs = _pairs(checked)
  assert all(row['split_a'] != row['split_b']
             for row in results.read_pairs(checked.uri))
  assert {(a, b) for a, b, _ in pairs} <= {
      (str(n), str(n)) for n in range(2 * COPIES)}
  cropped_found = [n for n in range(COPIES)
                   if (str(n), str(n), 'rescaled') in pairs]
  # A shrunk copy may still look near: either kind.
  shrunk_found = {int(a) for a, _, _ in pairs} - set(range(COPIES))
  assert len(cropped_found) >= COPIES - 1
  assert len(shrunk_found) >= COPIES - 2
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
  aligned, _ = alignment.differences(images, copies)
  swapped, _ = alignment.differences(copies, images)
  np.testing.assert_allclose(aligned, swapped, rtol=1e-5)
  others, shrunk_others = alignment.differences(
      images, np.roll(images, 1, axis=0))
  assert aligned.max() < others.min()
  assert np.median(aligned) < 0.5
  assert matching.MAX_SHRUNK_DIFFERENCE < shrunk_others.min()


def test_shrunk_copies_are_near_by_any_resampler_either_way():
  images = scribbles(24, seed=6)
  sides = np.linspace(14, 24, len(images)).round().astype(int)
  near, others = [], []
  for resampler in planted.RESAMPLERS:
    copies = np.stack([
        np.asarray(Image.fromarray(image).resize((side, side), resampler)
                   .resize((28, 28), resampler))
        for image, side in zip(images, sides)]).astype(np.float32)
    for a, b in ((images.astype(np.float32), copies),
                 (copies, images.astype(np.float32))):
      near.append(alignment.differences(a, b)[1])
    others.append(alignment.differences(
        copies, np.roll(copies, 1, axis=0))[1])
  # Pillow rounds and clips between its passes, which the check does not.
  assert (np.concatenate(near) < matching.MAX_SHRUNK_DIFFERENCE).mean() >= 0.75
  assert matching.MAX_SHRUNK_DIFFERENCE < np.concatenate(others).min()


PHOTO_COPIES = 6


def _photo_folder(root, copies: int):
  """Writes a photo folder whose eval holds crops of `copies` training
  photos (80-95% of each side, anywhere, saved as cut); returns
  (DataCheckResults, {copy: its original})."""
  rng = np.random.default_rng(7)
  for split, seed in (('train', 0), ('eval', 1)):
    photos.write(str(root / 'data' / split), 6, seed=seed)
  originals = sorted(f'{c}/{f}' for c in photos.CLASSES
                     for f in os.listdir(root / 'data' / 'train' / c))
  planted_copies = {}
  for number, source in enumerate(originals[::5][:copies]):
    with Image.open(root / 'data' / 'train' / source) as image:
      part = planted.cropped(image.convert('RGB'), rng, resize_back=False)
    target = f'{os.path.dirname(source)}/crop-{number}.jpg'
    part.save(root / 'data' / 'eval' / target, quality=90)
    planted_copies['eval/' + target] = 'train/' + source
  examples = artifacts.run_example_gen(
      root / 'data', root / 'examples',
      ImageExampleGenOptions(input_format='images', num_shards=2,
                             infer_size=True, infer_channels=True))
  return (test_data_checks.run_data_checks(examples, root / 'checks'),
          planted_copies)


@pytest.fixture(scope='module')
def checked_photos(tmp_path_factory):
  return _photo_folder(tmp_path_factory.mktemp('photo_crops'), PHOTO_COPIES)


def test_photos_cut_to_part_of_their_frame_are_found(checked_photos):
  output, copies = checked_photos
  across = {(row['source_b'], row['source_a'], row['kind'])
            for row in results.read_pairs(output.uri)
            if row['split_a'] != row['split_b']}
  planted_pairs = {(copy, original, 'rescaled')
                   for copy, original in copies.items()}
  assert across <= planted_pairs
  assert len(across) >= PHOTO_COPIES - 1


def test_a_photo_folder_without_copies_has_no_pairs_across_splits(tmp_path):
  output, _ = _photo_folder(tmp_path, 0)
  assert not [row for row in results.read_pairs(output.uri)
              if row['split_a'] != row['split_b']]
