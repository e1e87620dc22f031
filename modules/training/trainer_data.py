"""What the Trainer and the Tuner read of their inputs before training.

Class names, split files, the split validated on, how to read each split
(modules/input_pipeline.py) and the images' geometry.
"""

import dataclasses
import os
from typing import List, Optional, Tuple

from absl import logging
import tensorflow_transform as tft
from tfx.components.trainer.fn_args_utils import FnArgs

from modules import input_pipeline
from modules.training.config import TrainingConfig
from records import features

# custom_config's entry naming the split validated on (None: none).
VALIDATION_SPLIT_KEY = 'validation_split'
# The log line of each split's input plan: who reads it, and the plan.
INPUT_LINE = '%s input: %s.'


@dataclasses.dataclass(frozen=True)
class TrainerData:
  """What the Trainer reads of its inputs before it trains."""
  transform_output: tft.TFTransformOutput
  geometry: features.ImageGeometry
  class_names: List[str]
  validation: Optional[str]  # The split validated on; None: none.
  train_plan: input_pipeline.InputPlan
  validation_plan: Optional[input_pipeline.InputPlan]
  sample_record: bytes  # Any record, to read the transform's normalisation.

  @property
  def input_plans(self) -> List[input_pipeline.InputPlan]:
    """The plans of the splits read: train's, then validation's if any."""
    return [p for p in (self.train_plan, self.validation_plan) if p]


def read_data(fn_args: FnArgs, config: TrainingConfig,
              reader: str = 'Trainer') -> TrainerData:
  """Reads the transform graph, the class names and the splits' sizes, and
  plans how to read each split, logged as `reader`'s input.

  Args:
    fn_args: TFX's FnArgs: the transform graph and the splits' files.
    config: the run's settings; its input settings plan each split.
    reader: the component named in the log lines, 'Trainer' or 'Tuner'.
  """
  transform_output = tft.TFTransformOutput(fn_args.transform_graph_path)
  validation = validation_split(fn_args)
  train_plan, validation_plan = plan_inputs(fn_args, config, validation)
  for input_plan in (train_plan, validation_plan):
    if input_plan:
      logging.info(INPUT_LINE, reader, input_plan.describe())
  return TrainerData(
      transform_output, image_geometry(transform_output),
      class_names_for(fn_args.train_files), validation, train_plan,
      validation_plan, input_pipeline.first_record(fn_args.train_files))


def _examples_uri(train_files: List[str]) -> str:
  # train_files are <examples uri>/Split-train/*
  return os.path.dirname(os.path.dirname(train_files[0]))


def class_names_for(train_files: List[str]) -> List[str]:
  """Class names of the Examples artifact that `train_files` belong to."""
  return features.read_class_names(
      os.path.join(_examples_uri(train_files), features.CLASS_NAMES_FILE))


def split_files_for(train_files: List[str], split: str) -> List[str]:
  """The file pattern of split `split` of the Examples artifact that
  `train_files` belong to."""
  return [os.path.join(_examples_uri(train_files), f'Split-{split}', '*')]


def validation_split(fn_args: FnArgs) -> Optional[str]:
  """The split the Trainer (or the Tuner) validates on, None for none: as
  custom_config says (pipeline/stages.py, validation_config), else its eval
  files'."""
  if VALIDATION_SPLIT_KEY in (fn_args.custom_config or {}):
    return fn_args.custom_config[VALIDATION_SPLIT_KEY]
  return os.path.basename(os.path.dirname(fn_args.eval_files[0]))[
      len('Split-'):]


def plan_inputs(fn_args: FnArgs, config: TrainingConfig, split: Optional[str]
                ) -> Tuple[input_pipeline.InputPlan,
                           Optional[input_pipeline.InputPlan]]:
  """(The train split's plan, the validation split's or None).

  Args:
    fn_args: TFX's FnArgs: the train and eval files.
    config: the run's settings; its input settings plan each split.
    split: the split validated on, named in its plan; None: the train split
      alone is planned, with the whole memory budget.
  """
  train = input_pipeline.measure(fn_args.train_files)
  if split is None:
    return input_pipeline.plan_split(
        'train', train, config.input, True, config.input.memory_budget), None
  train_plan, validation_plan = input_pipeline.plan_inputs(
      train, input_pipeline.measure(fn_args.eval_files), config.input)
  return train_plan, dataclasses.replace(validation_plan, split=split)


def image_geometry(
    tf_transform_output: tft.TFTransformOutput) -> features.ImageGeometry:
  """The geometry the transform graph was built for: the data's."""
  return features.ImageGeometry(*tf_transform_output.transformed_feature_spec()[
      features.IMAGE_KEY].shape)


def check_files_per_worker(fn_args: FnArgs, workers: int,
                           validation: Optional[str]) -> None:
  """Each worker reads its own files of a split: a split of fewer files
  than workers is an error, said before any worker starts.

  Args:
    fn_args: TFX's FnArgs: the train and eval files.
    workers: the number of workers.
    validation: the split validated on, read from the eval files; None: the
      train split alone is checked.

  Raises:
    ValueError: a split has fewer files than `workers`.
  """
  for split, patterns in (('train', fn_args.train_files),
                          *([(validation, fn_args.eval_files)]
                            if validation else [])):
    files = input_pipeline.list_files(patterns)
    if len(files) < workers:
      raise ValueError(
          f'{workers} Trainer workers need at least {workers} files per '
          f'split, and the {split} split has {len(files)} '
          f'({", ".join(patterns)}): each worker reads its own files. Write '
          f'more shards (--num-shards) or train on fewer workers.')
