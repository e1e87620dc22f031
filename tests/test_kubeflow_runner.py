"""kubeflow_runner.py compiles the local DAG: same tasks, wiring and settings;
only paths, metadata, Beam args and the Trainer's resources differ, and for
open-source Kubeflow Pipelines (--target kubeflow) the baseline node and what
that backend cannot run (kubeflow/open_source_kfp.py)."""

import json

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
import pytest
from tfx.utils import dependency_utils

from kubeflow import kubeflow_runner
from kubeflow import open_source_kfp
import local_runner
from modules.training.config import (CROSS_FIT_RECORDS_KEY,  # pylint: disable=g-multiple-import
                                     EPOCH_PROBABILITIES_KEY,
                                     VALIDATION_SPLIT_KEY)
from pipeline import constants
from tests import kubeflow_specs

RESOLVER = 'latest_blessed_model_resolver'
RESOLVER_TASKS = {f'{RESOLVER}-model-blessing-resolver': RESOLVER,
                  f'{RESOLVER}-model-resolver': RESOLVER}
# Settings both runners take, not the defaults, so that they are seen to pass.
SHARED_FLAGS = ['--dataset', 'fashion-mnist', '--epochs', '3',
                '--batch-size', '64', '--num-shards', '4']
S3_REGION = kubeflow_runner.make_parser().get_default('s3_region')
# Exactly what may differ between the local and the Kubeflow DAG.
EXPECTED_DIFFERENCES = {('ImageExampleGen', 'input_base'),  # runtime parameter
                        ('Pusher', 'push_destination')}  # serving directory


@pytest.fixture(scope='module')
def compiled(tmp_path_factory):
  """The Vertex AI target, as .yaml and .json."""
  tmp = tmp_path_factory.mktemp('vertex')
  flags = ['--target', 'vertex', *kubeflow_specs.CLUSTER_PATHS, *SHARED_FLAGS]
  yaml_spec = kubeflow_specs.compile_spec(tmp / 'pipeline.yaml', *flags)
  json_spec = kubeflow_specs.compile_spec(tmp / 'pipeline.json', *flags)
  return tmp, yaml_spec, json_spec


@pytest.fixture(scope='module')
def kubeflow_spec(tmp_path_factory):
  """The open-source Kubeflow Pipelines target (the default)."""
  tmp = tmp_path_factory.mktemp('kubeflow')
  return kubeflow_specs.compile_spec(
      tmp / 'pipeline.yaml', *kubeflow_specs.CLUSTER_PATHS, *SHARED_FLAGS)


def local_dag(tmp_path):
  args = local_runner.make_parser().parse_args(
      ['--data-dir', str(tmp_path), '--output-dir', str(tmp_path / 'out'),
       *SHARED_FLAGS])
  return local_runner.build_pipeline(args)


def kubeflow_dag(*flags):
  """The DAG of kubeflow_runner.py with `flags` (give --target)."""
  args = kubeflow_runner.make_parser().parse_args(
      ['--output', 'unused.yaml', *kubeflow_specs.CLUSTER_PATHS, *flags])
  return kubeflow_runner.build_pipeline(args, kubeflow_runner.check_args(args))


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
  assert yaml_spec['pipelineInfo']['name'] == constants.KUBEFLOW_PIPELINE_NAME


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
  kubeflow = kubeflow_dag('--target', 'vertex', *SHARED_FLAGS)
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
      constants.RUN_FN)
  assert params['Transform']['preprocessing_fn']['runtimeValue'][
      'constant'] == constants.PREPROCESSING_FN


def test_data_root_is_a_runtime_parameter_with_a_default(compiled):
  _, spec, _ = compiled
  assert spec['root']['inputDefinitions']['parameters'] == {
      'data_root': {'parameterType': 'STRING', 'isOptional': True,
                    'defaultValue': 'gs://bucket/data/mnist'}}
  example_gen = spec['root']['dag']['tasks']['ImageExampleGen']
  assert example_gen['inputs']['parameters']['input_base'] == {
      'componentInputParameter': 'data_root'}


@pytest.mark.parametrize('target', ['kubeflow', 'vertex'])
def test_every_container_runs_the_image_and_beam_args(tmp_path, target):
  spec = kubeflow_specs.compile_spec(
      tmp_path / 'p.yaml', '--target', target, *kubeflow_specs.CLUSTER_PATHS,
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
      defaults = len(constants.BEAM_PIPELINE_ARGS)
      assert args[-3 - defaults:-3] == list(constants.BEAM_PIPELINE_ARGS)
      beam_args = args[-4 - defaults:]
      assert beam_args[0] == (
          f'--setup_file={constants.IMAGE_PROJECT_DIR}/setup.py')
      # The image's setup.py is the dependency flag TFX looks for: it adds
      # no sdist of itself (built, and left in /tmp, in every executor).
      assert dependency_utils.make_beam_dependency_flags(beam_args) == beam_args
  if target == 'vertex':  # TFX's ExampleGen driver, as a pre-cache check.
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


def _trainer_custom_config(spec: dict) -> dict:
  return json.loads(spec['root']['dag']['tasks']['Trainer']['inputs'][
      'parameters']['custom_config']['runtimeValue']['constant'])


def test_trainer_workers_on_vertex_are_a_custom_job_of_worker_pools(tmp_path):
  spec = kubeflow_specs.compile_spec(
      tmp_path / 'workers.json', '--target', 'vertex',
      *kubeflow_specs.CLUSTER_PATHS, '--trainer-workers', '3',
      '--vertex-project', 'my-project', '--vertex-region', 'europe-west4',
      '--trainer-machine-type', 'n1-highmem-16', '--gpu', '2', '--gpu-type',
      'NVIDIA_TESLA_T4')
  # The task runs TFX's Vertex AI Trainer executor, which starts the job.
  assert kubeflow_specs.container(spec, 'Trainer')['args'][:2] == [
      '--executor_class_path',
      'tfx.extensions.google_cloud_ai_platform.trainer.executor.'
      'GenericExecutor']
  # The accelerators are the replicas', not the task's.
  assert 'resources' not in kubeflow_specs.container(spec, 'Trainer')
  config = _trainer_custom_config(spec)
  machine = {'machine_type': 'n1-highmem-16',
             'accelerator_type': 'NVIDIA_TESLA_T4', 'accelerator_count': 2}
  image = {'image_uri': kubeflow_specs.CLUSTER_PATHS[1]}
  assert config['ai_platform_enable_vertex'] is True
  assert config['ai_platform_vertex_region'] == 'europe-west4'
  # Pool 0: the chief; pool 1: the other workers. Vertex AI gives each
  # replica its TF_CONFIG (chief / worker), which run_fn reads.
  assert config['ai_platform_training_args'] == {
      'project': 'my-project',
      'job_spec': {'worker_pool_specs': [
          {'machine_spec': machine, 'replica_count': 1,
           'container_spec': image},
          {'machine_spec': machine, 'replica_count': 2,
           'container_spec': image}]}}
  # The replicas run TFX's run_fn with the training settings, as locally,
  # not the local worker launcher's.
  assert config['training']['workers'] == 3
  assert spec['root']['dag']['tasks']['Trainer']['inputs']['parameters'][
      'run_fn']['runtimeValue']['constant'] == constants.RUN_FN
  # Without the flag the Trainer is TFX's own, trained in its task.
  plain = kubeflow_specs.compile_spec(tmp_path / 'one.json', '--target',
                                      'vertex', *kubeflow_specs.CLUSTER_PATHS)
  assert kubeflow_specs.container(plain, 'Trainer')['args'][1] == (
      'tfx.components.trainer.executor.GenericExecutor')
  # No Vertex AI job's entries: the training config, the validation split
  # and LabelCheck's sample.
  assert set(_trainer_custom_config(plain)) == {
      'training', VALIDATION_SPLIT_KEY, EPOCH_PROBABILITIES_KEY,
      CROSS_FIT_RECORDS_KEY}


def test_s3_endpoint_reaches_beam_and_the_containers(tmp_path):
  spec = kubeflow_specs.compile_spec(
      tmp_path / 's3.yaml', '--image', 'img:1',
      '--pipeline-root', 's3://bucket/tfx', '--data-dir', 's3://bucket/data',
      '--s3-endpoint', 'http://minio-service.kubeflow:9000')
  for name in kubeflow_specs.container_tasks(spec):
    container = kubeflow_specs.container(spec, name)
    # With its scheme: tensorflow-io speaks https to a bare HOST:PORT.
    assert {'name': 'S3_ENDPOINT',
            'value': 'http://minio-service.kubeflow:9000'} in container['env']
    assert {'name': 'S3_USE_HTTPS', 'value': '0'} in container['env']
    assert {'name': 'AWS_REGION', 'value': S3_REGION} in container['env']
  args = kubeflow_specs.container(spec, 'StatisticsGen')['args']
  assert '--s3_endpoint_url=http://minio-service.kubeflow:9000' in args
  assert f'--s3_region_name={S3_REGION}' in args


def test_s3_credentials_come_from_a_secret_on_kubeflow(tmp_path):
  path = tmp_path / 's3.yaml'
  kubeflow_specs.compile_spec(
      path, '--image', 'img:1', '--pipeline-root', 's3://bucket/tfx',
      '--data-dir', 's3://bucket/data', '--s3-endpoint', 'http://minio:9000',
      '--s3-credentials-secret', 'minio-creds',
      '--s3-credentials-keys', 'user,password')
  spec, platform = kubeflow_specs.read_documents(str(path))
  executors = platform['platforms']['kubernetes']['deploymentSpec'][
      'executors']
  assert set(executors) == set(spec['deploymentSpec']['executors'])
  for config in executors.values():
    assert config == {'secretAsEnv': [{'secretName': 'minio-creds', 'keyToEnv': [
        {'secretKey': 'user', 'envVar': 'AWS_ACCESS_KEY_ID'},
        {'secretKey': 'password', 'envVar': 'AWS_SECRET_ACCESS_KEY'}]}]}
  # gs:// needs none (the pods' service account), nor does Vertex AI.
  assert len(kubeflow_specs.read_documents(kubeflow_specs_path(
      tmp_path, 'gs.yaml'))) == 1


def kubeflow_specs_path(tmp_path, name, *flags):
  path = tmp_path / name
  kubeflow_specs.compile_spec(path, *kubeflow_specs.CLUSTER_PATHS, *flags)
  return str(path)


def test_curated_schema_is_read_from_the_image(tmp_path):
  spec = kubeflow_specs.compile_spec(
      tmp_path / 'p.yaml', *kubeflow_specs.CLUSTER_PATHS,
      '--schema', constants.MNIST_SCHEMA)
  schema_file = spec['root']['dag']['tasks']['ImportSchemaGen']['inputs'][
      'parameters']['schema_file']['runtimeValue']['constant']
  assert schema_file == (f'{constants.IMAGE_PROJECT_DIR}/'
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
    (['--s3-credentials-keys', 'accesskey'], 'expected ACCESS_KEY,SECRET_KEY'),
    (['--trainer-workers', '0'], '--trainer-workers 0: must be 1 or more'),
    (['--trainer-workers', '2'], '--trainer-workers 2: not supported on '
     'open-source Kubeflow Pipelines'),
    (['--target', 'vertex', '--trainer-workers', '5', '--num-shards', '4',
      '--vertex-project', 'p', '--vertex-region', 'r'],
     '--trainer-workers 5 needs at least as many shards per split'),
    (['--target', 'vertex', '--trainer-workers', '2', '--vertex-region', 'r'],
     'needs --vertex-project and --vertex-region'),
])
def test_bad_flags_stop_with_a_clear_message(tmp_path, flags, message):
  output = tmp_path / 'p.yaml'
  with pytest.raises(SystemExit, match=message):
    kubeflow_runner.main(['--output', str(output),
                          *kubeflow_specs.CLUSTER_PATHS, *flags])
  assert not output.exists()


def test_kubeflow_target_writes_a_bare_pipeline_spec_only(tmp_path):
  output = tmp_path / 'p.json'
  with pytest.raises(SystemExit, match='takes a bare PipelineSpec'):
    kubeflow_runner.main(['--output', str(output),
                          *kubeflow_specs.CLUSTER_PATHS])
  assert not output.exists()


def test_output_must_be_json_or_yaml(tmp_path):
  with pytest.raises(SystemExit, match=r'must end with \.json, \.yaml, \.yml'):
    kubeflow_runner.main(['--output', str(tmp_path / 'p.txt'),
                          *kubeflow_specs.CLUSTER_PATHS])


# ------------------------------------------- open-source Kubeflow Pipelines --


def test_kubeflow_spec_has_only_what_open_source_kfp_runs(kubeflow_spec):
  spec = kubeflow_spec
  assert spec['schemaVersion'] == '2.1.0'
  assert 'pipelineSpec' not in spec  # A bare PipelineSpec, no PipelineJob.
  open_source_kfp.check(spec)  # Names, executors, hooks.
  for name, task in spec['root']['dag']['tasks'].items():
    executor = spec['deploymentSpec']['executors'][
        spec['components'][task['componentRef']['name']]['executorLabel']]
    assert set(executor) == {'container'}, name
    assert 'lifecycle' not in executor['container'], name
    assert executor['container']['command'] == [
        'python', '-m', 'kubeflow.container_entrypoint'], name


def test_kubeflow_baseline_is_the_served_model_never_cached(kubeflow_spec,
                                                           tmp_path):
  tasks = kubeflow_spec['root']['dag']['tasks']
  local = {c.id for c in local_dag(tmp_path).components}
  assert set(tasks) == local - {RESOLVER} | {'ServedModel'}
  assert tasks['Evaluator']['inputs']['artifacts']['baseline_model'] == {
      'taskOutputArtifact': {'producerTask': 'ServedModel',
                             'outputArtifactKey': 'model'}}
  assert tasks['ServedModel']['dependentTasks'] == ['Trainer']
  # Both depend on more than KFP's cache key sees (new files under the same
  # data_root, a new served version): never answered from its cache.
  for name, task in tasks.items():
    expected = name not in ('ImageExampleGen', 'ServedModel')
    assert task['cachingOptions'] == {'enableCache': expected}, name
  serving_dir = tasks['ServedModel']['inputs']['parameters'][
      'serving_model_dir']['runtimeValue']['constant']
  assert serving_dir == 'gs://bucket/tfx/serving_model'


def test_kubeflow_dag_differs_from_the_local_one_in_the_baseline(tmp_path):
  local = {c.id: c for c in local_dag(tmp_path).components}
  kubeflow = {c.id: c for c in kubeflow_dag(*SHARED_FLAGS).components}
  assert set(local) - set(kubeflow) == {RESOLVER}
  assert set(kubeflow) - set(local) == {'ServedModel'}
  for name in set(local) & set(kubeflow) - {'Evaluator'}:
    assert type(kubeflow[name]) is type(local[name]), name
  # The Evaluator: TFX's, which also runs when nothing is served.
  assert isinstance(kubeflow['Evaluator'], type(local['Evaluator']))
  assert (kubeflow['Evaluator'].exec_properties ==
          local['Evaluator'].exec_properties)


def test_the_span_window_reaches_the_kubeflow_tasks(tmp_path):
  spec = kubeflow_specs.compile_spec(
      tmp_path / 'pipeline.yaml', *kubeflow_specs.CLUSTER_PATHS,
      '--span-dir-pattern', 'span-{SPAN}', '--span-window', '4',
      '--judge-window')
  open_source_kfp.check(spec)
  params = {name: task['inputs']['parameters']
            for name, task in spec['root']['dag']['tasks'].items()
            if name in ('ImageExampleGen', 'Evaluator')}
  custom_config = json.loads(params['ImageExampleGen']['custom_config'][
      'runtimeValue']['constant'])
  assert custom_config['custom_config']['value']['span_window'] == 4
  assert json.loads(params['Evaluator']['example_splits']['runtimeValue'][
      'constant']) == ['eval', 'earlier_eval']
