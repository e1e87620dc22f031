"""Runs that ended without finishing: found and closed at the next start.

`close_interrupted` marks a killed run's executions CANCELED, their output
artifacts ABANDONED, and removes the directories they were writing.
Why and how: docs/troubleshooting.md, "...a run is killed".
"""

import dataclasses
import fcntl
import os
import shutil
from typing import IO, List

from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2

from pipeline import constants

_Execution = metadata_store_pb2.Execution
_Artifact = metadata_store_pb2.Artifact
_Event = metadata_store_pb2.Event
LOCK_FILE_NAME = '.local_runner.lock'
NOTE_PROPERTY = 'interrupted'
NOTE = ('the process running it ended before it finished; closed by the next '
        'local_runner run')


class OutputDirBusyError(RuntimeError):
  """Another local_runner process is using the output directory."""


def lock_output_dir(output_dir: str) -> IO:
  """Locks `output_dir` for this process; the lock goes when the process does.

  Args:
    output_dir: the run's output directory, made if missing.

  Returns:
    The open lock file; keep it open for the whole run.

  Raises:
    OutputDirBusyError: another process holds the lock.
  """
  os.makedirs(output_dir, exist_ok=True)
  path = os.path.join(output_dir, LOCK_FILE_NAME)
  lock = open(path, 'a+')  # pylint: disable=consider-using-with
  try:
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
  except BlockingIOError:
    lock.close()
    raise OutputDirBusyError(
        f'{output_dir}: another local_runner run is using this output '
        f'directory (it holds {LOCK_FILE_NAME}); wait for it to finish or use '
        'another --output-dir') from None
  return lock


@dataclasses.dataclass
class Interrupted:
  node_id: str
  execution_id: int
  removed: List[str]


def _node_id(store, execution_id: int, pipeline_name: str) -> str:
  for context in store.get_contexts_by_execution(execution_id):
    if context.name.startswith(pipeline_name + '.'):
      return context.name.split('.', 1)[1]
  return ''


def _partial_outputs(pipeline_root: str, node_id: str,
                     execution: _Execution) -> List[str]:
  """The output directories TFX made for `execution`.

  TFX's own scratch space for it (the node's .system directory) is left
  alone: it is TFX's to manage, and no output key starts with a dot.
  """
  # Imported here: it imports TFX, and the output directory's lock is
  # taken, or refused, before local_runner.py imports TFX.
  from components import tfx_workarounds  # pylint: disable=g-import-not-at-top
  node_dir = os.path.join(pipeline_root, node_id)
  if not node_id or not os.path.isdir(node_dir):
    return []
  paths = [tfx_workarounds.output_dir(pipeline_root, node_id, key,
                                      execution.id)
           for key in sorted(os.listdir(node_dir)) if not key.startswith('.')]
  return [p for p in paths if os.path.isdir(p)]


def close_interrupted(
    connection_config: metadata_store_pb2.ConnectionConfig,
    pipeline_root: str,
    pipeline_name: str = constants.PIPELINE_NAME,
    shared_store: bool = False) -> List[Interrupted]:
  """Closes the executions of `pipeline_name` left unfinished.

  Why and how: docs/troubleshooting.md, "...a run is killed".

  Call it only while holding `lock_output_dir`, before the run starts.

  Args:
    connection_config: the store.
    pipeline_root: OUT/pipeline of the locked output directory.
    pipeline_name: the pipeline's name in the store.
    shared_store: whether runs on other output directories use the store
      too (MySQL): then only executions that wrote under `pipeline_root`
      are closed.
  """
  store = metadata_store.MetadataStore(connection_config)
  pipeline_context = store.get_context_by_type_and_name('pipeline',
                                                        pipeline_name)
  if pipeline_context is None:
    return []
  closed = []
  for execution in store.get_executions_by_context(pipeline_context.id):
    if execution.last_known_state not in (_Execution.NEW, _Execution.RUNNING):
      continue
    node_id = _node_id(store, execution.id, pipeline_name)
    removed = _partial_outputs(pipeline_root, node_id, execution)
    if shared_store and not removed:
      continue  # Perhaps running right now, on another output directory.
    for path in removed:
      shutil.rmtree(path)
    outputs = [e.artifact_id for e in store.get_events_by_execution_ids(
        [execution.id]) if e.type in (_Event.OUTPUT, _Event.PENDING_OUTPUT)]
    abandoned = [a for a in store.get_artifacts_by_id(outputs)
                 if a.state in (_Artifact.PENDING, _Artifact.UNKNOWN)]
    for artifact in abandoned:
      artifact.state = _Artifact.ABANDONED
    if abandoned:
      store.put_artifacts(abandoned)
    execution.last_known_state = _Execution.CANCELED
    execution.custom_properties[NOTE_PROPERTY].string_value = NOTE
    store.put_executions([execution])
    closed.append(Interrupted(node_id, execution.id, removed))
  return closed
