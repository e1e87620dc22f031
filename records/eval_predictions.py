"""The eval split's class probabilities, as the Evaluator's model gave them.

The Evaluator writes them beside its evaluation, a batch a record
(components/evaluator/extractors.py); LabelCheck reads them instead of
scoring the split again. Why: docs/label-check.md#what-it-costs.
"""

import os
from typing import NamedTuple, Optional

import numpy as np
import tensorflow as tf

from records import shards

# Under the ModelEvaluation artifact's folder.
DIRECTORY = 'eval_predictions'
FILE_NAME = 'predictions.tfrecord.gz'
_SOURCES, _LABELS, _PROBABILITIES, _CLASSES = (
    'sources', 'labels', 'probabilities', 'classes')


class Predictions(NamedTuple):
  """One row per record, in no set order."""
  sources: np.ndarray  # bytes [N]: each record's source feature
  labels: np.ndarray  # int64 [N]: its label
  probabilities: np.ndarray  # float32 [N, classes]


def to_record(sources: np.ndarray, labels: np.ndarray,
              probabilities: np.ndarray) -> bytes:
  """A batch of rows as one serialized tf.train.Example."""
  probabilities = np.asarray(probabilities, np.float32)
  feature = {
      _SOURCES: tf.train.Feature(bytes_list=tf.train.BytesList(
          value=[bytes(s) for s in np.asarray(sources).reshape(-1)])),
      _LABELS: tf.train.Feature(int64_list=tf.train.Int64List(
          value=np.asarray(labels, np.int64).reshape(-1))),
      _PROBABILITIES: tf.train.Feature(float_list=tf.train.FloatList(
          value=probabilities.reshape(-1))),
      _CLASSES: tf.train.Feature(int64_list=tf.train.Int64List(
          value=[probabilities.shape[-1]])),
  }
  return tf.train.Example(features=tf.train.Features(
      feature=feature)).SerializeToString()


def path_in(evaluation_uri: str) -> str:
  """The file's path under a ModelEvaluation artifact's folder."""
  return os.path.join(evaluation_uri, DIRECTORY, FILE_NAME)


def read(evaluation_uri: str) -> Optional[Predictions]:
  """The rows written under `evaluation_uri`, or None where there are none.

  Raises:
    ValueError: the file's batches disagree on the number of classes.
  """
  path = path_in(evaluation_uri)
  if not tf.io.gfile.exists(path):
    return None
  sources, labels, probabilities = [], [], []
  for serialized in shards.records(path).as_numpy_iterator():
    example = tf.train.Example.FromString(serialized)
    feature = example.features.feature
    [classes] = feature[_CLASSES].int64_list.value
    sources.extend(feature[_SOURCES].bytes_list.value)
    labels.append(np.array(feature[_LABELS].int64_list.value, np.int64))
    probabilities.append(np.array(feature[_PROBABILITIES].float_list.value,
                                  np.float32).reshape(-1, classes))
  if not labels:
    return Predictions(np.zeros(0, np.bytes_), np.zeros(0, np.int64),
                       np.zeros((0, 0), np.float32))
  if len({p.shape[1] for p in probabilities}) > 1:
    raise ValueError(f'{path}: batches with different numbers of classes')
  return Predictions(np.array(sources, np.bytes_), np.concatenate(labels),
                     np.concatenate(probabilities))
