"""--keep-runs on Kubeflow Pipelines, decided from the run folders alone.

rule.py's rule, applied to what the folders show (no ML Metadata).
Why and how: docs/kubeflow.md#keeping-the-bucket-from-filling---keep-runs-k.
"""

import dataclasses
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from absl import logging
from tfx.dsl.io import fileio
from tfx.utils import path_utils

from components import push_once

_Times = Tuple[int, int]


class LayoutError(ValueError):
  """An output URI not laid out as KFP 2 lays out run folders."""


@dataclasses.dataclass
class RunFolder:
  """One run's folder, what large outputs it holds, and when it wrote."""
  name: str  # The run id.
  path: str
  # 'task/output' -> its folders (one per attempt of the task).
  outputs: Dict[str, List[str]]
  # Nanoseconds since the epoch: the oldest and newest time of a file of
  # each large output.
  first_write: int
  last_write: int


@dataclasses.dataclass
class Plan:
  """What a collection keeps and deletes."""
  kept_runs: List[str]  # This run first, then newest first.
  served_version: Optional[str]
  served_runs: List[str]  # Older runs kept for the served model's lineage.
  going_runs: List[str]  # Runs that wrote since this run started.
  deleted: List[str]  # Output folders.

  def describe(self, keep_runs: int) -> str:
    """One line for the task's log."""
    served = (f'; the served model (version {self.served_version}) and its '
              f'lineage kept in {", ".join(self.served_runs) or "a kept run"}'
              if self.served_version else '')
    going = (f'; left for a later run, still writing: '
             f'{", ".join(self.going_runs)}' if self.going_runs else '')
    return (f'--keep-runs {keep_runs}: deleted {len(self.deleted)} large '
            f'artifact folder(s) of older runs, kept those of '
            f'{", ".join(self.kept_runs)}{served}{going}')


def _name(entry: str) -> str:
  return entry.rstrip('/')


def _join(*parts: str) -> str:
  return '/'.join([parts[0].rstrip('/'), *parts[1:]])


def _inside(path: str, root: str) -> bool:
  path, root = path.rstrip('/'), root.rstrip('/')
  return path == root or path.startswith(root + '/')


def run_folder_of(uri: str, pipeline_name: str, task: str
                  ) -> Tuple[str, str]:
  """(the pipeline's folder of run folders, this run's id) of an output URI
  of `task`.

  Args:
    uri: an output's URI, as KFP 2 gives it to the task.
    pipeline_name: the pipeline's name, its folder under the root.
    task: the node id of the task that writes `uri`.

  Raises:
    LayoutError: `uri` is not <folder>/<pipeline_name>/<run id>/<task>/
      [<uuid>/]<output>, so run folders cannot be told apart.
  """
  parts = uri.rstrip('/').split('/')
  for task_at in (-2, -3):  # <task>/<output>, or <task>/<uuid>/<output>.
    if (len(parts) + task_at >= 2 and parts[task_at] == task and
        parts[task_at - 2] == pipeline_name):
      return '/'.join(parts[:task_at - 1]), parts[task_at - 1]
  raise LayoutError(
      f'{uri}: not laid out as Kubeflow Pipelines 2 lays out a run\'s '
      f'outputs, PIPELINE_ROOT/{pipeline_name}/RUN_ID/{task}/[UUID/]OUTPUT, '
      'so run folders cannot be told apart: nothing deleted')


def _output_folders(run_path: str, large_outputs: Sequence[str]
                    ) -> Dict[str, List[str]]:
  """'task/output' -> the folders of that output in the run, if any."""
  tasks = {_name(entry) for entry in fileio.listdir(run_path)}
  found: Dict[str, List[str]] = {}
  for task in sorted(tasks & {o.split('/')[0] for o in large_outputs}):
    wanted = {o.split('/')[1] for o in large_outputs
              if o.split('/')[0] == task}
    task_path = _join(run_path, task)
    for entry in sorted(_name(e) for e in fileio.listdir(task_path)):
      if entry in wanted:  # KFP 2.1 to 2.3: <task>/<output>.
        found.setdefault(f'{task}/{entry}', []).append(
            _join(task_path, entry))
        continue
      attempt = _join(task_path, entry)  # KFP 2.4 on: <task>/<uuid>/<output>.
      if not fileio.isdir(attempt):
        continue
      for output in sorted(_name(e) for e in fileio.listdir(attempt)):
        if output in wanted:
          found.setdefault(f'{task}/{output}', []).append(
              _join(attempt, output))
  return found


def _mtime(path: str) -> int:
  stat = fileio.stat(path)  # TensorFlow's FileStatistics, or os.stat.
  mtime = getattr(stat, 'mtime_nsec', None)
  return mtime if mtime is not None else stat.st_mtime_ns


def _a_file(folder: str) -> Optional[str]:
  """The first file under `folder`, by name at each level; None if none."""
  while True:
    names = sorted(_name(e) for e in fileio.listdir(folder))
    if not names:
      return None
    folder = _join(folder, names[0])
    if not fileio.isdir(folder):
      return folder


def _write_times(folders: Iterable[str]) -> Optional[_Times]:
  """(oldest, newest) modification time of a file of each of `folders`;
  None if they hold none."""
  files = [path for path in map(_a_file, folders) if path]
  times = [_mtime(path) for path in files]
  return (min(times), max(times)) if times else None


def scan(pipeline_dir: str, large_outputs: Sequence[str],
         serving_model_dir: str) -> List[RunFolder]:
  """The run folders under `pipeline_dir` that hold a large output, oldest
  first.

  Args:
    pipeline_dir: the folder of the pipeline's run folders.
    large_outputs: the DAG's outputs of a large type, 'task/output'.
    serving_model_dir: where the Pusher pushes; a folder holding it is not
      a run's.
  """
  runs = []
  for entry in sorted(_name(e) for e in fileio.listdir(pipeline_dir)):
    path = _join(pipeline_dir, entry)
    if _inside(serving_model_dir, path) or not fileio.isdir(path):
      continue
    outputs = _output_folders(path, large_outputs)
    times = _write_times(folder for paths in outputs.values()
                         for folder in paths)
    if times is None:
      continue
    runs.append(RunFolder(entry, path, outputs, *times))
  return sorted(runs, key=lambda run: (run.first_write, run.name))


def _holds_served_model(run: RunFolder, model_output: str,
                        served_path: str) -> bool:
  return any(push_once.same_files(path_utils.serving_model_path(path),
                                  served_path)
             for path in run.outputs.get(model_output, []))


def plan(pipeline_dir: str, current_run: str, keep_runs: int,
         large_outputs: Sequence[str], lineage_outputs: Sequence[str],
         model_output: str, serving_model_dir: str) -> Plan:
  """What `collect` deletes, without deleting anything; see
  docs/kubeflow.md#keeping-the-bucket-from-filling---keep-runs-k.

  Args:
    pipeline_dir: the folder of the pipeline's run folders.
    current_run: the id of the run collecting.
    keep_runs: K.
    large_outputs: the DAG's outputs of a large type, 'task/output'.
    lineage_outputs: those the served model's lineage holds.
    model_output: the output the Pusher pushes, 'task/output'.
    serving_model_dir: where the Pusher pushes.

  Raises:
    ValueError: `keep_runs` is below 1.
    LayoutError: this run's folder holds no large output.
    push_once.ServingDirectoryError: the serving directory cannot be read.
  """
  if keep_runs < 1:
    raise ValueError(f'keep_runs {keep_runs}: must be 1 or more')
  # Read first: if what is served is unknown, nothing may go.
  version = push_once.newest_version(serving_model_dir)
  runs = scan(pipeline_dir, large_outputs, serving_model_dir)
  current = next((run for run in runs if run.name == current_run), None)
  if current is None:
    raise LayoutError(f'{_join(pipeline_dir, current_run)}: this run\'s '
                      'folder holds no large output: nothing deleted')
  others = [run for run in runs if run is not current]
  going = [run for run in others if run.last_write > current.first_write]
  older = [run for run in others if run not in going]
  kept = older[::-1][:keep_runs - 1]
  served_path = version and _join(serving_model_dir, version)
  served, deleted = [], []
  for run in older:
    if run in kept:
      continue
    keep = ()
    if served_path and _holds_served_model(run, model_output, served_path):
      served.append(run.name)
      keep = lineage_outputs
    deleted.extend(path for output, paths in sorted(run.outputs.items())
                   if output not in keep for path in paths
                   if not _inside(serving_model_dir, path) and
                   not _inside(path, serving_model_dir))
  return Plan([current.name] + [run.name for run in kept], version, served,
              [run.name for run in going], deleted)


def collect(pipeline_dir: str, current_run: str, keep_runs: int,
            large_outputs: Sequence[str], lineage_outputs: Sequence[str],
            model_output: str, serving_model_dir: str) -> Plan:
  """Deletes the large outputs of older runs that neither the newest
  `keep_runs` runs nor the served model need (see `plan`).

  Args:
    pipeline_dir: the folder of the pipeline's run folders.
    current_run: the id of the run collecting.
    keep_runs: K, the newest runs kept, this one among them.
    large_outputs: the DAG's outputs of a large type, 'task/output'.
    lineage_outputs: those the served model's lineage holds.
    model_output: the output the Pusher pushes, 'task/output'.
    serving_model_dir: where the Pusher pushes.

  Returns:
    The plan carried out.

  Raises:
    ValueError, LayoutError, push_once.ServingDirectoryError: as `plan`;
      nothing is deleted then.
  """
  collected = plan(pipeline_dir, current_run, keep_runs, large_outputs,
                   lineage_outputs, model_output, serving_model_dir)
  for path in collected.deleted:
    logging.info('--keep-runs: deleting %s', path)
    fileio.rmtree(path)
  return collected
