"""--keep-runs K: the disk holds the large artifacts of the newest K runs.

The rule is components/keep_runs/rule.py's; `collect` applies it from ML
Metadata after a local run, marking artifacts as TFX's garbage collection
does. Why and how: docs/metadata.md, "Keeping the disk from filling".
"""

import dataclasses
import os
import shutil
from typing import Dict, Iterable, List, Optional, Set

from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2

from components.keep_runs import rule as keep_runs_rule
from metadata import queries
from records import serving_model

_Artifact = metadata_store_pb2.Artifact
LARGE_TYPES = keep_runs_rule.LARGE_TYPES
_MODEL_TYPES = keep_runs_rule.MODEL_TYPES
_UNFINISHED = ('NEW', 'RUNNING')


@dataclasses.dataclass
class Collected:
  """What one collection did."""
  kept_runs: List[str]
  served_version: Optional[str]
  deleted: List[queries.Artifact]
  freed_bytes: int

  def describe(self, keep_runs: int) -> str:
    """One line for the console."""
    served = (f'; the served model (version {self.served_version}) and its '
              'lineage kept' if self.served_version else '')
    if not self.deleted:
      return (f'--keep-runs {keep_runs}: nothing to delete (large artifacts '
              f'of the newest {len(self.kept_runs)} run(s) kept{served})')
    return (f'--keep-runs {keep_runs}: deleted {len(self.deleted)} large '
            f'artifact(s) of older runs, {self.freed_bytes / 1e6:.1f} MB, '
            f'marked DELETED in ML Metadata{served}')


def _tree_bytes(path: str) -> int:
  if os.path.isfile(path):
    return os.path.getsize(path)
  return sum(os.path.getsize(os.path.join(root, name))
             for root, _, names in os.walk(path) for name in names)


def _under(path: str, root: str) -> bool:
  path, root = os.path.realpath(path), os.path.realpath(root)
  return os.path.commonpath([path, root]) == root and path != root


def served_pushes(md: queries.Metadata, pipeline_name: str,
                  serving_model_dir: str) -> List[queries.Artifact]:
  """The pipeline's PushedModels of the version served now (the newest
  under `serving_model_dir`); none if nothing is.

  Args:
    md: the run's ML Metadata.
    pipeline_name: the pipeline whose pushes count.
    serving_model_dir: where the Pusher pushes.
  """
  # Imported here: push_once imports TensorFlow, which the rest does not.
  from components import push_once  # pylint: disable=g-import-not-at-top
  version = push_once.newest_version(serving_model_dir)
  if version is None:
    return []
  served = os.path.realpath(os.path.join(serving_model_dir, version))
  pushes = []
  for artifact in md.of_type('PushedModel'):
    destination = artifact.properties.get(
        serving_model.PUSHED_DESTINATION_PROPERTY)
    producer = md.producer(artifact.id)
    if (destination and os.path.realpath(destination) == served and
        producer and producer.pipeline == pipeline_name):
      pushes.append(artifact)
  return pushes


def lineage(md: queries.Metadata,
            pushes: Iterable[queries.Artifact]) -> Set[int]:
  """Ids of the served model's lineage in ML Metadata (keep_runs_rule's
  walk, from the pushed artifacts)."""
  return keep_runs_rule.lineage(
      (push.id for push in pushes),
      writers=lambda artifact_id: [e.id for e in md.writers(artifact_id)],
      inputs=lambda execution_id: [(key, a.id) for key, a in
                                   md.inputs(execution_id)],
      outputs=lambda execution_id: [a.id for _, a in
                                    md.outputs(execution_id)],
      type_name=lambda artifact_id: md.artifacts[artifact_id].type)


def plan(md: queries.Metadata, pipeline_name: str, keep_runs: int,
         serving_model_dir: str, pipeline_root: str) -> Collected:
  """What `collect` deletes, without deleting anything.

  Args:
    md: the run's ML Metadata.
    pipeline_name: the pipeline whose runs are counted.
    keep_runs: how many of the newest runs keep their large artifacts.
    serving_model_dir: where the Pusher pushes; the served model's lineage
      is kept.
    pipeline_root: the output's pipeline root; only artifacts under it are
      deleted, and only runs that wrote under it are counted.
  """
  # On a shared store, runs of other output directories are not counted.
  runs = [run for run in md.runs() if run.pipeline == pipeline_name and any(
      _under(a.uri, pipeline_root)
      for execution in run.executions for _, a in md.outputs(execution.id))]
  kept_runs = runs[:keep_runs]
  keep: Set[int] = set()
  for run in kept_runs:
    for execution in run.executions:
      keep.update(a.id for _, a in md.inputs(execution.id)
                  if a.type not in _MODEL_TYPES)
      keep.update(a.id for _, a in md.outputs(execution.id))
  for execution in md.executions.values():
    if execution.state in _UNFINISHED:
      keep.update(a.id for _, a in md.inputs(execution.id))
  pushes = served_pushes(md, pipeline_name, serving_model_dir)
  keep |= lineage(md, pushes)
  ours = {a.id for run in runs for execution in run.executions
          for _, a in md.outputs(execution.id)}
  # Marked by a collection that did not finish: never LIVE again.
  deleted = [a for a in md.artifacts.values()
             if a.id in ours and a.type in LARGE_TYPES
             and (a.state == 'LIVE' and a.id not in keep
                  or a.state == 'MARKED_FOR_DELETION')
             and _under(a.uri, pipeline_root)]
  # A directory is deleted only if every artifact at it goes (TFX's rule).
  going = {a.id for a in deleted}
  shared = {a.uri for a in md.artifacts.values()
            if a.id not in going and a.state != 'DELETED'}
  deleted = [a for a in deleted if a.uri not in shared]
  freed = sum(_tree_bytes(uri) for uri in {a.uri for a in deleted}
              if os.path.exists(uri))
  destination = (pushes[0].properties[serving_model.PUSHED_DESTINATION_PROPERTY]
                 if pushes else None)
  version = os.path.basename(destination.rstrip('/')) if pushes else None
  return Collected([run.name for run in kept_runs], version, deleted, freed)


def _set_state(store: metadata_store.MetadataStore, ids: List[int],
               state: int) -> None:
  artifacts = store.get_artifacts_by_id(ids)
  for artifact in artifacts:
    artifact.state = state
  store.put_artifacts(artifacts)


def collect(connection_config: metadata_store_pb2.ConnectionConfig,
            pipeline_name: str, keep_runs: int, serving_model_dir: str,
            pipeline_root: str) -> Collected:
  """Deletes the large artifacts of `pipeline_name` that neither its newest
  `keep_runs` runs nor the served model need; see docs/metadata.md,
  "Keeping the disk from filling".

  Call it while holding the output directory's lock, after a run.

  Args:
    connection_config: the run's ML Metadata store.
    pipeline_name, keep_runs, serving_model_dir, pipeline_root: as `plan`
      takes them.

  Returns:
    The runs kept, the served version, and the artifacts deleted with the
    bytes freed.

  Raises:
    ValueError: `keep_runs` is less than 1.
  """
  if keep_runs < 1:
    raise ValueError(f'keep_runs {keep_runs}: must be 1 or more')
  store = metadata_store.MetadataStore(connection_config)
  collected = plan(queries.Metadata(store, 'ML Metadata'), pipeline_name,
                   keep_runs, serving_model_dir, pipeline_root)
  if not collected.deleted:
    return collected
  ids = [a.id for a in collected.deleted]
  # Marked first: a process killed while deleting leaves artifacts marked,
  # never LIVE artifacts whose files are gone.
  _set_state(store, ids, _Artifact.MARKED_FOR_DELETION)
  by_uri: Dict[str, List[int]] = {}
  for artifact in collected.deleted:
    by_uri.setdefault(artifact.uri, []).append(artifact.id)
  for uri, uri_ids in sorted(by_uri.items()):
    if os.path.isdir(uri):
      shutil.rmtree(uri)
    elif os.path.exists(uri):
      os.remove(uri)
    _set_state(store, uri_ids, _Artifact.DELETED)
  return collected
