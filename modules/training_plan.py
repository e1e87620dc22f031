"""What a training run does, decided from the data: the network for the
images' geometry (model.choose) and whether to augment them
(model.choose_augment), and a budget that grows with the dataset.

The budget is counted in examples seen: epochs = ceil(training_examples /
training records), within [min_epochs, max_epochs], so that MNIST gets a
few epochs (BENCHMARKS.md, "MNIST time to accuracy") and a few thousand
images get dozens. The learning rate warms up, then follows a cosine to
zero at the last planned step, whatever the number of epochs (Budget's
fields, modules/training_config.py).
"""

import dataclasses
import math
from typing import Any, Dict

from modules import model as model_lib
from modules.training_config import Budget
from records import features


@dataclasses.dataclass(frozen=True)
class TrainingPlan:
  architecture: str
  why: str  # Why this architecture.
  augment: bool
  augment_why: str
  epochs: int
  warmup_fraction: float
  train_records: int

  def to_dict(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)

  def describe(self) -> str:
    return (f'{self.architecture} ({self.why}); augmentation '
            f'{"on" if self.augment else "off"} ({self.augment_why}); '
            f'{self.epochs} epochs over {self.train_records} training '
            f'records, learning rate warm-up over {self.warmup_fraction:.0%} '
            'of the steps then cosine to zero')


def epochs_for(budget: Budget, train_records: int) -> int:
  if budget.epochs:
    return budget.epochs
  wanted = math.ceil(budget.training_examples / max(train_records, 1))
  return min(max(wanted, budget.min_epochs), budget.max_epochs)


def plan(budget: Budget, model: model_lib.ModelConfig,
         geometry: features.ImageGeometry, train_records: int) -> TrainingPlan:
  architecture, why = model_lib.choose(model, geometry)
  augment, augment_why = model_lib.choose_augment(model, geometry)
  epochs = epochs_for(budget, train_records)
  return TrainingPlan(architecture=architecture, why=why, augment=augment,
                      augment_why=augment_why, epochs=epochs,
                      warmup_fraction=budget.warmup_fraction,
                      train_records=train_records)
