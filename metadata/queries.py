"""What ML Metadata knows about a pipeline, as plain values.

The store is read once, table by table. How TFX records a run there:
docs/metadata.md, "How a run is recorded".
"""

import dataclasses
import functools
import json
import re
from typing import Any, Dict, List, Optional, Tuple

from google.protobuf import json_format
from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2

from metadata.store import InspectError
from records import serving_model

_STATE = metadata_store_pb2.Execution.State
_ARTIFACT_STATE = metadata_store_pb2.Artifact.State
_EVENT = metadata_store_pb2.Event
_INPUTS = (_EVENT.INPUT, _EVENT.DECLARED_INPUT)
_OUTPUTS = (_EVENT.OUTPUT, _EVENT.DECLARED_OUTPUT)

# The keyword that names the newest model (see Metadata.latest_model).
LATEST_MODEL = 'latest-model'


def _value(value: metadata_store_pb2.Value) -> Any:
  kind = value.WhichOneof('value')
  if kind == 'struct_value':
    struct = json_format.MessageToDict(value.struct_value)
    # TFX stores JSON-valued properties as {"__value__": "<json>"}.
    if set(struct) == {'__value__'} and isinstance(struct['__value__'], str):
      return json.loads(struct['__value__'])
    return struct
  if kind == 'proto_value':
    return json_format.MessageToDict(value.proto_value)
  return getattr(value, kind) if kind else None


def _properties(node) -> Dict[str, Any]:
  values = {k: _value(v) for k, v in node.properties.items()}
  values.update({k: _value(v) for k, v in node.custom_properties.items()})
  return values


@dataclasses.dataclass
class Execution:
  """One component's execution, as ML Metadata recorded it."""
  id: int
  node: str  # The component id, e.g. 'Trainer'.
  type: str  # The component class, e.g. 'tfx.components...Trainer'.
  state: str  # COMPLETE, CACHED, FAILED, RUNNING, ...
  started_ms: int
  ended_ms: int
  run: Optional[str]
  pipeline: Optional[str]
  properties: Dict[str, Any]

  @property
  def cached(self) -> bool:
    """Whether it reused an earlier execution's outputs."""
    return self.state == 'CACHED'

  @property
  def seconds(self) -> float:
    """Its wall time, from the store's timestamps."""
    return max(0, self.ended_ms - self.started_ms) / 1000


@dataclasses.dataclass
class Artifact:
  """One artifact: its type, where its files are, its state and properties."""
  id: int
  type: str
  uri: str
  state: str
  created_ms: int
  properties: Dict[str, Any]

  def split_names(self) -> List[str]:
    """The splits of an Examples artifact, in their recorded order."""
    return list(json.loads(self.properties.get('split_names', '[]')))

  def json_property(self, name: str) -> Any:
    """The custom property `name`, a JSON string, decoded; {} when absent."""
    value = self.properties.get(name)
    if isinstance(value, str):
      return json.loads(value) if value else {}
    return value or {}

  def check_on_disk(self) -> None:
    """Raises InspectError if --keep-runs deleted the artifact's files
    (runs/keep_runs_local.py); its record stays."""
    if self.state in ('MARKED_FOR_DELETION', 'DELETED'):
      raise InspectError(
          f'{self.type} {self.id} ({self.uri}): deleted to free disk '
          '(--keep-runs); ML Metadata keeps its record')


def artifact_from_proto(artifact: metadata_store_pb2.Artifact,
                        type_name: str) -> Artifact:
  """An Artifact of ML Metadata's proto, whose type is named `type_name`."""
  return Artifact(id=artifact.id, type=type_name, uri=artifact.uri,
                  state=_ARTIFACT_STATE.Name(artifact.state),
                  created_ms=artifact.create_time_since_epoch,
                  properties=_properties(artifact))


@dataclasses.dataclass
class Run:
  """One pipeline run: its executions, in the order they started."""
  name: str  # The pipeline_run context's name: the run id.
  pipeline: Optional[str]
  executions: List[Execution]  # In the order they started.

  @property
  def state(self) -> str:
    """FAILED, RUNNING, NEW or CANCELED if an execution is; else COMPLETE."""
    states = {e.state for e in self.executions}
    for state in ('FAILED', 'RUNNING', 'NEW', 'CANCELED'):
      if state in states:
        return state
    return 'COMPLETE'

  @property
  def started_ms(self) -> int:
    """When its first execution started (ms since the epoch; 0: none)."""
    return min((e.started_ms for e in self.executions), default=0)

  @property
  def ended_ms(self) -> Optional[int]:
    """When its last execution ended; None while it runs."""
    if self.state in ('RUNNING', 'NEW'):
      return None
    return max((e.ended_ms for e in self.executions), default=0)

  def execution(self, node: str) -> Optional[Execution]:
    """The run's (last) execution of component `node`, if it got that far."""
    matches = [e for e in self.executions if e.node == node]
    return matches[-1] if matches else None


class Metadata:
  """Read access to one ML Metadata store: its runs, executions and
  artifacts, and the events between them (read once, then kept)."""

  def __init__(self, store: metadata_store.MetadataStore, where: str):
    self._store = store
    self.where = where  # How errors name the store.

  def _context_of(self, type_name: str) -> Dict[int, str]:
    """Execution id -> name of its context of type `type_name`."""
    names = {}
    for context in self._store.get_contexts_by_type(type_name):
      for execution in self._store.get_executions_by_context(context.id):
        names[execution.id] = context.name
    return names

  @functools.cached_property
  def executions(self) -> Dict[int, Execution]:
    """Every execution of the store, by id."""
    types = {t.id: t.name for t in self._store.get_execution_types()}
    runs = self._context_of('pipeline_run')
    pipelines = self._context_of('pipeline')
    nodes = self._context_of('node')
    executions = {}
    for e in sorted(self._store.get_executions(), key=lambda e: e.id):
      pipeline = pipelines.get(e.id)
      node = nodes.get(e.id, '')
      if pipeline and node.startswith(pipeline + '.'):
        node = node[len(pipeline) + 1:]
      executions[e.id] = Execution(
          id=e.id, node=node or types.get(e.type_id, '?').rsplit('.', 1)[-1],
          type=types.get(e.type_id, '?'),
          state=_STATE.Name(e.last_known_state),
          started_ms=e.create_time_since_epoch,
          ended_ms=e.last_update_time_since_epoch,
          run=runs.get(e.id), pipeline=pipeline, properties=_properties(e))
    return executions

  @functools.cached_property
  def artifacts(self) -> Dict[int, Artifact]:
    """Every artifact of the store, by id."""
    types = {t.id: t.name for t in self._store.get_artifact_types()}
    return {a.id: artifact_from_proto(a, types.get(a.type_id, '?'))
            for a in sorted(self._store.get_artifacts(), key=lambda a: a.id)}

  @functools.cached_property
  def _events(self) -> List[Tuple[int, int, int, List[str]]]:
    """(execution id, artifact id, event type, keys), in id order."""
    events = []
    for event in self._store.get_events_by_execution_ids(list(self.executions)):
      keys = [s.key for s in event.path.steps if s.WhichOneof('value') == 'key']
      events.append((event.execution_id, event.artifact_id, event.type, keys))
    return sorted(events)

  def runs(self) -> List[Run]:
    """Newest first."""
    by_run: Dict[str, List[Execution]] = {}
    for execution in self.executions.values():
      if execution.run is not None:
        by_run.setdefault(execution.run, []).append(execution)
    runs = []
    for context in sorted(self._store.get_contexts_by_type('pipeline_run'),
                          key=lambda c: c.id, reverse=True):
      executions = by_run.get(context.name, [])
      runs.append(Run(name=context.name,
                      pipeline=executions[0].pipeline if executions else None,
                      executions=executions))
    return runs

  def run(self, ref: str) -> Run:
    """A run by id, unique id prefix, `latest` or -N (-1 is the newest)."""
    runs = self.runs()
    if not runs:
      raise InspectError(f'{self.where}: the store holds no pipeline runs')
    if ref == 'latest':
      return runs[0]
    if re.fullmatch(r'-[1-9]\d*', ref):
      back = -int(ref)
      if back > len(runs):
        raise InspectError(
            f'run {ref}: the store holds only {len(runs)} run(s)')
      return runs[back - 1]
    exact = [r for r in runs if r.name == ref]
    if exact:
      return exact[0]
    prefixed = [r for r in runs if r.name.startswith(ref)]
    if len(prefixed) == 1:
      return prefixed[0]
    if prefixed:
      raise InspectError(
          f'run {ref!r} is ambiguous: {", ".join(r.name for r in prefixed)}')
    raise InspectError(
        f'no run {ref!r} in {self.where} (runs, newest first: '
        f'{", ".join(r.name for r in runs[:5])}{", ..." if len(runs) > 5 else ""}'
        '; or use latest, -1, -2, ...)')

  def artifact(self, ref: str) -> Artifact:
    """The artifact whose id `ref` names.

    Raises:
      InspectError: the store holds none, or `ref` is no artifact's id.
    """
    if not self.artifacts:
      raise InspectError(f'{self.where}: the store holds no artifacts')
    try:
      artifact_id = int(ref)
    except ValueError:
      raise InspectError(
          f'{ref!r} is not an artifact id (ids are numbers; see the '
          '`artifacts` subcommand)') from None
    if artifact_id not in self.artifacts:
      raise InspectError(f'no artifact with id {artifact_id} in {self.where}')
    return self.artifacts[artifact_id]

  def of_type(self, type_name: str) -> List[Artifact]:
    """The artifacts of type `type_name`, oldest first."""
    return [a for a in self.artifacts.values() if a.type == type_name]

  def inputs(self, execution_id: int) -> List[Tuple[str, Artifact]]:
    """(input key, artifact), one per key."""
    return [(key, self.artifacts[a]) for e, a, kind, keys in self._events
            if e == execution_id and kind in _INPUTS for key in keys or ['']]

  def outputs(self, execution_id: int) -> List[Tuple[str, Artifact]]:
    """(output key, artifact); cached ones included."""
    return [(keys[0] if keys else '', self.artifacts[a])
            for e, a, kind, keys in self._events
            if e == execution_id and kind in _OUTPUTS]

  def output(self, execution: Execution, key: str) -> Optional[Artifact]:
    """The execution's (last) output under `key`, None without one."""
    found = [a for k, a in self.outputs(execution.id) if k == key]
    return found[-1] if found else None

  def producer(self, artifact_id: int) -> Optional[Execution]:
    """The execution that wrote an artifact: the one that ran, not those
    that reused it from the cache."""
    writers = [self.executions[e] for e, a, kind, _ in self._events
               if a == artifact_id and kind in _OUTPUTS]
    ran = [w for w in writers if not w.cached]
    return (ran or writers or [None])[0]

  def writers(self, artifact_id: int) -> List[Execution]:
    """Every execution that wrote an artifact or reused it from the cache."""
    return [self.executions[e] for e, a, kind, _ in self._events
            if a == artifact_id and kind in _OUTPUTS]

  def consumers(self, artifact_id: int) -> List[Execution]:
    """Every execution that read an artifact."""
    return [self.executions[e] for e, a, kind, _ in self._events
            if a == artifact_id and kind in _INPUTS]

  def runs_using(self, artifact_id: int) -> List[str]:
    """The runs that wrote or reused (cached) an artifact, oldest first."""
    runs = []
    for e, a, kind, _ in self._events:
      run = self.executions[e].run
      if a == artifact_id and kind in _OUTPUTS and run and run not in runs:
        runs.append(run)
    return runs

  def run_artifacts(self, run: Run) -> List[Artifact]:
    """The outputs of a run's executions, reused ones included."""
    ids = {e.id for e in run.executions}
    seen = []
    for e, a, kind, _ in self._events:
      if e in ids and kind in _OUTPUTS and a not in seen:
        seen.append(a)
    return [self.artifacts[a] for a in sorted(seen)]

  def run_output(self, run: Run, node: str, key: str) -> Artifact:
    """The output `key` of the run's execution of component `node`.

    Raises:
      InspectError: the run has no such execution, or it recorded no such
        output.
    """
    execution = run.execution(node)
    if execution is None:
      ran = ', '.join(e.node for e in run.executions) or 'nothing'
      raise InspectError(
          f'run {run.name} has no {node} execution: it stopped earlier or '
          f'ran only part of the pipeline (it ran: {ran})')
    artifact = self.output(execution, key)
    if artifact is None:
      raise InspectError(
          f'{node} of run {run.name} ({execution.state}) recorded no '
          f'{key!r} output')
    return artifact

  def latest_model(self) -> Artifact:
    """The newest PushedModel that was pushed; if none, the newest Model."""
    pushed = [a for a in self.of_type('PushedModel')
              if a.properties.get(serving_model.PUSHED_PROPERTY) == 1]
    if pushed:
      return pushed[-1]
    models = self.of_type('Model')
    if not models:
      raise InspectError(f'{self.where}: the store holds no models')
    return models[-1]

  def resolve(self, ref: str) -> Artifact:
    """An artifact by id, or `latest-model`."""
    return self.latest_model() if ref == LATEST_MODEL else self.artifact(ref)

  def model(self, ref: str) -> Artifact:
    """A Model by id, by its PushedModel's id, or `latest-model`."""
    artifact = self.resolve(ref)
    if artifact.type == 'PushedModel':
      pusher = self.producer(artifact.id)
      models = [a for key, a in self.inputs(pusher.id)
                if key == 'model'] if pusher else []
      if models:
        return models[0]
    if artifact.type != 'Model':
      raise InspectError(
          f'artifact {artifact.id} is a {artifact.type}, not a Model or '
          'PushedModel')
    return artifact

  def evaluations(self, model: Artifact) -> List[Execution]:
    """Those that evaluated `model` as the candidate, oldest first."""
    return [e for e in self.consumers(model.id)
            if any(k == 'model' and a.id == model.id
                   for k, a in self.inputs(e.id))
            and self.output(e, 'evaluation') is not None]
