"""How a model trained: per epoch curves, the settings and the device plan.

The Trainer (modules/trainer.py) logs with Keras' TensorBoard callback at
update_freq='epoch' into its ModelRun artifact: `train/` and `validation/`
each hold event files with one `epoch_<metric>` scalar per epoch (step 0 is
the first epoch), e.g. epoch_loss, epoch_accuracy and, from the learning rate
schedule, epoch_lr. Its settings are the `training` entry of the Trainer's
custom_config execution property; the device plan is the file the Trainer
writes beside the logs (modules/devices.py PLAN_FILE).
"""

import json
import os
from typing import Any, Dict, List, Optional

from inspector import files
from inspector import queries
from inspector.store import InspectError

_EPOCH_PREFIX = 'epoch_'
# The event files of one TensorBoard run directory.
_EVENT_FILES = 'events.out.tfevents.*'


def _scalars(path: str) -> Dict[str, Dict[int, float]]:
  """Tag -> {step: value} of the scalar summaries in one event file."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  found: Dict[str, Dict[int, float]] = {}
  # The records are Event protos; tf.data reads them without the deprecated
  # tf.compat.v1 summary_iterator's warnings.
  for record in tf.data.TFRecordDataset(path):
    event = tf.compat.v1.Event.FromString(record.numpy())
    for value in event.summary.value:
      if value.HasField('tensor'):
        array = tf.make_ndarray(value.tensor)
        if array.size != 1 or array.dtype.kind not in 'fiu':
          continue  # The model graph, histograms: not scalars.
        number = float(array.reshape(()))
      elif value.HasField('simple_value'):
        number = float(value.simple_value)
      else:
        continue
      found.setdefault(value.tag, {})[int(event.step)] = number
  return found


def epoch_curves(model_run: queries.Artifact) -> Dict[str, Any]:
  """Per metric (loss, accuracy, lr...), per subset (train, validation), the
  value of each epoch, epochs counted from 1.

  Returns {'epochs': N, 'metrics': {metric: {subset: [v1, ..., vN]}}}; a
  subset that missed an epoch has None there.
  """
  subsets: Dict[str, Dict[str, Dict[int, float]]] = {}
  for subset in ('train', 'validation'):
    paths = files.glob(os.path.join(model_run.uri, subset, _EVENT_FILES))
    merged: Dict[str, Dict[int, float]] = {}
    for path in paths:
      for tag, values in _scalars(path).items():
        if tag.startswith(_EPOCH_PREFIX):
          merged.setdefault(tag[len(_EPOCH_PREFIX):], {}).update(values)
    if merged:
      subsets[subset] = merged
  if not subsets:
    raise InspectError(f'ModelRun {model_run.id}: no epoch summaries in '
                       f'{model_run.uri} (train/ and validation/ hold no '
                       'TensorBoard event files with epoch_* scalars)')
  steps = sorted({step for merged in subsets.values()
                  for values in merged.values() for step in values})
  epochs = (max(steps) + 1) if steps else 0
  metrics: Dict[str, Dict[str, List[Optional[float]]]] = {}
  for subset, merged in subsets.items():
    for metric, values in sorted(merged.items()):
      metrics.setdefault(metric, {})[subset] = [values.get(step)
                                                for step in range(epochs)]
  return {'epochs': epochs, 'metrics': metrics}


def settings(trainer: queries.Execution) -> Dict[str, Any]:
  """The Trainer's training settings, and its train and eval step counts."""
  props = trainer.properties
  try:
    custom = json.loads(props.get('custom_config') or '{}') or {}
    train_args = json.loads(props.get('train_args') or '{}') or {}
    eval_args = json.loads(props.get('eval_args') or '{}') or {}
  except ValueError as e:
    raise InspectError(f'Trainer execution {trainer.id}: its properties are '
                       f'not JSON ({e})') from e
  if 'training' not in custom:
    raise InspectError(f'Trainer execution {trainer.id}: no "training" entry '
                       'in its custom_config')
  # The precision the Trainer used is its device plan's (a GPU setting).
  training = {k: v for k, v in custom['training'].items()
              if k != 'mixed_precision'}
  return {'training': training,
          'train_steps': train_args.get('num_steps'),
          'eval_steps': eval_args.get('num_steps')}


def device_plan(model_run: queries.Artifact) -> Dict[str, Any]:
  """The devices, strategy, precision and batch the Trainer chose."""
  from modules import devices  # pylint: disable=g-import-not-at-top
  path = os.path.join(model_run.uri, devices.PLAN_FILE)
  if not files.exists(path):
    raise InspectError(f'{path}: missing (a Trainer from before the device '
                       'plan was recorded; its log says which it used)')
  return json.loads(files.read_bytes(path))
