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
  strategy: str  # 'default' (CPU), 'one_device' (1 GPU) or 'mirrored' (>1).
  devices: Sequence[str]
  precision: str  # A Keras mixed-precision policy name.
  global_batch_size: int

  def describe(self) -> str:
    where = ', '.join(self.devices) if self.devices else 'CPU'
    return (f'training on {where} with the {self.strategy} strategy, '
            f'{self.precision} precision, global batch {self.global_batch_size}')

  def write(self, directory: str) -> None:
    """Records the plan as PLAN_FILE in `directory` (any TF filesystem)."""
    tf.io.gfile.makedirs(directory)
    with tf.io.gfile.GFile(os.path.join(directory, PLAN_FILE), 'w') as f:
      json.dump({**dataclasses.asdict(self), 'devices': list(self.devices),
                 'description': self.describe()}, f, indent=2)


def plan(gpus: Sequence[str], batch_size: int,
         mixed_precision: bool = True) -> DevicePlan:
  """One GPU trains alone, several mirror; GPUs compute in mixed float16.

  `batch_size` is per replica: with N GPUs each step sees N times as many
  examples, which keeps every GPU as busy as one would be.
  """
  gpus = list(gpus)
  if not gpus:
    return DevicePlan('default', [], 'float32', batch_size)
  precision = 'mixed_float16' if mixed_precision else 'float32'
  if len(gpus) == 1:
    return DevicePlan('one_device', gpus, precision, batch_size)
  return DevicePlan('mirrored', gpus, precision, batch_size * len(gpus))


def visible_gpus() -> Sequence[str]:
  return [f'/gpu:{i}' for i, _ in
          enumerate(tf.config.list_physical_devices('GPU'))]


def make_strategy(device_plan: DevicePlan) -> tf.distribute.Strategy:
  if device_plan.strategy == 'mirrored':
    return tf.distribute.MirroredStrategy(devices=list(device_plan.devices))
  if device_plan.strategy == 'one_device':
    return tf.distribute.OneDeviceStrategy(device_plan.devices[0])
  return tf.distribute.get_strategy()
