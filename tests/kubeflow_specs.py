"""Compiling the pipeline for Kubeflow in the tests, and reading the result."""

import contextlib
import io
import json
import os

import yaml

from kubeflow import kubeflow_runner

# Object-storage locations: compiling reads none of them.
CLUSTER_PATHS = ['--image', 'registry.example/image-pipeline:test',
                 '--pipeline-root', 'gs://bucket/tfx',
                 '--data-dir', 'gs://bucket/data/mnist']


def compile_spec(output: str, *flags: str) -> dict:
  """Runs kubeflow_runner's main with `flags`; returns the PipelineSpec dict."""
  with contextlib.redirect_stdout(io.StringIO()):
    assert kubeflow_runner.main(['--output', str(output), *flags]) == 0
  return read_spec(str(output))


def read_spec(path: str) -> dict:
  """The PipelineSpec of a .json PipelineJob or a .yaml file."""
  return read_documents(path)[0]


def read_documents(path: str) -> list:
  """[PipelineSpec] or, for --target kubeflow on s3://, [it, PlatformSpec]."""
  with open(path) as f:
    if path.endswith('.json'):
      doc = json.load(f)
      return [doc.get('pipelineSpec', doc)]
    return list(yaml.safe_load_all(f))


def container(spec: dict, task: str) -> dict:
  label = spec['components'][task]['executorLabel']
  return spec['deploymentSpec']['executors'][label]['container']


def container_tasks(spec: dict):
  """Names of the tasks that run a container (not resolvers)."""
  return [name for name, task in spec['root']['dag']['tasks'].items()
          if 'container' in spec['deploymentSpec']['executors'][
              spec['components'][task['componentRef']['name']][
                  'executorLabel']]]


def module_paths(spec: dict):
  """Every Python module or class path the spec's containers name."""
  paths = set()
  for name in container_tasks(spec):
    spec_container = container(spec, name)
    commands = [spec_container['command'] + spec_container['args']]
    hook = spec_container.get('lifecycle', {}).get('preCacheCheck')
    if hook:
      commands.append(hook['command'] + hook['args'])
    for command in commands:
      for flag, value in zip(command, command[1:]):
        if flag in ('-m', '--executor_class_path'):
          paths.add(value)
    parameters = spec['root']['dag']['tasks'][name].get('inputs', {}).get(
        'parameters', {})
    for key in ('run_fn', 'preprocessing_fn', 'tuner_fn', 'module_path'):
      if key in parameters:
        paths.add(parameters[key]['runtimeValue']['constant'])
  return paths


def dockerfile_path() -> str:
  return os.path.join(kubeflow_runner.constants.PROJECT_DIR, 'kubeflow',
                      'Dockerfile')
