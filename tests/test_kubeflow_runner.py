"""kubeflow_runner.py compiles the local DAG: same tasks, wiring and settings;
only paths, metadata, Beam args and the Trainer's resources differ."""

import json

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
import pytest

import local_runner
from kubeflow import kubeflow_runner
from pipeline import configs
from tests import kubeflow_specs

RESOLVER = 'latest_blessed_model_resolver'
RESOLVER_TASKS = {f'{RESOLVER}-model-blessing-resolver': RESOLVER,
                  f'{RESOLVER}-model-resolver': RESOLVER}
# Settings both runners take, not the defaults, so that they are seen to pass.
SHARED_FLAGS = ['--dataset', 'fashion-mnist', '--epochs', '3',
                '--batch-size', '64', '--num-shards', '4']
# Exactly what may differ between the local and the Kubeflow DAG.
EXPECTED_DIFFERENCES = {('ImageExampleGen', 'input_base'),  # runtime parameter
                        ('Pusher', 'push_destination')}  # serving directory


@pytest.fixture(scope='module')
def compiled(tmp_path_factory):
  tmp = tmp_path_factory.mktemp('kubeflow')
  flags = [*kubeflow_specs.CLUSTER_PATHS, *SHARED_FLAGS]
  yaml_spec = kubeflow_specs.compile_spec(tmp / 'pipeline.yaml', *flags)
  json_spec = kubeflow_specs.compile_spec(tmp / 'pipeline.json', *flags)
  return tmp, yaml_spec, json_spec


def local_dag(tmp_path):
  args = local_runner.make_parser().parse_args(
      ['--data-dir', str(tmp_path), '--output-dir', str(tmp_path / 'out'),
       *SHARED_FLAGS])
  return local_runner.build_pipeline(args)


def kubeflow_dag(*flags):
  args = kubeflow_runner.make_parser().parse_args(
      ['--output', 'unused.yaml', *kubeflow_specs.CLUSTER_PATHS, *flags])
  kubeflow_runner.check_args(args)
  return kubeflow_runner.build_pipeline(args)


def test_both_formats_parse_as_the_same_pipeline_spec(compiled):
  tmp, yaml_spec, json_spec = compiled
  for spec in (yaml_spec, json_spec):
    json_format.ParseDict(spec, pipeline_spec_pb2.PipelineSpec())
  assert yaml_spec == json_spec
  with open(tmp / 'pipeline.json') as f:
    job = json.load(f)
  # The PipelineJob carries the run's defaults for Vertex AI.
  assert job['runtimeConfig'] == {
      'gcsOutputDirectory': 'gs://bucket/tfx',
      'parameterValues': {'data_root': 'gs://bucket/data/mnist'}}
  assert yaml_spec['pipelineInfo']['name'] == configs.KUBEFLOW_PIPELINE_NAME


def test_one_task_per_local_component_wired_the_same(compiled, tmp_path):
  _, spec, _ = compiled
  tasks = spec['root']['dag']['tasks']
  local = {c.id: c for c in local_dag(tmp_path).components}
  # The resolver compiles to two resolver tasks (ModelBlessing, then Model).
  task_component = {name: RESOLVER_TASKS.get(name, name) for name in tasks}
  assert sorted(set(task_component.values())) == sorted(local)
  assert len(tasks) == len(local) + 1

  for name, task in tasks.items():
    if name in RESOLVER_TASKS:
      continue
    component = local[name]
    upstream = set(task.get('dependentTasks', []))
    inputs = {}
    for key, spec_input in task.get('inputs', {}).get('artifacts', {}).items():
      producer = spec_input['taskOutputArtifact']
      upstream.add(producer['producerTask'])
      inputs[key] = (task_component[producer['producerTask']],
                     producer['outputArtifactKey'])
    assert {task_component[t] for t in upstream} == {
        node.id for node in component.upstream_nodes}, name
    assert inputs == {key: (channel.producer_component_id, channel.output_key)
                      for key, channel in component.inputs.items()}, name
    # Every execution property of the component is passed to its task.
    assert set(task.get('inputs', {}).get('parameters', {})) == {
        key for key, value in component.exec_properties.items()
        if value is not None}, name

  # The Evaluator's baseline is the resolved Model, found from the blessing.
  assert tasks['Evaluator']['inputs']['artifacts']['baseline_model'] == {
      'taskOutputArtifact': {'producerTask': f'{RESOLVER}-model-resolver',
                             'outputArtifactKey': 'model'}}
  assert tasks[f'{RESOLVER}-model-resolver']['inputs']['artifacts'][
      'input']['taskOutputArtifact']['producerTask'] == (
          f'{RESOLVER}-model-blessing-resolver')
  # The gate stays in front of Transform, so bad data trains nothing.
  assert 'ValidationGate' in tasks['Transform']['dependentTasks']


def test_only_paths_and_runner_settings_differ(tmp_path):
  local = local_dag(tmp_path)
  kubeflow = kubeflow_dag(*SHARED_FLAGS)
  kubeflow_components = {c.id: c for c in kubeflow.components}
  differences = set()
  for component in local.components:
    other = kubeflow_components[component.id]
    assert type(other) is type(component)
    for key, value in component.exec_properties.items():
      if other.exec_properties[key] != value:
        differences.add((component.id, key))
  assert differences == EXPECTED_DIFFERENCES
  assert kubeflow.metadata_connection_config is None
  assert local.metadata_connection_config is not None
  # The flags reached the DAG: Fashion-MNIST's threshold and class names.
  evaluator = kubeflow_components['Evaluator'].exec_properties['eval_config']
  assert 'lower_bound' in str(evaluator) and '0.91' in str(evaluator)
  assert 'Ankle boot' in kubeflow_components[
      'ImageExampleGen'].exec_properties['custom_config']


def test_the_compiled_settings_are_the_local_ones(compiled, tmp_path):
  _, spec, _ = compiled
  local = {c.id: c for c in local_dag(tmp_path).components}
  params = {name: task.get('inputs', {}).get('parameters', {})
            for name, task in spec['root']['dag']['tasks'].items()}
  trainer = local['Trainer'].exec_properties
  assert json.loads(params['Trainer']['custom_config']['runtimeValue'][
      'constant']) == json.loads(trainer['custom_config'])
  assert params['Trainer']['run_fn']['runtimeValue']['constant'] == (
      configs.RUN_FN)
  assert params['Transform']['preprocessing_fn']['runtimeValue'][
      'constant'] == configs.PREPROCESSING_FN


def test_data_root_is_a_runtime_parameter_with_a_default(compiled):
  _, spec, _ = compiled
  assert spec['root']['inputDefinitions']['parameters'] == {
      'data_root': {'parameterType': 'STRING', 'isOptional': True,
                    'defaultValue': 'gs://bucket/data/mnist'}}
  example_gen = spec['root']['dag']['tasks']['ImageExampleGen']
  assert example_gen['inputs']['parameters']['input_base'] == {
      'componentInputParameter': 'data_root'}


def test_every_container_runs_the_image_and_beam_args(tmp_path):
  spec = kubeflow_specs.compile_spec(
      tmp_path / 'p.yaml', *kubeflow_specs.CLUSTER_PATHS,
      '--beam-args=--runner=DataflowRunner --project=p --region=r')
  beam_tasks = ['ImageExampleGen', 'StatisticsGen', 'SchemaGen',
                'ExampleValidator', 'Transform', 'Evaluator']
  for name in kubeflow_specs.container_tasks(spec):
    container = kubeflow_specs.container(spec, name)
    assert container['image'] == 'registry.example/image-pipeline:test'
    if name in beam_tasks:
      args = container['args']
      # After the defaults, so it wins (Beam keeps a flag's last value).
      assert args[-3:] == ['--runner=DataflowRunner', '--project=p',
                           '--region=r'], name
      defaults = len(configs.BEAM_PIPELINE_ARGS)
      assert args[-3 - defaults:-3] == list(configs.BEAM_PIPELINE_ARGS)
  hook = kubeflow_specs.container(spec, 'ImageExampleGen')['lifecycle'][
      'preCacheCheck']
  assert '--runner=DataflowRunner' in hook['args']


def test_gpu_flag_requests_accelerators_for_the_trainer_only(tmp_path):
  spec = kubeflow_specs.compile_spec(
      tmp_path / 'gpu.yaml', *kubeflow_specs.CLUSTER_PATHS, '--gpu', '2',
      '--gpu-type', 'NVIDIA_TESLA_T4')
  assert kubeflow_specs.container(spec, 'Trainer')['resources'] == {
      'accelerator': {'type': 'NVIDIA_TESLA_T4', 'count': '2',
                      'resourceType': 'NVIDIA_TESLA_T4',
                      'resourceCount': '2'}}
  for name in kubeflow_specs.container_tasks(spec):
    if name != 'Trainer':
      assert 'resources' not in kubeflow_specs.container(spec, name), name
  plain = kubeflow_specs.compile_spec(tmp_path / 'cpu.yaml',
                                      *kubeflow_specs.CLUSTER_PATHS)
  assert 'resources' not in kubeflow_specs.container(plain, 'Trainer')


def test_s3_endpoint_reaches_beam_and_the_containers(tmp_path):
  spec = kubeflow_specs.compile_spec(
      tmp_path / 's3.yaml', '--image', 'img:1',
      '--pipeline-root', 's3://bucket/tfx', '--data-dir', 's3://bucket/data',
      '--s3-endpoint', 'http://minio-service.kubeflow:9000')
  for name in kubeflow_specs.container_tasks(spec):
    container = kubeflow_specs.container(spec, name)
    assert {'name': 'S3_ENDPOINT', 'value': 'minio-service.kubeflow:9000'} in (
        container['env'])
  assert '--s3_endpoint_url=http://minio-service.kubeflow:9000' in (
      kubeflow_specs.container(spec, 'StatisticsGen')['args'])


def test_curated_schema_is_read_from_the_image(tmp_path):
  spec = kubeflow_specs.compile_spec(
      tmp_path / 'p.yaml', *kubeflow_specs.CLUSTER_PATHS,
      '--schema', configs.MNIST_SCHEMA)
  schema_file = spec['root']['dag']['tasks']['ImportSchemaGen']['inputs'][
      'parameters']['schema_file']['runtimeValue']['constant']
  assert schema_file == (f'{configs.IMAGE_PROJECT_DIR}/'
                         'pipeline/schema/mnist/schema.pbtxt')


@pytest.mark.parametrize('flags, message', [
    (['--pipeline-root', '/tmp/tfx'], '--pipeline-root /tmp/tfx: pods need '
     'object storage'),
    (['--data-dir', 'http://example.com/data'], '--data-dir http://'),
    (['--serving-model-dir', 'models'], '--serving-model-dir models'),
    (['--pipeline-name', 'image_classifier'], 'allows \\[a-z0-9-\\] only'),
    (['--gpu', '-1'], '--gpu -1: must be 0 or more'),
    (['--schema', '/etc/hostname'], 'not a file of this project'),
    (['--s3-endpoint', 'minio:9000'], r'expected http\(s\)://HOST:PORT'),
])
def test_bad_flags_stop_with_a_clear_message(tmp_path, flags, message):
  output = tmp_path / 'p.yaml'
  with pytest.raises(SystemExit, match=message):
    kubeflow_runner.main(['--output', str(output),
                          *kubeflow_specs.CLUSTER_PATHS, *flags])
  assert not output.exists()


def test_output_must_be_json_or_yaml(tmp_path):
  with pytest.raises(SystemExit, match=r'must end with \.json, \.yaml, \.yml'):
    kubeflow_runner.main(['--output', str(tmp_path / 'p.txt'),
                          *kubeflow_specs.CLUSTER_PATHS])
