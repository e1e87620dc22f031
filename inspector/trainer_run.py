"""How a model trained: per epoch curves, the settings, the device plan,
and which split decided what.

Read from the Trainer's ModelRun (TensorBoard's epoch scalars, the device
plan), its custom_config and training_plan.json. See docs/training.md.
"""

import json
import os
from typing import Any, Dict, List, Optional

from metadata import queries
from metadata.store import InspectError
from records import artifact_files
from records import features


def epoch_curves(model_run: queries.Artifact) -> Dict[str, Any]:
  """Per metric (loss, accuracy, lr...), per subset (train, validation), the
  value of each epoch: {'epochs': N, 'metrics': {metric: {subset: [v1, ...,
  vN]}}}, None where a subset missed an epoch."""
  from tensorboard.backend.event_processing import event_accumulator  # pylint: disable=g-import-not-at-top
  from tensorboard.util import tensor_util  # pylint: disable=g-import-not-at-top
  subsets: Dict[str, Dict[str, Dict[int, float]]] = {}
  for subset in ('train', 'validation'):
    directory = os.path.join(model_run.uri, subset)
    if not artifact_files.exists(directory):
      continue
    events = event_accumulator.EventAccumulator(
        directory, size_guidance={event_accumulator.TENSORS: 0}).Reload()
    for tag in events.Tags()['tensors']:
      if tag.startswith('epoch_'):
        subsets.setdefault(subset, {})[tag[len('epoch_'):]] = {
            e.step: float(tensor_util.make_ndarray(e.tensor_proto))
            for e in events.Tensors(tag)}
  if not subsets:
    raise InspectError(f'ModelRun {model_run.id}: no epoch summaries in '
                       f'{model_run.uri} (train/ and validation/ hold no '
                       'TensorBoard event files with epoch_* scalars)')
  epochs = 1 + max(step for merged in subsets.values()
                   for values in merged.values() for step in values)
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
          'eval_steps': eval_args.get('num_steps'),
          # TFX's defaults where the args name none.
          'train_splits': train_args.get('splits') or [features.TRAIN_SPLIT],
          'eval_splits': eval_args.get('splits') or [features.EVAL_SPLIT]}


def splits(model: queries.Artifact) -> Dict[str, Any]:
  """Which split decided what, from the serving model's training_plan.json:
  {'records': {split: records read}, 'validation_split': the split early
  stopping and the kept epoch were decided on (None: none), 'early_stopping':
  its outcome (modules/training/callbacks.py)}."""
  from records import serving_model  # pylint: disable=g-import-not-at-top
  from modules.training import config  # pylint: disable=g-import-not-at-top
  from tfx.utils import path_utils  # pylint: disable=g-import-not-at-top
  model.check_on_disk()
  model_dir = path_utils.serving_model_path(model.uri)
  path = os.path.join(model_dir, serving_model.EXTRA_DIR,
                      serving_model.TRAINING_PLAN_FILE)
  try:
    plan = serving_model.read_training_plan(model_dir)
  except FileNotFoundError as e:
    raise InspectError(f'{path}: missing (a model exported without its '
                       'training plan)') from e
  if 'records' not in plan:
    raise InspectError(f'{path}: no records per split (a Trainer from '
                       'before the validation split)')
  return {'records': plan['records'],
          'validation_split': plan.get(config.VALIDATION_SPLIT_KEY),
          'early_stopping': plan.get('early_stopping', {})}


def device_plan(model_run: queries.Artifact) -> Dict[str, Any]:
  from modules.training import devices  # pylint: disable=g-import-not-at-top
  path = os.path.join(model_run.uri, devices.PLAN_FILE)
  if not artifact_files.exists(path):
    raise InspectError(f'{path}: missing (a Trainer from before the device '
                       'plan was recorded; its log says which it used)')
  return json.loads(artifact_files.read_bytes(path))
