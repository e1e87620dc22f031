"""Section 3, training: how input-bound is the CNN? The Trainer's model,
fed by its input_fn or by the same images already in memory, runs the very
train step `model.fit` runs, for a fixed number of steps after warm-up."""

import dataclasses
from typing import Dict

import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
import tf_keras as keras

from benchmarks import runs
from benchmarks.figures import Figure, figures, timed
from modules import input_pipeline
from modules import model as model_lib
from records import features


@dataclasses.dataclass
class Result:
  batch_size: int
  steps: int
  rate: Dict[str, Figure]  # examples/s per feed


def _in_memory(pattern: str, transform_output: tft.TFTransformOutput,
               batch_size: int) -> tf.data.Dataset:
  """The train split decoded and normalised by our own input_fn, held as
  tensors: exactly what ours feeds, minus the reading."""
  batches = list(input_pipeline.make_dataset(
      pattern, transform_output, 1024, training=False, cache=False))
  dataset = tf.data.Dataset.from_tensor_slices(
      tuple(np.concatenate([b[i].numpy() for b in batches]) for i in (0, 1)))
  return dataset.batch(batch_size).cache().repeat().prefetch(tf.data.AUTOTUNE)


def run(pattern: str, transform_output: tft.TFTransformOutput,
        num_classes: int, steps: int, warmup_steps: int,
        repetitions: int) -> Result:
  training = runs.TRAINING
  batch_size = training.batch_size
  geometry = features.ImageGeometry(*transform_output.transformed_feature_spec()[
      features.IMAGE_KEY].shape)
  datasets = {
      'ours': input_pipeline.make_planned_dataset(
          pattern, transform_output, batch_size,
          input_pipeline.plan_training(pattern, training.input), repeat=True),
      'in memory': _in_memory(pattern, transform_output, batch_size),
  }
  feeds = {}
  for name, dataset in datasets.items():
    # As modules/trainer.run_fn builds and compiles it (on CPU).
    model = model_lib.build_cnn(geometry, num_classes, training.model)
    model.compile(
        optimizer=keras.optimizers.Adam(training.learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name='accuracy')])
    feeds[name] = (model.make_train_function(), iter(dataset))

  def train(name: str, n: int) -> None:
    step, iterator = feeds[name]
    for _ in range(n):
      logs = step(iterator)
    float(logs['loss'])  # Waits for the last step.

  for name in feeds:
    train(name, warmup_steps)
  rate = figures(feeds)
  for _ in range(repetitions):  # Interleaved, so noise hits both alike.
    for name in feeds:
      seconds, _ = timed(lambda: train(name, steps))  # pylint: disable=cell-var-from-loop
      rate[name].add(steps * batch_size / seconds)
  return Result(batch_size=batch_size, steps=steps, rate=rate)
