"""Section 2, input pipeline: examples/s and CPU time over one epoch of the
train split, fed by the tutorial input_fn, the Trainer's, and a bare read of
the same shards (core.py's text says what each is); and the CPU of ours'
stages alone, to say where its extra CPU goes."""

import dataclasses
import time
from typing import Callable, Dict, List, Optional, Tuple

import tensorflow as tf
import tensorflow_transform as tft

from benchmarks import reference_tutorial
from benchmarks import runs
from benchmarks.figures import Figure, figures, timed
from modules import input_pipeline
from records import features


def bare_read(file_pattern: str, batch_size: int) -> tf.data.Dataset:
  """A gzipped TFRecordDataset per shard, batched inside a parallel
  interleave (whole batches move through it, not single records), with no
  parsing, shuffle or transform."""
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
  spec = transform_output.raw_feature_spec()
  parsed = [tf.io.parse_example(b, spec) for b in batches]
  parsed = {key: tf.stack([p[key] for p in parsed]) for key in spec}
  layer = transform_output.transform_features_layer()
  stages = {
      'parse': lambda: tf.data.Dataset.from_tensor_slices(
          tf.stack(batches)).map(
              lambda b: tf.io.parse_example(b, spec)[features.LABEL_KEY]),
      'transform': lambda: tf.data.Dataset.from_tensor_slices(parsed).map(
          lambda b: layer(b)[features.LABEL_KEY]),
  }
  for make in stages.values():  # Warm-up: the per-batch cost is wanted.
    epoch(make())
  return stages


def epoch(dataset, records: Optional[int] = None) -> int:
  """Iterates one epoch; returns the number of examples seen.

  With `records`, stops at the epoch's last record instead of waiting for
  the end of the sequence, which tf.data's parallel interleave can signal
  long after the last batch, more so on a busy machine: that wait is not
  reading.
  """
  count = 0
  for batch in dataset:
    count += int((batch[0] if isinstance(batch, tuple) else batch).shape[0])
    if records is not None and count >= records:
      break
  return count


def timed_epoch(dataset, records: Optional[int] = None
                ) -> Tuple[float, float, int]:
  """(wall s, process CPU s, examples) of one epoch of a dataset built
  beforehand (traced outside the timer)."""
  cpu_start = time.process_time()
  seconds, examples = timed(lambda: epoch(dataset, records))
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
  plan = input_pipeline.plan_training(our_pattern, runs.TRAINING.input)
  makers = {
      'reference': lambda: reference_tutorial.input_fn(
          reference_files, batch_size, repeat=False),
      'ours, cold': lambda: input_pipeline.make_planned_dataset(
          our_pattern, transform_output, batch_size, plan),
      'bare read': lambda: bare_read(our_pattern, batch_size),
  }
  names = [*makers, 'ours, cached']
  rate, cpu = figures(names), figures(names)
  stages = stage_datasets(our_pattern, transform_output, batch_size)
  stage_cpu = figures(stages)
  for _ in range(repetitions):  # Interleaved, so noise hits all alike.
    for name, make in makers.items():
      dataset = make()
      # Ours a second time: the same dataset, from its cache.
      for shown in [name] + (['ours, cached'] if name == 'ours, cold' else []):
        seconds, cpu_seconds, examples = timed_epoch(dataset)
        cpu[shown].add(cpu_seconds)
        rate[shown].add(examples / seconds)
    for name, make in stages.items():
      _, cpu_seconds, staged = timed_epoch(make())
      stage_cpu[name].add(cpu_seconds * examples / staged)  # Per epoch.
  return Result(batch_size=batch_size, examples=examples, rate=rate,
                cpu_seconds=cpu, stage_cpu_seconds=stage_cpu)
