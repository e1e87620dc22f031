"""ImageSchemaGen: TFX's SchemaGen, plus what TFDV does not infer for images.

It pins the int features' domains (geometry, labels, pixel range) to the
values seen and leaves `source` free. Why and how: docs/input-data.md#schema.
"""

import os
from typing import Any, Dict, List, Sequence

from absl import logging
from tfx import types
from tfx.components.schema_gen import component as schema_gen_component
from tfx.components.schema_gen import executor as schema_gen_executor
from tfx.components.statistics_gen import stats_artifact_utils
from tfx.dsl.components.base import executor_spec
from tfx.types import artifact_utils
from tfx.types import standard_component_specs
from tfx.utils import io_utils
from tfx.utils import json_utils

from records import features
from tensorflow_metadata.proto.v0 import schema_pb2
from tensorflow_metadata.proto.v0 import statistics_pb2

# uint8 pixels.
_PIXEL_LIMITS = (0, 255)


def _observed_range(key: str,
                    statistics: Sequence[statistics_pb2.DatasetFeatureStatistics]):
  """(min, max) of an int feature over all `statistics`, or None."""
  lows, highs = [], []
  for dataset in statistics:
    for feature in dataset.features:
      if ((list(feature.path.step) == [key] or feature.name == key) and
          feature.HasField('num_stats')):
        lows.append(feature.num_stats.min)
        highs.append(feature.num_stats.max)
  if not lows:
    return None
  return int(min(lows)), int(max(highs))


def pin_image_domains(
    schema: schema_pb2.Schema,
    statistics: Sequence[statistics_pb2.DatasetFeatureStatistics]) -> None:
  """Sets the int domains docs/input-data.md#schema describes, in place.

  Args:
    schema: the schema SchemaGen inferred, changed in place.
    statistics: the statistics of each split; a domain spans the feature's
      range over all of them. Features without one are left as they are.
  """
  for feature in schema.feature:
    observed = _observed_range(feature.name, statistics)
    if observed is None:
      continue
    low, high = observed
    if feature.name in (features.HEIGHT_KEY, features.WIDTH_KEY,
                        features.CHANNELS_KEY, features.LABEL_KEY):
      pinned = (low, high)
    elif feature.name == features.PIXEL_MIN_KEY:
      pinned = (_PIXEL_LIMITS[0], high)
    elif feature.name == features.PIXEL_MAX_KEY:
      pinned = (low, _PIXEL_LIMITS[1])
    else:
      continue
    feature.int_domain.min, feature.int_domain.max = pinned
    logging.info('Schema: %s pinned to %d..%d.', feature.name, *pinned)


def free_source(schema: schema_pb2.Schema) -> None:
  """Removes any domain TFDV inferred for `source`, in place.

  docs/input-data.md#schema says why. It stays a string present in every record.
  """
  for feature in schema.feature:
    if feature.name == features.SOURCE_KEY and feature.HasField('domain'):
      name = feature.domain
      feature.ClearField('domain')
      kept = [d for d in schema.string_domain if d.name != name]
      del schema.string_domain[:]
      schema.string_domain.extend(kept)
      logging.info('Schema: %s left without a domain.', feature.name)


class Executor(schema_gen_executor.Executor):
  """SchemaGen's executor, which then pins the image domains."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    """Infers the schema as SchemaGen does, then pins and frees domains.

    `pin_image_domains` reads the statistics of the same splits, then
    `free_source` runs.
    """
    super().Do(input_dict, output_dict, exec_properties)
    exclude_splits = json_utils.loads(exec_properties.get(
        standard_component_specs.EXCLUDE_SPLITS_KEY, 'null')) or []
    stats_artifact = artifact_utils.get_single_instance(
        input_dict[standard_component_specs.STATISTICS_KEY])
    statistics = []
    for split in artifact_utils.decode_split_names(stats_artifact.split_names):
      if split not in exclude_splits:
        statistics.extend(stats_artifact_utils.load_statistics(
            stats_artifact, split).proto().datasets)
    path = os.path.join(
        artifact_utils.get_single_uri(
            output_dict[standard_component_specs.SCHEMA_KEY]),
        schema_gen_executor.DEFAULT_FILE_NAME)
    schema = io_utils.SchemaReader().read(path)
    pin_image_domains(schema, statistics)
    free_source(schema)
    io_utils.write_pbtxt_file(path, schema)


class ImageSchemaGen(schema_gen_component.SchemaGen):
  """SchemaGen whose schema also pins geometry, labels and pixel range."""

  EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(Executor)
