"""The files of class probabilities the Trainer leaves LabelCheck.

The training split's, averaged over its epochs, and a held-out split's, by
its kept model. Written by modules/training/callbacks.py, read by
components/label_check/. Why: docs/label-check.md#the-method-and-why.
"""

import dataclasses
import io
import os
from typing import Dict, Optional, Tuple

import numpy as np
import tensorflow as tf

FILE_NAME = 'epoch_probabilities.npz'
# The validation split's, by the weights the Trainer kept.
HELD_OUT_FILE = 'held_out_probabilities.npz'


@dataclasses.dataclass(frozen=True)
class EpochProbabilities:
  """The probabilities of a split's records checked, in file order."""
  positions: np.ndarray  # int64 [M]: the records' places in the split.
  labels: np.ndarray  # int64 [M]: their given classes.
  probabilities: np.ndarray  # float32 [M, classes].
  epochs: int  # Epochs averaged over; 1 in HELD_OUT_FILE.
  records: int  # Records in the split.
  seconds: float  # The Trainer's time spent predicting them.
  # {position: (source, place)} of the records whose most probable class
  # is not their label, as records/shards.py names them: LabelCheck's
  # suspects are among them, so it does not read the split again. Files
  # written before hold none.
  named: Dict[int, Tuple[str, str]] = dataclasses.field(default_factory=dict)
  # float32 [E, 2]: (examples trained on so far, validation accuracy) at the
  # end of each epoch: how strong a model of fewer examples would have been
  # (LabelCheck's fold models). Files written before hold none.
  validation_curve: np.ndarray = dataclasses.field(
      default_factory=lambda: np.zeros((0, 2), np.float32))
  split: str = ''  # The split's name; '' in files written before.
  # The hash sample's buckets (records/shards.py); 0 in files written before.
  checked_buckets: int = 0


def write(model_run_dir: str, scores: EpochProbabilities,
          file_name: str = FILE_NAME) -> None:
  """Writes `scores` under the Trainer's model_run directory."""
  data = io.BytesIO()  # zipfile reads back what it writes: GFile cannot.
  arrays = dataclasses.asdict(scores)
  named = arrays.pop('named')
  np.savez(data, **arrays,
           named_positions=np.array(list(named), np.int64),
           # Unicode arrays: np.load reads them without pickle.
           named_sources=np.array([n[0] for n in named.values()], np.str_),
           named_places=np.array([n[1] for n in named.values()], np.str_))
  with tf.io.gfile.GFile(os.path.join(model_run_dir, file_name), 'wb') as f:
    f.write(data.getvalue())


def read(model_run_dir: str,
         file_name: str = FILE_NAME) -> Optional[EpochProbabilities]:
  """What `write` wrote, or None where the Trainer wrote nothing."""
  path = os.path.join(model_run_dir, file_name)
  if not tf.io.gfile.exists(path):
    return None
  with tf.io.gfile.GFile(path, 'rb') as f:
    data = np.load(io.BytesIO(f.read()))
  return EpochProbabilities(
      positions=data['positions'], labels=data['labels'],
      probabilities=data['probabilities'], epochs=int(data['epochs']),
      records=int(data['records']), seconds=float(data['seconds']),
      named=({int(p): (str(source), str(place)) for p, source, place in zip(
          data['named_positions'], data['named_sources'],
          data['named_places'])} if 'named_positions' in data else {}),
      validation_curve=(data['validation_curve'] if 'validation_curve' in data
                        else np.zeros((0, 2), np.float32)),
      split=str(data['split']) if 'split' in data else '',
      checked_buckets=(int(data['checked_buckets'])
                       if 'checked_buckets' in data else 0))
