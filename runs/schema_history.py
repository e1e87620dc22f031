"""The schema that the last good data passed, found in ML Metadata.

Used by `local_runner.py --freeze-schema`; followed back to its source file
when imported, so later runs import the very same file and the cache holds.
Why: docs/input-data.md, "Schema".
"""

import os
from typing import Iterable, List, Optional

from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2

_EVENT = metadata_store_pb2.Event
_STATE = metadata_store_pb2.Execution
SCHEMA_FILE = 'schema.pbtxt'  # What SchemaGen and ImportSchemaGen write.


def _events(store, execution_ids: Iterable[int], kind, key=None) -> List:
  return [e for e in store.get_events_by_execution_ids(list(execution_ids))
          if e.type == kind and (key is None or e.path.steps[0].key == key)]


def last_validated_schema(store: metadata_store.MetadataStore,
                          pipeline_name: str,
                          gate_id: str = 'ValidationGate') -> Optional[str]:
  """Path of the schema file of the newest run whose data passed the gate.

  Args:
    store: the ML Metadata store of the pipeline's runs.
    pipeline_name: the pipeline whose runs are searched.
    gate_id: the ValidationGate's node id.

  Returns:
    The file an imported schema was copied from, else the schema artifact's
    file; None if no run passed the gate.
  """
  context = store.get_context_by_type_and_name(
      'node', f'{pipeline_name}.{gate_id}')
  if context is None:
    return None
  passed = sorted((e for e in store.get_executions_by_context(context.id)
                   if e.last_known_state in (_STATE.COMPLETE, _STATE.CACHED)),
                  key=lambda e: e.id, reverse=True)
  for gate in passed:
    # gate <- anomalies <- ExampleValidator <- schema
    anomalies = [e.artifact_id for e in _events(store, [gate.id], _EVENT.INPUT)]
    validators = {e.execution_id for e in store.get_events_by_artifact_ids(
        anomalies) if e.type == _EVENT.OUTPUT}
    schemas = [e.artifact_id for e in _events(store, validators, _EVENT.INPUT,
                                              'schema')]
    for schema in store.get_artifacts_by_id(schemas):
      path = _source_file(store, schema)
      if path:
        return path
  return None


def _source_file(store, schema: metadata_store_pb2.Artifact) -> Optional[str]:
  """The file an imported schema was copied from, else the artifact's file."""
  producers = [e.execution_id for e in store.get_events_by_artifact_ids(
      [schema.id]) if e.type == _EVENT.OUTPUT]
  for execution in store.get_executions_by_id(producers):
    source = execution.custom_properties.get('schema_file')
    if source is not None and os.path.exists(source.string_value):
      return source.string_value
  path = os.path.join(schema.uri, SCHEMA_FILE)
  return path if os.path.exists(path) else None
