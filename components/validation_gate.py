"""ValidationGate: stops the DAG when ExampleValidator found anomalies.

TFX's ExampleValidator records anomalies but succeeds either way, and
Transform and Trainer do not look at its output. This gate sits between them:
it reads the anomalies artifact and fails with a readable list of what is
wrong, so nothing that trains or pushes runs on that data. The anomalies
artifact itself stays published in ML Metadata for inspection.
"""

import os
from typing import Dict, List

import tensorflow as tf
from tfx import v1 as tfx
from tfx.components.example_validator import executor as validator_executor
from tfx.types import artifact_utils

from tensorflow_metadata.proto.v0 import anomalies_pb2


class DataValidationError(RuntimeError):
  """ExampleValidator found anomalies; the message lists them."""


def load_anomalies(anomalies: tfx.types.standard_artifacts.ExampleAnomalies
                   ) -> Dict[str, anomalies_pb2.Anomalies]:
  """The Anomalies proto of each split of an ExampleAnomalies artifact."""
  result = {}
  for split in artifact_utils.decode_split_names(anomalies.split_names):
    path = os.path.join(
        artifact_utils.get_split_uri([anomalies], split),
        validator_executor.DEFAULT_FILE_NAME)
    with tf.io.gfile.GFile(path, 'rb') as f:
      result[split] = anomalies_pb2.Anomalies.FromString(f.read())
  return result


def describe_anomalies(split: str, anomalies: anomalies_pb2.Anomalies
                       ) -> List[str]:
  """One line per anomaly: split, feature and what is wrong."""
  lines = []
  for feature, info in sorted(anomalies.anomaly_info.items()):
    lines.append(f'  {split}: feature {feature!r}: {info.short_description}: '
                 f'{info.description}')
  if anomalies.HasField('dataset_anomaly_info'):
    info = anomalies.dataset_anomaly_info
    lines.append(f'  {split}: dataset: {info.short_description}: '
                 f'{info.description}')
  return lines


@tfx.dsl.components.component
def ValidationGate(
    anomalies: tfx.dsl.components.InputArtifact[
        tfx.types.standard_artifacts.ExampleAnomalies]) -> None:
  """Fails, listing the anomalies, unless every split validated cleanly."""
  blessed = anomalies.get_json_value_custom_property(
      validator_executor.ARTIFACT_PROPERTY_BLESSED_KEY) or {}
  lines = []
  for split, split_anomalies in load_anomalies(anomalies).items():
    if blessed.get(split) != validator_executor.BLESSED_VALUE:
      lines += describe_anomalies(split, split_anomalies) or [
          f'  {split}: not blessed by ExampleValidator']
  if lines:
    raise DataValidationError(
        'ExampleValidator found anomalies in the data, so nothing will be '
        f'trained or pushed on it (details: {anomalies.uri}):\n' +
        '\n'.join(lines))
