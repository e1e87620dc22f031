"""kubeflow/container_entrypoint.py: input types restored from the
component's own spec when KFP's driver hands none, and the executor's exit
status kept (also when tensorflow-io's S3 client would abort at exit)."""

import json
import os
import subprocess
import sys

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
import pytest

from kubeflow import container_entrypoint
from pipeline import constants

EXAMPLES_SCHEMA = 'title: tfx.Examples\ntype: object\n'
MODEL_SCHEMA = 'title: tfx.Model\ntype: object\n'


def _inputs_spec():
  spec = pipeline_spec_pb2.ComponentInputsSpec()
  spec.artifacts['examples'].artifact_type.instance_schema = EXAMPLES_SCHEMA
  spec.artifacts['model'].artifact_type.instance_schema = MODEL_SCHEMA
  return spec


def _executor_input(**types):
  """An ExecutorInput whose input `key` has the type `types[key]`."""
  executor_input = pipeline_spec_pb2.ExecutorInput()
  for key, artifact_type in types.items():
    artifact = executor_input.inputs.artifacts[key].artifacts.add(
        name='7', uri=f's3://bucket/{key}')
    artifact.type.CopyFrom(artifact_type)
  return executor_input


def test_empty_schemas_and_system_titles_get_the_spec_types():
  executor_input = _executor_input(
      examples=pipeline_spec_pb2.ArtifactTypeSchema(instance_schema=''),
      model=pipeline_spec_pb2.ArtifactTypeSchema(
          schema_title='system.Artifact'))
  restored = container_entrypoint.restore_input_types(executor_input,
                                                      _inputs_spec())
  assert restored == ['examples', 'model']
  types = {k: v.artifacts[0].type.instance_schema
           for k, v in executor_input.inputs.artifacts.items()}
  assert types == {'examples': EXAMPLES_SCHEMA, 'model': MODEL_SCHEMA}
  # Everything else of the artifact is as KFP handed it.
  assert executor_input.inputs.artifacts['model'].artifacts[0].uri == (
      's3://bucket/model')


def test_types_that_name_a_class_are_kept():
  own = pipeline_spec_pb2.ArtifactTypeSchema(
      instance_schema='title: tfx.Examples\ntype: object\nproperties: {}\n')
  executor_input = _executor_input(examples=own)
  assert container_entrypoint.restore_input_types(
      executor_input, _inputs_spec()) == []
  assert executor_input.inputs.artifacts['examples'].artifacts[0].type == own


def test_an_untyped_input_the_spec_does_not_declare_is_an_error():
  executor_input = _executor_input(
      other=pipeline_spec_pb2.ArtifactTypeSchema(instance_schema=''))
  with pytest.raises(ValueError, match="'other' has no type"):
    container_entrypoint.restore_input_types(executor_input, _inputs_spec())


def test_arguments_are_rewritten_only_where_needed():
  executor_input = _executor_input(
      model=pipeline_spec_pb2.ArtifactTypeSchema(instance_schema=''))
  argv = ['--executor_class_path', 'a.B',
          container_entrypoint.INVOCATION_FLAG,
          json_format.MessageToJson(executor_input),
          container_entrypoint.INPUTS_SPEC_FLAG,
          json_format.MessageToJson(_inputs_spec()), '--runner=DirectRunner']
  fixed = container_entrypoint.fix_arguments(argv)
  assert fixed[:2] == argv[:2] and fixed[4:] == argv[4:]
  assert json.loads(fixed[3])['inputs']['artifacts']['model']['artifacts'][
      0]['type'] == {'instanceSchema': MODEL_SCHEMA}


def _run_entrypoint(tmp_path, executor_class_path):
  """The served-model executor (no inputs) through the entrypoint."""
  executor_input = pipeline_spec_pb2.ExecutorInput()
  executor_input.inputs.parameter_values['serving_model_dir'].string_value = (
      str(tmp_path / 'serving'))
  executor_input.outputs.artifacts['model'].artifacts.add(
      uri=str(tmp_path / 'model')).type.instance_schema = MODEL_SCHEMA
  executor_input.outputs.output_file = str(tmp_path / 'out' / 'output.json')
  inputs_spec = {'parameters': {'serving_model_dir': {
      'parameterType': 'STRING'}}}
  return subprocess.run(
      [sys.executable, '-m', container_entrypoint.__name__,
       '--executor_class_path', executor_class_path,
       container_entrypoint.INVOCATION_FLAG,
       json_format.MessageToJson(executor_input),
       container_entrypoint.INPUTS_SPEC_FLAG, json.dumps(inputs_spec)],
      cwd=constants.PROJECT_DIR, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, PYTHONPATH=constants.PROJECT_DIR))


def test_a_task_succeeds_with_status_0_and_writes_its_output(tmp_path):
  result = _run_entrypoint(tmp_path, 'components.served_model.Executor')
  assert result.returncode == 0, result.stderr[-3000:]
  with open(tmp_path / 'out' / 'output.json') as f:
    output = json.load(f)
  # Nothing served: the Model artifact says so.
  assert output['artifacts']['model']['artifacts'][0]['metadata'][
      'served_version'] == ''


def test_a_failing_task_exits_non_zero_with_its_traceback(tmp_path):
  result = _run_entrypoint(tmp_path, 'components.no_such_module.Executor')
  assert result.returncode != 0
  assert 'no_such_module' in result.stderr
