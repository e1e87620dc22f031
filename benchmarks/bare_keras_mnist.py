"""The reference the pipeline races: a bare Keras script on MNIST in memory.

No project code: the seeds' CNN in float32 on numpy arrays, evaluated on the
t10k files after every epoch, stopping at the first epoch that reaches
--target (or --max-epochs). Its last line is JSON.
"""

import argparse
import gzip
import json
import os
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position
import tf_keras as keras  # pylint: disable=g-import-not-at-top,wrong-import-position


def read_idx(path: str) -> np.ndarray:
  """One IDX file as an array."""
  with gzip.open(path) as f:
    data = f.read()
  dims = data[3]
  shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], 'big')
           for i in range(dims)]
  return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(data_dir: str, prefix: str):
  """(float32 images [N, 28, 28, 1], labels) of a split."""
  images = read_idx(os.path.join(data_dir, f'{prefix}-images-idx3-ubyte.gz'))
  labels = read_idx(os.path.join(data_dir, f'{prefix}-labels-idx1-ubyte.gz'))
  return images[..., None].astype('float32'), labels


def seeds_cnn() -> keras.Model:
  """The seeds' CNN."""
  layers = keras.layers
  return keras.Sequential([
      keras.Input((28, 28, 1)),
      layers.Conv2D(32, 5, padding='same', activation='relu'),
      layers.MaxPool2D(),
      layers.Conv2D(64, 5, padding='same', activation='relu'),
      layers.MaxPool2D(),
      layers.Flatten(),
      layers.Dense(1024, activation='relu'),
      layers.Dropout(0.4),
      layers.Dense(10),
  ])


def main() -> None:
  """Trains to --target; prints the result as JSON."""
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--data-dir', required=True)
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--target', type=float, default=0.993)
  parser.add_argument('--max-epochs', type=int, default=12)
  parser.add_argument('--steps-per-epoch', type=int, default=None,
                      help='Fewer steps per epoch (a quick check).')
  args = parser.parse_args()
  keras.utils.set_random_seed(args.seed)
  train_images, train_labels = load(args.data_dir, 'train')
  test_images, test_labels = load(args.data_dir, 't10k')
  mean, std = train_images.mean(), train_images.std()
  train_images = (train_images - mean) / std
  test_images = (test_images - mean) / std

  model = seeds_cnn()
  model.compile(
      optimizer=keras.optimizers.Adam(1e-3),
      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      metrics=['accuracy'])
  accuracy, seconds = [], []
  for _ in range(args.max_epochs):
    start = time.perf_counter()
    model.fit(train_images, train_labels, batch_size=128, epochs=1,
              steps_per_epoch=args.steps_per_epoch, verbose=0)
    accuracy.append(model.evaluate(test_images, test_labels, batch_size=1000,
                                   verbose=0)[1])
    seconds.append(time.perf_counter() - start)
    print(f'epoch {len(accuracy)}: test accuracy {accuracy[-1]:.4f} in '
          f'{seconds[-1]:.1f}s', flush=True)
    if accuracy[-1] >= args.target:
      break
  print(json.dumps({'epochs': len(accuracy), 'test_accuracy': accuracy,
                    'epoch_seconds': seconds}))


if __name__ == '__main__':
  main()
