"""TFX's Tuner before the Trainer, with `--tune` (pipeline.py adds it)."""

from typing import Optional

from tfx.components import Tuner

from modules.training_config import TrainingConfig, TuningConfig
from pipeline import configs
from pipeline import validation


def tuner(tuning: TuningConfig, training: TrainingConfig, examples,
          transform_graph, schema,
          validation_percent: int) -> Optional[Tuner]:
  """Returns the Tuner node, or None without --tune.

  Its trials read what the Trainer reads. Each trains tuning.trial_steps
  steps (its TrainArgs) and scores on the validation split (the Trainer's
  eval steps).

  Raises:
    ValueError: --tune without a validation split (validation_percent 0).
  """
  if not tuning.trials:
    return None
  if not validation_percent:
    raise ValueError('--tune needs a validation split to score its trials '
                     'on; --validation-percent 0 leaves none')
  return Tuner(
      tuner_fn=configs.TUNER_FN,
      examples=examples,
      transform_graph=transform_graph,
      schema=schema,
      train_args=validation.train_args(tuning.trial_steps),
      eval_args=validation.eval_args(validation_percent, training.eval_steps),
      custom_config={'training': training.to_dict(),
                     'tuning': tuning.to_dict(),
                     **validation.custom_config(validation_percent)})
