"""--keep-runs K in the DAG, for Kubeflow Pipelines: a KeepRuns last step.

Reads off the DAG what KeepRuns (components/keep_runs.py) needs: which
outputs are large, which of them the served model's lineage holds, and which
output the Pusher pushes. Why: docs/kubeflow.md, on --keep-runs.
"""

from typing import Dict, List, Sequence, Tuple

from tfx.dsl.components.base import base_node

from components import keep_runs
from components import keep_runs_rule

_Output = Tuple[str, str]  # (node id, output key)


def _name(output: _Output) -> str:
  return '/'.join(output)


def _inputs(node: base_node.BaseNode) -> List[Tuple[str, _Output]]:
  """(input key, the output it reads) of each input read from a node."""
  return [(key, (channel.producer_component_id, channel.output_key))
          for key, channel in node.inputs.items()
          if getattr(channel, 'producer_component_id', None)]


def outputs_to_keep(nodes: Sequence[base_node.BaseNode]
                    ) -> Tuple[List[str], List[str], str]:
  """(large outputs, the large ones in the served model's lineage, the
  output the Pusher pushes), each as 'node/output'.

  Raises:
    ValueError: the DAG pushes no model, or more than one.
  """
  by_id: Dict[str, base_node.BaseNode] = {node.id: node for node in nodes}
  types = {(node.id, key): channel.type.TYPE_NAME
           for node in nodes for key, channel in node.outputs.items()}
  large = [output for output, name in types.items()
           if name in keep_runs_rule.LARGE_TYPES]
  pushes = [output for output, name in types.items() if name == 'PushedModel']
  if len(pushes) != 1:
    raise ValueError(f'--keep-runs needs a DAG with one Pusher; outputs of '
                     f'type PushedModel: {[_name(p) for p in pushes]}')
  [model] = [upstream for key, upstream in _inputs(by_id[pushes[0][0]])
             if key == keep_runs_rule.PUSHED_MODEL_INPUT]
  lineage = keep_runs_rule.lineage(
      pushes, writers=lambda output: [output[0]],
      inputs=lambda node_id: _inputs(by_id[node_id]),
      outputs=lambda node_id: [(node_id, key)
                               for key in by_id[node_id].outputs],
      type_name=types.__getitem__)
  return ([_name(o) for o in large],
          [_name(o) for o in large if o in lineage], _name(model))


def node(nodes: Sequence[base_node.BaseNode], keep: int,
         serving_model_dir: str, pipeline_name: str) -> keep_runs.KeepRuns:
  """A KeepRuns step after every one of `nodes`, keeping `keep` runs."""
  large, lineage, model = outputs_to_keep(nodes)
  step = keep_runs.KeepRuns(
      keep_runs=keep, serving_model_dir=serving_model_dir,
      pipeline_name=pipeline_name, large_outputs=large,
      lineage_outputs=lineage, model_output=model)
  # Last: a run that reaches it has finished everything else.
  for other in nodes:
    step.add_upstream_node(other)
  return step
