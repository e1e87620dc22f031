"""What a training run does, decided from the data.

The network, augmentation, and a budget that grows with the dataset (a warm
start takes a share of it). Why and how: docs/training.md, "The budget".
"""

import dataclasses
import math
import shutil
import tempfile
from typing import Any, Dict, Optional, Tuple

from tfx.components.trainer.fn_args_utils import FnArgs

from modules.training import devices
from modules.training import model as model_lib
from modules.training.config import Budget, TrainingConfig
from modules.training.input_pipeline import TrainerData
from records import features


@dataclasses.dataclass(frozen=True)
class TrainingPlan:
  """What the Trainer decided to train, and why (training_plan.json)."""
  architecture: str
  why: str  # Why this architecture.
  input_size: Tuple[int, int]  # (height, width) the network sees.
  input_why: str
  augment: bool
  augment_why: str
  epochs: int
  warmup_fraction: float
  train_records: int
  # The peak learning rate is --learning-rate times this.
  learning_rate_factor: float = 1.0
  # Where training starts: the served model's path, or '' for from
  # scratch; and why (empty when no warm start was asked for).
  warm_start_from: str = ''
  start_why: str = ''

  @property
  def warm(self) -> bool:
    """Whether training starts from the served model's weights."""
    return bool(self.warm_start_from)

  def to_dict(self) -> Dict[str, Any]:
    """Returns the plan as training_plan.json holds it."""
    return dataclasses.asdict(self)

  def describe(self) -> str:
    """The plan in a line: network, augmentation, epochs and schedule."""
    return (f'{self.architecture} ({self.why}) at {self.size_text} '
            f'({self.input_why}); augmentation '
            f'{"on" if self.augment else "off"} ({self.augment_why}); '
            f'{self.epochs} epochs over {self.train_records} training '
            f'records, learning rate warm-up over {self.warmup_fraction:.0%} '
            'of the steps then cosine to zero'
            + (f', peak learning rate x{self.learning_rate_factor:g}'
               if self.learning_rate_factor != 1 else ''))

  @property
  def size_text(self) -> str:
    """The input size as HxW."""
    return f'{self.input_size[0]}x{self.input_size[1]}'

  def describe_start(self) -> str:
    """Warm or from scratch, and why, in a line."""
    start = (f'warm start from {self.warm_start_from}' if self.warm
             else 'from scratch')
    return f'{start} ({self.start_why})' if self.start_why else start


def epochs_for(budget: Budget, train_records: int, warm: bool = False) -> int:
  """--epochs if given; else from the records, a share of that if warm.

  Args:
    budget: the run's budget: --epochs, the examples to show the model,
      the bounds of the epochs, a warm start's share of them.
    train_records: the records of the training split.
    warm: whether training starts from the served model's weights.
  """
  if budget.epochs:
    return budget.epochs
  wanted = math.ceil(budget.training_examples / max(train_records, 1))
  epochs = min(max(wanted, budget.min_epochs), budget.max_epochs)
  if warm:
    return max(1, math.ceil(epochs * budget.warm_start_epochs_fraction))
  return epochs


def plan(budget: Budget, model: model_lib.ModelConfig,
         geometry: features.ImageGeometry, train_records: int,
         warm_start_from: str = '', start_why: str = '',
         why: str = '') -> TrainingPlan:
  """The plan of a training run.

  Args:
    budget: the run's budget: epochs, warm-up, a warm start's shares.
    model: the network's settings.
    geometry: the images' height, width and channels.
    train_records: the records of the training split.
    warm_start_from: the served model training starts from ('' for from
      scratch).
    start_why: why it starts there (modules/training/warm_start.py).
    why: why this network, if not model.choose's.
  """
  architecture, chosen_why = model_lib.choose(model, geometry)
  if model.backbone:
    size, input_why = model_lib.pretrained_input_size(model)
  else:
    size, input_why = model_lib.input_size(model, geometry)
  augment, augment_why = model_lib.choose_augment(model, geometry)
  warm = bool(warm_start_from)
  return TrainingPlan(
      architecture=architecture, why=why or chosen_why, input_size=size,
      input_why=input_why, augment=augment,
      augment_why=augment_why,
      epochs=epochs_for(budget, train_records, warm),
      warmup_fraction=budget.warmup_fraction, train_records=train_records,
      learning_rate_factor=(budget.warm_start_learning_rate_factor if warm
                            else 1.0),
      warm_start_from=warm_start_from, start_why=start_why)


@dataclasses.dataclass(frozen=True)
class Outputs:
  """Where this worker writes the training logs and the serving model.

  The chief writes them to the Trainer's outputs; any other worker writes
  its copies (saving may need every worker's collective ops) to temporary
  folders, removed at the end.
  """
  chief: bool
  model_run_dir: str
  serving_model_dir: str

  def remove_temporary(self) -> None:
    """Removes a worker's temporary folders; the chief's outputs stay."""
    if not self.chief:
      shutil.rmtree(self.model_run_dir)
      shutil.rmtree(self.serving_model_dir)


@dataclasses.dataclass(frozen=True)
class Run:
  """One worker's run once planned: what every step of run_fn reads."""
  fn_args: FnArgs
  config: TrainingConfig  # With --tune's winner and the network chosen.
  data: TrainerData
  plan: TrainingPlan
  device_plan: devices.DevicePlan
  task: Optional[devices.Task]  # None: not one worker of several.
  outputs: Outputs


def outputs_for(fn_args: FnArgs, task: Optional[devices.Task]) -> Outputs:
  """The chief's outputs are the Trainer's; another worker's temporary."""
  if task is None or task.is_chief:
    return Outputs(True, fn_args.model_run_dir, fn_args.serving_model_dir)
  return Outputs(False, tempfile.mkdtemp(prefix='trainer-worker-'),
                 tempfile.mkdtemp(prefix='trainer-worker-'))
