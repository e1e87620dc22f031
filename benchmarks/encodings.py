"""The encodings section: raw, PNG or JPEG records of the shapes dataset
(data/shapes.py) at each size, converted by our ExampleGen and read by the
Trainer's input_fn; and Keras's image_dataset_from_directory on the same
folder, normalised as ours."""

import dataclasses
import os
from typing import Dict

from benchmarks import harness
from benchmarks.harness import Figure, timed
from records import features

SIZES = (96, 224)
KERAS_SIZE = 96
PER_CLASS = 300
QUICK_PER_CLASS = 3


@dataclasses.dataclass
class Result:
  """One size's measurements."""
  geometry: features.ImageGeometry
  images: int  # Training images, read once per epoch.
  per_class: int
  conversion_s: Dict[str, float]  # Encoding -> ExampleGen's seconds.
  rates: Dict[str, Figure]  # Variant -> examples/s.
  bytes_read: Dict[str, int]  # Variant -> bytes of the files it reads.


def keras_dataset(train_dir: str, size: int, batch_size: int, mean, variance,
                  cache: bool):
  """image_dataset_from_directory on the folder, normalised as ours."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tf_keras as keras  # pylint: disable=g-import-not-at-top
  from modules import transform  # pylint: disable=g-import-not-at-top
  dataset = keras.utils.image_dataset_from_directory(
      train_dir, label_mode='int', color_mode='rgb', image_size=(size, size),
      batch_size=batch_size, shuffle=True, seed=0)
  # It yields float32 0..255 images: the same normalisation as ours.
  dataset = dataset.map(
      lambda images, labels: (transform.normalise(
          tf.cast(images, tf.uint8), mean, variance), labels),
      num_parallel_calls=tf.data.AUTOTUNE)
  return (dataset.cache() if cache else dataset).prefetch(tf.data.AUTOTUNE)


def measure(work_dir: str, per_class: int, repetitions: int, batch_size: int,
            size: int, with_keras: bool) -> Result:
  """Builds the data, measures every variant."""
  from data import shapes  # pylint: disable=g-import-not-at-top
  from modules.training import input_pipeline  # pylint: disable=g-import-not-at-top
  from modules import transform  # pylint: disable=g-import-not-at-top
  from tests import transform_analysis  # pylint: disable=g-import-not-at-top
  geometry = features.ImageGeometry(size, size, 3)
  data_dir = os.path.join(work_dir, f'shapes-{size}')
  shapes.write(data_dir, per_class, size, eval_per_class=max(1, per_class // 5))
  patterns, outputs, conversion = {}, {}, {}
  for encoding in features.IMAGE_ENCODINGS:
    out = os.path.join(work_dir, f'examples-{size}-{encoding}')
    conversion[encoding], examples = timed(lambda: harness.example_gen(  # pylint: disable=cell-var-from-loop
        data_dir, out, harness.IN_MEMORY, input_format='images', geometry=geometry,
        image_encoding=encoding))
    patterns[encoding] = os.path.join(examples.uri, 'Split-train', '*')
    outputs[encoding] = transform_analysis.analyze(
        patterns[encoding], geometry,
        os.path.join(work_dir, f'tft-{size}-{encoding}'), harness.IN_MEMORY, encoding)
  first = features.IMAGE_ENCODINGS[0]
  mean, variance = transform.normalisation_constants(
      outputs[first], input_pipeline.first_record(patterns[first]))
  train_dir = os.path.join(data_dir, 'train')
  rates: Dict[str, Figure] = {}
  examples = 0

  def run_epoch(name: str, dataset) -> None:
    nonlocal examples
    seconds, _, examples = harness.timed_epoch(dataset)
    rates.setdefault(name, Figure()).add(examples / seconds)

  input_config = harness.TRAINING.input
  for _ in range(repetitions):  # Interleaved, so noise hits all alike.
    if with_keras:
      run_epoch('keras', keras_dataset(train_dir, size, batch_size, mean,
                                       variance, cache=False))
      cached = keras_dataset(train_dir, size, batch_size, mean, variance,
                             cache=True)
      harness.epoch(cached)
      run_epoch('keras, cached', cached)
    for encoding, pattern in patterns.items():
      dataset = input_pipeline.make_planned_dataset(
          pattern, outputs[encoding], batch_size,
          input_pipeline.plan_training(pattern, input_config))
      run_epoch(f'ours {encoding}, cold', dataset)
      run_epoch(f'ours {encoding}, cached', dataset)
  read = {f'ours {e}, {s}': harness.bytes_on_disk(p)
          for e, p in patterns.items() for s in ('cold', 'cached')}
  if with_keras:
    read['keras'] = read['keras, cached'] = harness.bytes_on_disk(train_dir)
  return Result(geometry=geometry, images=examples, per_class=per_class,
                conversion_s=conversion,
                rates=rates, bytes_read=read)


def measure_sizes(ctx: harness.Context) -> Dict[int, Result]:
  """Every size; Keras's reader at KERAS_SIZE."""
  results = {}
  for size in SIZES:
    print(f'  encodings: {size}x{size}x3', flush=True)
    results[size] = measure(ctx.work_dir, ctx.pick(PER_CLASS, QUICK_PER_CLASS),
                            ctx.repetitions, harness.TRAINING.batch_size, size,
                            with_keras=size == KERAS_SIZE)
  return results


def render(results: Dict[int, Result], ctx: harness.Context) -> Dict:
  """What templates/encodings.md.j2 reads: each encoding's bytes and speed,
  and Keras's reader against ours."""
  del ctx  # The template reads it.
  return dict(
      results=results, some=next(iter(results.values())),
      keras=next((r for r in results.values() if 'keras' in r.rates), None),
      default=harness.DATA.image_encoding,
      defaults=[f'{r.geometry} {harness.default_encoding(r.geometry)}'
                for r in results.values()])


SECTION = harness.Section(
    heading='## Encodings: raw, PNG or JPEG records, and '
    'image_dataset_from_directory', measure=measure_sizes, render=render,
    template='encodings.md.j2')
