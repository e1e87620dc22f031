"""kubeflow/submit.py: what --dry-run says it would send, and the arguments
it refuses. Nothing here connects anywhere."""

import json
import os

import pytest

from kubeflow import submit
from tests import kubeflow_specs


@pytest.fixture(scope='module')
def specs(tmp_path_factory):
  tmp = tmp_path_factory.mktemp('specs')
  kubeflow_specs.compile_spec(tmp / 'pipeline.yaml',
                              *kubeflow_specs.CLUSTER_PATHS)
  kubeflow_specs.compile_spec(tmp / 'pipeline.json', '--target', 'vertex',
                              *kubeflow_specs.CLUSTER_PATHS)
  # On s3://: a PlatformSpec (the credentials) follows the PipelineSpec.
  kubeflow_specs.compile_spec(
      tmp / 'pipeline-s3.yaml', '--image', 'img:1',
      '--pipeline-root', 's3://bucket/tfx', '--data-dir', 's3://bucket/data',
      '--s3-endpoint', 'http://minio-service.kubeflow:9000')
  return tmp


def test_kfp_reads_a_spec_followed_by_its_platform_spec(specs, capsys):
  request = dry_run(capsys, 'kfp', 'run', '--host', 'http://kfp:8080',
                    '--spec', str(specs / 'pipeline-s3.yaml'),
                    '--param', 'data_root=s3://bucket/data-2')
  assert request['parameters'] == {'data_root': 's3://bucket/data-2'}
  assert request['pipeline_name'] == 'image-classifier'


def dry_run(capsys, *argv):
  assert submit.main([*argv, '--dry-run']) == 0
  return json.loads(capsys.readouterr().out)


def refused(capsys, *argv):
  assert submit.main([*argv, '--dry-run']) == 2
  return capsys.readouterr().err


def test_kfp_upload(specs, capsys):
  request = dry_run(capsys, 'kfp', 'upload', '--host', 'http://kfp:8080',
                    '--spec', str(specs / 'pipeline.yaml'), '--version', 'v2')
  assert request == {
      'target': 'kfp', 'action': 'upload', 'host': 'http://kfp:8080',
      'namespace': None, 'pipeline_name': 'image-classifier', 'version': 'v2',
      'description': None, 'spec': str(specs / 'pipeline.yaml'),
      'package_format': 'PipelineSpec YAML'}


def test_kfp_run_with_a_parameter(specs, capsys):
  request = dry_run(capsys, 'kfp', 'run', '--host', 'http://kfp:8080',
                    '--spec', str(specs / 'pipeline.json'),
                    '--experiment', 'nightly', '--run-name', 'r1',
                    '--param', 'data_root=gs://bucket/data/2024-06',
                    '--no-cache')
  assert request['action'] == 'run' and request['experiment'] == 'nightly'
  assert request['run_name'] == 'r1'
  assert request['parameters'] == {'data_root': 'gs://bucket/data/2024-06'}
  assert request['enable_caching'] is False
  # kfp.Client reads YAML only: the JSON's PipelineSpec is sent as YAML.
  assert request['package_format'] == (
      'PipelineSpec YAML (pipelineSpec of the .json)')


def test_kfp_schedule(specs, capsys):
  request = dry_run(capsys, 'kfp', 'schedule', '--host', 'http://kfp:8080',
                    '--spec', str(specs / 'pipeline.yaml'),
                    '--cron', '0 30 2 * * MON-FRI', '--max-concurrency', '2')
  assert {k: request[k] for k in ('cron', 'max_concurrency', 'job_name',
                                  'experiment', 'no_catchup', 'parameters')
         } == {'cron': '0 30 2 * * MON-FRI', 'max_concurrency': 2,
               'job_name': 'image-classifier-schedule',
               'experiment': 'Default', 'no_catchup': True, 'parameters': {}}
  assert dry_run(capsys, 'kfp', 'schedule', '--host', 'h', '--spec',
                 str(specs / 'pipeline.yaml'), '--cron', '@daily')[
                     'cron'] == '@daily'


def test_vertex_run_takes_the_pipeline_root_from_the_pipeline_job(
    specs, capsys):
  request = dry_run(capsys, 'vertex', 'run', '--project', 'p', '--region',
                    'europe-west4', '--spec', str(specs / 'pipeline.json'),
                    '--service-account', 'sa@p.iam.gserviceaccount.com')
  assert request == {
      'target': 'vertex', 'action': 'run', 'project': 'p',
      'region': 'europe-west4', 'pipeline_name': 'image-classifier',
      'display_name': 'image-classifier', 'pipeline_root': 'gs://bucket/tfx',
      'parameters': {}, 'enable_caching': None,
      'service_account': 'sa@p.iam.gserviceaccount.com',
      'spec': str(specs / 'pipeline.json')}


def test_vertex_schedule(specs, capsys):
  request = dry_run(capsys, 'vertex', 'schedule', '--project', 'p',
                    '--region', 'r', '--spec', str(specs / 'pipeline.yaml'),
                    '--pipeline-root', 'gs://other/root',
                    '--cron', 'TZ=Europe/Paris 0 3 * * *',
                    '--param', 'data_root=gs://bucket/new')
  assert request['cron'] == 'TZ=Europe/Paris 0 3 * * *'
  assert request['schedule_name'] == 'image-classifier-schedule'
  assert request['max_concurrent_run_count'] == 1
  assert request['pipeline_root'] == 'gs://other/root'
  assert request['parameters'] == {'data_root': 'gs://bucket/new'}


@pytest.mark.parametrize('target, cron, message', [
    ('kfp', '0 3 * * *', '5 fields, expected 6'),
    ('kfp', '0 0 25 * * *', 'field 3: 25 is outside 0-23'),
    ('kfp', '0 */0 * * * *', 'step 0'),
    ('kfp', 'every day', '2 fields, expected 6'),
    ('vertex', '0 0 3 * * *', '6 fields, expected 5'),
    ('vertex', '61 3 * * *', 'field 1: 61 is outside 0-59'),
    ('vertex', '0 3 * FOO *', "field 4: 'FOO' is not a number"),
    ('vertex', '@daily', '1 fields, expected 5'),
])
def test_bad_cron_is_refused(specs, capsys, target, cron, message):
  where = (['--host', 'h'] if target == 'kfp'
           else ['--project', 'p', '--region', 'r'])
  error = refused(capsys, target, 'schedule', *where, '--spec',
                  str(specs / 'pipeline.json'), '--cron', cron)
  assert message in error and f'--cron {cron!r}' in error


def test_missing_or_bad_spec_file_is_refused(specs, tmp_path, capsys):
  missing = tmp_path / 'nope.yaml'
  error = refused(capsys, 'kfp', 'run', '--host', 'h', '--spec', str(missing))
  assert f'--spec {missing}: no such file' in error
  not_a_spec = tmp_path / 'notes.yaml'
  not_a_spec.write_text('hello: world\n')
  error = refused(capsys, 'kfp', 'run', '--host', 'h', '--spec',
                  str(not_a_spec))
  assert f'--spec {not_a_spec}: not a compiled pipeline' in error


def test_parameters_are_checked_against_the_spec(specs, capsys):
  spec = str(specs / 'pipeline.yaml')
  error = refused(capsys, 'kfp', 'run', '--host', 'h', '--spec', spec,
                  '--param', 'epochs=3')
  assert '--param epochs: the pipeline has no such parameter (it takes: ' \
         'data_root)' in error
  error = refused(capsys, 'kfp', 'run', '--host', 'h', '--spec', spec,
                  '--param', 'data_root')
  assert '--param data_root: expected NAME=VALUE' in error


def test_parameters_get_their_declared_types():
  spec = {'root': {'inputDefinitions': {'parameters': {
      'steps': {'parameterType': 'NUMBER_INTEGER'},
      'rate': {'parameterType': 'NUMBER_DOUBLE'},
      'fast': {'parameterType': 'BOOLEAN'}}}}}
  assert submit.pipeline_parameters(
      spec, ['steps=3', 'rate=0.5', 'fast=true']) == {
          'steps': 3, 'rate': 0.5, 'fast': True}
  with pytest.raises(submit.UsageError, match='steps=x: not a NUMBER_INTEGER'):
    submit.pipeline_parameters(spec, ['steps=x'])


def test_vertex_needs_a_pipeline_root_for_a_yaml_spec(specs, capsys):
  error = refused(capsys, 'vertex', 'run', '--project', 'p', '--region', 'r',
                  '--spec', str(specs / 'pipeline.yaml'))
  assert '--pipeline-root is required' in error
  assert os.path.exists(specs / 'pipeline.yaml')
