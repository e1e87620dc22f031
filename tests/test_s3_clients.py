"""Beam's S3 filesystem, once s3_clients.share() ran, makes one boto3 client
per settings for the process instead of one per file operation. (Making a
client contacts no server; tests/test_kubeflow_on_s3.py runs the pipeline
through it on a real S3 server.)"""

from apache_beam.io.aws import s3io
from apache_beam.options import pipeline_options

from pipeline import s3_clients


def _options(endpoint):
  return pipeline_options.PipelineOptions([
      f'--s3_endpoint_url={endpoint}', '--s3_region_name=us-east-1',
      '--s3_access_key_id=key', '--s3_secret_access_key=secret'])


def test_every_file_operation_reuses_the_client_of_its_settings():
  s3_clients.share()
  s3_clients.share()  # Twice is once.
  here = _options('http://127.0.0.1:9000')
  # Beam builds an S3IO, and with it a client, for each file operation.
  first, second = s3io.S3IO(options=here), s3io.S3IO(options=here)
  assert first.client is not second.client  # Beam's own wrappers ...
  assert first.client.client is second.client.client  # ... share boto3's.
  other = s3io.S3IO(options=_options('http://127.0.0.1:9001'))
  assert other.client.client is not first.client.client
  assert other.client.client.meta.endpoint_url == 'http://127.0.0.1:9001'
