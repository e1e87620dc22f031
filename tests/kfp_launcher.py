"""Runs a compiled PipelineSpec on this machine, task by task, as KFP would.

kfp.local (kfp 2.13) cannot run what TFX compiles: its SubprocessRunner runs
only lightweight Python components, its DockerRunner needs a Docker engine.
So this is a small launcher of our own, which runs each task's container
command (the image is not used: this Python environment plays it) as a
subprocess, and hands it what the backend would, in one of two modes.

mode='kubeflow': the contract of open-source Kubeflow Pipelines 2.x, each
rule from the backend source (kubeflow/pipelines, backend/src/...) it
reproduces:
  * only a bare PipelineSpec of schemaVersion 2.1.0 is accepted, not a
    Vertex PipelineJob (apiserver/template/v2_template.go reads the
    uploaded YAML as a PipelineSpec);
  * a run that does not give a parameter without a default is refused
    (apiserver/template/v2_template.go, the runtime config check);
  * resolver executors are refused: only container and importer executors
    are implemented (v2/compiler/visitor.go; v2/compiler/argocompiler/dag.go
    "resolver executors not implemented");
  * task names must be Argo template names, [a-zA-Z0-9][-a-zA-Z0-9]*
    (v2/compiler/argocompiler: templates are named after tasks);
  * `lifecycle` hooks are ignored: the driver and launcher run the
    container's command and args only (v2/driver, v2/component/launcher_v2.go);
  * input artifacts are read back from ML Metadata: their `name` is the
    MLMD artifact id, their type an empty `instanceSchema` (for artifacts of
    this run) or the `system.Artifact` title (artifacts reused from the
    cache) (v2/metadata/client.go: ToRuntimeArtifact, GetOutputArtifacts...);
  * output URIs are <pipeline root>/<pipeline>/<run id>/<task>/<uuid>/
    <output>, a new uuid for each execution of a task, as from KFP 2.4 on
    (v2/metadata/client.go GetPipeline and GenerateOutputURI; v2/driver
    provisionOutputs, called with uuid.NewString() from v2/driver/
    container.go; KFP 2.1 to 2.3 had no uuid), and the ExecutorOutput file
    is local to the container;
  * a PlatformSpec document after the PipelineSpec gives tasks secrets as
    environment variables (secretAsEnv of kfp-kubernetes; applied by
    v2/driver from the task's KubernetesExecutorConfig);
  * caching: a task whose `cachingOptions.enableCache` is on is answered
    from an earlier task with the same fingerprint, the SHA-256 of its
    input artifact ids, input parameter values, output artifact specs
    (URIs wiped), image, command and args and env
    (v2/cacheutils/cache.go GenerateCacheKey); its outputs are the earlier
    task's artifacts, same ids.

mode='vertex': what TFX's spec expects from Vertex AI, as this launcher has
always done: input types as compiled, the lifecycle pre-cache check (TFX's
FileBasedExampleGen driver) run first with its output metadata merged into
the output artifacts, resolver tasks resolving to nothing (this launcher
keeps no metadata store: a first run), no caching.

Placeholders other than `{{$}}` are refused (TFX's executors use none).

Given a preloaded_python.Server, `python -m` commands run as forks of it,
which has TFX imported already; any other command is a new process.
"""

import copy
import dataclasses
import graphlib
import hashlib
import json
import os
import re
import subprocess
import sys
import uuid
from typing import Any, Dict, List, Optional

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
import yaml

from tests import preloaded_python

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXECUTOR_INPUT_PLACEHOLDER = '{{$}}'
MODES = ('kubeflow', 'vertex')
SCHEMA_VERSION = '2.1.0'
TASK_NAME_PATTERN = r'[a-zA-Z0-9][-a-zA-Z0-9]*'
GENERIC_TITLE = 'system.Artifact'

Artifacts = Dict[str, List[pipeline_spec_pb2.RuntimeArtifact]]


class TaskFailed(RuntimeError):
  """A task's container command exited non-zero; the message has its log."""


class Refused(ValueError):
  """What the KFP backend would refuse (the run is never started)."""


@dataclasses.dataclass
class Backend:
  """What outlives a run: ML Metadata's artifact ids and KFP's cache table.

  One per simulated cluster; pass the same one to every run of it.
  """
  next_artifact_id: int = 1
  # Fingerprint -> the cached task's output artifacts.
  cache: Dict[str, Artifacts] = dataclasses.field(default_factory=dict)

  def new_artifact_id(self) -> str:
    artifact_id = self.next_artifact_id
    self.next_artifact_id += 1
    return str(artifact_id)


def task_environment() -> Dict[str, str]:
  """The environment every task starts from: this machine's, with the
  project importable (the image installs it)."""
  return dict(os.environ, PYTHONPATH=PROJECT_DIR)


def load_documents(path: str, mode: str = 'vertex'):
  """(PipelineSpec, PlatformSpec dict) of `path`.

  In kubeflow mode only a bare 2.1.0 PipelineSpec, optionally followed by a
  PlatformSpec document.
  """
  with open(path) as f:
    docs = ([json.load(f)] if path.endswith('.json')
            else list(yaml.safe_load_all(f)))
  doc, platform = docs[0], {}
  if len(docs) > 1:
    if len(docs) > 2 or 'platforms' not in docs[1]:
      raise Refused(f'{path}: a PipelineSpec may be followed by one '
                    'PlatformSpec document only')
    platform = docs[1]
  if mode == 'kubeflow':
    if 'pipelineSpec' in doc or 'pipelineInfo' not in doc:
      raise Refused(f'{path}: not a bare PipelineSpec (a PipelineJob is '
                    'Vertex AI\'s format)')
    if doc.get('schemaVersion') != SCHEMA_VERSION:
      raise Refused(f'{path}: schemaVersion {doc.get("schemaVersion")!r}, '
                    f'expected {SCHEMA_VERSION}')
  doc = doc.get('pipelineSpec', doc)
  return (json_format.ParseDict(doc, pipeline_spec_pb2.PipelineSpec()),
          platform)


def load_pipeline_spec(path: str, mode: str = 'vertex'
                       ) -> pipeline_spec_pb2.PipelineSpec:
  return load_documents(path, mode)[0]


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

  def __init__(self, spec_path: str, pipeline_root: str, log_dir: str,
               parameters: Optional[Dict[str, Any]] = None, timeout: int = 900,
               mode: str = 'vertex', backend: Optional[Backend] = None,
               env: Optional[Dict[str, str]] = None,
               secrets: Optional[Dict[str, Dict[str, str]]] = None,
               preloaded: Optional[preloaded_python.Server] = None):
    """Reads the spec; refuses (Refused) what the backend would refuse.

    Args:
      log_dir: where the tasks' logs and ExecutorOutput files go, on this
        machine as in a pod.
      env: extra environment of every task (this machine's is inherited).
      secrets: the Kubernetes secrets of the run's namespace, name -> key ->
        value, which the PlatformSpec's secretAsEnv reads (kubeflow mode).
      preloaded: runs the tasks' `python -m` commands (see the module
        docstring).
    """
    if mode not in MODES:
      raise ValueError(f'mode {mode!r}: one of {MODES}')
    self.mode = mode
    self.spec, platform = load_documents(spec_path, mode)
    self.secrets = secrets or {}
    self.executor_configs = platform.get('platforms', {}).get(
        'kubernetes', {}).get('deploymentSpec', {}).get('executors', {})
    self.deployment = json_format.ParseDict(
        json_format.MessageToDict(self.spec.deployment_spec),
        pipeline_spec_pb2.PipelineDeploymentConfig())
    self.backend = backend or Backend()
    self.run_id = uuid.uuid4().hex[:12]
    self.run_root = '/'.join([pipeline_root.rstrip('/'),
                              self.spec.pipeline_info.name, self.run_id])
    self.local_dir = log_dir
    self.timeout = timeout
    self.env = dict(env or {})
    self.preloaded = preloaded
    if mode == 'kubeflow':
      self._check_kubeflow_tasks()
    self.parameters = self._pipeline_parameters(parameters or {})
    # Task name -> output key -> the artifacts it produced.
    self.outputs: Dict[str, Artifacts] = {}
    self.output_parameters: Dict[str, Dict[str, Any]] = {}
    self.executed: List[str] = []
    self.states: Dict[str, str] = {}  # Task name -> COMPLETE or CACHED.

  def _check_kubeflow_tasks(self) -> None:
    for name, task in self.spec.root.dag.tasks.items():
      if not re.fullmatch(TASK_NAME_PATTERN, name):
        raise Refused(f'task {name}: not a valid Argo template name')
      component = self.spec.components[task.component_ref.name]
      kind = self.deployment.executors[component.executor_label].WhichOneof(
          'spec')
      if kind not in ('container', 'importer'):
        raise Refused(f'task {name}: {kind} executors not implemented')

  def _pipeline_parameters(self, given: Dict[str, Any]) -> Dict[str, Any]:
    """Runtime parameter values: given ones, else the spec's defaults."""
    definitions = self.spec.root.input_definitions.parameters
    unknown = set(given) - set(definitions)
    if unknown:
      raise Refused(f'unknown pipeline parameters {sorted(unknown)}; the '
                    f'pipeline takes {sorted(definitions)}')
    values = {}
    for name, definition in definitions.items():
      if name in given:
        values[name] = given[name]
      elif definition.HasField('default_value'):
        values[name] = json_format.MessageToDict(definition.default_value)
      else:
        raise Refused(f'pipeline parameter {name!r} has no default and no '
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
    if kind == 'resolver':  # Vertex mode only: nothing to query.
      self.outputs[name] = {
          key: [] for key in executor.resolver.output_artifact_queries}
      self.states[name] = 'COMPLETE'
    elif kind == 'container':
      self._run_container(name, task, component, executor.container)
    else:
      raise NotImplementedError(
          f'task {name}: {kind} executors are not supported by this launcher')

  def _input_artifacts(self, producer) -> List[pipeline_spec_pb2.RuntimeArtifact]:
    artifacts = copy.deepcopy(self.outputs[producer.producer_task][
        producer.output_artifact_key])
    if self.mode == 'kubeflow':
      # Read back from ML Metadata: the schema is lost.
      cached = self.states[producer.producer_task] == 'CACHED'
      for artifact in artifacts:
        artifact.type.Clear()
        if cached:
          artifact.type.schema_title = GENERIC_TITLE
        else:
          artifact.type.instance_schema = ''
    return artifacts

  def _executor_input(self, name: str,
                      task: pipeline_spec_pb2.PipelineTaskSpec,
                      component: pipeline_spec_pb2.ComponentSpec
                      ) -> pipeline_spec_pb2.ExecutorInput:
    executor_input = pipeline_spec_pb2.ExecutorInput()
    inputs = executor_input.inputs
    for key, spec in task.inputs.artifacts.items():
      inputs.artifacts[key].artifacts.extend(
          self._input_artifacts(spec.task_output_artifact))
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

    outputs = executor_input.outputs
    # KFP's task root: a new uuid for each execution of the task.
    task_root = '/'.join([self.run_root, name] + (
        [str(uuid.uuid4())] if self.mode == 'kubeflow' else []))
    for key, definition in component.output_definitions.artifacts.items():
      # KFP names an artifact (its MLMD id) only once it is recorded.
      outputs.artifacts[key].artifacts.add(
          name='' if self.mode == 'kubeflow' else f'{self.run_id}/{name}/{key}',
          type=definition.artifact_type,
          uri='/'.join([task_root, key]))
    outputs.output_file = os.path.join(self.local_dir, name,
                                       'executor_output.json')
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

  def _fingerprint(self, executor_input, container) -> str:
    """KFP's cache key of a task (v2/cacheutils/cache.go), hashed."""
    outputs = {}
    for key, artifact_list in executor_input.outputs.artifacts.items():
      artifact = copy.deepcopy(artifact_list.artifacts[0])
      artifact.ClearField('uri')
      outputs[key] = json_format.MessageToDict(artifact)
    key = {
        'inputArtifactNames': {
            k: [a.name for a in v.artifacts]
            for k, v in executor_input.inputs.artifacts.items()},
        'inputParameterValues': {
            k: json_format.MessageToDict(v)
            for k, v in executor_input.inputs.parameter_values.items()},
        'outputArtifactsSpec': outputs,
        'containerSpec': {
            'image': container.image,
            'cmdArgs': list(container.command) + list(container.args),
            'env': [json_format.MessageToDict(e) for e in container.env]},
    }
    return hashlib.sha256(
        json.dumps(key, sort_keys=True).encode()).hexdigest()

  def _run_container(self, name: str,
                     task: pipeline_spec_pb2.PipelineTaskSpec,
                     component: pipeline_spec_pb2.ComponentSpec,
                     container) -> None:
    executor_input = self._executor_input(name, task, component)
    caching = (self.mode == 'kubeflow' and
               task.caching_options.enable_cache)
    fingerprint = self._fingerprint(executor_input, container)
    if caching and fingerprint in self.backend.cache:
      self.outputs[name] = copy.deepcopy(self.backend.cache[fingerprint])
      self.output_parameters[name] = {}
      self.states[name] = 'CACHED'
      return
    env = task_environment()
    env.update(self.env)
    env.update({var.name: var.value for var in container.env})
    env.update(self._secret_env(name, component.executor_label))
    hook = container.lifecycle.pre_cache_check
    if hook.command and self.mode == 'vertex':
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
      for artifact in artifacts:
        if self.mode == 'kubeflow':  # Recorded in ML Metadata: an id.
          artifact.name = self.backend.new_artifact_id()
      if produced is not None:
        for artifact, result in zip(artifacts, produced.artifacts):
          artifact.metadata.Clear()
          artifact.metadata.update(json_format.MessageToDict(result.metadata))
      outputs[key] = artifacts
    self.outputs[name] = outputs
    self.output_parameters[name] = dict(executor_output.parameter_values)
    self.states[name] = 'COMPLETE'
    if caching:
      self.backend.cache[fingerprint] = copy.deepcopy(outputs)

  def _secret_env(self, name: str, executor_label: str) -> Dict[str, str]:
    """The PlatformSpec's secretAsEnv of a task: a pod whose secret or key
    is missing does not start (Kubernetes' CreateContainerConfigError)."""
    env = {}
    config = self.executor_configs.get(executor_label, {})
    for secret in config.get('secretAsEnv', []):
      values = self.secrets.get(secret['secretName'])
      if values is None:
        raise TaskFailed(f'task {name}: secret {secret["secretName"]!r} not '
                         'found')
      for mapping in secret.get('keyToEnv', []):
        if mapping['secretKey'] not in values:
          raise TaskFailed(f'task {name}: secret {secret["secretName"]!r} '
                           f'has no key {mapping["secretKey"]!r}')
        env[mapping['envVar']] = values[mapping['secretKey']]
    return env

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
    os.makedirs(self.local_dir, exist_ok=True)
    log_path = os.path.join(self.local_dir, f'{label}.log')
    if self.preloaded and self.preloaded.runs(command):
      returncode = self.preloaded.run(command, env, PROJECT_DIR, log_path,
                                      self.timeout)
    else:
      with open(log_path, 'w') as log:
        returncode = subprocess.run(
            command, cwd=PROJECT_DIR, env=env, stdout=log,
            stderr=subprocess.STDOUT, timeout=self.timeout,
            check=False).returncode
    if returncode != 0:
      with open(log_path) as f:
        tail = f.read()[-6000:]
      raise TaskFailed(f'task {label} exited with {returncode}; '
                       f'log {log_path}:\n{tail}')
