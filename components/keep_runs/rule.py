"""--keep-runs K's rule: the disk holds the newest K runs' large artifacts.

Applied from ML Metadata (runs/keep_runs_local.py) or the run folders
(KeepRuns).
Why and how: docs/metadata.md#keeping-the-disk-from-filling---keep-runs-k.
"""

from typing import Callable, Hashable, Iterable, Set, Tuple, TypeVar

# The types whose size grows with the data or the model (BENCHMARKS.md,
# "Scale": bytes on disk per component): the records (ImageExampleGen's,
# and DataChecks' eval without its copies of train), the trained model, and
# the Pusher's copy of it.
LARGE_TYPES = ('Examples', 'Model', 'PushedModel')
# Inputs of these types are where the served model's lineage stops, and
# what a kept run read but does not keep: an earlier model used as a
# baseline or a starting point.
MODEL_TYPES = ('Model',)
# The Pusher's input holding the model it pushes (TFX's
# standard_component_specs.MODEL_KEY).
PUSHED_MODEL_INPUT = 'model'

Artifact = TypeVar('Artifact', bound=Hashable)
Execution = TypeVar('Execution', bound=Hashable)


def lineage(pushes: Iterable[Artifact],
            writers: Callable[[Artifact], Iterable[Execution]],
            inputs: Callable[[Execution], Iterable[Tuple[str, Artifact]]],
            outputs: Callable[[Execution], Iterable[Artifact]],
            type_name: Callable[[Artifact], str]) -> Set[Artifact]:
  """The served model's lineage: `pushes`, the outputs of every execution
  upstream of them, and those executions' inputs.

  The walk does not go through a model other than the one pushed (see
  docs/metadata.md#keeping-the-disk-from-filling---keep-runs-k). The graph
  is given by functions, so that the same walk runs over ML Metadata's
  records and over a DAG's channels.

  Args:
    pushes: the PushedModel artifacts of the served version.
    writers: the executions that wrote an artifact.
    inputs: an execution's (input key, artifact) pairs.
    outputs: an execution's output artifacts.
    type_name: an artifact's type name.
  """
  pushes = list(pushes)
  served_models = {artifact for push in pushes
                   for execution in writers(push)
                   for key, artifact in inputs(execution)
                   if key == PUSHED_MODEL_INPUT}
  seen: Set[Artifact] = set()
  frontier = list(pushes)
  while frontier:
    artifact = frontier.pop()
    if artifact in seen:
      continue
    seen.add(artifact)
    for execution in writers(artifact):
      frontier.extend(outputs(execution))
      frontier.extend(
          upstream for _, upstream in inputs(execution)
          if type_name(upstream) not in MODEL_TYPES
          or upstream in served_models)
  return seen
