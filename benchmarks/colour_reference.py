"""The bare Keras reference of the colour time-to-accuracy section.

The Trainer's network, batch, precision, optimizer and loss, trained by a
plain `model.fit` on in-memory arrays of the Transform graph's output, until
validation accuracy reaches --target; run in a process of its own.
"""

import argparse
import json
import os
import sys
import time
from typing import Optional, Sequence

from pipeline import startup

startup.quiet_tensorflow()  # Before anything imports TensorFlow.


def arrays(pattern: str, transform_output):
  """(images float32 [N, H, W, C], labels [N]) of a split, transformed."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from modules.training import input_pipeline  # pylint: disable=g-import-not-at-top
  batches = list(input_pipeline.make_dataset(
      pattern, transform_output, 1024, training=False, cache=False))
  return tuple(np.concatenate([b[i].numpy() for b in batches])
               for i in (0, 1))


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Trains the reference loop on the Examples and writes its epoch times
  and accuracies to --out; returns the exit code."""
  parser = argparse.ArgumentParser(
      description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--examples', required=True,
                      help='An Examples artifact\'s URI.')
  parser.add_argument('--transform', required=True,
                      help='A transform graph artifact\'s URI.')
  parser.add_argument('--epochs', type=int, required=True,
                      help='Most epochs; the learning rate\'s one cycle '
                      'spans them.')
  parser.add_argument('--target', type=float, required=True,
                      help='Stop at the first epoch of at least this '
                      'validation accuracy.')
  parser.add_argument('--no-mixed-precision', dest='mixed_precision',
                      action='store_false')
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--out', required=True, help='The result, as JSON.')
  args = parser.parse_args(argv)

  import tensorflow_transform as tft  # pylint: disable=g-import-not-at-top
  import tf_keras as keras  # pylint: disable=g-import-not-at-top
  from modules.training import devices  # pylint: disable=g-import-not-at-top
  from modules.training import input_pipeline  # pylint: disable=g-import-not-at-top
  from modules.training import model as model_lib  # pylint: disable=g-import-not-at-top
  from modules.training import plan as training_plan  # pylint: disable=g-import-not-at-top
  from modules.training.config import TrainingConfig  # pylint: disable=g-import-not-at-top

  config = TrainingConfig()
  output = tft.TFTransformOutput(args.transform)
  geometry = input_pipeline.image_geometry(output)
  x, y = arrays(os.path.join(args.examples, 'Split-train', '*'), output)
  xv, yv = arrays(os.path.join(args.examples, 'Split-eval', '*'), output)
  classes = int(max(y.max(), yv.max())) + 1
  plan = training_plan.plan(config.budget, config.model, geometry, len(y))
  device_plan = devices.plan([], config.batch_size, args.mixed_precision)
  keras.utils.set_random_seed(args.seed)
  keras.mixed_precision.set_global_policy(device_plan.precision)
  batch = device_plan.global_batch_size
  model = model_lib.build(plan.architecture, geometry, classes, config.model)
  model_lib.compile_for_training(model, config, classes,
                                 args.epochs * -(-len(y) // batch))

  epoch_s, accuracy = [], []

  class Clock(keras.callbacks.Callback):
    """Each epoch's wall time (training and validation); stops at the
    target."""

    def on_epoch_begin(self, epoch, logs=None):
      self.started = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
      epoch_s.append(time.perf_counter() - self.started)
      accuracy.append(float(logs['val_accuracy']))
      print(f'reference epoch {epoch + 1}: {epoch_s[-1]:.1f}s, val_accuracy '
            f'{accuracy[-1]:.4f}', flush=True)
      if accuracy[-1] >= args.target:
        self.model.stop_training = True

  cpu_start, wall_start = time.process_time(), time.perf_counter()
  model.fit(x, y, batch_size=batch, epochs=args.epochs,
            validation_data=(xv, yv), validation_batch_size=batch,
            callbacks=[Clock()], verbose=0)
  result = {
      'cpu_s': time.process_time() - cpu_start,
      'wall_s': time.perf_counter() - wall_start,
      'epoch_s': epoch_s, 'val_accuracy': accuracy,
      'train_records': len(y), 'precision': device_plan.precision,
      'reached': bool(accuracy and accuracy[-1] >= args.target),
  }
  with open(args.out, 'w') as f:
    json.dump(result, f)
  return 0


if __name__ == '__main__':
  sys.exit(main())
