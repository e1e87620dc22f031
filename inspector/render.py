"""Output: rich tables and trees on stdout, and the check before a file is
written.

Each function takes the JSON-ready value a subcommand computed, so text and
`--json` always show the same facts.
"""

import datetime
import os
import sys
from typing import Any, Dict, List, Optional

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from inspector import lineage as lineage_lib
from inspector.artifacts import summary_text
from metadata.store import InspectError

_STATE_STYLE = {'COMPLETE': 'green', 'CACHED': 'cyan', 'FAILED': 'bold red',
                'RUNNING': 'yellow', 'CANCELED': 'magenta'}


def check_directory(path: str) -> None:
  """InspectError unless the directory `path` is to be written in exists."""
  directory = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(directory):
    raise InspectError(f'{path}: directory {directory} does not exist')


def console() -> Console:
  """A console on stdout: the terminal's width; piped output is for grep
  and files, so its lines are never wrapped."""
  width = None if sys.stdout.isatty() else 1000
  return Console(width=width, highlight=False, soft_wrap=False)


def timestamp(ms: Optional[int]) -> Optional[str]:
  """Local time, ISO 8601 with the offset, to the second."""
  if not ms:
    return None
  return datetime.datetime.fromtimestamp(
      ms / 1000, tz=datetime.timezone.utc).astimezone().isoformat(
          timespec='seconds')


def duration(seconds: Optional[float]) -> str:
  if seconds is None:
    return '-'
  if seconds < 60:
    return f'{seconds:.1f}s'
  minutes, seconds = divmod(int(round(seconds)), 60)
  hours, minutes = divmod(minutes, 60)
  return f'{hours}h {minutes:02d}m' if hours else f'{minutes}m {seconds:02d}s'


def run_json(run) -> Dict[str, Any]:
  ended = run.ended_ms
  return {'run': run.name, 'pipeline': run.pipeline, 'state': run.state,
          'started': timestamp(run.started_ms), 'ended': timestamp(ended),
          'seconds': (ended - run.started_ms) / 1000 if ended else None,
          'states': {s: [e.state for e in run.executions].count(s)
                     for s in dict.fromkeys(e.state for e in run.executions)}}


def _state(state: str) -> Text:
  return Text(state, style=_STATE_STYLE.get(state, ''))


def short_time(iso: Optional[str]) -> str:
  return iso.replace('T', ' ')[:19] if iso else '-'


def number(value: Any) -> str:
  """For tables and the page: thousands separated, 4 significant digits."""
  if value is None:
    return '-'
  if isinstance(value, bool):
    return 'yes' if value else 'no'
  if isinstance(value, float):
    if value.is_integer():
      return f'{int(value):,}'
    return f'{value:,.4g}' if abs(value) < 1e6 else f'{value:,.0f}'
  return f'{value:,}' if isinstance(value, int) else str(value)


def _table(*columns: str, right=(), title=None, fold=False) -> Table:
  table = Table(box=box.SIMPLE, show_edge=False, pad_edge=False, title=title,
                title_justify='left')
  for column in columns:
    table.add_column(column, justify='right' if column in right else 'left',
                     overflow='fold' if fold else 'ellipsis')
  return table


def runs(out: Console, rows: List[Dict[str, Any]]) -> None:
  for run in rows:
    counts = ', '.join(f'{n} {s.lower()}' for s, n in run['states'].items())
    out.print(Text.assemble(
        ('run ', 'bold'), (run['run'], 'bold'), '  ', _state(run['state']),
        f'  {short_time(run["started"])} → {short_time(run["ended"])}'
        f' ({duration(run["seconds"])})  pipeline {run["pipeline"]}; {counts}'))
    table = _table('component', 'state', 'duration', 'cached', 'execution',
                   right=('duration', 'execution'))
    for c in run['components']:
      table.add_row(c['node'], _state(c['state']), duration(c['seconds']),
                    'yes' if c['cached'] else '', str(c['execution_id']))
    out.print(table)


def artifacts(out: Console, rows: List[Dict[str, Any]]) -> None:
  if not rows:
    out.print('no artifacts match')
    return
  table = _table('id', 'type', 'producer', 'state', 'uri', 'properties',
                 right=('id',), fold=True)
  for row in rows:
    table.add_row(str(row['id']), row['type'], row['producer'] or '-',
                  row['state'], row['uri'], summary_text(row['properties']))
  out.print(table)


def _artifact_label(node: Dict[str, Any]) -> Text:
  artifact = node['artifact']
  text = Text()
  if node.get('key'):
    text.append(f'{node["key"]}: ', style='dim')
  text.append(f'{artifact["type"]} {artifact["id"]}', style='bold')
  if node.get('seen'):
    return text.append('  (shown above)', style='dim')
  text.append(f'  {artifact["uri"]}')
  if artifact['state'] != 'LIVE':  # Deleted by --keep-runs, for instance.
    text.append(f'  {artifact["state"]}', style='red')
  summary = summary_text(artifact['properties'])
  return text.append(f'  [{summary}]', style='dim') if summary else text


def lineage(out: Console, tree: Dict[str, Any]) -> None:
  def grow(branch: Tree, node: Dict[str, Any]) -> None:
    producer = node.get('producer')
    if node.get('seen'):
      return
    if not producer:
      branch.add(Text('no producing execution recorded', style='dim'))
      return
    label = Text('← ').append(producer['node'], style='bold magenta')
    label.append(f'  execution {producer["id"]}  ').append_text(
        _state(producer['state']))
    label.append(f'  {duration(producer["seconds"])}  run {producer["run"]}')
    if producer.get('reused_by_runs'):
      label.append(f'  (reused by run {", ".join(producer["reused_by_runs"])})',
                   style='dim')
    execution = branch.add(label)
    data = producer.get('input_data')
    if data:
      span = (f'span {data["span"]}' if data.get('span') is not None
              else 'no span') + (f', version {data["version"]}'
                                 if data.get('version') is not None else '')
      base = execution.add(Text.assemble(('input ', 'bold'),
                                         data['input_base'], f'  ({span})'))
      for split in data['splits']:
        files = base.add(f'split {split["name"]}: {split["pattern"]}  '
                         f'({lineage_lib.split_facts(split)})')
        listed = split.get('files_now', split['first_files'])
        for f in listed:
          modified = short_time(timestamp(int(f['mtime'] * 1000)))
          files.add(f'{os.path.basename(f["path"])}  {f["bytes"]:,} bytes  '
                    f'modified {modified}')
        more = lineage_lib.more_files(split)
        if more:
          files.add(Text(f'... {more}; --all-files lists them', style='dim'))
    for child in producer['inputs']:
      grow(execution.add(_artifact_label(child)), child)

  root = Tree(_artifact_label(tree))
  grow(root, tree)
  out.print(root)


def stats(out: Console, result: Dict[str, Any]) -> None:
  examples = result['examples']
  cached = ' (cached: computed by an earlier run)'
  out.print(f'Statistics {result["statistics"]["id"]} of run {result["run"]}'
            f'{cached if result["cached_in_this_run"] else ""}, on Examples '
            f'{examples["id"] if examples else "?"}')
  for split, data in result['splits'].items():
    out.print(Text(f'\nsplit {split}: {data["records"]:,} records',
                   style='bold'))
    columns = ('missing', 'min', 'max', 'mean', 'std_dev', 'zeros', 'unique',
               'avg_bytes')
    names = [c.replace('_', ' ') for c in columns]
    names[-1] = 'bytes (avg)'
    table = _table('feature', 'type', *names, right=names)
    for f in data['features']:
      table.add_row(f['feature'], f['type'],
                    *[number(f.get(c)) for c in columns])
    out.print(table)
  _wrote(out, result)


def anomalies(out: Console, result: Dict[str, Any]) -> None:
  cached = ' (cached: found by an earlier run)'
  out.print(f'Anomalies {result["anomalies"]["id"]} of run {result["run"]}'
            f'{cached if result["cached_in_this_run"] else ""}')
  for split, rows in result['splits'].items():
    if not rows:
      out.print(Text.assemble(f'split {split}: ', ('no anomalies', 'green')))
      continue
    out.print(Text(f'split {split}: {len(rows)} anomalies', style='bold red'))
    table = _table('feature', 'anomaly', 'description', fold=True)
    for row in rows:
      table.add_row(row['feature'], row['short_description'],
                    row['description'])
    out.print(table)
  _wrote(out, result)


def metrics(out: Console, result: Dict[str, Any]) -> None:
  evaluation, baseline = result['evaluation'], result['baseline']
  verdict = {True: Text('blessed', 'green'), False: Text('NOT blessed', 'red'),
             None: Text('no blessing recorded')}[result['blessed']]
  out.print(Text.assemble(
      f'Model {result["model"]["id"]}  ', verdict,
      f'  (evaluation {evaluation["id"]}, run {evaluation["run"]}, '
      f'{evaluation["state"].lower()}'
      + (f'; the newest of {result["evaluations_of_this_model"]} evaluations'
         if result['evaluations_of_this_model'] > 1 else '') + ')'))
  if baseline and baseline.get('is_this_model'):
    out.print('baseline: this model itself, blessed before (evaluated alone, '
              'against the threshold)')
    baseline = None  # No baseline's metrics to show.
  else:
    out.print(f'baseline: model {baseline["id"]}  {baseline["uri"]}'
              if baseline else 'baseline: none (no model was blessed before)')
  if result.get('blessing_rule'):  # Recorded by the Evaluator.
    out.print(f'blessing rule: {result["blessing_rule"]}')
  for data in result['slices']:
    columns = ['metric', 'value'] + (['baseline', 'diff'] if baseline else [])
    table = _table(*columns, right=columns[1:], title=f'slice {data["slice"]}')
    for row in data['metrics']:
      diff = row.get('diff')
      table.add_row(*[row['metric'], number(row.get('value'))] + (
          [number(row.get('baseline')),
           '-' if diff is None else f'{diff:+.4g}'] if baseline else []))
    out.print(table)
  if result['validation_failures']:
    out.print(Text('validation failed:', style='bold red'))
    for failure in result['validation_failures']:
      out.print(f'  {failure["metric"]} = {number(failure["value"])}: '
                f'{failure["message"]}')
  else:
    out.print(Text('validation: every threshold met', style='green')
              if result['validation_ok'] else 'validation: not OK')


def confusion(out: Console, result: Dict[str, Any]) -> None:
  examples = result['examples']
  out.print(f'Model {result["model"]["id"]} on Examples {examples["id"]} '
            f'split {examples["split"]}: accuracy {result["accuracy"]:.2%} '
            f'on {result["examples_count"]:,} records, as evaluation '
            f'{result["evaluation"]["id"]} counted them (rows: true class, '
            'columns: predicted)')
  names = result['class_names']
  table = _table('true \\ predicted', *names, 'recall', 'precision',
                 right=(*names, 'recall', 'precision'))
  for i, (name, row, per_class) in enumerate(zip(names, result['matrix'],
                                                 result['per_class'])):
    table.add_row(name, *[Text(f'{v:,}', style='bold' if i == j else '')
                          for j, v in enumerate(row)],
                  number(per_class['recall']),
                  number(per_class['precision']))
  out.print(table)
  if result.get('png'):
    _wrote(out, result, 'png')


def samples(out: Console, result: Dict[str, Any]) -> None:
  counts = ', '.join(f'{c["name"]}: {c["count"]}' for c in result['classes'])
  out.print(f'Examples {result["examples"]["id"]} split '
            f'{result["examples"]["split"]}: {counts}')
  _wrote(out, result, 'png')


def tuning(out: Console, result: Dict[str, Any]) -> None:
  names = list(dict.fromkeys(name for trial in result['trials']
                             for name in trial['hyperparameters']))
  table = _table('trial', *names, result['objective'], '',
                 right=('trial', result['objective'], *(
                     name for name in names if all(
                         isinstance(t['hyperparameters'].get(name),
                                    (int, float))
                         for t in result['trials']))),
                 title=f'Tuner trials, best first (HyperParameters '
                 f'{result["best_hyperparameters"]["id"]}, TunerResults '
                 f'{result["tuner_results"]["id"]})')
  for trial in result['trials']:
    table.add_row(str(trial['trial']),
                  *(number(trial['hyperparameters'].get(name))
                    for name in names),
                  number(trial['score']),
                  'winner' if trial['winner'] else '')
  out.print(table)


def report(out: Console, result: Dict[str, Any]) -> None:
  out.print(f'Run {result["run"]["id"]}: {result["outcome"]["headline"]}')
  for name in ('dag', 'data', 'training', 'evaluation', 'lineage'):
    section = result[name]
    note = section.get('reason') or section.get('error') or ''
    out.print(f'  {name:<11} {section.get("status", "ok")}'
              f'{"  " + note if note else ""}')
  _wrote(out, result)


def _wrote(out: Console, result: Dict[str, Any], key: str = 'html') -> None:
  written = result.get(key)
  if written:
    size = (f' ({written["width"]}x{written["height"]})'
            if 'width' in written else '')
    out.print(f'wrote {written["path"]}{size}')
