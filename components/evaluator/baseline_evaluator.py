"""TFX's Evaluator, with a baseline that may hold no model.

With nothing served yet only the accuracy threshold is checked, and that
threshold may come from the data. Why and how: docs/serving.md.
"""

import contextlib
import json
from typing import Any, Dict, List, Optional

from absl import logging
import tensorflow_model_analysis as tfma
from tfx import types
from tfx.components.evaluator import executor as evaluator_executor
from tfx.dsl.components.base import base_beam_component
from tfx.dsl.components.base import executor_spec
from tfx.types import artifact_utils
from tfx.types import component_spec
from tfx.types import standard_artifacts
from tfx.types import standard_component_specs
from tfx.utils import io_utils
from tfx.utils import path_utils
from tfx.utils import proto_utils

from components.evaluator import blessing_rule
from components.evaluator import extractors
from components import push_once
from components import served_model
from components import tfx_workarounds
from components.image_example_gen import span_window
from records import features
from records import model_blessing

# 1: set the accuracy threshold from the eval split's classes.
ACCURACY_FROM_DATA_KEY = 'accuracy_threshold_from_data'
# Said on the console when the baseline is the candidate itself.
SELF_BASELINE = ('the baseline is this model itself, blessed before: '
                 'evaluated alone, against the threshold')
_SPECS = standard_component_specs


def judged_splits(whole_window: bool) -> List[str]:
  """Returns the Evaluator's example_splits.

  They are the newest span's eval, and with `whole_window` the earlier
  spans' eval of a span window too.
  """
  return [features.EVAL_SPLIT, *(
      [features.EARLIER_EVAL_SPLIT] if whole_window else [])]


def present_splits(input_dict: Dict[str, List[types.Artifact]],
                    exec_properties: Dict[str, Any]) -> Dict[str, Any]:
  """Returns exec_properties with example_splits cut to the splits present.

  A window that found one span has no earlier eval.
  """
  [examples] = input_dict[_SPECS.EXAMPLES_KEY]
  present = artifact_utils.decode_split_names(examples.split_names)
  evaluated = json.loads(exec_properties.get(_SPECS.EXAMPLE_SPLITS_KEY) or
                         'null') or [features.EVAL_SPLIT]
  kept = [split for split in evaluated if split in present] or evaluated
  return {**exec_properties, _SPECS.EXAMPLE_SPLITS_KEY: json.dumps(kept)}


def judged_line(input_dict: Dict[str, List[types.Artifact]],
                exec_properties: Dict[str, Any]) -> Optional[str]:
  """Returns the line saying which spans' eval is judged, or None.

  For example "judges on span 7's eval split (1,234 records); ...". Examples
  of one span get None.
  """
  [examples] = input_dict[_SPECS.EXAMPLES_KEY]
  spans = span_window.decode_spans(examples.get_string_custom_property(
      span_window.SPANS_PROPERTY))
  if len(spans) < 2:
    return None
  evaluated = json.loads(exec_properties[_SPECS.EXAMPLE_SPLITS_KEY])
  patterns = [io_utils.all_files_pattern(uri) for split in evaluated
              for uri in artifact_utils.get_split_uris([examples], split)]
  records = int(blessing_rule.count_labels(patterns,
                                           features.LABEL_KEY).sum())
  if features.EARLIER_EVAL_SPLIT in evaluated:
    return (f'judges on the eval splits of spans '
            f'{", ".join(map(str, spans))} ({records:,} records), the '
            'whole window (--judge-window)')
  return (f'judges on span {spans[-1]}\'s eval split ({records:,} records); '
          'the window\'s older spans\' eval is not judged')


def rule_of(input_dict: Dict[str, List[types.Artifact]],
            exec_properties: Dict[str, Any],
            eval_config: tfma.EvalConfig) -> blessing_rule.Rule:
  """Returns the blessing rule of this evaluation.

  That is the eval_config's fixed threshold, or one from the labels of the
  evaluated splits.

  Args:
    input_dict: the Evaluator's inputs; its examples give the labels.
    exec_properties: the Evaluator's; ACCURACY_FROM_DATA_KEY picks the data's
      threshold, example_splits (present_splits) the splits it counts.
    eval_config: the evaluation's config, whose accuracy threshold is the
      fixed one.

  Raises:
    ValueError: the eval_config has no threshold and none comes from data.
  """
  if not exec_properties.get(ACCURACY_FROM_DATA_KEY):
    threshold = blessing_rule.threshold_of(eval_config)
    if threshold is None:
      raise ValueError(f'eval_config: no {model_blessing.ACCURACY_METRIC} '
                       f'threshold, and {ACCURACY_FROM_DATA_KEY} is not set')
    return blessing_rule.fixed(threshold)
  [examples] = input_dict[_SPECS.EXAMPLES_KEY]
  evaluated = json.loads(exec_properties.get(_SPECS.EXAMPLE_SPLITS_KEY) or
                         'null') or [features.EVAL_SPLIT]
  patterns = [io_utils.all_files_pattern(uri) for split in evaluated
              for uri in artifact_utils.get_split_uris([examples], split)]
  names = examples.get_string_custom_property(features.CLASS_NAMES_PROPERTY)
  return blessing_rule.from_class_counts(
      blessing_rule.count_labels(patterns, features.LABEL_KEY),
      features.decode_class_names(names) if names else None)


def is_candidate(baseline: types.Artifact, candidate: types.Artifact) -> bool:
  """Whether the baseline is the candidate model itself: the same artifact
  (TFX's resolver, in a run whose Trainer came from the cache after its
  model was blessed), or the same files (ServedModel's copy of a version
  pushed from it, as the push-once Pusher compares them)."""
  return baseline.uri == candidate.uri or push_once.same_files(
      path_utils.serving_model_path(baseline.uri),
      path_utils.serving_model_path(candidate.uri))


class Executor(evaluator_executor.Executor):
  """TFX's Evaluator executor, which applies and records the blessing rule.

  It also leaves out a baseline that holds no model, or that is the
  candidate itself (SELF_BASELINE).
  """

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    """Evaluates as TFX's Evaluator, with the rule's threshold set."""
    key = _SPECS.BASELINE_MODEL_KEY
    baselines = input_dict.get(key) or []
    [candidate] = input_dict[_SPECS.MODEL_KEY]
    itself = False
    if baselines and not all(served_model.holds_model(b) for b in baselines):
      logging.info('No model is served yet: evaluating without a baseline.')
      input_dict = {**input_dict, key: []}
    elif baselines and all(is_candidate(b, candidate) for b in baselines):
      # Scoring the same model twice would double the Evaluator's time for
      # a comparison that cannot fail.
      logging.info(blessing_rule.JUDGED_LINE, SELF_BASELINE)
      input_dict, itself = {**input_dict, key: []}, True
    exec_properties = present_splits(input_dict, exec_properties)
    judged = judged_line(input_dict, exec_properties)
    if judged:
      logging.info(blessing_rule.JUDGED_LINE, judged)
    eval_config = tfma.EvalConfig()
    proto_utils.json_to_proto(exec_properties[_SPECS.EVAL_CONFIG_KEY],
                              eval_config)
    rule = rule_of(input_dict, exec_properties, eval_config)
    blessing_rule.set_threshold(eval_config, rule.threshold)
    logging.info(blessing_rule.RULE_LINE, rule.text)
    # The eval split's probabilities, for LabelCheck; with earlier spans'
    # eval too, the rows could not tell the splits apart.
    evaluated = json.loads(exec_properties[_SPECS.EXAMPLE_SPLITS_KEY])
    writing = (extractors.written_to(artifact_utils.get_single_uri(
        output_dict[_SPECS.EVALUATION_KEY]))
               if evaluated == [features.EVAL_SPLIT]
               else contextlib.nullcontext())
    with tfx_workarounds.byte_size_batching(), writing:
      super().Do(input_dict, output_dict, {
          **exec_properties,
          _SPECS.EVAL_CONFIG_KEY: proto_utils.proto_to_json(eval_config)})
    blessing = artifact_utils.get_single_instance(
        output_dict[_SPECS.BLESSING_KEY])
    rule.record(blessing)
    blessing.set_int_custom_property(
        model_blessing.BASELINE_IS_CANDIDATE_PROPERTY, int(itself))


class EvaluatorSpec(standard_component_specs.EvaluatorSpec):
  """TFX's EvaluatorSpec, plus ACCURACY_FROM_DATA_KEY."""
  PARAMETERS = {
      **standard_component_specs.EvaluatorSpec.PARAMETERS,
      ACCURACY_FROM_DATA_KEY: component_spec.ExecutionParameter(
          type=int, optional=True),
  }


class Evaluator(base_beam_component.BaseBeamComponent):
  """TFX's Evaluator component with the executor above.

  It has TFX's inputs and outputs (those this pipeline uses) and node id
  ('Evaluator').
  """

  SPEC_CLASS = EvaluatorSpec
  EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(Executor)

  def __init__(self, examples: types.BaseChannel, model: types.BaseChannel,
               eval_config: tfma.EvalConfig,
               baseline_model: Optional[types.BaseChannel] = None,
               example_splits: Optional[List[str]] = None,
               accuracy_threshold_from_data: bool = False,
               write_eval_predictions: bool = False):
    """Takes TFX's Evaluator's arguments, and one more.

    Args:
      examples: as TFX's Evaluator.
      model: as TFX's Evaluator.
      eval_config: as TFX's Evaluator.
      baseline_model: as TFX's Evaluator.
      example_splits: as TFX's Evaluator.
      accuracy_threshold_from_data: whether the executor sets the accuracy
        threshold from the evaluated splits' classes
        (blessing_rule.py). The eval_config then has none.
      write_eval_predictions: whether it writes the model's probabilities
        of the eval split beside the evaluation (extractors.py), for
        LabelCheck.
    """
    super().__init__(spec=EvaluatorSpec(
        examples=examples, model=model, baseline_model=baseline_model,
        eval_config=eval_config,
        example_splits=json.dumps(example_splits),
        module_path=(extractors.__name__ if write_eval_predictions
                     else None),
        **{ACCURACY_FROM_DATA_KEY: int(accuracy_threshold_from_data)},
        evaluation=types.Channel(type=standard_artifacts.ModelEvaluation),
        blessing=types.Channel(type=standard_artifacts.ModelBlessing)))
