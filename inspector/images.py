"""Images out of an Examples artifact, and a model's confusion matrix on them.

Records are the project's format (records/features.py): uint8 pixels (raw,
or a PNG or JPEG file of them) and their geometry, and the label. Class names come from the artifact's
`class_names` property, or the `class_names.txt` beside the splits.
"""

import os
from typing import Any, Dict, List

import numpy as np

from records import features
from inspector import queries
from inspector.errors import InspectError

BATCH_SIZE = 1000


def class_names(examples: queries.Artifact) -> List[str]:
  if features.CLASS_NAMES_PROPERTY in examples.properties:
    return features.decode_class_names(
        examples.properties[features.CLASS_NAMES_PROPERTY])
  path = os.path.join(examples.uri, features.CLASS_NAMES_FILE)
  from inspector import files  # pylint: disable=g-import-not-at-top
  if not files.exists(path):
    raise InspectError(f'Examples {examples.id}: no class names (neither the '
                       f'{features.CLASS_NAMES_PROPERTY} property nor {path})')
  return features.read_class_names(path)


def _records(examples: queries.Artifact, split: str):
  """A tf.data.Dataset of the split's serialized records."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if examples.type != 'Examples':
    raise InspectError(f'artifact {examples.id} is a {examples.type}, not '
                       'Examples')
  if split not in examples.split_names():
    raise InspectError(f'Examples {examples.id} has no split {split!r} '
                       f'(splits: {", ".join(examples.split_names())})')
  paths = tf.io.gfile.glob(os.path.join(examples.uri, f'Split-{split}', '*'))
  if not paths:
    raise InspectError(f'{examples.uri}/Split-{split}: no record files')
  gzipped = examples.properties.get('file_format', '').endswith('gzip')
  return tf.data.TFRecordDataset(sorted(paths),
                                 compression_type='GZIP' if gzipped else '')


def _parse(serialized):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  spec = {key: tf.io.FixedLenFeature([], tf.int64)
          for key in (features.HEIGHT_KEY, features.WIDTH_KEY,
                      features.CHANNELS_KEY, features.LABEL_KEY)}
  spec[features.IMAGE_KEY] = tf.io.FixedLenFeature([], tf.string)
  return tf.io.parse_example(serialized, spec)


def samples(examples: queries.Artifact, split: str, per_class: int
            ) -> Dict[int, List[np.ndarray]]:
  """Up to `per_class` images (HxWxC uint8) per label, in file order.

  Reading stops as soon as every class has its images.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  names = class_names(examples)
  # Raw pixels unless ExampleGen wrote PNG or JPEG files (--image-encoding).
  encoded = examples.properties.get(features.IMAGE_ENCODING_PROPERTY,
                                    'raw') != 'raw'
  found: Dict[int, List[np.ndarray]] = {label: [] for label in range(len(names))}
  for batch in _records(examples, split).batch(256):
    parsed = _parse(batch)
    for i, label in enumerate(parsed[features.LABEL_KEY].numpy()):
      bucket = found.setdefault(int(label), [])
      if len(bucket) < per_class:
        shape = [int(parsed[k][i]) for k in (features.HEIGHT_KEY,
                                             features.WIDTH_KEY,
                                             features.CHANNELS_KEY)]
        image = parsed[features.IMAGE_KEY][i]
        bucket.append(
            tf.io.decode_image(image, channels=shape[2]).numpy() if encoded
            else np.frombuffer(image.numpy(), np.uint8).reshape(shape))
    if all(len(b) >= per_class for b in found.values()):
      break
  return found


def label_counts(examples: queries.Artifact, split: str) -> Dict[int, int]:
  """Label -> number of records of the split (every record is read, labels
  only: the statistics' label histogram has equal-width buckets, not one
  per class)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  spec = {features.LABEL_KEY: tf.io.FixedLenFeature([], tf.int64)}
  counts: Dict[int, int] = {}
  for batch in _records(examples, split).batch(BATCH_SIZE):
    labels = tf.io.parse_example(batch, spec)[features.LABEL_KEY].numpy()
    for label, count in zip(*np.unique(labels, return_counts=True)):
      counts[int(label)] = counts.get(int(label), 0) + int(count)
  return counts


def confusion_matrix(model: queries.Artifact, examples: queries.Artifact,
                     split: str) -> Dict[str, Any]:
  """The model's serving signature over a split: counts[true][predicted]."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tfx.utils import path_utils  # pylint: disable=g-import-not-at-top
  from modules import trainer  # pylint: disable=g-import-not-at-top
  names = class_names(examples)
  path = path_utils.serving_model_path(model.uri)
  if not tf.io.gfile.exists(path):
    raise InspectError(f'model {model.id}: no SavedModel at {path}')
  serve = tf.saved_model.load(path).signatures[trainer.SERVING_SIGNATURE]
  counts = np.zeros((len(names), len(names)), np.int64)
  for batch in _records(examples, split).batch(BATCH_SIZE):
    labels = _parse(batch)[features.LABEL_KEY]
    predicted = serve(examples=batch)[trainer.CLASSES]
    counts += tf.math.confusion_matrix(labels, predicted,
                                       num_classes=len(names),
                                       dtype=tf.int64).numpy()
  total = int(counts.sum())
  if total == 0:
    raise InspectError(f'Examples {examples.id} split {split} holds no records')
  return {
      'model': {'id': model.id, 'uri': model.uri},
      'examples': {'id': examples.id, 'uri': examples.uri, 'split': split},
      'class_names': names,
      'matrix': counts.tolist(),  # Rows: true class; columns: predicted.
      'examples_count': total,
      'accuracy': float(np.trace(counts)) / total,
  }
