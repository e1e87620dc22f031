"""Questions the tests ask a real ML Metadata store."""

import os
import time
from typing import Dict, List

from ml_metadata import errors
from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2

from pipeline import constants
from metadata import store as inspect_store

_STATE = metadata_store_pb2.Execution.State


def open_store(output_dir: str) -> metadata_store.MetadataStore:
  """The run's store, read-only (as the inspection tool opens it)."""
  return inspect_store.open_store(
      inspect_store.sqlite_path(output_dir=output_dir))


def execution_states(store, pipeline_name=constants.PIPELINE_NAME
                     ) -> Dict[str, List[str]]:
  """Node id -> states of its executions, oldest first."""
  states = {}
  for context in store.get_contexts_by_type('node'):
    node_id = context.name.split('.', 1)[1]
    if not context.name.startswith(pipeline_name + '.'):
      continue
    executions = sorted(store.get_executions_by_context(context.id),
                        key=lambda e: e.id)
    states[node_id] = [_STATE.Name(e.last_known_state) for e in executions]
  return states


def live_artifacts(store, type_name: str) -> List[metadata_store_pb2.Artifact]:
  return [a for a in store.get_artifacts_by_type(type_name)
          if a.state == metadata_store_pb2.Artifact.LIVE]


def newest(store, type_name: str) -> metadata_store_pb2.Artifact:
  """The newest artifact of a type, whatever its state."""
  return max(store.get_artifacts_by_type(type_name), key=lambda a: a.id)


def wait_for_execution(output_dir: str, node_id: str, state: str = 'RUNNING',
                       timeout: float = 300, process=None) -> None:
  """Polls the store of a run in progress until `node_id` has an execution
  in `state`; fails early if `process` ends first."""
  deadline = time.monotonic() + timeout
  path = inspect_store.sqlite_path(output_dir=output_dir)
  while time.monotonic() < deadline:
    if process is not None and process.poll() is not None:
      raise AssertionError(f'the run ended before {node_id} was {state}:\n'
                           + process.stdout.read())
    if os.path.exists(path):
      try:
        if state in execution_states(open_store(output_dir)).get(node_id, []):
          return
      except errors.StatusError:  # The runner is still creating the store.
        pass
    time.sleep(0.3)
  raise AssertionError(f'{node_id} not {state} after {timeout}s')
