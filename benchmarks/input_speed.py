"""Section 2, input pipeline: examples/s over one epoch of the train split.

  reference  the tutorial input_fn on the tutorial's files;
  ours       the Trainer's input_fn (modules/input_pipeline.make_dataset,
             training=True: shuffled shards, parallel interleave, cache,
             60k shuffle, batch, parse + transform graph per batch) on the
             shards our ExampleGen wrote, with a real tf.Transform graph;
  bare read  the same shards read the same way (parallel interleave of
             gzipped TFRecordDatasets) and batched, with no parsing, no
             shuffle, no transform: the ceiling for reading these files.

Each dataset is built outside the timer; the timer covers iterating one
epoch. "cold" is a dataset's first epoch (files read and decompressed; ours
fills its cache); "cached" is a later epoch of ours, served from tf.data's
in-memory cache. The goals apply to the cold epoch.

CPU s: the process's CPU time per epoch (all tf.data threads): on a machine
with few cores, a pipeline that does more work per example than the bare
read cannot keep up with it however well it overlaps.
"""

import dataclasses
import time
from typing import Callable, Dict, List

import tensorflow as tf
import tensorflow_transform as tft

from benchmarks import reference_tutorial
from benchmarks.timing import Figure, timed
from modules import input_pipeline


def bare_read(file_pattern: str, batch_size: int) -> tf.data.Dataset:
  files = input_pipeline.list_files(file_pattern)
  return tf.data.Dataset.from_tensor_slices(files).interleave(
      lambda path: tf.data.TFRecordDataset(path, compression_type='GZIP'),
      cycle_length=len(files), num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=False).batch(batch_size).prefetch(tf.data.AUTOTUNE)


def epoch(dataset: tf.data.Dataset) -> int:
  """Iterates one epoch; returns the number of examples seen."""
  count = 0
  for batch in dataset:
    first = batch[0] if isinstance(batch, tuple) else batch
    count += int(first.shape[0])
  return count


@dataclasses.dataclass
class Result:
  batch_size: int
  examples: int
  rate: Dict[str, Figure]  # examples/s per variant
  cpu_seconds: Dict[str, Figure]  # process CPU seconds per epoch


def run(reference_files: List[str], our_pattern: str,
        transform_output: tft.TFTransformOutput, batch_size: int,
        repetitions: int) -> Result:
  makers: Dict[str, Callable[[], tf.data.Dataset]] = {
      'reference': lambda: reference_tutorial.input_fn(
          reference_files, batch_size, repeat=False),
      'ours, cold': lambda: input_pipeline.make_dataset(
          our_pattern, transform_output, batch_size, training=True),
      'bare read': lambda: bare_read(our_pattern, batch_size),
  }
  names = [*makers, 'ours, cached']
  rate = {name: Figure() for name in names}
  cpu = {name: Figure() for name in names}
  examples = 0

  def measure(name: str, dataset: tf.data.Dataset) -> None:
    nonlocal examples
    cpu_start = time.process_time()
    seconds, examples = timed(lambda: epoch(dataset))
    cpu[name].add(time.process_time() - cpu_start)
    rate[name].add(examples / seconds)

  for _ in range(repetitions):  # Interleaved, so noise hits all alike.
    for name, make in makers.items():
      dataset = make()
      measure(name, dataset)
      if name == 'ours, cold':  # The same dataset again: from its cache.
        measure('ours, cached', dataset)
  return Result(batch_size=batch_size, examples=examples, rate=rate,
                cpu_seconds=cpu)
