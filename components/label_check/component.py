"""LabelCheck: per split, the records whose given class a held-out model doubts.

The artifact's contents: records/label_check_results.py. Why and how:
docs/label-check.md.
"""

from typing import Any, Dict, Optional

from tfx import types
from tfx.dsl.components.base import base_component
from tfx.dsl.components.base import executor_spec
from tfx.types import component_spec
from tfx.types import standard_artifacts
from tfx.utils import json_utils

from components.label_check import executor
from records import features
from records import label_check_results as results


class LabelSuspects(types.Artifact):
  """Records whose given label a held-out model doubts, per split."""
  # Kubeflow's form for a custom type, module.Class: the path TFX's
  # container entrypoint imports the class by (components/__init__.py).
  TYPE_NAME = 'components.LabelSuspects'


class LabelCheckSpec(component_spec.ComponentSpec):
  """LabelCheck's parameters, inputs and output."""
  PARAMETERS = {
      executor.TRAIN_SPLIT_KEY: component_spec.ExecutionParameter(type=str),
      # None: cross-fitted where the split is small (executor.py).
      executor.FOLDS_KEY: component_spec.ExecutionParameter(type=int,
                                                            optional=True),
      executor.FOLD_EXAMPLES_KEY: component_spec.ExecutionParameter(type=int),
      executor.CHECKED_RECORDS_KEY: component_spec.ExecutionParameter(type=int),
      executor.EVAL_SPLIT_KEY: component_spec.ExecutionParameter(type=str),
      executor.CROSS_FIT_FN_KEY: component_spec.ExecutionParameter(type=str),
      executor.SIGNATURE_KEY: component_spec.ExecutionParameter(type=str),
      executor.PROBABILITIES_KEY: component_spec.ExecutionParameter(type=str),
      # JSON, as TFX's Trainer passes its custom_config.
      executor.CUSTOM_CONFIG_KEY: component_spec.ExecutionParameter(
          type=str, optional=True),
  }
  INPUTS = {
      executor.EXAMPLES_KEY: component_spec.ChannelParameter(
          type=standard_artifacts.Examples),
      executor.MODEL_KEY: component_spec.ChannelParameter(
          type=standard_artifacts.Model),
      executor.MODEL_RUN_KEY: component_spec.ChannelParameter(
          type=standard_artifacts.ModelRun, optional=True),
      executor.EVALUATION_KEY: component_spec.ChannelParameter(
          type=standard_artifacts.ModelEvaluation, optional=True),
      executor.TRANSFORM_GRAPH_KEY: component_spec.ChannelParameter(
          type=standard_artifacts.TransformGraph),
  }
  OUTPUTS = {
      results.OUTPUT_KEY: component_spec.ChannelParameter(
          type=LabelSuspects),
  }


class LabelCheck(base_component.BaseComponent):
  """Lists the records of each split whose label the model doubts.

  Args:
    examples: the Examples the Trainer read.
    model: the Trainer's Model (its serving signature scores every split
      but the training one, validation where `model_run` holds it, and
      eval where `evaluation` holds it).
    model_run: the Trainer's ModelRun. With folds 0 it holds the training
      split's probabilities averaged over the Trainer's epochs, and
      validation's by the kept weights, where it kept them.
    transform_graph: the Transform graph, for the cross-fitted models.
    cross_fit_fn: module path of the function that cross-fits the training
      split (modules/cross_fit.py's `cross_fit`).
    folds: folds of the training split for cross-fitting; 0 scores it from
      `model_run` instead; None cross-fits executor.AUTO_FOLDS folds where
      the split holds at most AUTO_FOLDS x `fold_examples` records, and
      reads `model_run` otherwise.
    fold_examples: examples each fold's model trains on (its budget).
    checked_records: training and validation records checked at most,
      each split a sample chosen by a hash of their bytes (all of a smaller
      split); 0: only the eval split is checked.
    signature_name, probabilities_key: the model's signature that takes
      serialized Examples, and its output of class probabilities.
    custom_config: handed to `cross_fit_fn` (the Trainer's settings).
    evaluation: the Evaluator's ModelEvaluation of `model`; the eval
      split's probabilities written there are read instead of scoring it
      again.
    train_split: the split the Trainer trained on.
    eval_split: the split always checked whole: its labels judge the model
      that is pushed.
  """

  SPEC_CLASS = LabelCheckSpec
  EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

  def __init__(self, examples: types.BaseChannel, model: types.BaseChannel,
               model_run: Optional[types.BaseChannel],
               transform_graph: types.BaseChannel, cross_fit_fn: str,
               folds: Optional[int], fold_examples: int,
               checked_records: int,
               signature_name: str,
               probabilities_key: str,
               custom_config: Optional[Dict[str, Any]] = None,
               evaluation: Optional[types.BaseChannel] = None,
               train_split: str = features.TRAIN_SPLIT,
               eval_split: str = features.EVAL_SPLIT):
    if folds is not None and (folds < 0 or folds == 1):
      raise ValueError(f'LabelCheck: folds must be 0 (the training split '
                       f'scored from the Trainer\'s run) or at least 2, got '
                       f'{folds}')
    super().__init__(spec=LabelCheckSpec(
        examples=examples, model=model, model_run=model_run,
        evaluation=evaluation, transform_graph=transform_graph,
        cross_fit_fn=cross_fit_fn, folds=folds, fold_examples=fold_examples,
        checked_records=checked_records,
        signature_name=signature_name, probabilities_key=probabilities_key,
        custom_config=json_utils.dumps(custom_config or {}),
        train_split=train_split, eval_split=eval_split,
        suspects=types.Channel(type=LabelSuspects)))
