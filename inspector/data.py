"""A run's data checks: StatisticsGen's statistics, ExampleValidator's anomalies.

Both are TFDV protos, one file per split (`Split-<name>/FeatureStats.pb`,
`Split-<name>/SchemaDiff.pb`, as TFX 1.16 writes them); the protos are read
with tensorflow_metadata alone, TFDV itself is loaded only for `--html`.
"""

import html
import os
from typing import Any, Dict, List, Optional

from tensorflow_metadata.proto.v0 import anomalies_pb2
from tensorflow_metadata.proto.v0 import statistics_pb2

from inspector import files
from inspector import queries
from inspector.errors import InspectError

STATISTICS_FILE = 'FeatureStats.pb'  # tfx stats_artifact_utils.BINARY_PB_BASENAME
ANOMALIES_FILE = 'SchemaDiff.pb'  # tfx example_validator executor's file name


def _split_file(artifact: queries.Artifact, split: str, name: str) -> str:
  path = os.path.join(artifact.uri, f'Split-{split}', name)
  if not files.exists(path):
    raise InspectError(f'{path}: missing ({artifact.type} {artifact.id}, '
                       f'split {split})')
  return path


def _splits(artifact: queries.Artifact, only: Optional[str]) -> List[str]:
  splits = artifact.split_names()
  if only is None:
    return splits
  if only not in splits:
    raise InspectError(f'{artifact.type} {artifact.id} has no split {only!r} '
                       f'(splits: {", ".join(splits)})')
  return [only]


def load_statistics(artifact: queries.Artifact, split: str
                    ) -> statistics_pb2.DatasetFeatureStatisticsList:
  return statistics_pb2.DatasetFeatureStatisticsList.FromString(
      files.read_bytes(_split_file(artifact, split, STATISTICS_FILE)))


def load_anomalies(artifact: queries.Artifact, split: str
                   ) -> anomalies_pb2.Anomalies:
  return anomalies_pb2.Anomalies.FromString(
      files.read_bytes(_split_file(artifact, split, ANOMALIES_FILE)))


def split_counts(statistics: queries.Artifact) -> Dict[str, int]:
  """Split name -> number of records, from an ExampleStatistics artifact."""
  return {split: load_statistics(statistics, split).datasets[0].num_examples
          for split in statistics.split_names()}


def statistics_of(md: queries.Metadata, examples: queries.Artifact
                  ) -> Optional[queries.Artifact]:
  """The newest StatisticsGen output computed on `examples`, if any."""
  found = [md.output(e, 'statistics') for e in md.consumers(examples.id)
           if e.node == 'StatisticsGen' or e.type.endswith('.StatisticsGen')]
  found = [a for a in found if a is not None]
  return found[-1] if found else None


# ------------------------------------------------------------- statistics --


def _feature_summary(feature: statistics_pb2.FeatureNameStatistics
                     ) -> Dict[str, Any]:
  name = '.'.join(feature.path.step) or feature.name
  summary: Dict[str, Any] = {
      'feature': name,
      'type': statistics_pb2.FeatureNameStatistics.Type.Name(feature.type),
  }
  kind = feature.WhichOneof('stats')
  stats = getattr(feature, kind) if kind else None
  common = stats.common_stats if stats is not None else None
  if common is not None:
    summary['missing'] = int(common.num_missing)
    summary['present'] = int(common.num_non_missing)
    summary['values_per_record'] = [int(common.min_num_values),
                                    int(common.max_num_values)]
  if kind == 'num_stats':
    summary.update(min=stats.min, max=stats.max, mean=stats.mean,
                   std_dev=stats.std_dev, zeros=int(stats.num_zeros))
  elif kind == 'bytes_stats':
    summary.update(unique=int(stats.unique),
                   avg_bytes=stats.avg_num_bytes,
                   min_bytes=stats.min_num_bytes, max_bytes=stats.max_num_bytes)
  elif kind == 'string_stats':
    # No top values: for `image` they are raw pixels.
    summary.update(unique=int(stats.unique), avg_bytes=stats.avg_length)
  return summary


def statistics_summary(md: queries.Metadata, run: queries.Run,
                       split: Optional[str] = None) -> Dict[str, Any]:
  """Per split: record count and per feature type, missing, range..."""
  artifact = md.run_output(run, 'StatisticsGen', 'statistics')
  producer = md.producer(artifact.id)
  splits = {}
  for name in _splits(artifact, split):
    dataset = load_statistics(artifact, name).datasets[0]
    splits[name] = {
        'records': int(dataset.num_examples),
        'features': [_feature_summary(f) for f in dataset.features],
    }
  examples = [a for _, a in md.inputs(producer.id)] if producer else []
  return {
      'run': run.name,
      'statistics': {'id': artifact.id, 'uri': artifact.uri},
      'examples': {'id': examples[0].id, 'uri': examples[0].uri}
                  if examples else None,
      'cached_in_this_run': run.execution('StatisticsGen').cached,
      'splits': splits,
  }


def statistics_html(md: queries.Metadata, run: queries.Run,
                    split: Optional[str] = None) -> str:
  """TFDV's Facets Overview of the run's splits (the first two compared)."""
  from tensorflow_data_validation.utils import display_util  # pylint: disable=g-import-not-at-top
  artifact = md.run_output(run, 'StatisticsGen', 'statistics')
  splits = _splits(artifact, split)
  lhs = load_statistics(artifact, splits[0])
  rhs = load_statistics(artifact, splits[1]) if len(splits) > 1 else None
  body = display_util.get_statistics_html(
      lhs, rhs, lhs_name=splits[0],
      rhs_name=splits[1] if len(splits) > 1 else 'rhs_statistics')
  title = (f'Statistics of run {run.name}: {" vs ".join(splits[:2])} '
           f'({artifact.uri})')
  return _page(title, body)


# -------------------------------------------------------------- anomalies --


def _anomaly_rows(anomalies: anomalies_pb2.Anomalies) -> List[Dict[str, str]]:
  """One row per feature (and one for the dataset) with an anomaly."""
  def row(feature, info):
    short = info.short_description or '; '.join(
        r.short_description for r in info.reason)
    long = info.description or '; '.join(r.description for r in info.reason)
    return {'feature': feature, 'short_description': short,
            'description': long}
  rows = [row(name, info) for name, info in sorted(anomalies.anomaly_info.items())]
  if anomalies.HasField('dataset_anomaly_info'):
    rows.append(row('[dataset]', anomalies.dataset_anomaly_info))
  return rows


def anomalies_summary(md: queries.Metadata, run: queries.Run,
                      split: Optional[str] = None) -> Dict[str, Any]:
  """Per split: the anomalies ExampleValidator found (maybe none)."""
  artifact = md.run_output(run, 'ExampleValidator', 'anomalies')
  splits = {name: _anomaly_rows(load_anomalies(artifact, name))
            for name in _splits(artifact, split)}
  return {
      'run': run.name,
      'anomalies': {'id': artifact.id, 'uri': artifact.uri},
      'cached_in_this_run': run.execution('ExampleValidator').cached,
      'splits': splits,
  }


def anomalies_html(md: queries.Metadata, run: queries.Run,
                   split: Optional[str] = None) -> str:
  """TFDV's anomalies table (get_anomalies_dataframe) per split."""
  from tensorflow_data_validation.utils import display_util  # pylint: disable=g-import-not-at-top
  artifact = md.run_output(run, 'ExampleValidator', 'anomalies')
  parts = []
  for name in _splits(artifact, split):
    frame = display_util.get_anomalies_dataframe(load_anomalies(artifact, name))
    parts.append(f'<h3>split {html.escape(name)}</h3>')
    parts.append('<p style="color:green">No anomalies found.</p>'
                 if frame.empty else frame.to_html())
  return _page(f'Anomalies of run {run.name} ({artifact.uri})', '\n'.join(parts))


def _page(title: str, body: str) -> str:
  return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
          f'<title>{html.escape(title)}</title></head>\n<body>\n'
          f'<h2>{html.escape(title)}</h2>\n{body}\n</body></html>\n')
