"""The common tutorial pipeline for MNIST, reproduced as the baseline.

The pattern of the "MNIST to TFRecords" tutorials (TF 1.x
`convert_to_records.py` and its descendants), written to be fair to it:
docs/development.md, "Benchmarks".
"""

import os
from typing import List

import numpy as np
import tensorflow as tf

from records import features

NUM_FILES = 10
PIXELS_KEY = 'pixels'
HEIGHT_KEY, WIDTH_KEY, LABEL_KEY = (features.HEIGHT_KEY, features.WIDTH_KEY,
                                    features.LABEL_KEY)


def _int64(value: int) -> tf.train.Feature:
  return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def write_split(images: np.ndarray, labels: np.ndarray, out_dir: str,
                split: str) -> List[str]:
  """Writes one split as NUM_FILES TFRecord files; returns their paths."""
  os.makedirs(out_dir, exist_ok=True)
  paths = [os.path.join(out_dir, f'{split}-{i:05d}-of-{NUM_FILES:05d}.tfrecord')
           for i in range(NUM_FILES)]
  per_file = -(-len(images) // NUM_FILES)
  _, height, width = images.shape[:3]
  for i, path in enumerate(paths):
    with tf.io.TFRecordWriter(path) as writer:
      for image, label in zip(images[i * per_file:(i + 1) * per_file],
                              labels[i * per_file:(i + 1) * per_file]):
        pixels = (image.astype(np.float32) / 255.0).reshape(-1).tolist()
        example = tf.train.Example(features=tf.train.Features(feature={
            HEIGHT_KEY: _int64(height),
            WIDTH_KEY: _int64(width),
            LABEL_KEY: _int64(int(label)),
            PIXELS_KEY: tf.train.Feature(
                float_list=tf.train.FloatList(value=pixels)),
        }))
        writer.write(example.SerializeToString())
  return paths


def input_fn(files: List[str], batch_size: int,
             repeat: bool = True) -> tf.data.Dataset:
  """The tutorial input_fn: (images [batch, 28, 28, 1] float32, labels)."""
  spec = {
      HEIGHT_KEY: tf.io.FixedLenFeature([], tf.int64),
      WIDTH_KEY: tf.io.FixedLenFeature([], tf.int64),
      LABEL_KEY: tf.io.FixedLenFeature([], tf.int64),
      PIXELS_KEY: tf.io.VarLenFeature(tf.float32),
  }

  def parse(record):
    parsed = tf.io.parse_single_example(record, spec)
    pixels = tf.sparse.to_dense(parsed[PIXELS_KEY])
    image = tf.reshape(pixels, [parsed[HEIGHT_KEY], parsed[WIDTH_KEY], 1])
    return image, parsed[LABEL_KEY]

  dataset = tf.data.TFRecordDataset(files)
  dataset = dataset.map(parse)
  dataset = dataset.shuffle(2 * batch_size)
  dataset = dataset.batch(batch_size)
  if repeat:
    dataset = dataset.repeat()
  return dataset
