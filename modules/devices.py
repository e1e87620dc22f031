"""Which devices train the model, with which strategy and precision.

`plan()` is a pure function of the visible GPUs, so the choice it makes is
tested on a CPU-only machine; `make_strategy()` turns a plan into the
`tf.distribute.Strategy` that carries it out.
"""

import dataclasses
import json
import os
from typing import Sequence

import tensorflow as tf

# Where the Trainer records its plan, in the ModelRun artifact's directory
# (beside TensorBoard's logs): the run report shows it.
PLAN_FILE = 'device_plan.json'


@dataclasses.dataclass(frozen=True)
class DevicePlan:
  # 'default' (CPU), 'one_device' (1 GPU), 'mirrored' (>1), or
  # 'multi_worker' (several processes, each with its GPUs or its CPU).
  strategy: str
  devices: Sequence[str]
  precision: str  # A Keras mixed-precision policy name.
  global_batch_size: int
  workers: int = 1  # Processes training together (modules/cluster.py).

  def describe(self) -> str:
    where = ', '.join(self.devices) if self.devices else 'CPU'
    if self.workers > 1:
      where = f'{self.workers} workers, each on {where}'
    return (f'training on {where} with the {self.strategy} strategy, '
            f'{self.precision} precision, global batch {self.global_batch_size}')

  def write(self, directory: str) -> None:
    """Records the plan as PLAN_FILE in `directory` (any TF filesystem)."""
    tf.io.gfile.makedirs(directory)
    with tf.io.gfile.GFile(os.path.join(directory, PLAN_FILE), 'w') as f:
      json.dump({**dataclasses.asdict(self), 'devices': list(self.devices),
                 'description': self.describe()}, f, indent=2)


def plan(gpus: Sequence[str], batch_size: int,
         mixed_precision: bool = True, workers: int = 1) -> DevicePlan:
  """One GPU trains alone, several mirror; GPUs compute in mixed float16;
  several workers (processes, machines) train under MultiWorkerMirrored.

  `batch_size` is per replica: with N GPUs each step sees N times as many
  examples, which keeps every GPU as busy as one would be; with W workers
  (each on its GPUs, or its CPU as one replica) W times as many again.
  `gpus` are one worker's.
  """
  gpus = list(gpus)
  if workers > 1:
    precision = 'mixed_float16' if gpus and mixed_precision else 'float32'
    return DevicePlan('multi_worker', gpus, precision,
                      batch_size * workers * max(1, len(gpus)), workers)
  if not gpus:
    return DevicePlan('default', [], 'float32', batch_size)
  precision = 'mixed_float16' if mixed_precision else 'float32'
  if len(gpus) == 1:
    return DevicePlan('one_device', gpus, precision, batch_size)
  return DevicePlan('mirrored', gpus, precision, batch_size * len(gpus))


def visible_gpus() -> Sequence[str]:
  return [f'/gpu:{i}' for i, _ in
          enumerate(tf.config.list_physical_devices('GPU'))]


def make_multi_worker_strategy(
    communication_timeout_seconds: float
) -> tf.distribute.MultiWorkerMirroredStrategy:
  """The strategy of a process named in a multi-worker TF_CONFIG.

  Must be made before any other TensorFlow op runs in the process (it
  configures the collective ops, which TensorFlow allows only at start-up).
  A collective op that waits longer than `communication_timeout_seconds`
  for the other workers fails, rather than waiting for a dead one forever.
  """
  return tf.distribute.MultiWorkerMirroredStrategy(
      communication_options=tf.distribute.experimental.CommunicationOptions(
          timeout_seconds=communication_timeout_seconds))


def make_strategy(device_plan: DevicePlan) -> tf.distribute.Strategy:
  if device_plan.strategy == 'multi_worker':
    raise ValueError('a multi-worker strategy is made first thing in the '
                     'process: make_multi_worker_strategy')
  if device_plan.strategy == 'mirrored':
    return tf.distribute.MirroredStrategy(devices=list(device_plan.devices))
  if device_plan.strategy == 'one_device':
    return tf.distribute.OneDeviceStrategy(device_plan.devices[0])
  return tf.distribute.get_strategy()
