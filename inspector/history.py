"""A pipeline's runs side by side: the data each read, the model it chose
and how it did against the one in service, what became of it, and how far
its data drifted from the run before.

Used by `python -m inspector history` and the report. See docs/metadata.md.
"""

import json
import math
from typing import Any, Dict, List, Optional, Sequence

from rich.console import Console

from inspector import artifacts as artifacts_lib
from inspector import render
from metadata import queries
from metadata.store import InspectError
from records import artifact_files
from records import csv_cells
from records import features
from records import serving_model

# What the window of spans records: the spans an Examples artifact holds, a
# JSON list beside the single `span`.
SPANS_PROPERTY = 'spans'
# The split whose label distribution the drift compares.
DRIFT_SPLIT = features.TRAIN_SPLIT
CSV_COLUMNS = ('run', 'started', 'state', 'outcome', 'spans', 'records',
               'accuracy', 'served_accuracy', 'model', 'served_model',
               'blessed', 'pushed', 'already_served', 'start',
               'warm_start_from', 'trainer_seconds', 'trainer_cached',
               'label_drift', 'drift_against_run', 'validator_drift')


def _spans(examples: queries.Artifact) -> Optional[List[int]]:
  spans = examples.properties.get(SPANS_PROPERTY)
  if isinstance(spans, str):
    spans = json.loads(spans) if spans else None
  if spans:
    return sorted(int(span) for span in spans)
  span = examples.properties.get('span')
  return None if span is None else [int(span)]


def _output(md: queries.Metadata, run: queries.Run, node: str, key: str
            ) -> Optional[queries.Artifact]:
  """The run's `node` output `key` when `node` completed (or was cached)."""
  execution = run.execution(node)
  if execution is None or execution.state not in ('COMPLETE', 'CACHED'):
    return None
  return md.output(execution, key)


def _outcome(run: queries.Run, row: Dict[str, Any]) -> str:
  failed = [e.node for e in run.executions if e.state == 'FAILED']
  if 'ValidationGate' in failed:
    return 'stopped at the gate'
  if failed:
    return f'failed in {failed[0]}'
  if run.state in ('RUNNING', 'NEW'):
    return 'running'
  if row['pushed']:
    return 'already served' if row['already_served'] else 'pushed'
  if row['blessed'] is False:
    return 'not blessed'
  if row['blessed'] and row['pushed'] is False:
    return 'blessed, not pushed'
  return 'partial' if run.execution('Pusher') is None else run.state.lower()


def _evaluation(md: queries.Metadata, run: queries.Run,
                row: Dict[str, Any]) -> None:
  """The chosen and served model, the blessing (ML Metadata) and the two
  accuracies (TFMA's files, when still there), into `row`."""
  from inspector import evaluation  # pylint: disable=g-import-not-at-top
  evaluated = _output(md, run, 'Evaluator', 'evaluation')
  if evaluated is None:
    return
  evaluator = run.execution('Evaluator')
  inputs = dict(reversed(md.inputs(evaluator.id)))  # The first per key.
  if 'model' not in inputs:
    return
  blessing = md.output(evaluator, 'blessing')
  row.update(model=inputs['model'].id, served_model=(
      inputs['baseline_model'].id if 'baseline_model' in inputs else None),
             blessed=(bool(blessing.properties.get('blessed'))
                      if blessing is not None else None))
  if not artifact_files.exists(evaluated.uri):
    row['gone'].append(f'evaluation {evaluated.uri}')
    return
  result = evaluation.evaluation_metrics(md, evaluator, inputs['model'])
  overall = {m['metric']: m for s in result['slices']
             if s['slice'] == 'Overall' for m in s['metrics']}
  accuracy = overall.get(evaluation.ACCURACY_METRIC_NAME, {})
  itself = bool(result['baseline'] and result['baseline']['is_this_model'])
  row.update(accuracy=accuracy.get('value'), served_accuracy=accuracy.get(
      'value' if itself else 'baseline'))  # Itself: evaluated once.


def _label_shares(statistics: queries.Artifact) -> Dict[int, float]:
  """Each label's share of DRIFT_SPLIT, from its histogram in the
  statistics (StatisticsGen saw the label as a number: a bucket's records
  go to the labels inside it, or to the nearest one)."""
  import tensorflow_data_validation as tfdv  # pylint: disable=g-import-not-at-top
  from inspector import data  # pylint: disable=g-import-not-at-top
  dataset = data.load(statistics, DRIFT_SPLIT).datasets[0]
  stats = tfdv.get_feature_stats(dataset, tfdv.FeaturePath([
      features.LABEL_KEY]))
  histograms = [h for h in stats.num_stats.histograms
                if h.type == h.STANDARD]
  if not histograms or not histograms[0].buckets:
    raise InspectError(f'statistics {statistics.id}: no histogram of '
                       f'{features.LABEL_KEY!r} in split {DRIFT_SPLIT}')
  buckets = histograms[0].buckets
  counts: Dict[int, float] = {}
  for i, bucket in enumerate(buckets):
    high = math.floor(bucket.high_value)
    if i < len(buckets) - 1 and high == bucket.high_value:
      high -= 1  # A bucket holds its low end, the last one both ends.
    labels = list(range(math.ceil(bucket.low_value), high + 1)) or [
        round((bucket.low_value + bucket.high_value) / 2)]
    for label in labels:
      counts[label] = counts.get(label, 0) + bucket.sample_count / len(labels)
  total = sum(counts.values())
  return {label: count / total for label, count in counts.items()} if (
      total) else {}


def label_drift(current: queries.Artifact,
                previous: queries.Artifact) -> float:
  """The L-infinity distance between two statistics' label distributions:
  the largest change of one class's share."""
  if current.id == previous.id:
    return 0.0
  now, before = _label_shares(current), _label_shares(previous)
  return max(abs(now.get(label, 0) - before.get(label, 0))
             for label in set(now) | set(before))


def _validator_drift(anomalies: queries.Artifact) -> Optional[float]:
  """The largest drift ExampleValidator measured (a schema with drift
  comparators), over the splits; None when it measured none."""
  from inspector import data  # pylint: disable=g-import-not-at-top
  values = [m.value for split in anomalies.split_names()
            for info in data.load(anomalies, split).drift_skew_info
            for m in info.drift_measurements]
  return max(values) if values else None


def _row(md: queries.Metadata, run: queries.Run) -> Dict[str, Any]:
  row: Dict[str, Any] = {
      'run': run.name, 'started': render.timestamp(run.started_ms),
      'state': run.state, 'spans': None, 'records': {}, 'accuracy': None,
      'served_accuracy': None, 'model': None, 'served_model': None,
      'blessed': None, 'pushed': None, 'already_served': None, 'start': None,
      'warm_start_from': None, 'trainer_seconds': None,
      'trainer_cached': None, 'label_drift': None, 'drift_against_run': None,
      'validator_drift': None, 'statistics': None,
      # What ML Metadata names but is no longer on disk (e.g. collected).
      'gone': []}
  examples = _output(md, run, 'ImageExampleGen', 'examples')
  if examples is not None:
    row['spans'] = _spans(examples)
    row['records'] = artifacts_lib.key_properties(md, examples)['splits']
  statistics = _output(md, run, 'StatisticsGen', 'statistics')
  row['statistics'] = statistics.id if statistics else None
  anomalies = _output(md, run, 'ExampleValidator', 'anomalies')
  if anomalies is not None and artifact_files.exists(anomalies.uri):
    row['validator_drift'] = _validator_drift(anomalies)
  model = _output(md, run, 'Trainer', 'model')
  if model is not None:
    producer = md.producer(model.id) or run.execution('Trainer')
    # A cached Trainer's wall time is the lookup's: show the training's.
    row['trainer_seconds'] = producer.seconds
    row['trainer_cached'] = run.execution('Trainer').cached
    row['model'] = model.id
    # Recorded by a run with --warm-start (empty where it fell back); a
    # model without it was trained from scratch.
    start = model.properties.get(serving_model.WARM_START_FROM)
    row['start'] = 'warm' if start else 'cold'
    row['warm_start_from'] = start or None
  _evaluation(md, run, row)
  pushed = _output(md, run, 'Pusher', 'pushed_model')
  if pushed is not None:
    row['pushed'] = bool(pushed.properties.get(serving_model.PUSHED_PROPERTY))
    # The push-once Pusher found the model already served.
    row['already_served'] = bool(pushed.properties.get(
        serving_model.ALREADY_SERVED_PROPERTY))
  row['outcome'] = _outcome(run, row)
  return row


def history(md: queries.Metadata, upto: Optional[queries.Run] = None,
            limit: Optional[int] = None) -> Dict[str, Any]:
  """Every run of a pipeline, newest first.

  Args:
    md: the store.
    upto: the newest run to list, and whose pipeline; None: the store's
      newest run.
    limit: at most this many rows; None: every run.

  Returns:
    {'pipeline': its name, 'runs': a row per run, from `upto` back}.

  Raises:
    InspectError: the store holds no pipeline runs.
  """
  runs = md.runs()
  if not runs:
    raise InspectError(f'{md.where}: the store holds no pipeline runs')
  upto = upto or runs[0]
  runs = [r for r in runs[[r.name for r in runs].index(upto.name):]
          if r.pipeline == upto.pipeline]
  # One run more than shown: the oldest shown has one to drift from.
  rows = [_row(md, run) for run in (runs[:limit + 1] if limit else runs)]
  _drifts(md, rows)
  for row in rows:
    del row['statistics']
  return {'pipeline': upto.pipeline, 'runs': rows[:limit] if limit else rows}


def _drifts(md: queries.Metadata, rows: List[Dict[str, Any]]) -> None:
  """Each row's label drift against the next older row with statistics."""
  for row in rows:
    uri = md.artifacts[row['statistics']].uri if row['statistics'] else None
    if uri and not artifact_files.exists(uri):
      row['gone'].append(f'statistics {uri}')
      row['statistics'] = None
  for i, row in enumerate(rows):
    if row['statistics'] is None:
      continue
    previous = next((r for r in rows[i + 1:] if r['statistics'] is not None),
                    None)
    if previous is None:
      continue
    row['label_drift'] = label_drift(md.artifacts[row['statistics']],
                                     md.artifacts[previous['statistics']])
    row['drift_against_run'] = previous['run']


def spans_text(spans: Optional[Sequence[int]]) -> str:
  """'3', '1-4', '1, 3, 4' or '-'."""
  if not spans:
    return '-'
  spans = sorted(spans)
  if len(spans) > 1 and spans == list(range(spans[0], spans[-1] + 1)):
    return f'{spans[0]}-{spans[-1]}'
  return ', '.join(map(str, spans))


def _yes_no(value: Optional[bool]) -> str:
  return '-' if value is None else 'yes' if value else 'no'


def _pushed_text(row: Dict[str, Any]) -> str:
  return 'already' if row['already_served'] else _yes_no(row['pushed'])


def _accuracy(value: Optional[float]) -> str:
  return '-' if value is None else f'{value:.4f}'


def _start(row: Dict[str, Any]) -> str:
  if row['trainer_seconds'] is None:
    return '-'
  return row['start']


def _trainer(row: Dict[str, Any]) -> str:
  if row['trainer_seconds'] is None:
    return '-'
  return render.duration(row['trainer_seconds']) + (
      ' (cached)' if row['trainer_cached'] else '')


def _drift(value: Optional[float]) -> str:
  return '-' if value is None else f'{value:.3f}'


def split_names(rows: List[Dict[str, Any]]) -> List[str]:
  return list(dict.fromkeys(s for r in rows for s in r['records']))


def table(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
  """The rows as text cells: {'columns', 'right' (the right-aligned
  columns), 'cells' (one list per row)}, for the console and the report."""
  splits = split_names(rows)
  return {
      'columns': ['run', 'started', 'outcome', 'spans', *splits, 'accuracy',
                  'served', 'blessed', 'pushed', 'start', 'trainer',
                  'label drift'],
      'right': [*splits, 'accuracy', 'served', 'trainer', 'label drift'],
      'cells': [[row['run'], render.short_time(row['started']),
                 row['outcome'], spans_text(row['spans']),
                 *[render.number(row['records'].get(s)) for s in splits],
                 _accuracy(row['accuracy']),
                 _accuracy(row['served_accuracy']), _yes_no(row['blessed']),
                 _pushed_text(row), _start(row), _trainer(row),
                 _drift(row['label_drift'])] for row in rows]}


# How to read the table, under it on the console and in the report.
LEGEND = ('accuracy: the chosen model\'s on the eval data; served: the model '
          'in service (the baseline) on the same data; label drift: the '
          f'largest change of a class\'s share of {DRIFT_SPLIT} since the run '
          'below.')


def text(out: Console, result: Dict[str, Any]) -> None:
  """The runs as one aligned table, newest first (+ 'csv' when written)."""
  rows = result['runs']
  cells = table(rows)
  shown = render._table(  # pylint: disable=protected-access
      *cells['columns'], right=cells['right'],
      title=f'Pipeline {result["pipeline"]}: {len(rows)} '
      f'run{"" if len(rows) == 1 else "s"}, newest first')
  for row in cells['cells']:
    shown.add_row(*row)
  out.print(shown)
  out.print(LEGEND)
  if any(r['validator_drift'] is not None for r in rows):
    out.print('ExampleValidator\'s largest drift: ' + ', '.join(
        f'run {r["run"]} {_drift(r["validator_drift"])}' for r in rows
        if r['validator_drift'] is not None))
  for row in rows:
    if row['gone']:
      out.print(f'run {row["run"]}: gone from disk, so not shown: '
                + ', '.join(row['gone']))
  if result.get('csv'):
    out.print(f'wrote {result["csv"]["path"]}')


def write_csv(path: str, rows: List[Dict[str, Any]]) -> None:
  """The rows into `path`, one per run, records as records_<split>."""
  render.check_directory(path)
  splits = split_names(rows)
  columns = [c for c in CSV_COLUMNS if c != 'records']
  columns[columns.index('spans') + 1:columns.index('spans') + 1] = [
      f'records_{s}' for s in splits]
  with open(path, 'w', newline='', encoding='utf-8') as f:
    writer = csv_cells.DictWriter(f, fieldnames=columns, lineterminator='\n')
    writer.writeheader()
    for row in rows:
      writer.writerow({
          **{c: row[c] for c in columns if c in row},
          'spans': ' '.join(map(str, row['spans'] or [])),
          **{f'records_{s}': row['records'].get(s) for s in splits}})
