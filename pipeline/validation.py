"""The split the Trainer and the Tuner validate on.

ImageExampleGen's validation split, or none with --validation-percent 0.
Why: docs/training.md, "What the validation split decides".
"""

from typing import Any, Dict, Optional

from tfx.proto import trainer_pb2

from modules.trainer import VALIDATION_SPLIT_KEY
from records import splits


def split(validation_percent: int) -> Optional[str]:
  """The validation split's name, None without one."""
  return splits.VALIDATION if validation_percent else None


def train_args(num_steps: Optional[int]) -> trainer_pb2.TrainArgs:
  """Returns TrainArgs of the training split, for `num_steps` steps."""
  return trainer_pb2.TrainArgs(splits=[splits.TRAIN],
                             num_steps=num_steps)


def eval_args(validation_percent: int,
              num_steps: Optional[int]) -> trainer_pb2.EvalArgs:
  """Returns EvalArgs of the validation split.

  Without one, TFX still hands the Trainer the files of its default split,
  'eval'. run_fn reads none of them, since `custom_config`'s
  VALIDATION_SPLIT_KEY is None.

  Args:
    validation_percent: the share of the data held out for validation, in
      percent; 0: no validation split.
    num_steps: evaluation steps; None: the whole split.
  """
  return trainer_pb2.EvalArgs(
      splits=[split(validation_percent) or 'eval'], num_steps=num_steps)


def custom_config(validation_percent: int) -> Dict[str, Any]:
  """Returns what run_fn and tuner_fn are told of the validation split."""
  return {VALIDATION_SPLIT_KEY: split(validation_percent)}
