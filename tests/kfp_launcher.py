"""Runs a compiled PipelineSpec on this machine, task by task, as KFP would.

kfp.local (kfp 2.13) cannot run what TFX compiles: its SubprocessRunner runs
only lightweight Python components ("The SubprocessRunner only supports
running Lightweight Python Components. You are attempting to run a Container
Component."), its DockerRunner needs a Docker engine, and its DAG runner
supports neither resolver executors nor the pre-cache-check hook TFX gives
FileBasedExampleGen. So this is a small launcher of our own, doing for each
task what the KFP v2 launcher and driver do:

  * tasks in dependency order (dependentTasks and the producers of inputs);
  * an ExecutorInput per task: input artifacts are the upstream tasks'
    output artifacts (name, type, uri, metadata), parameters are the task's
    constants or the pipeline's runtime parameters, output artifacts get
    URIs under PIPELINE_ROOT/<pipeline>/<run id>/<task>/<output key>, and
    outputs.outputFile is where the executor writes its ExecutorOutput;
  * the container's own command and args (the image is not used: this
    Python environment plays it), `{{$}}` replaced by the ExecutorInput
    JSON and `python` by this interpreter; the lifecycle pre-cache-check
    (the FileBasedExampleGen driver) first, its output metadata merged into
    the output artifacts as Vertex AI does;
  * the ExecutorOutput's artifacts and metadata feed downstream tasks.
Resolver tasks query ML Metadata for earlier artifacts; this launcher keeps
no metadata store, so they resolve to nothing, as on a pipeline's first run.
No caching. Placeholders other than `{{$}}` and importer tasks are refused
with an error (TFX's class-based executors use neither).
"""

import copy
import graphlib
import json
import os
import subprocess
import sys
import uuid
from typing import Any, Dict, List, Optional

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
import yaml

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXECUTOR_INPUT_PLACEHOLDER = '{{$}}'

Artifacts = Dict[str, List[pipeline_spec_pb2.RuntimeArtifact]]


class TaskFailed(RuntimeError):
  """A task's container command exited non-zero; the message has its log."""


def load_pipeline_spec(path: str) -> pipeline_spec_pb2.PipelineSpec:
  """The PipelineSpec in a .yaml (PipelineSpec) or .json (PipelineJob) file."""
  with open(path) as f:
    doc = json.load(f) if path.endswith('.json') else yaml.safe_load(f)
  doc = doc.get('pipelineSpec', doc)
  return json_format.ParseDict(doc, pipeline_spec_pb2.PipelineSpec())


def task_dependencies(task: pipeline_spec_pb2.PipelineTaskSpec) -> set:
  """The tasks `task` waits for: declared ones and those it reads from."""
  upstream = set(task.dependent_tasks)
  for spec in task.inputs.artifacts.values():
    if spec.HasField('task_output_artifact'):
      upstream.add(spec.task_output_artifact.producer_task)
  for spec in task.inputs.parameters.values():
    if spec.HasField('task_output_parameter'):
      upstream.add(spec.task_output_parameter.producer_task)
  return upstream


def execution_order(spec: pipeline_spec_pb2.PipelineSpec) -> List[str]:
  tasks = spec.root.dag.tasks
  return list(graphlib.TopologicalSorter(
      {name: task_dependencies(task) for name, task in tasks.items()}
  ).static_order())


class LocalLauncher:
  """Runs every task of a PipelineSpec as a local subprocess."""

  def __init__(self, spec_path: str, pipeline_root: str,
               parameters: Optional[Dict[str, Any]] = None,
               log_dir: Optional[str] = None, timeout: int = 900):
    self.spec = load_pipeline_spec(spec_path)
    self.deployment = json_format.ParseDict(
        json_format.MessageToDict(self.spec.deployment_spec),
        pipeline_spec_pb2.PipelineDeploymentConfig())
    self.run_id = uuid.uuid4().hex[:12]
    self.run_root = os.path.join(pipeline_root, self.spec.pipeline_info.name,
                                 self.run_id)
    self.log_dir = log_dir or os.path.join(self.run_root, 'logs')
    self.timeout = timeout
    self.parameters = self._pipeline_parameters(parameters or {})
    # Task name -> output key -> the artifacts it produced.
    self.outputs: Dict[str, Artifacts] = {}
    self.output_parameters: Dict[str, Dict[str, Any]] = {}
    self.executed: List[str] = []

  def _pipeline_parameters(self, given: Dict[str, Any]) -> Dict[str, Any]:
    """Runtime parameter values: given ones, else the spec's defaults."""
    definitions = self.spec.root.input_definitions.parameters
    unknown = set(given) - set(definitions)
    if unknown:
      raise ValueError(f'unknown pipeline parameters {sorted(unknown)}; the '
                       f'pipeline takes {sorted(definitions)}')
    values = {}
    for name, definition in definitions.items():
      if name in given:
        values[name] = given[name]
      elif definition.HasField('default_value'):
        values[name] = json_format.MessageToDict(definition.default_value)
      else:
        raise ValueError(f'pipeline parameter {name!r} has no default and no '
                         'value was given')
    return values

  def run(self) -> Dict[str, Artifacts]:
    for name in execution_order(self.spec):
      self._run_task(name, self.spec.root.dag.tasks[name])
      self.executed.append(name)
    return self.outputs

  # One task.

  def _run_task(self, name: str, task: pipeline_spec_pb2.PipelineTaskSpec):
    component = self.spec.components[task.component_ref.name]
    executor = self.deployment.executors[component.executor_label]
    kind = executor.WhichOneof('spec')
    if kind == 'resolver':
      # Nothing to query: every output resolves to no artifacts.
      self.outputs[name] = {
          key: [] for key in executor.resolver.output_artifact_queries}
    elif kind == 'container':
      self._run_container(name, task, component, executor.container)
    else:
      raise NotImplementedError(
          f'task {name}: {kind} executors are not supported by this launcher')

  def _executor_input(self, name: str,
                      task: pipeline_spec_pb2.PipelineTaskSpec,
                      component: pipeline_spec_pb2.ComponentSpec
                      ) -> pipeline_spec_pb2.ExecutorInput:
    executor_input = pipeline_spec_pb2.ExecutorInput()
    inputs = executor_input.inputs
    for key, spec in task.inputs.artifacts.items():
      producer = spec.task_output_artifact
      artifacts = self.outputs[producer.producer_task][
          producer.output_artifact_key]
      inputs.artifacts[key].artifacts.extend(copy.deepcopy(artifacts))
    for key, spec in task.inputs.parameters.items():
      kind = spec.WhichOneof('kind')
      if kind == 'runtime_value':
        inputs.parameter_values[key].CopyFrom(spec.runtime_value.constant)
      elif kind == 'component_input_parameter':
        json_format.ParseDict(self.parameters[spec.component_input_parameter],
                              inputs.parameter_values[key])
      elif kind == 'task_output_parameter':
        producer = spec.task_output_parameter
        inputs.parameter_values[key].CopyFrom(self.output_parameters[
            producer.producer_task][producer.output_parameter_key])
      else:
        raise NotImplementedError(f'task {name}: parameter {key}: {kind}')

    task_root = os.path.join(self.run_root, name)
    outputs = executor_input.outputs
    for key, definition in component.output_definitions.artifacts.items():
      outputs.artifacts[key].artifacts.add(
          name=f'{self.run_id}/{name}/{key}',
          type=definition.artifact_type,
          uri=os.path.join(task_root, key))
    outputs.output_file = os.path.join(task_root, 'executor_output.json')
    return executor_input

  def _command(self, name: str, command: List[str],
               executor_input: pipeline_spec_pb2.ExecutorInput) -> List[str]:
    serialized = json_format.MessageToJson(executor_input)
    resolved = []
    for arg in command:
      if arg == EXECUTOR_INPUT_PLACEHOLDER:
        arg = serialized
      elif '{{$' in arg:
        raise NotImplementedError(
            f'task {name}: placeholder in {arg!r} is not supported')
      resolved.append(arg)
    if resolved and resolved[0] in ('python', 'python3'):
      resolved[0] = sys.executable
    return resolved

  def _run_container(self, name: str,
                     task: pipeline_spec_pb2.PipelineTaskSpec,
                     component: pipeline_spec_pb2.ComponentSpec,
                     container) -> None:
    executor_input = self._executor_input(name, task, component)
    env = dict(os.environ, PYTHONPATH=PROJECT_DIR)
    env.update({var.name: var.value for var in container.env})
    hook = container.lifecycle.pre_cache_check
    if hook.command:
      self._subprocess(f'{name}.driver', self._command(
          name, list(hook.command) + list(hook.args), executor_input), env)
      # The driver's metadata (span, version, fingerprint) goes onto the
      # output artifacts before the executor runs.
      driver_output = self._read_executor_output(executor_input)
      for key, artifact_list in driver_output.artifacts.items():
        for target, source in zip(
            executor_input.outputs.artifacts[key].artifacts,
            artifact_list.artifacts):
          target.metadata.update(json_format.MessageToDict(source.metadata))
    self._subprocess(name, self._command(
        name, list(container.command) + list(container.args), executor_input),
                     env)
    executor_output = self._read_executor_output(executor_input)
    outputs = {}
    for key, artifact_list in executor_input.outputs.artifacts.items():
      produced = executor_output.artifacts.get(key)
      artifacts = copy.deepcopy(list(artifact_list.artifacts))
      if produced is not None:
        for artifact, result in zip(artifacts, produced.artifacts):
          artifact.metadata.Clear()
          artifact.metadata.update(json_format.MessageToDict(result.metadata))
      outputs[key] = artifacts
    self.outputs[name] = outputs
    self.output_parameters[name] = dict(executor_output.parameter_values)

  @staticmethod
  def _read_executor_output(executor_input) -> pipeline_spec_pb2.ExecutorOutput:
    path = executor_input.outputs.output_file
    if not os.path.exists(path):
      raise TaskFailed(f'{path}: the task wrote no executor output')
    with open(path) as f:
      return json_format.Parse(f.read(), pipeline_spec_pb2.ExecutorOutput(),
                               ignore_unknown_fields=True)

  def _subprocess(self, label: str, command: List[str],
                  env: Dict[str, str]) -> None:
    os.makedirs(self.log_dir, exist_ok=True)
    log_path = os.path.join(self.log_dir, f'{label}.log')
    with open(log_path, 'w') as log:
      result = subprocess.run(command, cwd=PROJECT_DIR, env=env, stdout=log,
                              stderr=subprocess.STDOUT, timeout=self.timeout,
                              check=False)
    if result.returncode != 0:
      with open(log_path) as f:
        tail = f.read()[-6000:]
      raise TaskFailed(f'task {label} exited with {result.returncode}; '
                       f'log {log_path}:\n{tail}')
