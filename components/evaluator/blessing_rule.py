"""The accuracy a model needs to be blessed, fixed or from the eval split.

From the data: clearly above always guessing the most common class.
Why and how: docs/serving.md#when-a-model-is-pushed.
"""

import dataclasses
import math
import statistics
from typing import Optional, Sequence

from records import model_blessing

# Logged once by the Evaluator; the local runner shows it on the console.
RULE_LINE = 'Blessing rule: %s'
# The Evaluator's line on which spans' eval it judges, with a span window
# (baseline_evaluator.py); shown on the console like RULE_LINE.
JUDGED_LINE = 'Evaluator: %s'
FIXED_REASON = ('a fixed threshold (--accuracy-threshold, the --dataset\'s, '
                'or IDX files\' default)')
_Z_95 = statistics.NormalDist().inv_cdf(0.975)


def clear_margin_threshold(majority: int, total: int) -> float:
  """Returns the accuracy that is clearly above guessing the majority class.

  Above it, the Wilson score 95% lower bound over `total` examples exceeds
  `majority / total`. The result is above 1 when `total` is too small for
  any accuracy to be clear of it.

  Args:
    majority: eval examples of the most common class.
    total: eval examples of all classes.

  Raises:
    ValueError: `total` is 0.
  """
  if total < 1:
    raise ValueError('no eval examples to set the accuracy threshold from')
  share = majority / total
  bound = share + _Z_95 * math.sqrt(share * (1 - share) / total)
  return math.ceil(bound * 10_000) / 10_000


@dataclasses.dataclass(frozen=True)
class Rule:
  """The accuracy threshold of a blessing and why it is that."""
  threshold: float
  reason: str  # Why this threshold, in a few words.
  from_data: bool = False

  @property
  def text(self) -> str:
    """The rule as one line for a person."""
    return f'accuracy >= {self.threshold:g}, {self.reason}' + (
        '; --accuracy-threshold sets a fixed one' if self.from_data else '')

  def record(self, blessing) -> None:
    """Records the rule on a ModelBlessing (a TFX Artifact)."""
    blessing.set_float_custom_property(
        model_blessing.ACCURACY_THRESHOLD_PROPERTY, self.threshold)
    blessing.set_string_custom_property(
        model_blessing.THRESHOLD_REASON_PROPERTY, self.reason)


def fixed(threshold: float) -> Rule:
  """Returns the rule of a fixed threshold."""
  return Rule(threshold, FIXED_REASON)


def from_class_counts(counts: Sequence[int],
                      class_names: Optional[Sequence[str]] = None) -> Rule:
  """Returns the rule for an eval split of counts[i] examples of class i.

  Args:
    counts: eval examples per class index; all 0 gives a threshold above 1.
    class_names: the classes' names, naming the most common one in the
      rule's reason; None, or too few, name it by its index.
  """
  total = int(sum(counts))
  majority = max(range(len(counts)), key=lambda i: counts[i]) if total else 0
  threshold = clear_margin_threshold(int(counts[majority]) if total else 0,
                                     total)
  name = (class_names[majority] if class_names and majority < len(class_names)
          else str(majority))
  reason = (f'clearly above always guessing {name!r} '
            f'({counts[majority] / total:.1%} of {total:,} eval images)')
  if threshold > 1:
    reason += ': too few eval images for any model to be clearly better'
  return Rule(threshold, reason, from_data=True)


def count_labels(file_patterns: Sequence[str], label_key: str):
  """Counts the records of each label in gzipped TFRecord files of tf.Examples.

  Returns:
    numpy int64 counts, indexed by label.

  Raises:
    FileNotFoundError: no file matches the patterns.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from records import shards  # pylint: disable=g-import-not-at-top
  files = sorted({path for pattern in file_patterns
                  for path in tf.io.gfile.glob(pattern)})
  if not files:
    raise FileNotFoundError(f'no record files match {list(file_patterns)}')
  return shards.label_counts(files, label_key)


def set_threshold(eval_config, threshold: float) -> None:
  """Sets the accuracy's lower bound in a tfma.EvalConfig, in place.

  Raises:
    ValueError: the eval_config has no accuracy metric.
  """
  found = False
  for spec in eval_config.metrics_specs:
    for metric in spec.metrics:
      if metric.class_name == model_blessing.ACCURACY_METRIC:
        metric.threshold.value_threshold.lower_bound.value = threshold
        found = True
  if not found:
    raise ValueError(f'the eval_config has no {model_blessing.ACCURACY_METRIC} '
                     'metric to set the threshold of')


def threshold_of(eval_config) -> Optional[float]:
  """Returns the accuracy's lower bound in a tfma.EvalConfig, or None."""
  for spec in eval_config.metrics_specs:
    for metric in spec.metrics:
      bound = metric.threshold.value_threshold
      if (metric.class_name == model_blessing.ACCURACY_METRIC
          and bound.HasField('lower_bound')):
        return bound.lower_bound.value
  return None
