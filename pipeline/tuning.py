"""TFX's Tuner before the Trainer, with `--tune` (pipeline.py adds it)."""

from typing import Optional

from tfx import v1 as tfx

from modules.training_config import TrainingConfig, TuningConfig
from pipeline import configs


def tuner(tuning: TuningConfig, training: TrainingConfig, examples,
          transform_graph, schema) -> Optional[tfx.components.Tuner]:
  """The Tuner node, or None without --tune. Its trials read what the
  Trainer reads; each trains tuning.trial_steps steps (its TrainArgs) and
  scores on the eval split (the Trainer's eval steps)."""
  if not tuning.trials:
    return None
  return tfx.components.Tuner(
      tuner_fn=configs.TUNER_FN,
      examples=examples,
      transform_graph=transform_graph,
      schema=schema,
      train_args=tfx.proto.TrainArgs(num_steps=tuning.trial_steps),
      eval_args=tfx.proto.EvalArgs(num_steps=training.eval_steps),
      custom_config={'training': training.to_dict(),
                     'tuning': tuning.to_dict()})
