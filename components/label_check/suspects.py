"""Who is a suspect: the rule LabelCheck applies to class probabilities.

Calibrated by a temperature, counted by cleanlab, least self-confident first.
Why and how: docs/label-check.md#who-is-a-suspect.
"""

import dataclasses
import math
from typing import Tuple

from cleanlab import count as cleanlab_count
import numpy as np
from scipy import optimize
from scipy import special

# The list's bounds, as shares of the records checked: at least the first
# (where the model puts that many in another class), at most the second,
# or MAX_SMALL on a small split, a glance's worth.
MIN_SHARE = 0.01
MAX_SHARE = 0.05
MAX_SMALL = 20
# Temperatures searched: from ten times sharper to twenty times softer.
_TEMPERATURES = (0.1, 20.0)
_TINY = 1e-12  # The floor of a probability before its logarithm.


# Fold models too weak to doubt labels (folds_too_weak; docs/label-check.md).
WEAK_FACTOR, WEAK_MARGIN = 2.0, 0.10


def calibrate(labels: np.ndarray, probabilities: np.ndarray
              ) -> Tuple[float, np.ndarray]:
  """Fits a temperature to the records' labels (temperature scaling).

  A model trained with label smoothing never gives a class much more than
  1 - smoothing; one temperature T, chosen to minimise the labels' negative
  log-likelihood, rescales every record's log-probabilities by 1 / T so that
  they are as sure as the model is right (Guo et al., "On Calibration of
  Modern Neural Networks", ICML 2017). The order of the classes of a record
  is unchanged.

  Args:
    labels: int [N] given classes.
    probabilities: float [N, classes] of the records.

  Returns:
    The temperature, and the probabilities at it.
  """
  logits = np.log(np.maximum(probabilities.astype(np.float64), _TINY))
  rows = np.arange(len(labels))

  def loss(temperature: float) -> float:
    return -float(np.mean(special.log_softmax(logits / temperature,
                                              axis=1)[rows, labels]))

  temperature = float(optimize.minimize_scalar(
      loss, bounds=_TEMPERATURES, method='bounded').x)
  return temperature, special.softmax(logits / temperature, axis=1)


def estimated_issues(labels: np.ndarray, probabilities: np.ndarray) -> int:
  """Estimates how many records are labelled wrong, by confident learning.

  cleanlab's count.num_label_issues ('off_diagonal_calibrated'): the
  confident joint's off-diagonal counts, each row calibrated to the records
  given that label. cleanlab needs two classes among the labels; of one
  class, no label is estimated wrong.

  Args:
    labels: int [N] given classes.
    probabilities: float [N, classes], out of sample as cleanlab needs
      them; find_suspects passes calibrated ones.
  """
  if len(np.unique(labels)) < 2:
    return 0
  return int(cleanlab_count.num_label_issues(
      labels, probabilities, estimation_method='off_diagonal_calibrated'))


def list_length(estimate: int, records: int) -> int:
  """Returns how many suspects to list for `estimate` wrong labels.

  The estimate is a count, noisy by about its square root, so two of those
  are added; the length is then held within MIN_SHARE and MAX_SHARE of the
  records.
  """
  wanted = math.ceil(estimate + 2 * math.sqrt(estimate))
  return min(max(wanted, math.ceil(MIN_SHARE * records)),
             most_listed(records))


def most_listed(records: int) -> int:
  """Returns the most suspects listed of `records`: MAX_SHARE, or MAX_SMALL."""
  return max(MAX_SMALL, math.floor(MAX_SHARE * records))


@dataclasses.dataclass(frozen=True)
class Suspects:
  """A split's suspects, most doubtful first, and how they were chosen."""
  indices: np.ndarray  # Into the records checked.
  suggested: np.ndarray  # The most probable other class of each.
  estimate: int  # Wrong labels estimated; -1 where none is made.
  temperature: float  # 1.0 where the probabilities were not calibrated.
  disagreements: int  # Records whose most probable class is another one.
  # [N, classes]: the probabilities judged (calibrated where they were).
  probabilities: np.ndarray


def find_suspects(labels: np.ndarray, probabilities: np.ndarray,
                  averaged_over_run: bool = False) -> Suspects:
  """Lists the records whose given class the probabilities most doubt.

  Args:
    labels: int [N] given classes.
    probabilities: float [N, classes]: of a model that never trained on the
      records, or averaged over a training run.
    averaged_over_run: the probabilities are averages over a training run's
      epochs. They are low for every class in its early epochs and are not
      a calibrated model's, so every record whose most probable class is
      another one is listed (the area under the margin's flag at threshold
      0), at most `most_listed` of them.

  Returns:
    The suspects: the records whose most probable class is not the given one
    (cleanlab's filter 'predicted_neq_given'), least self-confident first,
    cut to `list_length` of the estimate.
  """
  labels = np.asarray(labels, np.int64)
  if not len(labels):
    empty = np.zeros(0, np.int64)
    return Suspects(empty, empty, 0, 1.0, 0, probabilities)
  temperature, estimate = 1.0, -1
  if not averaged_over_run:
    temperature, probabilities = calibrate(labels, probabilities)
  self_confidence = probabilities[np.arange(len(labels)), labels]
  disagreeing = np.flatnonzero(np.argmax(probabilities, axis=1) != labels)
  ranked = disagreeing[np.argsort(self_confidence[disagreeing],
                                  kind='stable')]
  disagreements = len(ranked)
  if averaged_over_run:
    ranked = ranked[:most_listed(len(labels))]
  else:
    estimate = estimated_issues(labels, probabilities)
    ranked = ranked[:list_length(estimate, len(labels))]
  others = probabilities[ranked].copy()
  others[np.arange(len(ranked)), labels[ranked]] = -1.0
  return Suspects(ranked, np.argmax(others, axis=1), estimate, temperature,
                  disagreements, probabilities)


def disagreement(labels: np.ndarray, probabilities: np.ndarray) -> float:
  """The share of records whose most probable class is not their label."""
  if not len(labels):
    return 0.0
  return float(np.mean(np.argmax(probabilities, axis=1) != labels))


def weak_folds_above(trainer: float) -> float:
  """The share of training labels that cross-fitted models may disagree
  with before they are too weak to doubt them, where the Trainer's model
  disagrees with a share `trainer` of validation's: wrong labels make both
  disagree alike; more than WEAK_FACTOR times as many, plus WEAK_MARGIN,
  are the fold models' own errors."""
  return WEAK_FACTOR * trainer + WEAK_MARGIN


def folds_too_weak(folds: float, trainer: float) -> bool:
  """Whether fold models that disagree with a share `folds` of the training
  labels are too weak to doubt them (weak_folds_above)."""
  return folds > weak_folds_above(trainer)
