"""Section 3, training: how input-bound is the CNN?

The Trainer's CNN and compile settings, trained for a fixed number of steps
(after warm-up steps that build the train function and fill caches and
shuffle buffers), fed by
  ours       the Trainer's input_fn, as the Trainer builds it (repeat=True);
  in memory  the same images already decoded and normalised, as tensors:
             from_tensor_slices -> batch -> cache -> repeat -> prefetch.
Both run the very train step `model.fit` runs (`make_train_function`).
"""

import dataclasses
from typing import Dict

import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
import tf_keras as keras

from benchmarks.timing import Figure, timed
from modules import input_pipeline
from modules import model as model_lib
from modules.training_config import TrainingConfig
from records import features


def _compiled_cnn(geometry: features.ImageGeometry, num_classes: int):
  """As modules/trainer.run_fn builds and compiles it (on CPU)."""
  training = TrainingConfig()
  model = model_lib.build_cnn(geometry, num_classes, training.model)
  model.compile(
      optimizer=keras.optimizers.Adam(training.learning_rate),
      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      metrics=[keras.metrics.SparseCategoricalAccuracy(name='accuracy')])
  return model


def _in_memory(pattern: str, transform_output: tft.TFTransformOutput,
               batch_size: int) -> tf.data.Dataset:
  """The train split decoded and normalised by our own input_fn, held as
  tensors: exactly what ours feeds, minus the reading."""
  images, labels = [], []
  for x, y in input_pipeline.make_dataset(pattern, transform_output, 1024,
                                          training=False, cache=False):
    images.append(x.numpy())
    labels.append(y.numpy())
  dataset = tf.data.Dataset.from_tensor_slices(
      (np.concatenate(images), np.concatenate(labels)))
  return dataset.batch(batch_size).cache().repeat().prefetch(tf.data.AUTOTUNE)


@dataclasses.dataclass
class Result:
  batch_size: int
  steps: int
  rate: Dict[str, Figure]  # examples/s per feed


def run(pattern: str, transform_output: tft.TFTransformOutput,
        num_classes: int, steps: int, warmup_steps: int,
        repetitions: int) -> Result:
  batch_size = TrainingConfig().batch_size
  geometry = features.ImageGeometry(*transform_output.transformed_feature_spec()[
      features.IMAGE_KEY].shape)
  datasets = {
      'ours': input_pipeline.make_planned_dataset(
          pattern, transform_output, batch_size,
          input_pipeline.plan_training(pattern,
                                       TrainingConfig().input),
          repeat=True),
      'in memory': _in_memory(pattern, transform_output, batch_size),
  }
  feeds = {}
  for name, dataset in datasets.items():
    model = _compiled_cnn(geometry, num_classes)
    feeds[name] = (model.make_train_function(), iter(dataset))

  def train(name: str, n: int) -> None:
    step, iterator = feeds[name]
    for _ in range(n):
      logs = step(iterator)
    float(logs['loss'])  # Waits for the last step.

  for name in feeds:
    train(name, warmup_steps)
  rate = {name: Figure() for name in feeds}
  for _ in range(repetitions):  # Interleaved, so noise hits both alike.
    for name in feeds:
      seconds, _ = timed(lambda: train(name, steps))  # pylint: disable=cell-var-from-loop
      rate[name].add(steps * batch_size / seconds)
  return Result(batch_size=batch_size, steps=steps, rate=rate)
