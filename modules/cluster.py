"""Which training cluster this process is part of, as TF_CONFIG says.

A TF_CONFIG that names one task, or none, is a single-process run. Who sets
it: docs/training.md, "Several workers".
"""

import dataclasses
import json
import os
from typing import Any, Dict, List, Optional

TF_CONFIG = 'TF_CONFIG'
# Task types that train (an `evaluator` or `ps` task would not).
TRAINING_TASK_TYPES = ('chief', 'worker')


@dataclasses.dataclass(frozen=True)
class Task:
  """This process in the cluster."""
  task_type: str
  task_index: int
  workers: int  # Training tasks in the cluster: the chief and the workers.
  has_chief: bool  # Whether the cluster has a `chief` task.

  @property
  def is_chief(self) -> bool:
    """Whether this is the one task that writes the model and the logs.

    That is the `chief` task, or worker 0 when the cluster has no chief
    (TensorFlow's own rule).
    """
    return self.task_type == 'chief' or (
        self.task_type == 'worker' and self.task_index == 0 and
        not self.has_chief)

  def describe(self) -> str:
    """Names the task for a log line, such as 'worker 1 of 2 training tasks'."""
    return (f'{self.task_type} {self.task_index} of {self.workers} training '
            f'tasks{" (chief)" if self.is_chief else ""}')


def parse(tf_config: Optional[str]) -> Optional[Task]:
  """Returns the task of a TF_CONFIG value, None when one process trains alone.

  Raises:
    ValueError: the value is not TF_CONFIG's JSON, or this task does not
      train.
  """
  if not tf_config:
    return None
  try:
    config = json.loads(tf_config)
    cluster = config.get('cluster') or {}
    task = config.get('task') or {}
  except (ValueError, AttributeError) as e:
    raise ValueError(f'{TF_CONFIG} is not a JSON object with "cluster" and '
                     f'"task": {tf_config!r}') from e
  workers = sum(len(cluster.get(t) or ()) for t in TRAINING_TASK_TYPES)
  if workers < 2:
    return None
  if task.get('type') not in TRAINING_TASK_TYPES:
    raise ValueError(f'{TF_CONFIG}: task {task!r} is not one of the training '
                     f'tasks {TRAINING_TASK_TYPES} of cluster {cluster!r}')
  return Task(task['type'], int(task.get('index', 0)), workers,
              bool(cluster.get('chief')))


def has_tf_config() -> bool:
  """Whether a cluster manager (Vertex AI, a TFJob...) started this process."""
  return bool(os.environ.get(TF_CONFIG))


def from_environment() -> Optional[Task]:
  """Returns this process's task, or None for a single-process run."""
  return parse(os.environ.get(TF_CONFIG))


def local_tf_config(addresses: List[str], index: int) -> str:
  """Returns the TF_CONFIG of worker `index` of a cluster on this machine.

  Args:
    addresses: the workers' host:port. Worker 0 is the chief.
    index: this worker's index.
  """
  config: Dict[str, Any] = {'cluster': {'worker': list(addresses)},
                            'task': {'type': 'worker', 'index': index}}
  return json.dumps(config)
