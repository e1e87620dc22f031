"""The command of every task the `kubeflow` target compiles.

TFX's own entrypoint (kubeflow_v2_run_executor) plus what open-source KFP 2.x
needs: input artifact types restored from the task's input spec, s3:// through
tensorflow-io, the executor's exit status kept. Why: docs/kubeflow.md.
"""

# First: OpenBLAS reads its kernels when numpy loads (see there).
from pipeline import openblas_kernels  # pylint: disable=unused-import,g-bad-import-order
import importlib
import os
import runpy
import sys
import traceback
from typing import List

from kfp.pipeline_spec import pipeline_spec_pb2

from google.protobuf import json_format

from pipeline import s3_clients
from pipeline import startup

TFX_EXECUTOR_MODULE = (
    'tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor')
INVOCATION_FLAG = '--json_serialized_invocation_args'
EXECUTOR_CLASS_FLAG = '--executor_class_path'
INPUTS_SPEC_FLAG = '--json_serialized_inputs_spec_args'
# Type titles that name no TFX artifact class.
_GENERIC_TITLE_PREFIX = 'system.'


def _flag_value(argv: List[str], flag: str) -> int:
  """Index in `argv` of the value of `flag` (given as `flag value`)."""
  try:
    return argv.index(flag) + 1
  except ValueError:
    raise SystemExit(f'container_entrypoint: {flag} is required') from None


def type_says_nothing(artifact_type: pipeline_spec_pb2.ArtifactTypeSchema
                      ) -> bool:
  """Whether `artifact_type` names no TFX artifact class."""
  kind = artifact_type.WhichOneof('kind')
  if kind == 'instance_schema':
    return not artifact_type.instance_schema.strip()
  if kind == 'schema_title':
    return artifact_type.schema_title.startswith(_GENERIC_TITLE_PREFIX)
  return True


def restore_input_types(executor_input: pipeline_spec_pb2.ExecutorInput,
                        inputs_spec: pipeline_spec_pb2.ComponentInputsSpec
                        ) -> List[str]:
  """Gives input artifacts that lost their type the one their spec declares.

  Args:
    executor_input: the task's ExecutorInput, changed in place.
    inputs_spec: the component's declared inputs, with their types.

  Returns:
    The input keys whose types were restored.

  Raises:
    ValueError: an input lost its type and the spec does not declare it.
  """
  restored = []
  for key, artifact_list in executor_input.inputs.artifacts.items():
    for artifact in artifact_list.artifacts:
      if not type_says_nothing(artifact.type):
        continue
      if key not in inputs_spec.artifacts:
        raise ValueError(f'input artifact {key!r} has no type and the '
                         'component\'s input spec does not declare it')
      artifact.type.CopyFrom(inputs_spec.artifacts[key].artifact_type)
      restored.append(key)
  return sorted(set(restored))


def fix_arguments(argv: List[str]) -> List[str]:
  """`argv` with the ExecutorInput's input types restored from the spec.

  Args:
    argv: the arguments of TFX's executor entrypoint, without the program
      name; not changed.

  Raises:
    SystemExit: no INVOCATION_FLAG in `argv`.
    ValueError: as restore_input_types.
  """
  argv = list(argv)
  invocation = _flag_value(argv, INVOCATION_FLAG)
  executor_input = json_format.Parse(
      argv[invocation], pipeline_spec_pb2.ExecutorInput(),
      ignore_unknown_fields=True)
  inputs_spec = pipeline_spec_pb2.ComponentInputsSpec()
  if INPUTS_SPEC_FLAG in argv:
    json_format.Parse(argv[_flag_value(argv, INPUTS_SPEC_FLAG)], inputs_spec,
                      ignore_unknown_fields=True)
  if restore_input_types(executor_input, inputs_spec):
    argv[invocation] = json_format.MessageToJson(executor_input)
  return argv


def _register_s3() -> None:
  try:
    import tensorflow_io  # pylint: disable=g-import-not-at-top,unused-import
  except ImportError:
    pass  # An image without s3:// support (built without WITH_S3=1).
  s3_clients.share()


def _import_executor(argv: List[str]) -> None:
  """What the task will import anyway, imported first without the garbage
  collector (pipeline/startup.py says why): TFX's components, which
  TFX's entrypoint imports, and the module of the task's executor class."""
  with startup.without_gc():
    _register_s3()
    startup.speed_up_beam()
    importlib.import_module('tfx.components')
    if EXECUTOR_CLASS_FLAG in argv:
      importlib.import_module(
          argv[_flag_value(argv, EXECUTOR_CLASS_FLAG)].rpartition('.')[0])


def run(argv: List[str]) -> int:
  """Runs TFX's executor entrypoint on `argv` (without the program name).

  Args:
    argv: the task's arguments, as fix_arguments takes them.

  Returns:
    The entrypoint's exit status: 0 when it finished.
  """
  _import_executor(argv)
  argv = fix_arguments(argv)
  # TFX's module run as its own command line, as the image's default
  # entrypoint would (`python -m ...`): its flag parser stays TFX's.
  sys.argv = [sys.argv[0]] + argv
  try:
    runpy.run_module(TFX_EXECUTOR_MODULE, run_name='__main__',
                     alter_sys=True)
  except SystemExit as e:
    return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
  return 0


def main() -> None:
  """Runs the task of the command line; the process ends with its status."""
  status = 1
  try:
    status = run(sys.argv[1:])
  except Exception:  # pylint: disable=broad-except
    traceback.print_exc()
  finally:
    sys.stdout.flush()
    sys.stderr.flush()
    # Before the interpreter's teardown, where tensorflow-io's S3 client
    # aborts (docs/kubeflow.md, Storage).
    os._exit(status)  # pylint: disable=protected-access


if __name__ == '__main__':
  main()
