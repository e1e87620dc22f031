"""--warm-start in the DAG: the model in service as the Trainer's base_model.

A ServedModel node (components/served_model.py) before the Trainer finds it;
the Trainer's executor is modules/training/warm_start.py's. Why and how:
docs/training.md, "Warm start".
"""

from typing import Any, Dict, Optional

from tfx.dsl.components.base import executor_spec

from components import served_model
from modules.training import warm_start

# The ServedModel node the Trainer starts from (the baseline's is
# 'ServedModel').
NODE_ID = 'WarmStartModel'


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
    base_model; and, but on Vertex AI, custom_executor_spec:
    modules/training/warm_start.py's Executor.
  """
  if node is None:
    return {}
  return {'base_model': node.outputs[served_model.MODEL_KEY],
          **({} if vertex_training else {
              'custom_executor_spec': executor_spec.ExecutorClassSpec(
                  warm_start.Executor)})}


