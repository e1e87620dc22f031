"""What a local run tells its user: each component as it runs, then a summary.

LocalDagRunner has no callback API: `ComponentProgress` listens for its
'Component %s is running.' / 'is finished.' log records, and shows the
progress records components log in this process. See docs/training.md.
"""

import dataclasses
import json
import logging
import sys
import time
from typing import Dict, List, Optional, TextIO

from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2

from components.evaluator import blessing_rule
from components.image_example_gen import console_lines as example_gen_progress
from modules.training import callbacks as training_progress
from records import data_check_results as data_checks_results
from records import features
from records import label_check_results
from records import serving_model

_RUNNING = 'Component %s is running.'
_FINISHED = 'Component %s is finished.'
_STATE = metadata_store_pb2.Execution.State
# Log messages of components' progress lines, shown indented.
_PROGRESS = (training_progress.EPOCH_LINE, training_progress.END_LINE,
             training_progress.PLAN_LINE, training_progress.TRIAL_LINE,
             example_gen_progress.PROGRESS_LINE,
             example_gen_progress.NOTICE_LINE, blessing_rule.RULE_LINE,
             blessing_rule.JUDGED_LINE, data_checks_results.NOTICE_LINE)


@dataclasses.dataclass
class NodeRun:
  node_id: str
  started: float
  seconds: Optional[float] = None
  state: str = 'RUNNING'  # COMPLETE, CACHED or FAILED once known.
  execution: Optional[metadata_store_pb2.Execution] = None


def latest_execution(store: metadata_store.MetadataStore, pipeline_name: str,
                     node_id: str) -> Optional[metadata_store_pb2.Execution]:
  context = store.get_context_by_type_and_name('node',
                                               f'{pipeline_name}.{node_id}')
  if context is None:
    return None
  executions = store.get_executions_by_context(context.id)
  return max(executions, key=lambda e: e.id) if executions else None


def _seconds(seconds: float) -> str:
  return f'{seconds:.2f}s' if seconds < 1 else f'{seconds:.1f}s'


class ComponentProgress(logging.Handler):
  """Prints one line as each component starts and one as it ends."""

  def __init__(self, connection_config: metadata_store_pb2.ConnectionConfig,
               pipeline_name: str, out: TextIO = sys.stdout):
    super().__init__(level=logging.INFO)
    self._connection_config = connection_config
    self._pipeline_name = pipeline_name
    self._out = out
    self.nodes: Dict[str, NodeRun] = {}

  def emit(self, record: logging.LogRecord) -> None:
    if record.msg == _RUNNING:
      node_id = record.args[0]
      self.nodes[node_id] = NodeRun(node_id, time.monotonic())
      self._print(f'▶ {node_id} ...')
    elif record.msg == _FINISHED:
      node = self.nodes[record.args[0]]
      node.seconds = time.monotonic() - node.started
      node.execution = latest_execution(
          metadata_store.MetadataStore(self._connection_config),
          self._pipeline_name, node.node_id)
      node.state = (_STATE.Name(node.execution.last_known_state)
                    if node.execution else 'UNKNOWN')
      cached = ' (cached)' if node.state == 'CACHED' else ''
      self._print(f'✔ {node.node_id}: {_seconds(node.seconds)}{cached}')
    elif record.msg in _PROGRESS:
      self._print(f'  {record.getMessage()}')

  def mark_failed(self) -> Optional[NodeRun]:
    """Marks the component that was running when the run broke off."""
    for node in self.nodes.values():
      if node.seconds is None:
        node.seconds = time.monotonic() - node.started
        node.state = 'FAILED'
        self._print(f'✘ {node.node_id}: failed after {_seconds(node.seconds)}')
        return node
    return None

  def _print(self, line: str) -> None:
    print(line, file=self._out, flush=True)


# Transform's analysis by-products: in ML Metadata, not worth a summary line.
_NOT_SUMMARISED = ('pre_transform_stats', 'pre_transform_schema',
                   'post_transform_stats', 'post_transform_schema',
                   'post_transform_anomalies', 'updated_analyzer_cache')


def _describe(artifact, splits_stats: Dict[str, int],
              evaluation_uri: Optional[str] = None) -> str:
  """A few words on what an artifact (an metadata.queries.Artifact) holds."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  props = artifact.properties
  if artifact.type == 'ModelBlessing' and 'blessed' in props:
    if props['blessed']:
      return 'blessed'
    from inspector import evaluation  # pylint: disable=g-import-not-at-top
    reasons = evaluation_uri and evaluation.failure_reasons(evaluation_uri)
    return 'NOT blessed, not pushed: ' + ('; '.join(reasons) if reasons else
                                          'see the Evaluator output')
  if artifact.type == 'PushedModel' and serving_model.PUSHED_PROPERTY in props:
    destination = props.get(serving_model.PUSHED_DESTINATION_PROPERTY)
    if not props[serving_model.PUSHED_PROPERTY]:
      return 'not pushed'
    if props.get(serving_model.ALREADY_SERVED_PROPERTY):
      return f'already served from {destination}; not pushed again'
    return f'pushed to {destination}'
  if artifact.type == 'Examples':
    # Span 0 is what data without {SPAN} patterns gets: not worth a word.
    parts = [f'span {props["span"]}'] if props.get('span') else []
    spans = json.loads(props.get('spans') or '[]')
    if len(spans) > 1:  # A span window, oldest first.
      parts = ['spans ' + ', '.join(map(str, spans))]
    for split, count in splits_stats.items():
      shards = len(tf.io.gfile.glob(f'{artifact.uri}/Split-{split}/*.gz'))
      parts.append(f'{split}: {count:,} records in {shards} shards')
    return '\n'.join((['; '.join(parts)] if parts else []) +
                     _geometry_chosen(props) + _left_out(props))
  if artifact.type == 'HyperParameters':  # The Tuner's winner (--tune).
    from inspector import trials  # pylint: disable=g-import-not-at-top
    from modules.training import config as config_lib  # pylint: disable=g-import-not-at-top
    return 'best: ' + config_lib.describe_tuned(trials.best_values(artifact))
  if artifact.type.endswith('LabelSuspects'):  # components/label_check/
    return _suspects(artifact)
  if artifact.type == 'ExampleAnomalies' and isinstance(props.get('blessed'),
                                                         dict):
    bad = [split for split, ok in props['blessed'].items() if not ok]
    return f'anomalies in {", ".join(bad)}' if bad else 'no anomalies'
  return ''


def _suspects(artifact) -> str:
  """LabelCheck's count per split (and the records checked, where a
  sample was), and how to list them."""
  read = artifact.json_property
  counts, checked, records = (read(label_check_results.SUSPECTS_PROPERTY),
                              read(label_check_results.CHECKED_PROPERTY),
                              read(label_check_results.RECORDS_PROPERTY))
  parts = [f'{split} {count:,}' + (
      f' of {checked[split]:,} checked' if checked.get(split, 0) <
      records.get(split, 0) else '') for split, count in counts.items()]
  by_method: Dict[str, List[str]] = {}
  for split, method in read(label_check_results.METHODS_PROPERTY).items():
    if split in counts:  # A split not checked says so in its method.
      by_method.setdefault(method.split(' (')[0], []).append(split)
  scored = '; '.join(f'{", ".join(splits)} by {method}'
                     for method, splits in by_method.items())
  return (f'{sum(counts.values()):,} suspects ({", ".join(parts)}): '
          'python -m inspector labels' + (f'\nscored: {scored}' if scored
                                          else ''))


def _left_out(props, shown: int = 5) -> List[str]:
  """What ExampleGen left out of the records: the images it could not read
  (--skip-bad-images), the hidden, OS and sidecar files of image
  folders."""
  lines = []
  for count_key, list_key, head, line in (
      (features.SKIPPED_IMAGES_PROPERTY, features.SKIPPED_IMAGES_LIST_PROPERTY,
       'skipped {} unreadable images, listed in '
       f'{features.SKIPPED_IMAGES_FILE}',
       lambda f: f'{f["path"]}: {f["reason"]}'),
      (features.OS_FILES_PROPERTY, features.OS_FILES_LIST_PROPERTY,
       'left out {} hidden, OS or sidecar files (not images), listed in '
       f'{features.OS_FILES_FILE}', lambda f: f['path'])):
    count = props.get(count_key, 0)
    # A run with --skip-bad-images says so even when nothing was skipped.
    if count or (count_key in props and
                 count_key == features.SKIPPED_IMAGES_PROPERTY):
      listed = json.loads(props[list_key])[:shown]
      lines += [head.format(count)] + [f'  {line(f)}' for f in listed] + (
          [f'  ... and {count - len(listed)} more'] if count > len(listed)
          else [])
  return lines


def _geometry_chosen(props) -> List[str]:
  """The line on the geometry ExampleGen chose for image folders, if no
  option set it."""
  chosen = props.get(features.GEOMETRY_CHOICE_PROPERTY)
  if chosen is None or chosen == features.GEOMETRY_GIVEN:
    return []
  geometry = features.ImageGeometry.from_dict(
      {key: props[key] for key in features.GEOMETRY_PROPERTIES})
  return [f'images converted to {geometry}: {chosen} '
          '(--image-size and --channels set them)']


def print_summary(connection_config: metadata_store_pb2.ConnectionConfig,
                  pipeline_name: str, nodes: Dict[str, NodeRun],
                  store_description: str, log_path: str,
                  out: TextIO = sys.stdout) -> None:
  """Where everything went and how to look at it.

  Args:
    connection_config: the run's ML Metadata store.
    pipeline_name: the pipeline's name, in the first line.
    nodes: the run's components by node id, as ComponentProgress timed
      them.
    store_description: where ML Metadata is, e.g. '(SQLite): OUT/metadata.db'.
    log_path: the run's full log, named in the last line.
    out: where the summary is printed.
  """
  from inspector import data  # pylint: disable=g-import-not-at-top
  from metadata import queries  # pylint: disable=g-import-not-at-top
  md = queries.Metadata(metadata_store.MetadataStore(connection_config),
                        store_description)
  total = sum(n.seconds or 0 for n in nodes.values())
  cached = sum(n.state == 'CACHED' for n in nodes.values())
  print(f'\nPipeline {pipeline_name!r} finished in {total:.1f}s: '
        f'{len(nodes) - cached} components ran, {cached} reused from cache.',
        file=out)
  rows = [(node.node_id, artifact) for node in nodes.values()
          if node.execution is not None
          for key, artifact in md.outputs(node.execution.id)
          if key not in _NOT_SUMMARISED]
  counts = next((data.record_counts(md, a) for _, a in rows
                 if a.type == 'Examples'), {})
  evaluation_uri = next((a.uri for _, a in rows
                         if a.type == 'ModelEvaluation'), None)
  print('\nArtifacts:', file=out)
  for node_id, artifact in rows:
    print(f'  {node_id:<18} {artifact.type:<18} {artifact.uri}', file=out)
    for line in _describe(artifact, counts, evaluation_uri).splitlines():
      print(f'  {"":<18} {"":<18} {line}', file=out)
  print(f'\nML Metadata {store_description}', file=out)
  print(f'Full log: {log_path}', file=out)
