"""Section 2, input pipeline: examples/s over one epoch of the train split.

  reference  the tutorial input_fn on the tutorial's files;
  ours       the Trainer's input_fn (modules/input_pipeline.make_dataset,
             training=True, as the Trainer plans it: on MNIST shuffled
             shards, parallel interleave, cache, a shuffle through the
             whole split, batch, parse + transform graph per batch) on the
             shards our ExampleGen wrote, with a real tf.Transform graph;
  bare read  the same shards as fast as tf.data reads them: one gzipped
             TFRecordDataset per shard, batched inside a parallel
             interleave, with no parsing, no shuffle, no transform: the
             ceiling for reading these files. (Batching inside the
             interleave moves whole batches instead of single records
             through it: 1.7x the rate of interleaving records and
             batching after, which ours' cached epochs outran.)

Each dataset is built outside the timer; the timer covers iterating one
epoch. "cold" is a dataset's first epoch (files read and decompressed; ours
fills its cache); "cached" is a later epoch of ours, served from tf.data's
in-memory cache. The goals apply to the cold epoch.

CPU s: the process's CPU time per epoch (all tf.data threads): on a machine
with few cores, a pipeline that does more work per example than the bare
read cannot keep up with it however well it overlaps. Where ours' extra CPU
goes is measured stage by stage, after a warm-up, on batches already in
memory: `parse` (tf.io.parse_example of the raw feature spec) and
`transform` (the tf.Transform graph on parsed batches).
"""

import dataclasses
import time
from typing import Callable, Dict, List, Optional, Tuple

import tensorflow as tf
import tensorflow_transform as tft

from benchmarks import reference_tutorial
from benchmarks.timing import Figure, timed
from modules import input_pipeline
from modules.training_config import InputConfig
from records import features


def bare_read(file_pattern: str, batch_size: int) -> tf.data.Dataset:
  files = input_pipeline.list_files(file_pattern)
  return tf.data.Dataset.from_tensor_slices(files).interleave(
      lambda path: tf.data.TFRecordDataset(
          path, compression_type='GZIP').batch(batch_size),
      cycle_length=len(files), num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=False).prefetch(tf.data.AUTOTUNE)


def stage_datasets(file_pattern: str, transform_output: tft.TFTransformOutput,
                   batch_size: int) -> Dict[str, Callable[[], tf.data.Dataset]]:
  """Datasets that run one stage of ours over full batches held in memory."""
  read = list(bare_read(file_pattern, batch_size))
  # Full batches only (they stack), or the one partial batch of a subset
  # smaller than a batch.
  batches = [b for b in read if b.shape[0] == batch_size] or read[:1]
  records = tf.stack(batches)
  spec = transform_output.raw_feature_spec()
  parsed_batches = [tf.io.parse_example(b, spec) for b in batches]
  parsed = {key: tf.stack([p[key] for p in parsed_batches]) for key in spec}
  layer = transform_output.transform_features_layer()
  stages = {
      'parse': lambda: tf.data.Dataset.from_tensor_slices(records).map(
          lambda batch: tf.io.parse_example(batch, spec)[features.LABEL_KEY]),
      'transform': lambda: tf.data.Dataset.from_tensor_slices(parsed).map(
          lambda batch: layer(batch)[features.LABEL_KEY]),
  }
  for make in stages.values():  # Warm-up: the per-batch cost is wanted.
    epoch(make())
  return stages


def epoch(dataset: tf.data.Dataset, records: Optional[int] = None) -> int:
  """Iterates one epoch; returns the number of examples seen.

  With `records`, stops at the epoch's last record instead of waiting for
  the end of the sequence: tf.data's parallel interleave signalled it up to
  ~1 s after the last batch in some epochs, of the bare read and ours alike
  (measured at 10x MNIST: the last of 600,000 records at 1.55 s, the end at
  2.57 s), more often while other processes ran, which made both rates jump
  between ~230,000 and ~450,000 examples/s.
  """
  count = 0
  for batch in dataset:
    first = batch[0] if isinstance(batch, tuple) else batch
    count += int(first.shape[0])
    if records is not None and count >= records:
      break
  return count


def _timed_epoch(dataset: tf.data.Dataset) -> Tuple[float, float, int]:
  """(wall s, process CPU s, examples) of one epoch of a dataset built
  beforehand (traced outside the timer)."""
  cpu_start = time.process_time()
  seconds, examples = timed(lambda: epoch(dataset))
  return seconds, time.process_time() - cpu_start, examples


@dataclasses.dataclass
class Result:
  batch_size: int
  examples: int
  rate: Dict[str, Figure]  # examples/s per variant
  cpu_seconds: Dict[str, Figure]  # process CPU seconds per epoch
  stage_cpu_seconds: Dict[str, Figure]  # 'parse', 'transform': per epoch


def run(reference_files: List[str], our_pattern: str,
        transform_output: tft.TFTransformOutput, batch_size: int,
        repetitions: int) -> Result:
  # As the Trainer decides (full MNIST: cached, a whole-split shuffle).
  plan = input_pipeline.plan_training(our_pattern,
                                      InputConfig())
  makers: Dict[str, Callable[[], tf.data.Dataset]] = {
      'reference': lambda: reference_tutorial.input_fn(
          reference_files, batch_size, repeat=False),
      'ours, cold': lambda: input_pipeline.make_planned_dataset(
          our_pattern, transform_output, batch_size, plan),
      'bare read': lambda: bare_read(our_pattern, batch_size),
  }
  names = [*makers, 'ours, cached']
  rate = {name: Figure() for name in names}
  cpu = {name: Figure() for name in names}
  examples = 0

  def measure(name: str, dataset: tf.data.Dataset) -> None:
    nonlocal examples
    seconds, cpu_seconds, examples = _timed_epoch(dataset)
    cpu[name].add(cpu_seconds)
    rate[name].add(examples / seconds)

  stages = stage_datasets(our_pattern, transform_output, batch_size)
  stage_cpu = {name: Figure() for name in stages}
  for _ in range(repetitions):  # Interleaved, so noise hits all alike.
    for name, make in makers.items():
      dataset = make()
      measure(name, dataset)
      if name == 'ours, cold':  # The same dataset again: from its cache.
        measure('ours, cached', dataset)
    for name, make in stages.items():
      _, cpu_seconds, staged = _timed_epoch(make())
      stage_cpu[name].add(cpu_seconds * examples / staged)  # Per epoch.
  return Result(batch_size=batch_size, examples=examples, rate=rate,
                cpu_seconds=cpu, stage_cpu_seconds=stage_cpu)
