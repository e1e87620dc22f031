"""The file of training-run class probabilities the Trainer leaves LabelCheck.

The Trainer (modules/epoch_probabilities.py) averages the class
probabilities of a sample of training records over its epochs and writes
them beside its logs (the ModelRun artifact); LabelCheck
(components/label_check.py) ranks the training split's suspects from them.
"""

import dataclasses
import io
import os
from typing import Optional

import numpy as np
import tensorflow as tf

FILE_NAME = 'epoch_probabilities.npz'


@dataclasses.dataclass(frozen=True)
class EpochProbabilities:
  """The averaged probabilities of the records checked, in file order."""
  positions: np.ndarray  # int64 [M]: the records' places in the split.
  labels: np.ndarray  # int64 [M]: their given classes.
  probabilities: np.ndarray  # float32 [M, classes].
  epochs: int  # Epochs averaged over.
  records: int  # Records in the split.
  seconds: float  # The Trainer's time spent predicting them.


def write(model_run_dir: str, scores: EpochProbabilities) -> None:
  """Writes `scores` under the Trainer's model_run directory."""
  data = io.BytesIO()  # zipfile reads back what it writes: GFile cannot.
  np.savez(data, **dataclasses.asdict(scores))
  with tf.io.gfile.GFile(os.path.join(model_run_dir, FILE_NAME), 'wb') as f:
    f.write(data.getvalue())


def read(model_run_dir: str) -> Optional[EpochProbabilities]:
  """What `write` wrote, or None where the Trainer wrote nothing."""
  path = os.path.join(model_run_dir, FILE_NAME)
  if not tf.io.gfile.exists(path):
    return None
  with tf.io.gfile.GFile(path, 'rb') as f:
    data = np.load(io.BytesIO(f.read()))
  return EpochProbabilities(
      positions=data['positions'], labels=data['labels'],
      probabilities=data['probabilities'], epochs=int(data['epochs']),
      records=int(data['records']), seconds=float(data['seconds']))
