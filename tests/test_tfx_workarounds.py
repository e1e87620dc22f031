"""components/tfx_workarounds.py still matches the TFX it works around.

Each test runs the real TFX part the workaround imitates or plugs into and
fails when a TFX upgrade changes what the project relies on: then fix the
workaround (or replace it, if TFX now has a public way) before upgrading.
"""

import os

from tfx import v1 as tfx
from tfx.components.pusher import executor as pusher_executor
from tfx.proto import pusher_pb2
from tfx.types import standard_artifacts
from tfx.types import standard_component_specs
from tfx.utils import path_utils
from tfx.utils import proto_utils

from components import served_model
from components import tfx_workarounds
from tests import mlmd


def _custom_properties(artifact):
  return {key: (type(value).__name__, value)
          for key, value in artifact.mlmd_artifact.custom_properties.items()}


def test_mark_pushed_records_a_push_as_tfx_pusher_does(tmp_path):
  model = standard_artifacts.Model()
  model.uri = str(tmp_path / 'model')
  serving = path_utils.serving_model_path(model.uri)
  os.makedirs(os.path.join(serving, 'variables'))
  with open(os.path.join(serving, 'saved_model.pb'), 'wb') as f:
    f.write(b'a model')
  blessing = standard_artifacts.ModelBlessing()
  blessing.uri = str(tmp_path / 'blessing')
  blessing.set_int_custom_property('blessed', 1)
  by_tfx = standard_artifacts.PushedModel()
  by_tfx.uri = str(tmp_path / 'pushed')
  destination = pusher_pb2.PushDestination(
      filesystem=pusher_pb2.PushDestination.Filesystem(
          base_directory=str(tmp_path / 'serving')))
  pusher_executor.Executor().Do(
      {standard_component_specs.MODEL_KEY: [model],
       standard_component_specs.MODEL_BLESSING_KEY: [blessing]},
      {standard_component_specs.PUSHED_MODEL_KEY: [by_tfx]},
      {standard_component_specs.PUSH_DESTINATION_KEY:
           proto_utils.proto_to_json(destination)})
  [version] = os.listdir(tmp_path / 'serving')

  by_us = standard_artifacts.PushedModel()
  tfx_workarounds.mark_pushed(by_us, str(tmp_path / 'serving' / version),
                              version)
  assert _custom_properties(by_us) == _custom_properties(by_tfx)


def test_driver_runs_before_the_cache_and_outputs_go_where_assumed(tmp_path):
  root = tmp_path / 'pipeline'
  serving_dir = tmp_path / 'serving'
  os.makedirs(serving_dir / '7')
  (serving_dir / '7' / 'saved_model.pb').write_bytes(b'a model')  # Served.
  tfx.orchestration.LocalDagRunner().run(tfx.dsl.Pipeline(
      pipeline_name='workarounds_test', pipeline_root=str(root),
      components=[served_model.ServedModel(
          serving_model_dir=str(serving_dir))],
      enable_cache=True,
      metadata_connection_config=(
          tfx.orchestration.metadata.sqlite_metadata_connection_config(
              str(tmp_path / 'metadata.db')))))
  store = mlmd.open_store(str(tmp_path))
  [execution] = store.get_executions()
  # Set by the driver (ExecPropertiesDriver), not by the pipeline.
  assert execution.custom_properties[
      served_model.SERVED_VERSION_KEY].string_value == '7'
  [model] = store.get_artifacts_by_type('Model')
  assert model.uri == tfx_workarounds.output_dir(
      str(root), 'ServedModel', served_model.MODEL_KEY, execution.id)


def test_byte_size_batching_batches_tfxio_sources_by_bytes_while_on():
  # The flag is tfx_bsl's: its sources batch by bytes with it, and let Beam
  # tune a count from one record without it. This fails when tfx_bsl drops
  # or renames the flag (it calls it experimental).
  from absl import flags  # pylint: disable=g-import-not-at-top
  from tfx_bsl.coders import batch_util  # pylint: disable=g-import-not-at-top
  outside = batch_util.GetBatchElementsKwargs(None)
  assert outside['min_batch_size'] == 1
  with tfx_workarounds.byte_size_batching():
    inside = batch_util.GetBatchElementsKwargs(None)
    assert inside['min_batch_size'] == inside['max_batch_size'] > 1000
    assert 'element_size_fn' in inside
  assert batch_util.GetBatchElementsKwargs(None) == outside
  assert not flags.FLAGS[tfx_workarounds.BYTE_SIZE_BATCHING_FLAG].value
