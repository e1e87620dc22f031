"""A served model trained in seconds, without the DAG: ImageExampleGen's
executor and tf.Transform through real Beam, then the Trainer's run_fn, as
the Trainer component calls it. The model of MNIST's geometry is made once
per test session (tests/conftest.py shares the fixture) for the modules that
only read it."""

import os

import pytest
from tfx.components.trainer.fn_args_utils import FnArgs

from components.image_example_gen.options import ImageExampleGenOptions
from modules import trainer
from modules.training.config import Budget, TrainingConfig
from records import features
from tests import artifacts
from tests import datasets


def train(tmp, geometry: features.ImageGeometry, train_records: int = 200,
          eval_records: int = 60, steps: int = 120,
          write_dataset=datasets.write_idx_dataset):
  """Trains on tiny learnable data (datasets.images_and_labels) of
  `geometry`; returns (the exported model's directory, {split: (images,
  labels)} as written).

  write_dataset: writes MNIST-layout files of other images (as
  datasets.write_idx_dataset, whose arguments it takes).

  steps: enough for a model sure of its answers. A half-trained one has
  answers near a tie between classes, which the TensorFlow Lite files'
  quantisation flips on some starts: the tests that compare those files'
  accuracy with the model's then fail by chance.
  """
  written = write_dataset(
      str(tmp / 'in'), {'train': train_records, 't10k': eval_records},
      geometry)
  examples = artifacts.run_example_gen(
      tmp / 'in', tmp / 'examples', ImageExampleGenOptions(num_shards=2))
  patterns = {split: os.path.join(examples.uri, f'Split-{split}', '*')
              for split in ('train', 'eval')}
  artifacts.make_transform_output(patterns['train'], geometry,
                                  str(tmp / 'transform'))
  config = TrainingConfig(budget=Budget(epochs=2), batch_size=16)
  serving = str(tmp / 'serving')
  trainer.run_fn(FnArgs(
      train_files=[patterns['train']], eval_files=[patterns['eval']],
      train_steps=steps, eval_steps=None,
      transform_graph_path=str(tmp / 'transform'),
      serving_model_dir=serving, model_run_dir=str(tmp / 'model_run'),
      custom_config={'training': config.to_dict()}))
  return serving, written


@pytest.fixture(scope='session')
def grey_model(tmp_path_factory):
  """`train` on MNIST's geometry, for tests that read the model and never
  change it: (its directory, {split: (images, labels)})."""
  return train(tmp_path_factory.mktemp('grey_model'),
               features.MNIST_GEOMETRY)
