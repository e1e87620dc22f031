"""Calling a pushed model the way a serving client would."""

import glob
import os

import numpy as np
import tensorflow as tf

from records import features


def latest_pushed_model(serving_model_dir: str) -> str:
  versions = sorted(glob.glob(os.path.join(serving_model_dir, '*')),
                    key=lambda p: int(os.path.basename(p)))
  assert versions, f'nothing pushed to {serving_model_dir}'
  return versions[-1]


def classify_images(model, images: np.ndarray, batch_size: int = 1000):
  """(probabilities, classes) of uint8 images through `serve_images`."""
  serve = model.signatures['serve_images']
  probabilities, classes = [], []
  for start in range(0, len(images), batch_size):
    out = serve(images=tf.constant(images[start:start + batch_size]))
    probabilities.append(out['probabilities'].numpy())
    classes.append(out['classes'].numpy())
  return np.concatenate(probabilities), np.concatenate(classes)


def serialized_examples(images: np.ndarray, labels=None, encoding='raw'):
  """Examples in the ExampleGen format, the image bytes in `encoding`, as a
  client sends them: without the source (and without labels when labels is
  None)."""
  geometry = features.ImageGeometry(images.shape[1], images.shape[2],
                                    images.shape[3] if images.ndim == 4 else 1)
  out = []
  for i, image in enumerate(images):
    record = tf.train.Example.FromString(features.make_example(
        image.tobytes(), geometry, 0 if labels is None else int(labels[i]),
        encoding, source=''))
    del record.features.feature[features.SOURCE_KEY]
    if labels is None:
      del record.features.feature[features.LABEL_KEY]
    out.append(record.SerializeToString())
  return out
