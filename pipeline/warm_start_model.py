"""--warm-start in the DAG: the model in service as the Trainer's base_model.

A ServedModel node (components/served_model.py) before the Trainer finds it.
Why and how: docs/training.md, "Warm start".
"""

from typing import Any, Dict, List, Optional

from tfx import types
from tfx.components.trainer import executor as trainer_executor
from tfx.dsl.components.base import executor_spec
from tfx.types import artifact_utils
from tfx.types import standard_component_specs
from tfx.utils import json_utils
from tfx.utils import path_utils

from components import served_model
from modules import signatures
from modules.training import warm_start

# The ServedModel node the Trainer starts from (the baseline's is
# 'ServedModel').
NODE_ID = 'WarmStartModel'
# On the Trainer's Model artifact: the served model it started from, or ''.
WARM_START_FROM_PROPERTY = 'warm_start_from'


def served_model_node(warm: bool, serving_model_dir: str
                      ) -> Optional[served_model.ServedModel]:
  """Returns the node that finds the model to start from, or None.

  Args:
    warm: --warm-start; False gives None.
    serving_model_dir: where the Pusher pushes, read for the newest version.
  """
  if not warm:
    return None
  return served_model.ServedModel(
      serving_model_dir=serving_model_dir).with_id(NODE_ID)


def trainer_args(node: Optional[served_model.ServedModel],
                 vertex_training: bool) -> Dict[str, Any]:
  """Returns the Trainer's arguments for a warm start from `node`'s model.

  Args:
    node: served_model_node's node; None: no warm start, no arguments.
    vertex_training: the Trainer runs as a Vertex AI job, whose own
      executor is kept.

  Returns:
    base_model; and, but on Vertex AI, custom_executor_spec: this module's
    Executor.
  """
  if node is None:
    return {}
  return {'base_model': node.outputs[served_model.MODEL_KEY],
          **({} if vertex_training else {
              'custom_executor_spec': executor_spec.ExecutorClassSpec(
                  Executor)})}


def started_from(serving_model_dir: str) -> str:
  """Returns where the model in `serving_model_dir` started, as its plan says.

  That is the served model's path, or '' when it trained from scratch.
  """
  return signatures.read_training_plan(serving_model_dir).get(
      warm_start.WARM_START_FROM, '')


class Executor(trainer_executor.GenericExecutor):
  """TFX's Trainer executor, which also passes on the served model's path.

  It tells run_fn the served model's path, and records where training
  started on the Model artifact.
  """

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    """Trains as TFX's Trainer does, then records where training started."""
    base_model = input_dict.get(standard_component_specs.BASE_MODEL_KEY)
    served_from = ''
    if base_model:
      artifact = artifact_utils.get_single_instance(base_model)
      if artifact.has_custom_property(served_model.SERVED_FROM_PROPERTY):
        served_from = artifact.get_string_custom_property(
            served_model.SERVED_FROM_PROPERTY)
    key = standard_component_specs.CUSTOM_CONFIG_KEY
    custom_config = json_utils.loads(exec_properties.get(key) or 'null') or {}
    custom_config[warm_start.SERVED_FROM_KEY] = served_from
    super().Do(input_dict, output_dict,
               {**exec_properties, key: json_utils.dumps(custom_config)})
    model = artifact_utils.get_single_instance(
        output_dict[standard_component_specs.MODEL_KEY])
    model.set_string_custom_property(
        WARM_START_FROM_PROPERTY,
        started_from(path_utils.serving_model_dir(model.uri)))
