"""A real S3-compatible server on loopback for the tests: moto's standalone
server (`python -m moto.server`), spoken to over HTTP like MinIO in a
Kubeflow cluster. Nothing is mocked in-process: TensorFlow (tensorflow-io),
Beam (boto3) and the tests all go through its HTTP API."""

import contextlib
import json
import os
import subprocess
import sys
import time
from typing import Dict, Iterator

from tests import ports

# moto accepts any credentials; the pods of a cluster get theirs the same way,
# from the environment.
ACCESS_KEY = 'test-access-key'
SECRET_KEY = 'test-secret-key'
REGION = 'us-east-1'


def _wait_until_up(endpoint: str, process: subprocess.Popen,
                   timeout: float = 60) -> None:
  deadline = time.monotonic() + timeout
  while True:
    if process.poll() is not None:
      raise RuntimeError(f'the S3 server exited with {process.returncode}')
    try:
      client(endpoint).list_buckets()
      return
    except Exception:  # pylint: disable=broad-except
      if time.monotonic() > deadline:
        raise
      time.sleep(0.3)


def client(endpoint: str):
  """A boto3 S3 client of the server."""
  import boto3  # pylint: disable=g-import-not-at-top
  return boto3.client('s3', endpoint_url=endpoint, region_name=REGION,
                      aws_access_key_id=ACCESS_KEY,
                      aws_secret_access_key=SECRET_KEY)


def pod_environment(endpoint: str) -> Dict[str, str]:
  """The credentials a pod gets (from a Kubernetes secret, on a cluster)."""
  return {'AWS_ACCESS_KEY_ID': ACCESS_KEY, 'AWS_SECRET_ACCESS_KEY': SECRET_KEY,
          'AWS_REGION': REGION, 'S3_ENDPOINT': endpoint, 'S3_USE_HTTPS': '0',
          'S3_VERIFY_SSL': '0'}


@contextlib.contextmanager
def running(log_path: str) -> Iterator[str]:
  """Starts the server; yields its endpoint, http://127.0.0.1:PORT."""
  port = ports.free_port()
  endpoint = f'http://127.0.0.1:{port}'
  with open(log_path, 'w') as log:
    process = subprocess.Popen(
        [sys.executable, '-m', 'moto.server', '-H', '127.0.0.1', '-p',
         str(port)], stdout=log, stderr=subprocess.STDOUT)
  try:
    _wait_until_up(endpoint, process)
    yield endpoint
  finally:
    process.terminate()
    try:
      process.wait(timeout=10)
    except subprocess.TimeoutExpired:
      process.kill()
      process.wait()


def upload_dir(endpoint: str, local_dir: str, bucket: str,
               prefix: str) -> None:
  """Copies every file under `local_dir` to s3://bucket/prefix/..."""
  s3 = client(endpoint)
  for folder, _, files in os.walk(local_dir):
    for name in files:
      path = os.path.join(folder, name)
      key = '/'.join([prefix.strip('/'), os.path.relpath(path, local_dir)])
      s3.upload_file(path, bucket, key)


def list_keys(endpoint: str, bucket: str, prefix: str = '') -> list:
  """Every key under `prefix`, sorted."""
  s3 = client(endpoint)
  keys = []
  for page in s3.get_paginator('list_objects_v2').paginate(Bucket=bucket,
                                                           Prefix=prefix):
    keys.extend(item['Key'] for item in page.get('Contents', []))
  return sorted(keys)


def enforce_policy(endpoint: str, denied_actions: list,
                   resource: str) -> Dict[str, str]:
  """Makes the server check every request against IAM policies from now
  on, with a user allowed everything but `denied_actions` on `resource`.

  moto checks an identity policy's actions and resources (not its
  conditions, so no prefix of a bucket can be denied alone). The server's
  other credentials stop working.

  Returns:
    The user's credentials, as pod_environment names them.
  """
  import boto3  # pylint: disable=g-import-not-at-top
  import requests  # pylint: disable=g-import-not-at-top
  iam = boto3.client('iam', endpoint_url=endpoint, region_name=REGION,
                     aws_access_key_id=ACCESS_KEY,
                     aws_secret_access_key=SECRET_KEY)
  iam.create_user(UserName='limited')
  iam.put_user_policy(UserName='limited', PolicyName='limited',
                      PolicyDocument=json.dumps({
                          'Version': '2012-10-17', 'Statement': [
                              {'Effect': 'Allow', 'Action': 's3:*',
                               'Resource': '*'},
                              {'Effect': 'Deny', 'Action': denied_actions,
                               'Resource': resource}]}))
  key = iam.create_access_key(UserName='limited')['AccessKey']
  # moto's switch: the number of requests still let through unchecked.
  requests.post(f'{endpoint}/moto-api/reset-auth', data=b'0',
                timeout=30).raise_for_status()
  return {'AWS_ACCESS_KEY_ID': key['AccessKeyId'],
          'AWS_SECRET_ACCESS_KEY': key['SecretAccessKey']}
