"""A folder of photos as a user has it, through local_runner.py: class
folders with no train/eval split and no geometry flags run, saying what
they assumed; a folder with one class stops before anything is written."""

import os

import numpy as np
from PIL import Image

from components.image_example_gen import folder_layout
from components.image_example_gen import geometry_choice
from components.image_example_gen import image_folder
from components.image_example_gen import validation_split
from records import features
from tests import examples_io
from tests import local_run
from tests import mlmd

TO_STATISTICS = ['--to-node', 'StatisticsGen']


def _photos(directory, classes, per_class=10):
  rng = np.random.default_rng(0)
  for c, name in enumerate(classes):
    os.makedirs(os.path.join(directory, name))
    for i in range(per_class):
      pixels = (rng.integers(0, 30, size=(10, 14, 3)) + 60 * c).astype(
          np.uint8)
      Image.fromarray(pixels, 'RGB').save(
          os.path.join(directory, name, f'IMG_{i:04}.JPG'))


def test_class_folders_run_and_say_what_was_assumed(tmp_path):
  data = tmp_path / 'photos'
  _photos(str(data), ('cat', 'dog'))
  result = local_run.run('--data-dir', str(data), '--input-format', 'images',
                         '--eval-percent', '30', '--output-dir',
                         str(tmp_path / 'out'), local_run.ONE_PROCESS,
                         *TO_STATISTICS)
  assert result.returncode == 0, result.stderr[-3000:]
  want = folder_layout.partition(
      image_folder.list_split(str(data / '*' / '*'))[0], str(data),
      folder_layout.output_config(folder_layout.CLASSES, 30).split_config)
  want = validation_split.carve(want, {
      p: os.path.relpath(p, data).encode() for p in want['train']}, 10)
  counts = (f'train: {len(want["train"])} images, validation: '
            f'{len(want["validation"])} images, eval: '
            f'{len(want["eval"])} images')
  assert (f'  ImageExampleGen: 2 classes (cat, dog); {counts}; no train/eval '
          'folders: split by a hash of each image\'s path; validation taken '
          'out of train by a hash of each path') in result.stdout
  chosen = ('size and channels chosen from the headers of 20 images '
            '(1 distinct size, colour)')
  assert (f'  ImageExampleGen: images converted to 10x14x3: {chosen}; '
          '--image-size and --channels set them') in result.stdout
  # The summary says it again, under the Examples.
  assert (f'images converted to 10x14x3: {chosen} (--image-size and '
          '--channels set them)') in result.stdout
  [examples] = mlmd.live_artifacts(mlmd.open_store(str(tmp_path / 'out')),
                                   'Examples')
  props = examples.custom_properties
  assert props[geometry_choice.CHOICE_PROPERTY].string_value == chosen
  assert {key: props[key].int_value for key in features.GEOMETRY_PROPERTIES
          } == {'image_height': 10, 'image_width': 14, 'image_channels': 3}
  assert len(examples_io.read_split(examples.uri, 'eval')) == len(
      want['eval'])


def test_one_class_stops_before_anything_is_written(tmp_path):
  data = tmp_path / 'photos'
  _photos(str(data), ('cat',), per_class=3)
  result = local_run.run('--data-dir', str(data), '--input-format', 'images',
                         '--output-dir', str(tmp_path / 'out'),
                         local_run.ONE_PROCESS, *TO_STATISTICS)
  assert result.returncode == 1
  [error] = [l for l in result.stderr.splitlines() if l.startswith('error')]
  assert error == (f'error in ImageExampleGen: {data}: 1 class folder found '
                   '(cat): a classifier needs at least two')
  store = mlmd.open_store(str(tmp_path / 'out'))
  assert mlmd.execution_states(store) == {'ImageExampleGen': ['FAILED']}
  assert mlmd.live_artifacts(store, 'Examples') == []
