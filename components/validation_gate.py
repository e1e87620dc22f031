"""ValidationGate stops the DAG when the data checks found a problem.

Anomalies: docs/input-data.md#schema. Copies of training images in a
held-out split: docs/data-checks.md#what-a-run-does-with-them.
"""

import os
from typing import Dict, List, Optional

import tensorflow as tf
from tfx.dsl.component.experimental.annotations import InputArtifact, Parameter  # pylint: disable=g-multiple-import
from tfx.dsl.component.experimental.decorators import component
from tfx.components.example_validator import executor as validator_executor
from tfx.types import artifact_utils
from tfx.types import standard_artifacts

from components.data_checks.component import DataCheckResults
from records import data_check_results as data_checks_results
from records import features
from tensorflow_metadata.proto.v0 import anomalies_pb2

# What the gate does about held-out images with a copy in train.
EVAL_COPIES_CHOICES = ('stop', 'keep', 'drop')
# Copy pairs the stop message names.
_EXAMPLE_PAIRS = 3


class DataValidationError(RuntimeError):
  """ExampleValidator found anomalies; the message lists them."""


def load_anomalies(anomalies: standard_artifacts.ExampleAnomalies
                   ) -> Dict[str, anomalies_pb2.Anomalies]:
  """Returns the Anomalies proto of each split of an ExampleAnomalies."""
  result = {}
  for split in artifact_utils.decode_split_names(anomalies.split_names):
    path = os.path.join(
        artifact_utils.get_split_uri([anomalies], split),
        validator_executor.DEFAULT_FILE_NAME)
    with tf.io.gfile.GFile(path, 'rb') as f:
      result[split] = anomalies_pb2.Anomalies.FromString(f.read())
  return result


def _schema_without_source(feature: str,
                           info: anomalies_pb2.AnomalyInfo) -> bool:
  """Whether the anomaly only says that the schema lacks `source`.

  Schemas written before records named their source lack that feature.
  records/features.py adds it to every record, and the schema's checks hold
  for the rest.
  """
  return feature == features.SOURCE_KEY and all(
      reason.type == anomalies_pb2.AnomalyInfo.SCHEMA_NEW_COLUMN
      for reason in info.reason)


def describe_anomalies(split: str, anomalies: anomalies_pb2.Anomalies
                       ) -> List[str]:
  """Returns one line per anomaly, naming split, feature and what is wrong."""
  lines = []
  for feature, info in sorted(anomalies.anomaly_info.items()):
    if _schema_without_source(feature, info):
      continue
    lines.append(f'  {split}: feature {feature!r}: {info.short_description}: '
                 f'{info.description}')
  if anomalies.HasField('dataset_anomaly_info'):
    info = anomalies.dataset_anomaly_info
    lines.append(f'  {split}: dataset: {info.short_description}: '
                 f'{info.description}')
  return lines


def split_problems(split: str, anomalies: anomalies_pb2.Anomalies
                   ) -> List[str]:
  """Returns the lines that stop the run for a split that was not blessed.

  They list the anomalies ExampleValidator found, but for a schema without
  the source feature.
  """
  lines = describe_anomalies(split, anomalies)
  if lines or anomalies.anomaly_info:
    return lines
  return [f'  {split}: not blessed by ExampleValidator']


def copies_problem(data_checks: DataCheckResults,
                   max_share: float) -> Optional[str]:
  """Returns a line naming held-out splits with too many copies of train.

  The line names a few pairs too. It is None when every split is within
  `max_share`.
  """
  held_out = data_checks_results.json_property(
      data_checks, data_checks_results.HELD_OUT_PROPERTY)
  over = {split: info for split, info in held_out.items()
          if info['share'] > max_share}
  if not over:
    return None
  pairs = [data_checks_results.describe_pair(row) for row in
           data_checks_results.read_pairs(data_checks.uri, _EXAMPLE_PAIRS)]
  return ('; '.join(data_checks_results.held_out_lines(over)) +
          f', above the {max_share:.2%} allowed: the evaluation would score '
          f'training images; e.g. {"; ".join(pairs)} (all pairs: '
          f'{data_checks.uri}/{data_checks_results.COPIES_FILE}; '
          '--eval-copies keep goes on with them, --eval-copies drop '
          'evaluates without them)')


@component
def ValidationGate(
    anomalies: InputArtifact[standard_artifacts.ExampleAnomalies],
    # Optional: TFX's function components take None as the default.
    data_checks: InputArtifact[DataCheckResults] = None,
    eval_copies: Parameter[str] = 'stop',
    max_eval_copy_share: Parameter[float] = 0.01) -> None:
  """Fails unless every split validated cleanly and held-out splits are clean.

  A held-out split is not clean, with `data_checks` and eval_copies 'stop',
  when more than max_eval_copy_share of its images are copies from train.

  Args:
    anomalies: ExampleValidator's output, with each split's blessing.
    data_checks: DataChecks' output; None checks no copies.
    eval_copies: one of EVAL_COPIES_CHOICES; only 'stop' fails on copies
      ('keep' goes on with them; with 'drop' DataChecks removed them).
    max_eval_copy_share: the share, from 0 to 1, of a held-out split's
      images that may be copies from train.

  Raises:
    DataValidationError: listing the anomalies or the copies found.
    ValueError: eval_copies is not one of EVAL_COPIES_CHOICES.
  """
  if eval_copies not in EVAL_COPIES_CHOICES:
    raise ValueError(f'eval_copies {eval_copies!r}: one of '
                     f'{", ".join(EVAL_COPIES_CHOICES)}')
  blessed = anomalies.get_json_value_custom_property(
      validator_executor.ARTIFACT_PROPERTY_BLESSED_KEY) or {}
  lines = []
  for split, split_anomalies in load_anomalies(anomalies).items():
    if blessed.get(split) != validator_executor.BLESSED_VALUE:
      lines += split_problems(split, split_anomalies)
  if lines:
    raise DataValidationError(
        'ExampleValidator found anomalies in the data, so nothing will be '
        f'trained or pushed on it (details: {anomalies.uri}):\n' +
        '\n'.join(lines))
  if data_checks is not None and eval_copies == 'stop':
    problem = copies_problem(data_checks, max_eval_copy_share)
    if problem:
      raise DataValidationError(problem)
