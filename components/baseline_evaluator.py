"""TFX's Evaluator, whose baseline may hold no model (nothing served yet).

The baseline comes from ServedModel (components/served_model.py), which
always outputs a Model artifact; before anything is served that artifact is
empty. TFX's Evaluator would fail loading it, so this executor then leaves
the baseline out, exactly as TFX's Evaluator runs with no baseline: the
accuracy threshold is checked, the comparison with a baseline is not.
"""

from typing import Any, Dict, List

from absl import logging
from tfx import types
from tfx.components.evaluator import component as evaluator_component
from tfx.components.evaluator import executor as evaluator_executor
from tfx.dsl.components.base import executor_spec
from tfx.types import standard_component_specs

from components import served_model


class Executor(evaluator_executor.Executor):
  """TFX's Evaluator executor, minus a baseline that holds no model."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    key = standard_component_specs.BASELINE_MODEL_KEY
    baselines = input_dict.get(key) or []
    if baselines and not all(served_model.holds_model(b) for b in baselines):
      logging.info('No model is served yet: evaluating without a baseline.')
      input_dict = {**input_dict, key: []}
    super().Do(input_dict, output_dict, exec_properties)


class Evaluator(evaluator_component.Evaluator):
  """TFX's Evaluator component with the executor above; same inputs, outputs
  and node id ('Evaluator')."""
  EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(Executor)
