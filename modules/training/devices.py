"""Where training runs: the devices, strategy and precision, and the cluster
TF_CONFIG names.

`plan()` depends only on the visible GPUs and the CPU's flags, so it is
tested on any machine. Why and how: docs/training.md, "Devices".
"""

import dataclasses
import json
import os
from typing import Collection, Optional, Sequence, Tuple

import tensorflow as tf


# Where the Trainer records its plan, in the ModelRun artifact's directory
# (beside TensorBoard's logs): the run report shows it.
PLAN_FILE = 'device_plan.json'
# /proc/cpuinfo flags of a CPU with native bfloat16 arithmetic.
BFLOAT16_CPU_FLAGS = ('avx512_bf16', 'amx_bf16')
# oneDNN's instruction-set cap (ONEDNN_MAX_CPU_ISA): below AVX512_CORE_BF16
# its bfloat16 kernels are emulated whatever the CPU has.
_ISA_CAPS_WITHOUT_BFLOAT16 = ('SSE41', 'AVX', 'AVX2', 'AVX2_VNNI',
                              'AVX2_VNNI_2', 'AVX512_CORE',
                              'AVX512_CORE_VNNI')


@dataclasses.dataclass(frozen=True)
class DevicePlan:
  """Where the model trains, with which strategy, precision and batch size."""
  # 'default' (CPU), 'one_device' (1 GPU), 'mirrored' (>1), or
  # 'multi_worker' (several processes, each with its GPUs or its CPU).
  strategy: str
  devices: Sequence[str]
  precision: str  # A Keras mixed-precision policy name.
  global_batch_size: int
  workers: int = 1  # Processes training together (modules/training/devices.py).
  precision_why: str = ''

  def describe(self) -> str:
    """Describes the plan in one line for the log."""
    where = ', '.join(self.devices) if self.devices else 'CPU'
    if self.workers > 1:
      where = f'{self.workers} workers, each on {where}'
    why = f' ({self.precision_why})' if self.precision_why else ''
    return (f'training on {where} with the {self.strategy} strategy, '
            f'{self.precision} precision{why}, global batch '
            f'{self.global_batch_size}')

  def write(self, directory: str) -> None:
    """Records the plan as PLAN_FILE in `directory` (any TF filesystem)."""
    tf.io.gfile.makedirs(directory)
    with tf.io.gfile.GFile(os.path.join(directory, PLAN_FILE), 'w') as f:
      json.dump({**dataclasses.asdict(self), 'devices': list(self.devices),
                 'description': self.describe()}, f, indent=2)


def cpu_flags(cpuinfo: str = '/proc/cpuinfo') -> Collection[str]:
  """Returns the CPU's feature flags, empty where the file does not say."""
  try:
    with open(cpuinfo, encoding='utf-8') as f:
      for line in f:
        if line.startswith('flags'):
          return frozenset(line.partition(':')[2].split())
  except OSError:
    pass
  return frozenset()


def cpu_precision(flags: Collection[str], mixed_precision: bool = True,
                  isa_cap: Optional[str] = None) -> Tuple[str, str]:
  """Returns (the Keras policy, why) for training on a CPU with `flags`.

  Args:
    flags: the CPU's feature flags.
    mixed_precision: whether mixed precision is allowed.
    isa_cap: oneDNN's ISA cap (default: $ONEDNN_MAX_CPU_ISA).
  """
  native = [f for f in BFLOAT16_CPU_FLAGS if f in flags]
  isa_cap = (os.environ.get('ONEDNN_MAX_CPU_ISA', '') if isa_cap is None
             else isa_cap).upper()
  if not mixed_precision:
    return 'float32', 'mixed precision off'
  if native and isa_cap in _ISA_CAPS_WITHOUT_BFLOAT16:
    return 'float32', f'ONEDNN_MAX_CPU_ISA={isa_cap} leaves out bfloat16'
  if native:
    return 'mixed_bfloat16', f'the CPU computes bfloat16: {", ".join(native)}'
  return 'float32', ('the CPU has no native bfloat16 (none of '
                     f'{", ".join(BFLOAT16_CPU_FLAGS)})')


def plan(gpus: Sequence[str], batch_size: int,
         mixed_precision: bool = True, workers: int = 1,
         flags: Optional[Collection[str]] = None) -> DevicePlan:
  """Returns the plan of training on `gpus`, or on the CPU without them.

  One GPU trains alone, several mirror. GPUs compute in mixed float16, CPUs
  in mixed bfloat16 where they do it natively. Several workers (processes,
  machines) train under MultiWorkerMirrored.

  Args:
    gpus: one worker's GPUs.
    batch_size: the batch per replica. With N GPUs each step sees N times as
      many examples, which keeps every GPU as busy as one would be. With W
      workers (each on its GPUs, or its CPU as one replica) it sees W times
      as many again.
    mixed_precision: whether mixed precision is allowed.
    workers: the processes training together.
    flags: the CPU's feature flags (default: this CPU's).
  """
  gpus = list(gpus)
  if gpus:
    precision, why = ('mixed_float16', '') if mixed_precision else (
        'float32', 'mixed precision off')
  else:
    precision, why = cpu_precision(cpu_flags() if flags is None else flags,
                                   mixed_precision)
  if workers > 1:
    return DevicePlan('multi_worker', gpus, precision,
                      batch_size * workers * max(1, len(gpus)), workers, why)
  if not gpus:
    return DevicePlan('default', [], precision, batch_size, precision_why=why)
  if len(gpus) == 1:
    return DevicePlan('one_device', gpus, precision, batch_size,
                      precision_why=why)
  return DevicePlan('mirrored', gpus, precision, batch_size * len(gpus),
                    precision_why=why)


def visible_gpus() -> Sequence[str]:
  """Returns the device names of the GPUs TensorFlow sees."""
  return [f'/gpu:{i}' for i, _ in
          enumerate(tf.config.list_physical_devices('GPU'))]


def make_multi_worker_strategy(
    communication_timeout_seconds: float
) -> tf.distribute.MultiWorkerMirroredStrategy:
  """Returns the strategy of a process named in a multi-worker TF_CONFIG.

  It must be made before any other TensorFlow op runs in the process. It
  configures the collective ops, which TensorFlow allows only at start-up.
  A collective op that waits longer than `communication_timeout_seconds`
  for the other workers fails, rather than waiting for a dead one forever.
  """
  return tf.distribute.MultiWorkerMirroredStrategy(
      communication_options=tf.distribute.experimental.CommunicationOptions(
          timeout_seconds=communication_timeout_seconds))


def make_strategy(device_plan: DevicePlan) -> tf.distribute.Strategy:
  """Returns the tf.distribute.Strategy that carries out `device_plan`.

  Raises:
    ValueError: the plan is multi-worker (see make_multi_worker_strategy).
  """
  if device_plan.strategy == 'multi_worker':
    raise ValueError('a multi-worker strategy is made first thing in the '
                     'process: make_multi_worker_strategy')
  if device_plan.strategy == 'mirrored':
    return tf.distribute.MirroredStrategy(devices=list(device_plan.devices))
  if device_plan.strategy == 'one_device':
    return tf.distribute.OneDeviceStrategy(device_plan.devices[0])
  return tf.distribute.get_strategy()


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


def parse_tf_config(tf_config: Optional[str]) -> Optional[Task]:
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


def task_from_environment() -> Optional[Task]:
  """Returns this process's task, or None for a single-process run."""
  return parse_tf_config(os.environ.get(TF_CONFIG))

