"""What the `kubeflow` target changes in the spec TFX's compiler writes.

TFX's KubeflowV2DagRunner writes for Vertex AI; open-source Kubeflow
Pipelines 2.x runs the same PipelineSpec with a different backend.
The differences, and why: docs/kubeflow.md.
"""

import re
from typing import Any, Dict, Iterable, List

TFX_ENTRYPOINT = 'tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor'
ENTRYPOINT = 'kubeflow.container_entrypoint'
# Argo's template names (KFP names templates after tasks).
TASK_NAME_PATTERN = r'[a-zA-Z0-9][-a-zA-Z0-9]*'
# Tasks whose result depends on more than KFP's cache key sees.
NEVER_CACHED = ('ImageExampleGen', 'ServedModel', 'WarmStartModel',
                'KeepRuns')


def _executor(spec: Dict[str, Any], task: Dict[str, Any]) -> Dict[str, Any]:
  label = spec['components'][task['componentRef']['name']]['executorLabel']
  return spec['deploymentSpec']['executors'][label]


def check(spec: Dict[str, Any]) -> None:
  """Raises ValueError if open-source KFP would refuse or mis-run `spec`.

  Args:
    spec: a PipelineSpec, as a dict.

  Raises:
    ValueError: task names Argo refuses, executors other than containers
      and importers, or lifecycle hooks; the message lists every one.
  """
  problems = []
  for name, task in sorted(spec['root']['dag']['tasks'].items()):
    if not re.fullmatch(TASK_NAME_PATTERN, name):
      problems.append(f'task {name}: not a valid Argo template name '
                      f'({TASK_NAME_PATTERN})')
    executor = _executor(spec, task)
    kinds = set(executor) - {'container', 'importer'}
    if kinds:
      problems.append(f'task {name}: {", ".join(sorted(kinds))} executors '
                      'are not implemented by Kubeflow Pipelines')
    if 'lifecycle' in executor.get('container', {}):
      problems.append(f'task {name}: lifecycle hooks are never run by '
                      'Kubeflow Pipelines')
  if problems:
    raise ValueError('not runnable on Kubeflow Pipelines:\n  ' +
                     '\n  '.join(problems))


def _with_entrypoint(command: List[str]) -> List[str]:
  return [ENTRYPOINT if part == TFX_ENTRYPOINT else part for part in command]


def adapt(spec: Dict[str, Any],
          never_cached: Iterable[str] = NEVER_CACHED) -> Dict[str, Any]:
  """`spec` (TFX's PipelineSpec dict) made for open-source KFP, in place.

  Args:
    spec: the PipelineSpec; its containers run ENTRYPOINT, without
      lifecycle hooks.
    never_cached: the names of the tasks whose caching is turned off.

  Returns:
    `spec`, adapted.

  Raises:
    ValueError: as check, what is left unrunnable after adapting.
  """
  tasks = spec['root']['dag']['tasks']
  for name, task in tasks.items():
    container = _executor(spec, task).get('container')
    if container is None:
      continue
    container.pop('lifecycle', None)
    container['command'] = _with_entrypoint(container['command'])
    if name in never_cached:
      task['cachingOptions'] = {'enableCache': False}
  check(spec)
  return spec


def credentials_platform_spec(spec: Dict[str, Any], secret_name: str,
                              access_key: str, secret_key: str
                              ) -> Dict[str, Any]:
  """A PlatformSpec giving every container the secret's S3 credentials.

  Args:
    spec: the PipelineSpec, as a dict, whose container executors get them.
    secret_name: the Kubernetes secret holding the credentials.
    access_key: the secret's key of AWS_ACCESS_KEY_ID.
    secret_key: the secret's key of AWS_SECRET_ACCESS_KEY.
  """
  secret_as_env = [{'secretName': secret_name, 'keyToEnv': [
      {'secretKey': access_key, 'envVar': 'AWS_ACCESS_KEY_ID'},
      {'secretKey': secret_key, 'envVar': 'AWS_SECRET_ACCESS_KEY'}]}]
  executors = {label: {'secretAsEnv': secret_as_env}
               for label, executor in spec['deploymentSpec'][
                   'executors'].items() if 'container' in executor}
  return {'platforms': {'kubernetes': {'deploymentSpec': {
      'executors': executors}}}}
