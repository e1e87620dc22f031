"""KeepRuns: --keep-runs K as the last step of a run on Kubeflow Pipelines.

It applies rule.py to the run folders (run_folders.py). Why and
how: docs/kubeflow.md#keeping-the-bucket-from-filling---keep-runs-k.
"""

import dataclasses
import json
import os
from typing import Any, Dict, List

from absl import logging
from tfx import types
from tfx.dsl.components.base import base_component
from tfx.dsl.components.base import base_executor
from tfx.dsl.components.base import executor_spec
from tfx.dsl.io import fileio
from tfx.types import artifact_utils
from tfx.types import component_spec

from components.keep_runs import run_folders

NODE_ID = 'KeepRuns'
KEEP_RUNS_KEY = 'keep_runs'
SERVING_MODEL_DIR_KEY = 'serving_model_dir'
PIPELINE_NAME_KEY = 'pipeline_name'
# JSON lists of 'task/output' (pipeline/stages.py, keep_runs, reads them off
# the DAG).
LARGE_OUTPUTS_KEY = 'large_outputs'
LINEAGE_OUTPUTS_KEY = 'lineage_outputs'
MODEL_OUTPUT_KEY = 'model_output'  # 'task/output' the Pusher pushes.
KEPT_RUNS_KEY = 'kept_runs'
RECORD_FILE = 'kept_runs.json'


class KeptRuns(types.Artifact):
  """Which runs a --keep-runs collection kept, and what it deleted."""
  # Kubeflow's form for a custom type, module.Class: the path TFX's
  # container entrypoint imports the class by (components/__init__.py).
  TYPE_NAME = 'components.KeptRuns'


class KeepRunsSpec(component_spec.ComponentSpec):
  """KeepRuns' parameters and its KeptRuns output."""
  PARAMETERS = {
      KEEP_RUNS_KEY: component_spec.ExecutionParameter(type=int),
      SERVING_MODEL_DIR_KEY: component_spec.ExecutionParameter(type=str),
      PIPELINE_NAME_KEY: component_spec.ExecutionParameter(type=str),
      LARGE_OUTPUTS_KEY: component_spec.ExecutionParameter(type=str),
      LINEAGE_OUTPUTS_KEY: component_spec.ExecutionParameter(type=str),
      MODEL_OUTPUT_KEY: component_spec.ExecutionParameter(type=str),
  }
  INPUTS = {}
  OUTPUTS = {
      KEPT_RUNS_KEY: component_spec.ChannelParameter(type=KeptRuns),
  }


class Executor(base_executor.BaseExecutor):
  """Deletes the large artifacts of older runs (run_folders.collect)."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    """Collects, then records what it did in the KeptRuns artifact.

    Raises:
      run_folders.LayoutError: the run folders cannot be told apart.
      push_once.ServingDirectoryError: what is served cannot be read.
    """
    del input_dict  # None: it runs after every other task.
    record = artifact_utils.get_single_instance(output_dict[KEPT_RUNS_KEY])
    keep_runs = exec_properties[KEEP_RUNS_KEY]
    pipeline_dir, run = run_folders.run_folder_of(
        record.uri, exec_properties[PIPELINE_NAME_KEY], NODE_ID)
    collected = run_folders.collect(
        pipeline_dir, run, keep_runs,
        json.loads(exec_properties[LARGE_OUTPUTS_KEY]),
        json.loads(exec_properties[LINEAGE_OUTPUTS_KEY]),
        exec_properties[MODEL_OUTPUT_KEY],
        exec_properties[SERVING_MODEL_DIR_KEY])
    logging.info('%s', collected.describe(keep_runs))
    fileio.makedirs(record.uri)
    with fileio.open(os.path.join(record.uri, RECORD_FILE), 'w') as f:
      json.dump(dataclasses.asdict(collected), f, indent=2)
    record.set_int_custom_property('deleted', len(collected.deleted))
    record.set_string_custom_property('kept_runs',
                                      ','.join(collected.kept_runs))


class KeepRuns(base_component.BaseComponent):
  """Deletes the large artifacts of all but the newest `keep_runs` runs."""

  SPEC_CLASS = KeepRunsSpec
  EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(Executor)

  def __init__(self, keep_runs: int, serving_model_dir: str,
               pipeline_name: str, large_outputs: List[str],
               lineage_outputs: List[str], model_output: str):
    """Builds the step; pipeline/stages.py reads its outputs off the DAG.

    Args:
      keep_runs: how many of the newest runs keep their large artifacts.
      serving_model_dir: where the Pusher pushes; the served model's run
        keeps what made it.
      pipeline_name: the pipeline's name, its folder under the root.
      large_outputs: 'task/output' of every large artifact.
      lineage_outputs: those of them a pushed model was made from.
      model_output: 'task/output' of the model the Pusher pushes.
    """
    super().__init__(spec=KeepRunsSpec(
        keep_runs=keep_runs, serving_model_dir=serving_model_dir,
        pipeline_name=pipeline_name,
        large_outputs=json.dumps(sorted(large_outputs)),
        lineage_outputs=json.dumps(sorted(lineage_outputs)),
        model_output=model_output,
        kept_runs=types.Channel(type=KeptRuns)))
    self.with_id(NODE_ID)
