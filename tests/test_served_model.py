"""ServedModel: the newest served version, copied into a Model artifact, and
never answered from a stale cache on LocalDagRunner (its driver puts the
served version into the cache key)."""

import os

from tfx import v1 as tfx
from tfx.utils import path_utils

from components import served_model
from tests import mlmd


PIPELINE_NAME = 'served_model_test'


def _pipeline(root, serving_dir):
  return tfx.dsl.Pipeline(
      pipeline_name=PIPELINE_NAME, pipeline_root=str(root / 'pipeline'),
      components=[served_model.ServedModel(serving_model_dir=str(serving_dir))],
      enable_cache=True,
      metadata_connection_config=(
          tfx.orchestration.metadata.sqlite_metadata_connection_config(
              str(root / 'metadata.db'))))


def _serve(serving_dir, version, content):
  """A fake served version (the component copies files, loads nothing)."""
  os.makedirs(serving_dir / version / 'variables')
  (serving_dir / version / 'saved_model.pb').write_bytes(content)


def _newest_model(root):
  store = mlmd.open_store(str(root))
  return sorted(store.get_artifacts_by_type('Model'), key=lambda a: a.id)[-1]


def test_copies_the_newest_version_and_is_cached_only_while_it_is_served(
    tmp_path):
  serving_dir = tmp_path / 'serving'
  run = lambda: tfx.orchestration.LocalDagRunner().run(
      _pipeline(tmp_path, serving_dir))

  run()  # Nothing served.
  first = _newest_model(tmp_path)
  assert first.custom_properties['served_version'].string_value == ''
  assert not served_model.holds_model(_as_artifact(first))

  run()  # Nothing changed: answered from the cache.
  assert _states(tmp_path) == ['COMPLETE', 'CACHED']

  _serve(serving_dir, '100', b'old')
  _serve(serving_dir, '200', b'new')
  run()  # A new version is served: the cache must not answer.
  model = _newest_model(tmp_path)
  assert model.id != first.id
  assert model.custom_properties['served_version'].string_value == '200'
  copied = os.path.join(path_utils.serving_model_dir(model.uri),
                        'saved_model.pb')
  with open(copied, 'rb') as f:
    assert f.read() == b'new'
  assert served_model.holds_model(_as_artifact(model))
  assert _states(tmp_path) == ['COMPLETE', 'CACHED', 'COMPLETE']


def _states(root):
  return mlmd.execution_states(mlmd.open_store(str(root)),
                               PIPELINE_NAME)['ServedModel']


def _as_artifact(mlmd_artifact):
  artifact = tfx.types.standard_artifacts.Model()
  artifact.set_mlmd_artifact(mlmd_artifact)
  return artifact
