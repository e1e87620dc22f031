"""tests/kfp_launcher.py keeps open-source KFP's contract (its 'kubeflow'
mode), on a two-task spec whose containers record what they were handed."""

import copy
import json
import os
import re

import pytest
import yaml

from tests import kfp_launcher

# KFP 2.4 on: a uuid for each execution of a task (kfp_launcher.py).
UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
MODEL_TYPE = {'instanceSchema': 'title: tfx.Model\ntype: object\n'}
# Each task: records its ExecutorInput, outputs its artifacts with metadata.
SCRIPT = '''
import json, os, sys
executor_input = json.loads(sys.argv[1])
out = executor_input['outputs']['outputFile']
os.makedirs(os.path.dirname(out), exist_ok=True)
with open(os.path.join(os.path.dirname(out), 'seen.json'), 'w') as f:
  json.dump(executor_input, f)
artifacts = {key: {'artifacts': [{'metadata': {'made': 1}}]}
             for key in executor_input['outputs'].get('artifacts', {})}
with open(out, 'w') as f:
  json.dump({'artifacts': artifacts}, f)
'''
CONTAINER = {'image': 'unused', 'command': ['python', '-c', SCRIPT],
             'args': ['{{$}}']}
SPEC = {
    'pipelineInfo': {'name': 'tiny'},
    'schemaVersion': '2.1.0',
    'sdkVersion': 'test',
    'root': {
        'inputDefinitions': {'parameters': {
            'p': {'parameterType': 'STRING'}}},
        'dag': {'tasks': {
            'make': {
                'taskInfo': {'name': 'make'},
                'componentRef': {'name': 'comp-make'},
                'inputs': {'parameters': {
                    'p': {'componentInputParameter': 'p'}}},
                'cachingOptions': {'enableCache': True}},
            'use': {
                'taskInfo': {'name': 'use'},
                'componentRef': {'name': 'comp-use'},
                'dependentTasks': ['make'],
                'inputs': {'artifacts': {'thing': {'taskOutputArtifact': {
                    'producerTask': 'make', 'outputArtifactKey': 'thing'}}}},
                'cachingOptions': {'enableCache': True}},
        }}},
    'components': {
        'comp-make': {
            'executorLabel': 'exec-make',
            'inputDefinitions': {'parameters': {
                'p': {'parameterType': 'STRING'}}},
            'outputDefinitions': {'artifacts': {
                'thing': {'artifactType': MODEL_TYPE}}}},
        'comp-use': {
            'executorLabel': 'exec-use',
            'inputDefinitions': {'artifacts': {
                'thing': {'artifactType': MODEL_TYPE}}},
            'outputDefinitions': {'artifacts': {
                'result': {'artifactType': MODEL_TYPE}}}},
    },
    'deploymentSpec': {'executors': {
        # A hook that fails if run: KFP never runs it.
        'exec-make': {'container': {**CONTAINER, 'lifecycle': {
            'preCacheCheck': {'command': ['false'], 'args': []}}}},
        'exec-use': {'container': CONTAINER},
    }},
}


def _write(tmp_path, spec, name='spec.yaml'):
  path = tmp_path / name
  with open(path, 'w') as f:
    if name.endswith('.json'):
      json.dump(spec, f)
    else:
      yaml.safe_dump(spec, f)
  return str(path)


def _run(tmp_path, spec=None, backend=None, label='run', **parameters):
  launcher = kfp_launcher.LocalLauncher(
      _write(tmp_path, spec or SPEC), 's3://bucket/pipeline-root', mode='kubeflow',
      parameters=parameters or {'p': 'x'}, backend=backend,
      log_dir=str(tmp_path / label))
  launcher.run()
  return launcher


def _seen(launcher, task):
  with open(os.path.join(launcher.local_dir, task, 'seen.json')) as f:
    return json.load(f)


def test_inputs_come_as_ml_metadata_hands_them_and_hooks_are_ignored(
    tmp_path):
  launcher = _run(tmp_path)
  assert launcher.states == {'make': 'COMPLETE', 'use': 'COMPLETE'}
  [thing] = _seen(launcher, 'use')['inputs']['artifacts']['thing']['artifacts']
  # Named by its ML Metadata id, the schema lost, the metadata kept.
  assert thing['name'] == '1'
  assert thing['type'] == {'instanceSchema': ''}
  assert thing['metadata'] == {'made': 1.0}
  assert re.fullmatch(
      f's3://bucket/pipeline-root/tiny/{launcher.run_id}/make/{UUID}/thing',
      thing['uri'])
  # Outputs: the spec's type, no name yet, the ExecutorOutput file local.
  [result] = _seen(launcher, 'use')['outputs']['artifacts']['result'][
      'artifacts']
  assert result['type'] == MODEL_TYPE and 'name' not in result
  assert re.fullmatch(
      f's3://bucket/pipeline-root/tiny/{launcher.run_id}/use/{UUID}/result',
      result['uri'])
  assert _seen(launcher, 'use')['outputs']['outputFile'].startswith(
      launcher.local_dir)


def test_kfp_cache_key_answers_same_inputs_with_the_same_artifacts(tmp_path):
  backend = kfp_launcher.Backend()
  first = _run(tmp_path, backend=backend, label='first')
  second = _run(tmp_path, backend=backend, label='second')
  assert second.states == {'make': 'CACHED', 'use': 'CACHED'}
  assert second.outputs == first.outputs
  # Another parameter value: another key.
  third = _run(tmp_path, backend=backend, label='third', p='y')
  assert third.states == {'make': 'COMPLETE', 'use': 'COMPLETE'}


def test_a_task_not_cached_gets_cached_inputs_with_a_system_title(tmp_path):
  spec = copy.deepcopy(SPEC)
  spec['root']['dag']['tasks']['use']['cachingOptions'] = {
      'enableCache': False}
  backend = kfp_launcher.Backend()
  _run(tmp_path, spec, backend=backend, label='first')
  second = _run(tmp_path, spec, backend=backend, label='second')
  assert second.states == {'make': 'CACHED', 'use': 'COMPLETE'}
  [thing] = _seen(second, 'use')['inputs']['artifacts']['thing']['artifacts']
  assert thing['type'] == {'schemaTitle': 'system.Artifact'}
  assert thing['name'] == '1'


def _refused(tmp_path, spec, name='spec.yaml', **parameters):
  with pytest.raises(kfp_launcher.Refused) as raised:
    kfp_launcher.LocalLauncher(_write(tmp_path, spec, name), str(tmp_path),
                               str(tmp_path / 'logs'), mode='kubeflow',
                               parameters=parameters or {'p': 'x'})
  return str(raised.value)


def test_refuses_what_the_kfp_backend_refuses(tmp_path):
  assert 'not a bare PipelineSpec' in _refused(
      tmp_path, {'pipelineSpec': SPEC, 'runtimeConfig': {}}, 'job.json')
  old = dict(SPEC, schemaVersion='2.0.0')
  assert "schemaVersion '2.0.0'" in _refused(tmp_path, old)
  with pytest.raises(kfp_launcher.Refused, match="'p' has no default"):
    kfp_launcher.LocalLauncher(_write(tmp_path, SPEC), str(tmp_path),
                               str(tmp_path / 'logs'), mode='kubeflow')

  underscore = copy.deepcopy(SPEC)
  tasks = underscore['root']['dag']['tasks']
  tasks['make_it'] = tasks.pop('make')
  assert 'make_it: not a valid Argo template name' in _refused(
      tmp_path, underscore)

  resolver = copy.deepcopy(SPEC)
  resolver['deploymentSpec']['executors']['exec-make'] = {'resolver': {
      'outputArtifactQueries': {'thing': {'filter': 'x'}}}}
  assert 'make: resolver executors not implemented' in _refused(
      tmp_path, resolver)
