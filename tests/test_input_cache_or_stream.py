"""The Trainer's input: each split cached or streamed by its size against
the memory budget, both paths end to end, on tiny data with tiny budgets."""

import collections
import dataclasses
import json
import logging
import os
import shutil

import pytest
import tensorflow as tf
import tensorflow_transform as tft
from tfx.components.trainer.fn_args_utils import FnArgs

from components.image_example_gen.options import ImageExampleGenOptions
from modules import trainer
from modules.training import input_pipeline
from modules.training.config import Budget, InputConfig, TrainingConfig
from records import features
from records import serving_model
from tests import artifacts
from tests import datasets

TRAIN, EVAL, SHARDS = 64, 24, 4
CONFIG = input_pipeline.InputConfig(memory_budget=1 << 30, cycle_length=2,
                                    shuffle_buffer_bytes=1 << 20)


@dataclasses.dataclass
class Data:
  uri: str  # The Examples artifact's.
  transform_dir: str
  output: tft.TFTransformOutput
  train: input_pipeline.SplitSize
  evaluation: input_pipeline.SplitSize


@pytest.fixture(scope='module')
def data(tmp_path_factory):
  tmp = tmp_path_factory.mktemp('cache_or_stream')
  datasets.write_idx_dataset(str(tmp / 'in'), {'train': TRAIN, 't10k': EVAL})
  examples = artifacts.run_example_gen(
      tmp / 'in', tmp / 'examples', ImageExampleGenOptions(num_shards=SHARDS))
  output = artifacts.make_transform_output(
      _pattern(examples.uri, 'train'), features.MNIST_GEOMETRY,
      str(tmp / 'transform'))
  return Data(examples.uri, str(tmp / 'transform'), output,
              input_pipeline.measure(_pattern(examples.uri, 'train')),
              input_pipeline.measure(_pattern(examples.uri, 'eval')))


def _pattern(uri, split):
  return os.path.join(uri, f'Split-{split}', '*')


def _keys(dataset):
  """Each example of one epoch, as its transformed pixels and label."""
  return [image.tobytes() + bytes([label])
          for images, labels in dataset
          for image, label in zip(images.numpy(), labels.numpy())]


def test_a_split_is_measured_by_reading_it(data):
  uri, train = data.uri, data.train
  files = input_pipeline.list_files(_pattern(uri, 'train'))
  records = [r.numpy() for r in tf.data.TFRecordDataset(
      files, compression_type='GZIP')]
  assert train == input_pipeline.SplitSize(
      files=SHARDS, records=TRAIN, record_bytes=sum(map(len, records)),
      disk_bytes=sum(os.path.getsize(f) for f in files))
  assert train.memory_bytes == (train.record_bytes + TRAIN *
                                input_pipeline.RECORD_OVERHEAD_BYTES)


def test_what_fits_is_cached_and_what_does_not_is_streamed(data):
  train, evaluation = data.train, data.evaluation
  both = train.memory_bytes + evaluation.memory_bytes
  train_plan, eval_plan = input_pipeline.plan_inputs(
      train, evaluation, dataclasses.replace(CONFIG, memory_budget=both))
  assert train_plan.cache and eval_plan.cache
  assert train_plan.shuffle_buffer == TRAIN  # The whole split.
  assert train_plan.cycle_length == eval_plan.cycle_length == SHARDS
  assert eval_plan.shuffle_buffer is None

  # One byte short: the training split still fits, evaluation not.
  train_plan, eval_plan = input_pipeline.plan_inputs(
      train, evaluation, dataclasses.replace(CONFIG, memory_budget=both - 1))
  assert train_plan.cache and not eval_plan.cache
  assert eval_plan.budget == evaluation.memory_bytes - 1
  assert eval_plan.cycle_length == CONFIG.cycle_length

  # Too small for the training split: streamed through a shuffle buffer
  # bounded by the budget (smaller than shuffle_buffer_bytes here), and
  # evaluation gets what that buffer leaves.
  budget = train.memory_bytes // 4
  train_plan, eval_plan = input_pipeline.plan_inputs(
      train, evaluation, dataclasses.replace(CONFIG, memory_budget=budget))
  assert not train_plan.cache and not eval_plan.cache
  assert TRAIN // 4 - 1 <= train_plan.shuffle_buffer <= TRAIN // 4
  assert train_plan.cycle_length == CONFIG.cycle_length
  assert eval_plan.budget <= budget - (train_plan.shuffle_buffer *
                                       train.bytes_per_record) + 1
  # ... and by shuffle_buffer_bytes when the budget is larger.
  bounded = dataclasses.replace(CONFIG, memory_budget=train.memory_bytes - 1,
                                shuffle_buffer_bytes=train.memory_bytes // 8)
  assert TRAIN // 8 - 1 <= input_pipeline.plan_inputs(
      train, evaluation, bounded)[0].shuffle_buffer <= TRAIN // 8
  assert 'streamed from disk' in train_plan.describe()
  assert 'cached in memory' in input_pipeline.plan_inputs(
      train, evaluation, CONFIG)[0].describe()


@pytest.mark.parametrize('budget_fraction', [2, 0.5])
def test_training_reads_every_record_once_per_epoch_in_new_orders(
    data, tmp_path, budget_fraction):
  uri, output = data.uri, data.output
  train, evaluation = data.train, data.evaluation
  # Shards of its own: the test deletes them after the first epoch.
  shutil.copytree(os.path.dirname(_pattern(uri, 'train')), tmp_path / 'train')
  pattern = str(tmp_path / 'train' / '*')
  config = dataclasses.replace(
      CONFIG, memory_budget=int(train.memory_bytes * budget_fraction))
  plan, _ = input_pipeline.plan_inputs(train, evaluation, config)
  assert plan.cache == (budget_fraction > 1)
  dataset = input_pipeline.make_planned_dataset(pattern, output, 8, plan)
  every_record = collections.Counter(_keys(input_pipeline.make_dataset(
      pattern, output, 8, training=False, cache=False)))
  assert sum(every_record.values()) == TRAIN

  epochs = [_keys(dataset) for _ in range(2)]
  shutil.rmtree(tmp_path / 'train')
  if plan.cache:  # From memory: the shards are no longer read.
    epochs.append(_keys(dataset))
  else:  # Read from the shards every epoch.
    with pytest.raises(tf.errors.NotFoundError):
      _keys(dataset)
  for keys in epochs:
    assert collections.Counter(keys) == every_record
  assert epochs[0] != epochs[1]


def test_streamed_evaluation_is_in_one_fixed_order(data):
  uri, output = data.uri, data.output
  train, evaluation = data.train, data.evaluation
  _, plan = input_pipeline.plan_inputs(
      train, evaluation, dataclasses.replace(CONFIG, memory_budget=0))
  assert not plan.cache and plan.shuffle_buffer is None
  pattern = _pattern(uri, 'eval')
  first, second = (_keys(input_pipeline.make_planned_dataset(
      pattern, output, 5, plan)) for _ in range(2))
  assert len(first) == EVAL and len(set(first)) == EVAL
  assert first == second


def test_the_trainer_logs_and_records_its_choice(data, tmp_path, caplog):
  uri, output = data.uri, data.output
  train, evaluation = data.train, data.evaluation
  # Room for the training split's cache, none left for evaluation.
  config = TrainingConfig(budget=Budget(epochs=1), batch_size=16,
                          input=InputConfig(memory_budget=train.memory_bytes))
  fn_args = FnArgs(
      train_files=[_pattern(uri, 'train')], eval_files=[_pattern(uri, 'eval')],
      train_steps=2, eval_steps=1,
      transform_graph_path=data.transform_dir,
      serving_model_dir=str(tmp_path / 'serving'),
      model_run_dir=str(tmp_path / 'model_run'),
      custom_config={'training': config.to_dict()})
  with caplog.at_level(logging.INFO, logger='absl'):
    trainer.run_fn(fn_args)
  lines = [r.getMessage() for r in caplog.records
           if r.getMessage().startswith('Trainer input: ')]
  assert lines == [
      'Trainer input: '
      f'{input_pipeline.plan_inputs(train, evaluation, config.input)[0].describe()}.',
      'Trainer input: '
      f'{input_pipeline.plan_inputs(train, evaluation, config.input)[1].describe()}.',
  ]
  assert lines[0].startswith('Trainer input: train: cached in memory: '
                             f'{TRAIN} records')
  assert lines[1].startswith(f'Trainer input: eval: streamed from disk: '
                             f'{EVAL} records')
  with open(tmp_path / 'serving' / 'assets.extra' /
            serving_model.TRAINING_PLAN_FILE) as f:
    recorded = json.load(f)['input']
  assert recorded['train']['read'] == 'cache'
  assert recorded['eval']['read'] == 'stream'
  assert recorded['train']['size']['records'] == TRAIN
  assert recorded['eval']['budget'] == 0


def test_chunk_shuffle_permutes_each_chunk_anew_each_epoch():
  # 1,000 records in blocks of 10, as shards are read; chunks of 100.
  blocks = tf.data.Dataset.range(1000).batch(10)
  tf.random.set_seed(7)  # A global seed must not replay epoch one's order.
  try:
    chunked = input_pipeline.shuffle_chunks(blocks, 100)
    epochs = [[chunk.numpy().tolist() for chunk in chunked] for _ in range(2)]
  finally:
    tf.random.set_seed(None)
  for chunks in epochs:
    assert [len(c) for c in chunks] == [100] * 10
    for i, chunk in enumerate(chunks):  # Each chunk: its own 100 records.
      assert sorted(chunk) == list(range(100 * i, 100 * (i + 1)))
      assert chunk != sorted(chunk)
  assert epochs[0] != epochs[1]


def test_parse_blocks_are_bounded_in_bytes_but_never_below_a_batch(data):
  # MNIST: 28x28x1 float32 pixels, 3,136 bytes a record.
  assert input_pipeline.parse_block(data.output, 128) == (
      input_pipeline.PARSE_BLOCK)
  assert input_pipeline.parse_block(data.output, 4096) == 4096
  # Batches come out whole whatever the block: 64 records in batches of 24.
  dataset = input_pipeline.make_dataset(
      _pattern(data.uri, 'train'), data.output, 24, training=False,
      cache=False)
  assert [int(images.shape[0]) for images, _ in dataset] == [24, 24, 16]
