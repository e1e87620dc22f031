"""A run's data checks: StatisticsGen's statistics, ExampleValidator's
anomalies.

Both are TFDV protos, one file per split as TFX writes them, read with
tensorflow_metadata alone; TFDV itself is loaded only for `--html`.
"""

import html
import json
import os
from typing import Any, Dict, List, Optional

from tensorflow_metadata.proto.v0 import anomalies_pb2
from tensorflow_metadata.proto.v0 import statistics_pb2

from metadata import queries
from metadata.store import InspectError
from records import artifact_files
from records import data_check_results

# tfx stats_artifact_utils' and the ExampleValidator executor's file names.
_FILES = {'ExampleStatistics': ('FeatureStats.pb',
                                statistics_pb2.DatasetFeatureStatisticsList),
          'ExampleAnomalies': ('SchemaDiff.pb', anomalies_pb2.Anomalies)}


def load(artifact: queries.Artifact, split: str):
  name, proto = _FILES[artifact.type]
  path = os.path.join(artifact.uri, f'Split-{split}', name)
  if not artifact_files.exists(path):
    raise InspectError(f'{path}: missing ({artifact.type} {artifact.id}, '
                       f'split {split})')
  return proto.FromString(artifact_files.read_bytes(path))


def _splits(artifact: queries.Artifact, only: Optional[str]) -> List[str]:
  splits = artifact.split_names()
  if only is not None and only not in splits:
    raise InspectError(f'{artifact.type} {artifact.id} has no split {only!r} '
                       f'(splits: {", ".join(splits)})')
  return splits if only is None else [only]


def split_counts(statistics: queries.Artifact) -> Dict[str, int]:
  return {split: load(statistics, split).datasets[0].num_examples
          for split in statistics.split_names()}


def record_counts(md: queries.Metadata, examples: queries.Artifact
                  ) -> Dict[str, int]:
  """Records per split of `examples`; {} when nothing counted them.

  DataChecks' counts where it checked them: it reads every record.
  StatisticsGen's otherwise (runs from before DataChecks), which on a large
  input count only the sample it read (pipeline/scale.py).
  """
  counted = _data_checks_property(md, examples,
                                  data_check_results.IMAGES_PROPERTY)
  if counted is not None:
    return counted
  statistics = statistics_of(md, examples)
  if statistics is None:
    return {}
  try:
    return split_counts(statistics)
  except InspectError:
    return {}  # Statistics files gone (deleted pipeline root): no counts.


def label_counts(md: queries.Metadata, examples: queries.Artifact
                 ) -> Dict[str, Dict[int, int]]:
  """{split: {label: records}} of `examples`, as DataChecks counted them
  reading every record; {} when it did not (runs from before it did)."""
  counted = _data_checks_property(md, examples,
                                  data_check_results.LABELS_PROPERTY)
  return {split: {int(label): count for label, count in counts.items()}
          for split, counts in (counted or {}).items()}


def _data_checks_property(md: queries.Metadata, examples: queries.Artifact,
                          name: str) -> Optional[Any]:
  """The JSON property `name` of the newest DataChecks result on
  `examples` that has it; None if none has."""
  for execution in reversed(md.consumers(examples.id)):
    checks = md.output(execution, data_check_results.OUTPUT_KEY)
    if checks is not None and name in checks.properties:
      return json.loads(checks.properties[name])
  return None


def statistics_of(md: queries.Metadata, examples: queries.Artifact
                  ) -> Optional[queries.Artifact]:
  """The newest StatisticsGen output computed on `examples`, if any."""
  found = [md.output(e, 'statistics') for e in md.consumers(examples.id)
           if e.node == 'StatisticsGen' or e.type.endswith('.StatisticsGen')]
  found = [a for a in found if a is not None]
  return found[-1] if found else None


def _feature(feature: statistics_pb2.FeatureNameStatistics) -> Dict[str, Any]:
  summary: Dict[str, Any] = {
      'feature': '.'.join(feature.path.step) or feature.name,
      'type': statistics_pb2.FeatureNameStatistics.Type.Name(feature.type)}
  kind = feature.WhichOneof('stats')
  stats = getattr(feature, kind) if kind else None
  if stats is not None:
    common = stats.common_stats
    summary.update(missing=int(common.num_missing),
                   present=int(common.num_non_missing),
                   values_per_record=[int(common.min_num_values),
                                      int(common.max_num_values)])
  if kind == 'num_stats':
    summary.update(min=stats.min, max=stats.max, mean=stats.mean,
                   std_dev=stats.std_dev, zeros=int(stats.num_zeros))
  elif kind == 'bytes_stats':
    summary.update(unique=int(stats.unique), avg_bytes=stats.avg_num_bytes,
                   min_bytes=stats.min_num_bytes,
                   max_bytes=stats.max_num_bytes)
  elif kind == 'string_stats':  # No top values: for `image`, raw pixels.
    summary.update(unique=int(stats.unique), avg_bytes=stats.avg_length)
  return summary


def _anomalies(anomalies: anomalies_pb2.Anomalies) -> List[Dict[str, str]]:
  """One row per feature (and one for the dataset) with an anomaly."""
  infos = sorted(anomalies.anomaly_info.items())
  if anomalies.HasField('dataset_anomaly_info'):
    infos.append(('[dataset]', anomalies.dataset_anomaly_info))
  return [{'feature': feature,
           'short_description': info.short_description or '; '.join(
               r.short_description for r in info.reason),
           'description': info.description or '; '.join(
               r.description for r in info.reason)}
          for feature, info in infos]


def _summary(md, run, split, node, key, rows) -> Dict[str, Any]:
  artifact = md.run_output(run, node, key)
  return {'run': run.name, key: {'id': artifact.id, 'uri': artifact.uri},
          'cached_in_this_run': run.execution(node).cached,
          'splits': {name: rows(load(artifact, name))
                     for name in _splits(artifact, split)}}


def statistics_summary(md: queries.Metadata, run: queries.Run,
                       split: Optional[str] = None) -> Dict[str, Any]:
  result = _summary(md, run, split, 'StatisticsGen', 'statistics', lambda s: {
      'records': int(s.datasets[0].num_examples),
      'features': [_feature(f) for f in s.datasets[0].features]})
  producer = md.producer(result['statistics']['id'])
  examples = [a for _, a in md.inputs(producer.id)] if producer else []
  result['examples'] = ({'id': examples[0].id, 'uri': examples[0].uri}
                        if examples else None)
  return result


def anomalies_summary(md: queries.Metadata, run: queries.Run,
                      split: Optional[str] = None) -> Dict[str, Any]:
  return _summary(md, run, split, 'ExampleValidator', 'anomalies', _anomalies)


def statistics_html(md: queries.Metadata, run: queries.Run,
                    split: Optional[str] = None) -> str:
  """TFDV's Facets Overview of the run's splits (the first two compared)."""
  from tensorflow_data_validation.utils import display_util  # pylint: disable=g-import-not-at-top
  artifact = md.run_output(run, 'StatisticsGen', 'statistics')
  splits = _splits(artifact, split)[:2]
  loaded = [load(artifact, name) for name in splits]
  body = display_util.get_statistics_html(
      loaded[0], loaded[1] if len(loaded) > 1 else None, lhs_name=splits[0],
      rhs_name=splits[1] if len(splits) > 1 else 'rhs_statistics')
  return _page(f'Statistics of run {run.name}: {" vs ".join(splits)} '
               f'({artifact.uri})', body)


def anomalies_html(md: queries.Metadata, run: queries.Run,
                   split: Optional[str] = None) -> str:
  """TFDV's anomalies table (get_anomalies_dataframe) per split."""
  from tensorflow_data_validation.utils import display_util  # pylint: disable=g-import-not-at-top
  artifact = md.run_output(run, 'ExampleValidator', 'anomalies')
  parts = []
  for name in _splits(artifact, split):
    frame = display_util.get_anomalies_dataframe(load(artifact, name))
    parts.append(f'<h3>split {html.escape(name)}</h3>' + (
        '<p style="color:green">No anomalies found.</p>' if frame.empty
        else frame.to_html()))
  return _page(f'Anomalies of run {run.name} ({artifact.uri})',
               '\n'.join(parts))


def _page(title: str, body: str) -> str:
  return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
          f'<title>{html.escape(title)}</title></head>\n<body>\n'
          f'<h2>{html.escape(title)}</h2>\n{body}\n</body></html>\n')
