"""ImageExampleGen's validation split: carved out of train by a stable hash,
or given as a validation/ folder, through the real executor and Beam."""

import json
import os

import numpy as np
import pytest

from components.image_example_gen import folder_layout
from components.image_example_gen import image_folder
from components.image_example_gen import validation_split
from components.image_example_gen.component import default_input_config
from components.image_example_gen.component import ImageExampleGen
from components.image_example_gen.errors import InputDataError
from components.image_example_gen.options import ImageExampleGenOptions
from tests import artifacts
from tests import datasets
from tests import examples_io


def _records(examples, split):
  """{(label, pixels)} of a split's records."""
  return sorted((r['label'], r['image'].tobytes())
                for r in examples_io.read_split(examples.uri, split))


def _idx_options(**kwargs):
  return ImageExampleGenOptions(num_shards=4, **kwargs)


def test_idx_train_files_give_train_and_validation_by_a_hash_of_the_pixels(
    tmp_path):
  written = datasets.write_idx_dataset(str(tmp_path / 'in'),
                                       {'train': 300, 't10k': 30})
  examples = artifacts.run_example_gen(
      tmp_path / 'in', tmp_path / 'out', _idx_options(validation_percent=20))

  assert json.loads(examples.split_names) == ['train', 'validation', 'eval']
  assert len(examples_io.split_files(examples.uri, 'validation')) == 4
  images, labels = written['train']
  records = [(int(l), i[..., None].tobytes()) for i, l in zip(images, labels)]
  chosen = [r for r in records if validation_split.chosen(r[1], 20)]
  assert _records(examples, 'validation') == sorted(chosen)
  assert _records(examples, 'train') == sorted(set(records) - set(chosen))
  assert 0.1 < len(chosen) / len(records) < 0.3
  # The eval split is t10k's, whole.
  assert len(_records(examples, 'eval')) == 30

  # Another run, on other shards: the same records in each split.
  again = artifacts.run_example_gen(
      tmp_path / 'in', tmp_path / 'again',
      ImageExampleGenOptions(num_shards=3, validation_percent=20))
  for split in ('train', 'validation', 'eval'):
    assert _records(again, split) == _records(examples, split)


def test_exact_copies_of_an_image_land_in_the_same_split():
  image = np.arange(784, dtype=np.uint8).tobytes()
  others = [bytes([i]) * 784 for i in range(200)]
  keys = [image, *others, image]
  chosen = validation_split.mask(keys, 50)
  assert chosen[0] == chosen[-1]
  assert 0 < chosen.sum() < len(keys)


def test_validation_percent_0_writes_no_validation_split(tmp_path):
  datasets.write_idx_dataset(str(tmp_path / 'in'))
  examples = artifacts.run_example_gen(tmp_path / 'in', tmp_path / 'out',
                                       _idx_options(validation_percent=0))
  assert json.loads(examples.split_names) == ['train', 'eval']
  assert not examples_io.split_files(examples.uri, 'validation')


def test_an_empty_validation_split_is_refused(tmp_path):
  datasets.write_idx_dataset(str(tmp_path / 'in'), {'train': 3, 't10k': 3})
  with pytest.raises(InputDataError, match=r'train-\*: --validation-percent '
                     r'1 put none of its records into the validation split'):
    artifacts.run_example_gen(tmp_path / 'in', tmp_path / 'out',
                              _idx_options(validation_percent=1))


def _folder_options(**kwargs):
  return ImageExampleGenOptions(
      **{'input_format': 'images', 'num_shards': 2, 'eval_percent': 20,
         **kwargs})


def _paths_to_records(paths, class_names=('cat', 'dog', 'fish')):
  return sorted(class_names.index(os.path.basename(os.path.dirname(p)))
                for p in paths)


def _labels(examples, split):
  return sorted(label for label, _ in _records(examples, split))


def _chosen(paths, base, percent):
  return [p for p in paths if validation_split.chosen(
      os.path.relpath(p, base).encode(), percent)]


def test_train_and_eval_folders_give_validation_out_of_train(tmp_path):
  data = tmp_path / 'in'
  datasets.write_image_folder(str(data), per_class={'train': 12, 'eval': 2})
  examples = artifacts.run_example_gen(data, tmp_path / 'out',
                                       _folder_options(validation_percent=25))
  assert json.loads(examples.split_names) == ['train', 'validation', 'eval']
  train = image_folder.list_split(str(data / 'train' / '*' / '*'))[0]
  chosen = _chosen(train, data / 'train', 25)
  assert 0 < len(chosen) < len(train)
  assert _labels(examples, 'validation') == _paths_to_records(chosen)
  assert _labels(examples, 'train') == _paths_to_records(
      set(train) - set(chosen))
  assert len(_labels(examples, 'eval')) == 6


def test_class_folders_give_train_validation_and_the_same_eval(tmp_path):
  data = tmp_path / 'in'
  datasets.write_image_folder(str(data), per_class={'': 30})
  examples = artifacts.run_example_gen(data, tmp_path / 'out',
                                       _folder_options(validation_percent=25))
  assert json.loads(examples.split_names) == ['train', 'validation', 'eval']
  files = image_folder.list_split(str(data / '*' / '*'))[0]
  hashed = folder_layout.partition(
      files, str(data),
      folder_layout.output_config(folder_layout.CLASSES, 20).split_config)
  chosen = _chosen(hashed['train'], data, 25)
  assert 0 < len(chosen) < len(hashed['train'])
  # Eval is what it was without a validation split; validation comes out
  # of train.
  assert _labels(examples, 'eval') == _paths_to_records(hashed['eval'])
  assert _labels(examples, 'validation') == _paths_to_records(chosen)
  assert _labels(examples, 'train') == _paths_to_records(
      set(hashed['train']) - set(chosen))


def test_a_validation_folder_is_taken_as_given(tmp_path):
  data = tmp_path / 'in'
  datasets.write_image_folder(
      str(data), per_class={'train': 4, 'validation': 3, 'eval': 2})
  examples = artifacts.run_example_gen(data, tmp_path / 'out',
                                       _folder_options(validation_percent=25))
  assert json.loads(examples.split_names) == ['train', 'validation', 'eval']
  for split, per_class in (('train', 4), ('validation', 3), ('eval', 2)):
    assert _labels(examples, split) == sorted([0, 1, 2] * per_class)
  # The component configures the three folders it finds.
  config = ImageExampleGen(str(data), ImageExampleGenOptions(
      input_format='images', num_shards=1, eval_percent=20,
      validation_percent=10)).exec_properties
  assert [s['pattern'] for s in json.loads(config['input_config'])['splits']
          ] == ['train/*/*', 'validation/*/*', 'eval/*/*']

  with pytest.raises(InputDataError, match='validation: a validation folder, '
                     'but --validation-percent 0 asks for no validation split'):
    artifacts.run_example_gen(data, tmp_path / 'zero',
                              _folder_options(validation_percent=0))


def test_spans_keep_their_validation_split(tmp_path):
  data = tmp_path / 'in'
  datasets.write_image_folder(
      str(data / 'span-1'), per_class={'train': 2, 'eval': 1})
  datasets.write_image_folder(
      str(data / 'span-2'),
      per_class={'train': 4, 'validation': 3, 'eval': 2})
  examples = artifacts.run_example_gen(
      data, tmp_path / 'out', _folder_options(validation_percent=25),
      input_config=default_input_config('images', 'span-{SPAN}'))
  assert examples.get_int_custom_property('span') == 2
  assert len(_labels(examples, 'validation')) == 9

  datasets.write_idx_dataset(str(tmp_path / 'idx' / 'span-3'),
                             {'train': 100, 't10k': 10})
  examples = artifacts.run_example_gen(
      tmp_path / 'idx', tmp_path / 'idx-out',
      _idx_options(validation_percent=20),
      input_config=default_input_config('idx', 'span-{SPAN}'))
  assert examples.get_int_custom_property('span') == 3
  assert (len(_records(examples, 'train')) +
          len(_records(examples, 'validation'))) == 100


def test_too_few_images_for_a_validation_split_are_named(tmp_path):
  data = tmp_path / 'in'
  datasets.write_image_folder(str(data), per_class={'train': 1, 'eval': 1})
  with pytest.raises(InputDataError, match=r'in/train: --validation-percent 1 '
                     'put none of its 3 training images into the validation'):
    artifacts.run_example_gen(data, tmp_path / 'out',
                              _folder_options(validation_percent=1))
