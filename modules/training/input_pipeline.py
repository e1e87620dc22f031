"""The Trainer's inputs: class names, split files and geometry, and its
input_fn from sharded, gzipped raw Examples to model batches.

Each split is cached in memory or streamed from its shards (`plan_inputs`),
then parsed and transformed per batch. Why and how: docs/training.md, "Input".
"""

import dataclasses
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from absl import logging
import tensorflow as tf
import tensorflow_transform as tft
from tfx.components.trainer.fn_args_utils import FnArgs

from modules.training.config import (VALIDATION_SPLIT_KEY, InputConfig,  # pylint: disable=g-multiple-import
                                     TrainingConfig)
from records import features
from records import shards


AUTOTUNE = tf.data.AUTOTUNE

# What a record held in memory (tf.data's cache, a shuffle buffer) costs on
# top of its serialized bytes: its tensor and the allocator's rounding
# (measured by caching MNIST, rounded up; a shuffle over the cache shares
# the cache's buffers).
RECORD_OVERHEAD_BYTES = 512
# Records per batch when measuring a split (one pass over its shards).
_MEASURE_BATCH = 4096
# Training reads each shard in blocks of this many records: the parallel
# interleave then hands over a block where it handed over a record, which
# brings the read's CPU time close to the bare read's.
READ_BLOCK = 64
# Records parsed and transformed in one call, then cut into batches: each
# call of the transform graph has a fixed cost, which small batches would
# repeat many times an epoch. Bounded in bytes too (of transformed float32
# pixels): large images need no such amortising.
PARSE_BLOCK = 1024
PARSE_BLOCK_BYTES = 8 << 20
# Streaming: chunks shuffled at once, as a share of the shuffle buffer (one
# chunk filling, one shuffled and waiting, one being cut into blocks).
CHUNKS_IN_FLIGHT = 3


@dataclasses.dataclass(frozen=True)
class SplitSize:
  """A split's shards, on disk and in memory."""
  files: int
  records: int
  record_bytes: int  # Serialized records, uncompressed.
  disk_bytes: int  # The gzipped shards.

  @property
  def memory_bytes(self) -> int:
    """What caching the split would take."""
    return self.record_bytes + self.records * RECORD_OVERHEAD_BYTES

  @property
  def bytes_per_record(self) -> float:
    """What caching one record takes, on average."""
    return self.memory_bytes / max(self.records, 1)


@dataclasses.dataclass(frozen=True)
class InputPlan:
  """How one split is read, and why."""
  split: str
  training: bool
  cache: bool
  shuffle_buffer: Optional[int]  # Records; training only.
  cycle_length: int  # Shards read at once.
  budget: int  # Bytes this split could have (what the others left).
  size: SplitSize

  def dataset_args(self) -> Dict[str, Any]:
    """make_dataset's arguments for this plan."""
    return dict(training=self.training, cache=self.cache,
                shuffle_buffer=self.shuffle_buffer,
                cycle_length=self.cycle_length)

  def to_dict(self) -> Dict[str, Any]:
    """Returns the plan as JSON-able values, with how it reads the split."""
    return {**dataclasses.asdict(self), 'read': 'cache' if self.cache
            else 'stream', 'memory_bytes': self.size.memory_bytes}

  def describe(self) -> str:
    """Says in one line how the split is read, and why."""
    s = self.size
    amount = (f'{s.records:,} records, {_mb(s.memory_bytes)} in memory '
              f'({_mb(s.disk_bytes)} gzipped in {s.files} shards)')
    if self.cache:
      how = (f'cached in memory: {amount} fit the {_mb(self.budget)} '
             'budget')
      if self.training:
        how += f'; shuffled through all {self.shuffle_buffer:,} records'
      return f'{self.split}: {how}'
    how = (f'streamed from disk: {amount} exceed the {_mb(self.budget)} '
           f'budget; {self.cycle_length} shards read at once')
    if self.training:
      how += (f', shards reshuffled each epoch, shuffled in chunks of '
              f'{chunk_records(self.shuffle_buffer):,} records, '
              f'{CHUNKS_IN_FLIGHT} in flight '
              f'(~{_mb(self.shuffle_buffer * s.bytes_per_record)})')
    else:
      how += ', in a fixed order'
    return f'{self.split}: {how}'


def _mb(n: float) -> str:
  return f'{n / 2**30:.2f} GiB' if n >= 2**30 else f'{n / 2**20:.1f} MiB'


def list_files(file_patterns: Union[str, Sequence[str]]) -> List[str]:
  """Returns the files matching `file_patterns`, sorted.

  Raises:
    ValueError: no file matches.
  """
  patterns = [file_patterns] if isinstance(file_patterns, str) else file_patterns
  files = sorted(f for p in patterns for f in tf.io.gfile.glob(p))
  if not files:
    raise ValueError(f'no files match {list(patterns)}')
  return files


def measure(file_patterns: Union[str, Sequence[str]]) -> SplitSize:
  """Measures a split's records, their bytes and the shards' size.

  The records are counted in one parallel pass over the gzipped shards.
  Reading is the only way to know, since gzip's size trailer is modulo
  4 GiB, and a compression ratio guessed from one shard would be only a
  guess.
  """
  files = list_files(file_patterns)
  dataset = shards.interleaved_batches(files, _MEASURE_BATCH)
  records, record_bytes = dataset.reduce(
      (tf.constant(0, tf.int64), tf.constant(0, tf.int64)),
      lambda total, batch: (
          total[0] + tf.size(batch, tf.int64),
          total[1] + tf.reduce_sum(tf.cast(tf.strings.length(batch),
                                           tf.int64))))
  return SplitSize(files=len(files), records=int(records),
                   record_bytes=int(record_bytes),
                   disk_bytes=sum(tf.io.gfile.stat(f).length for f in files))


def plan_split(split: str, size: SplitSize, config: InputConfig,
               training: bool, budget: int) -> InputPlan:
  """Plans to cache the split if it fits `budget` bytes, else to stream it.

  Args:
    split: the split's name in the plan's log line.
    size: the split's shards and records, as `measure` found them.
    config: the Trainer's input settings (the streaming shuffle buffer's
      bytes, the shards read at once).
    training: whether the split is shuffled for training.
    budget: the bytes of memory the split may take.
  """
  cache = size.memory_bytes <= budget
  if not training:
    shuffle_buffer = None
  elif cache:  # A uniform shuffle: the whole split.
    shuffle_buffer = max(size.records, 1)
  else:  # Bounded in bytes, and by the budget too.
    shuffle_buffer = max(1, int(min(config.shuffle_buffer_bytes, budget) //
                                max(size.bytes_per_record, 1)))
  return InputPlan(
      split=split, training=training, cache=cache,
      shuffle_buffer=shuffle_buffer,
      cycle_length=size.files if cache else min(size.files,
                                                config.cycle_length),
      budget=budget, size=size)


def plan_inputs(train: SplitSize, evaluation: SplitSize,
                config: InputConfig) -> Tuple[InputPlan, InputPlan]:
  """Plans the training split, then the evaluation split.

  The training split is planned against the whole budget. Evaluation gets
  what it leaves: the budget less its cache, or less its shuffle buffer
  when streamed.

  Args:
    train: the training split's size.
    evaluation: the evaluation split's size.
    config: the Trainer's input settings, with the memory budget.

  Returns:
    (the training split's plan, the evaluation split's plan).
  """
  train_plan = plan_split(features.TRAIN_SPLIT, train, config, True,
                          config.memory_budget)
  held = (train.memory_bytes if train_plan.cache else
          train_plan.shuffle_buffer * train.bytes_per_record)
  eval_plan = plan_split(features.EVAL_SPLIT, evaluation, config, False,
                         max(0, int(config.memory_budget - held)))
  return train_plan, eval_plan


def plan_training(file_patterns: Union[str, Sequence[str]],
                  config: InputConfig) -> InputPlan:
  """Returns the training split's plan as plan_inputs decides it.

  The benchmarks use it, since they read the training split alone.
  """
  return plan_split(features.TRAIN_SPLIT, measure(file_patterns), config, True,
                    config.memory_budget)


def first_record(file_patterns: Union[str, Sequence[str]]) -> bytes:
  """Returns the first serialized record of the first shard not empty."""
  return next(iter(shards.records(list_files(file_patterns)).take(1))).numpy()


def chunk_records(shuffle_buffer: int) -> int:
  """Returns the records per chunk of the streaming shuffle (shuffle_chunks)."""
  return max(1, shuffle_buffer // CHUNKS_IN_FLIGHT)


def shuffle_chunks(blocks: tf.data.Dataset, records: int) -> tf.data.Dataset:
  """Cuts blocks of records into chunks of `records` records, each shuffled.

  Each chunk is in a uniformly random order. The last chunk of an epoch may
  be shorter. A chunk is shuffled by one vectorised op, where a tf.data
  shuffle buffer hands every record over one by one, at a CPU cost per
  record that a streaming epoch feels. A chunk mixes the `cycle_length`
  shards being read, READ_BLOCK records of each in turn. Shards are listed
  in a new order each epoch, and so are the chunks' records.
  """
  # Stateless, seeded per chunk from a seed stream that changes each epoch
  # (iteration): a stateful tf.random.shuffle would replay its first
  # epoch's orders whenever a global seed is set.
  seeds = tf.data.Dataset.random(rerandomize_each_iteration=True).batch(2)
  return (tf.data.Dataset.zip(blocks.rebatch(records), seeds)
          .map(tf.random.experimental.stateless_shuffle)
          .prefetch(1))


def parse_block(tf_transform_output: tft.TFTransformOutput,
                batch_size: int) -> int:
  """Returns the records per parse-and-transform call.

  That is PARSE_BLOCK, fewer if their pixels exceed PARSE_BLOCK_BYTES, and
  never fewer than a batch. A block of exactly a batch is not cut again.
  """
  shape = tf.TensorShape(tf_transform_output.transformed_feature_spec()[
      features.IMAGE_KEY].shape)
  record_bytes = 4 * max(1, shape.num_elements() or 1)
  return max(batch_size, min(PARSE_BLOCK, PARSE_BLOCK_BYTES // record_bytes))


def parse_and_transform(tf_transform_output: tft.TFTransformOutput):
  """Returns a function of serialized Examples [batch] to (images, labels)."""
  # The pixel range and the source are for data checks only: the transform
  # graph does not read them, and every feature parsed costs (the parse is
  # most of what the input_fn adds to reading the shards).
  raw_spec = {key: spec for key, spec in
              tf_transform_output.raw_feature_spec().items()
              if key not in features.DATA_CHECK_KEYS}
  transform = tf_transform_output.transform_features_layer()

  # tf.data would run this through AutoGraph, which converts the transform
  # layer's tf_keras code (model.compile_for_training says why): seconds
  # per dataset, for straight-line code.
  @tf.autograph.experimental.do_not_convert
  def fn(serialized: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    transformed = transform(tf.io.parse_example(serialized, raw_spec))
    return transformed[features.IMAGE_KEY], transformed[features.LABEL_KEY]

  return fn


def make_dataset(file_patterns: Union[str, Sequence[str]],
                 tf_transform_output: tft.TFTransformOutput,
                 batch_size: int,
                 training: bool,
                 shuffle_buffer: Optional[int] = None,
                 cache: bool = True,
                 repeat: bool = False,
                 cycle_length: Optional[int] = None,
                 ordered: bool = False) -> tf.data.Dataset:
  """Returns a dataset of (images, labels) batches of a split.

  Images are float32 [batch, H, W, C], labels int64 [batch].

  Args:
    file_patterns: the split's gzipped TFRecord files.
    tf_transform_output: the Transform graph.
    batch_size: records per batch.
    training: whether to shuffle the records.
    shuffle_buffer: records shuffled through this buffer when `training`
      (an InputPlan's, see plan_split); unused otherwise. Cached, it is a
      tf.data shuffle buffer. Streamed, it is cut into chunks
      (shuffle_chunks).
    cache: whether to cache the raw records in memory.
    repeat: whether to repeat the records without end.
    cycle_length: shards read at once (default: all of them).
    ordered: whether training too reads and parses in a fixed order, so
      that a seeded run repeats. Else it takes whichever shard or batch is
      ready first.

  Raises:
    ValueError: training without a shuffle_buffer, or no file matches.
  """
  if training and not shuffle_buffer:
    raise ValueError('training needs a shuffle_buffer of at least 1 record')
  files = list_files(file_patterns)
  ordered = ordered or not training
  dataset = tf.data.Dataset.from_tensor_slices(files)
  if training:  # A new order of shards each epoch (each iteration).
    dataset = dataset.shuffle(len(files), reshuffle_each_iteration=True)
  # Evaluation interleaves single records, in a fixed order.
  read_block = READ_BLOCK if training else None
  dataset = dataset.interleave(
      lambda path: _read_shard(path, read_block),
      cycle_length=min(cycle_length or len(files), len(files)),
      num_parallel_calls=AUTOTUNE, deterministic=ordered)
  streamed_training = training and not cache
  if cache:
    dataset = dataset.cache()
    if training:  # Uniform over the whole split, record by record.
      dataset = dataset.unbatch().shuffle(shuffle_buffer,
                                          reshuffle_each_iteration=True)
  elif training:
    dataset = shuffle_chunks(dataset, chunk_records(shuffle_buffer))
  if repeat:
    dataset = dataset.repeat()
  # Chunks are cut into blocks (rebatch: exact sizes but the last), single
  # records batched into them.
  parse_size = parse_block(tf_transform_output, batch_size)
  dataset = (dataset.rebatch(parse_size) if streamed_training
             else dataset.batch(parse_size))
  dataset = dataset.map(parse_and_transform(tf_transform_output),
                        num_parallel_calls=AUTOTUNE, deterministic=ordered)
  if parse_size != batch_size:
    dataset = dataset.rebatch(batch_size)
  # Without tf.data's autotuner: Keras drops each epoch's iterator, and
  # dropping one waits for its autotuning thread to wake from its current
  # sleep, which lengthens with the iterator's age (seconds per epoch by
  # the end). The AUTOTUNE values stay at tf.data's starting points (about
  # a call per core): the input costs little next to the model's steps.
  options = tf.data.Options()
  options.autotune.enabled = False
  return dataset.prefetch(AUTOTUNE).with_options(options)


def _read_shard(path: tf.Tensor, block: Optional[int]) -> tf.data.Dataset:
  records = shards.records(path)
  return records.batch(block) if block else records


def make_planned_dataset(file_patterns: Union[str, Sequence[str]],
                         tf_transform_output: tft.TFTransformOutput,
                         batch_size: int, plan: InputPlan,
                         repeat: bool = False,
                         ordered: bool = False) -> tf.data.Dataset:
  """Returns make_dataset's dataset as `plan` (plan_inputs) decided.

  Args:
    file_patterns: the split's gzipped TFRecord files.
    tf_transform_output: the Transform graph.
    batch_size: records per batch.
    plan: the split's plan: training or not, cached or streamed, its
      shuffle buffer and the shards read at once.
    repeat: whether to repeat the records without end.
    ordered: whether training too reads and parses in a fixed order, so
      that a seeded run repeats.
  """
  return make_dataset(file_patterns, tf_transform_output, batch_size,
                      repeat=repeat, ordered=ordered, **plan.dataset_args())


# The log line of each split's input plan: who reads it, and the plan.
INPUT_LINE = '%s input: %s.'


@dataclasses.dataclass(frozen=True)
class TrainerData:
  """What the Trainer reads of its inputs before it trains."""
  transform_output: tft.TFTransformOutput
  geometry: features.ImageGeometry
  class_names: List[str]
  validation: Optional[str]  # The split validated on; None: none.
  train_plan: InputPlan
  validation_plan: Optional[InputPlan]
  sample_record: bytes  # Any record, to read the transform's normalisation.

  @property
  def input_plans(self) -> List[InputPlan]:
    """The plans of the splits read: train's, then validation's if any."""
    return [p for p in (self.train_plan, self.validation_plan) if p]


def read_data(fn_args: FnArgs, config: TrainingConfig,
              reader: str = 'Trainer') -> TrainerData:
  """Reads the transform graph, the class names and the splits' sizes, and
  plans how to read each split, logged as `reader`'s input.

  Args:
    fn_args: TFX's FnArgs: the transform graph and the splits' files.
    config: the run's settings; its input settings plan each split.
    reader: the component named in the log lines, 'Trainer' or 'Tuner'.
  """
  transform_output = tft.TFTransformOutput(fn_args.transform_graph_path)
  validation = validation_split(fn_args)
  train_plan, validation_plan = plan_run_inputs(fn_args, config, validation)
  for input_plan in (train_plan, validation_plan):
    if input_plan:
      logging.info(INPUT_LINE, reader, input_plan.describe())
  return TrainerData(
      transform_output, image_geometry(transform_output),
      class_names_for(fn_args.train_files), validation, train_plan,
      validation_plan, first_record(fn_args.train_files))


def _examples_uri(train_files: List[str]) -> str:
  # train_files are <examples uri>/Split-train/*
  return os.path.dirname(os.path.dirname(train_files[0]))


def class_names_for(train_files: List[str]) -> List[str]:
  """Class names of the Examples artifact that `train_files` belong to."""
  return features.read_class_names(
      os.path.join(_examples_uri(train_files), features.CLASS_NAMES_FILE))


def split_files_for(train_files: List[str], split: str) -> List[str]:
  """The file pattern of split `split` of the Examples artifact that
  `train_files` belong to."""
  return [os.path.join(_examples_uri(train_files), f'Split-{split}', '*')]


def validation_split(fn_args: FnArgs) -> Optional[str]:
  """The split the Trainer (or the Tuner) validates on, None for none: as
  custom_config says (pipeline/stages.py, validation_config), else its eval
  files'."""
  if VALIDATION_SPLIT_KEY in (fn_args.custom_config or {}):
    return fn_args.custom_config[VALIDATION_SPLIT_KEY]
  return os.path.basename(os.path.dirname(fn_args.eval_files[0]))[
      len('Split-'):]


def plan_run_inputs(fn_args: FnArgs, config: TrainingConfig,
                    split: Optional[str]
                    ) -> Tuple[InputPlan, Optional[InputPlan]]:
  """(The train split's plan, the validation split's or None).

  Args:
    fn_args: TFX's FnArgs: the train and eval files.
    config: the run's settings; its input settings plan each split.
    split: the split validated on, named in its plan; None: the train split
      alone is planned, with the whole memory budget.
  """
  train = measure(fn_args.train_files)
  if split is None:
    return plan_split(features.TRAIN_SPLIT, train, config.input, True,
                      config.input.memory_budget), None
  train_plan, validation_plan = plan_inputs(
      train, measure(fn_args.eval_files), config.input)
  return train_plan, dataclasses.replace(validation_plan, split=split)


def image_geometry(
    tf_transform_output: tft.TFTransformOutput) -> features.ImageGeometry:
  """The geometry the transform graph was built for: the data's."""
  return features.ImageGeometry(*tf_transform_output.transformed_feature_spec()[
      features.IMAGE_KEY].shape)


def check_files_per_worker(fn_args: FnArgs, workers: int,
                           validation: Optional[str]) -> None:
  """Each worker reads its own files of a split: a split of fewer files
  than workers is an error, said before any worker starts.

  Args:
    fn_args: TFX's FnArgs: the train and eval files.
    workers: the number of workers.
    validation: the split validated on, read from the eval files; None: the
      train split alone is checked.

  Raises:
    ValueError: a split has fewer files than `workers`.
  """
  for split, patterns in ((features.TRAIN_SPLIT, fn_args.train_files),
                          *([(validation, fn_args.eval_files)]
                            if validation else [])):
    files = list_files(patterns)
    if len(files) < workers:
      raise ValueError(
          f'{workers} Trainer workers need at least {workers} files per '
          f'split, and the {split} split has {len(files)} '
          f'({", ".join(patterns)}): each worker reads its own files. Write '
          f'more shards (--num-shards) or train on fewer workers.')
