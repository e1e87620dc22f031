"""data/idx_folders.py: IDX files written as an image folder of class folders."""

import os

import numpy as np
from PIL import Image
import pytest

from components.image_example_gen import idx
from data import idx_folders
from tests import datasets


def test_the_first_images_of_each_split_land_in_their_class_folders(
    tmp_path):
  written = datasets.write_idx_dataset(str(tmp_path / 'idx'),
                                       {'train': 30, 't10k': 12})
  out = tmp_path / 'folder'
  assert idx_folders.main(['--source', str(tmp_path / 'idx'), '--out',
                           str(out), '--train', '25']) == 0
  for prefix, split, count in (('train', 'train', 25), ('t10k', 'eval', 12)):
    images, labels = written[prefix]
    files = sorted((int(name[:-4]), label) for label in os.listdir(out / split)
                   for name in os.listdir(out / split / label))
    assert [i for i, _ in files] == list(range(count))
    for index, label in files:
      assert int(label) == labels[index]
      pixels = np.asarray(Image.open(out / split / label / f'{index:05d}.png'))
      np.testing.assert_array_equal(pixels, images[index])


def test_images_and_labels_that_disagree_in_count_are_an_error(tmp_path):
  datasets.write_idx_dataset(str(tmp_path), {'train': 10, 't10k': 4})
  idx.write(str(tmp_path / 'train-labels-idx1-ubyte.gz'),
            np.zeros(9, np.uint8), True)
  with pytest.raises(ValueError, match='train-images.*10 images but .*'
                     'train-labels-idx1-ubyte.gz has 9 labels'):
    idx_folders.write_split(str(tmp_path), 'train', str(tmp_path / 'out'),
                            None)
  assert not (tmp_path / 'out').exists()
