"""Pushing a model with the project's Pusher executor, as the DAG's Pusher
does once the Evaluator blessed it: in the test's process, or as a program
(`python -m tests.pushes MODEL_URI SERVING_DIR PUSHED_URI`) that a test can
hold and kill (tests/pause.py). The program prints the PushedModel's
custom properties as JSON, or `error: ...` and exits with status 3."""

import json
import os
import sys
from typing import Dict

from tfx.proto import pusher_pb2
from tfx.types import standard_artifacts
from tfx.utils import proto_utils

from components import push_once


def write_model(uri: str, files: Dict[str, bytes]) -> str:
  """Writes a trained Model artifact's files at `uri` (its SavedModel under
  Format-Serving/; the Pusher copies them, loads nothing); returns `uri`."""
  for path, data in files.items():
    path = os.path.join(uri, 'Format-Serving', path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as f:
      f.write(data)
  return uri


def push(model_uri: str, serving_dir: str, pushed_uri: str):
  """Pushes the blessed model at `model_uri` to `serving_dir`; returns the
  PushedModel artifact (its copy at `pushed_uri`)."""
  model = standard_artifacts.Model()
  model.uri = model_uri
  blessing = standard_artifacts.ModelBlessing()
  blessing.uri = pushed_uri + '-blessing'  # Not read.
  blessing.set_int_custom_property('blessed', 1)
  pushed = standard_artifacts.PushedModel()
  pushed.uri = pushed_uri
  destination = pusher_pb2.PushDestination(
      filesystem=pusher_pb2.PushDestination.Filesystem(
          base_directory=serving_dir))
  push_once.Executor().Do(
      {'model': [model], 'model_blessing': [blessing]},
      {'pushed_model': [pushed]},
      {'push_destination': proto_utils.proto_to_json(destination)})
  return pushed


if __name__ == '__main__':
  # s3://, as kubeflow/container_entrypoint.py does.
  import tensorflow_io  # pylint: disable=g-import-not-at-top,unused-import
  status = 0
  try:
    artifact = push(*sys.argv[1:])
    print(json.dumps({key: artifact.get_custom_property(key)
                      for key in artifact.mlmd_artifact.custom_properties}))
  except Exception as e:  # pylint: disable=broad-except
    print('error:', e)
    status = 3
  sys.stdout.flush()
  os._exit(status)  # Before tensorflow-io's S3 client aborts the teardown.
