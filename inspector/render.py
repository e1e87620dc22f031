"""Text output: rich tables and trees on stdout (JSON output is in cli.py).

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

_STATE_STYLE = {'COMPLETE': 'green', 'CACHED': 'cyan', 'FAILED': 'bold red',
                'RUNNING': 'yellow', 'CANCELED': 'magenta'}


# Piped output is for grep and files: lines are never wrapped (tables are only
# as wide as their content).
_PIPE_WIDTH = 1000


def console() -> Console:
  """A console on stdout: the terminal's width, or unwrapped when piped."""
  width = None if sys.stdout.isatty() else _PIPE_WIDTH
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


def _state(state: str) -> Text:
  return Text(state, style=_STATE_STYLE.get(state, ''))


def _short_time(iso: Optional[str]) -> str:
  return iso.replace('T', ' ')[:19] if iso else '-'


def runs(out: Console, rows: List[Dict[str, Any]]) -> None:
  for run in rows:
    counts = ', '.join(f'{n} {s.lower()}' for s, n in run['states'].items())
    header = Text.assemble(
        ('run ', 'bold'), (run['run'], 'bold'), '  ', _state(run['state']),
        f'  {_short_time(run["started"])} → {_short_time(run["ended"])}'
        f' ({duration(run["seconds"])})  pipeline {run["pipeline"]}; {counts}')
    out.print(header)
    table = Table(box=box.SIMPLE, show_edge=False, pad_edge=False)
    for column in ('component', 'state', 'duration', 'cached', 'execution'):
      table.add_column(column, justify='right' if column in (
          'duration', 'execution') else 'left')
    for c in run['components']:
      table.add_row(c['node'], _state(c['state']), duration(c['seconds']),
                    'yes' if c['cached'] else '', str(c['execution_id']))
    out.print(table)


def artifacts(out: Console, rows: List[Dict[str, Any]]) -> None:
  table = Table(box=box.SIMPLE, show_edge=False, pad_edge=False)
  for column in ('id', 'type', 'producer', 'state', 'uri', 'properties'):
    table.add_column(column, justify='right' if column == 'id' else 'left',
                     overflow='fold')
  for row in rows:
    producer = row['producer'] or '-'
    table.add_row(str(row['id']), row['type'], producer, row['state'],
                  row['uri'], summary_text(row['properties']))
  out.print(table)


def _artifact_label(node: Dict[str, Any]) -> Text:
  artifact = node['artifact']
  text = Text()
  if node.get('key'):
    text.append(f'{node["key"]}: ', style='dim')
  text.append(f'{artifact["type"]} {artifact["id"]}', style='bold')
  if node.get('seen'):
    text.append('  (shown above)', style='dim')
    return text
  text.append(f'  {artifact["uri"]}')
  summary = summary_text(artifact['properties'])
  if summary:
    text.append(f'  [{summary}]', style='dim')
  return text


def _execution_label(execution: Dict[str, Any]) -> Text:
  text = Text('← ')
  text.append(execution['node'], style='bold magenta')
  text.append(f'  execution {execution["id"]}  ')
  text.append_text(_state(execution['state']))
  text.append(f'  {duration(execution["seconds"])}  run {execution["run"]}')
  if execution.get('reused_by_runs'):
    text.append(f'  (reused by run {", ".join(execution["reused_by_runs"])})',
                style='dim')
  return text


def _input_data(branch: Tree, data: Dict[str, Any]) -> None:
  span = f'span {data["span"]}' if data.get('span') is not None else 'no span'
  version = (f', version {data["version"]}' if data.get('version') is not None
             else '')
  base = branch.add(Text.assemble(('input ', 'bold'), data['input_base'],
                                  f'  ({span}{version})'))
  for split in data['splits']:
    node = base.add(f'split {split["name"]}: {split["pattern"]}  '
                    f'({lineage_lib.split_facts(split)})')
    for f in split['files_now']:
      node.add(f'{os.path.basename(f["path"])}  {f["bytes"]:,} bytes  '
               f'modified {_short_time(timestamp(int(f["mtime"] * 1000)))}')


def lineage(out: Console, tree: Dict[str, Any]) -> None:
  root = Tree(_artifact_label(tree))
  _lineage_children(root, tree)
  out.print(root)


def _lineage_children(branch: Tree, node: Dict[str, Any]) -> None:
  producer = node.get('producer')
  if node.get('seen') or not producer:
    if producer is None and not node.get('seen'):
      branch.add(Text('no producing execution recorded', style='dim'))
    return
  execution = branch.add(_execution_label(producer))
  if 'input_data' in producer:
    _input_data(execution, producer['input_data'])
  for child in producer['inputs']:
    _lineage_children(execution.add(_artifact_label(child)), child)


def _number(value: Any) -> str:
  if value is None:
    return '-'
  if isinstance(value, float):
    if value.is_integer():
      return f'{int(value):,}'
    return f'{value:,.4g}' if abs(value) < 1e6 else f'{value:,.0f}'
  return f'{value:,}' if isinstance(value, int) else str(value)


def stats(out: Console, result: Dict[str, Any]) -> None:
  examples = result['examples']
  out.print(f'Statistics {result["statistics"]["id"]} of run {result["run"]}'
            f'{" (cached: computed by an earlier run)" if result["cached_in_this_run"] else ""}'
            f', on Examples {examples["id"] if examples else "?"}')
  for split, data in result['splits'].items():
    out.print(Text(f'\nsplit {split}: {data["records"]:,} records',
                   style='bold'))
    table = Table(box=box.SIMPLE, show_edge=False, pad_edge=False)
    for column in ('feature', 'type', 'missing', 'min', 'max', 'mean',
                   'std dev', 'zeros', 'unique', 'bytes (avg)'):
      table.add_column(column, justify='left' if column in (
          'feature', 'type') else 'right')
    for f in data['features']:
      table.add_row(f['feature'],
                    f['type'], _number(f.get('missing')), _number(f.get('min')),
                    _number(f.get('max')), _number(f.get('mean')),
                    _number(f.get('std_dev')), _number(f.get('zeros')),
                    _number(f.get('unique')), _number(f.get('avg_bytes')))
    out.print(table)


def anomalies(out: Console, result: Dict[str, Any]) -> None:
  out.print(f'Anomalies {result["anomalies"]["id"]} of run {result["run"]}'
            f'{" (cached: found by an earlier run)" if result["cached_in_this_run"] else ""}')
  for split, rows in result['splits'].items():
    if not rows:
      out.print(Text.assemble(f'split {split}: ', ('no anomalies', 'green')))
      continue
    out.print(Text(f'split {split}: {len(rows)} anomalies', style='bold red'))
    table = Table(box=box.SIMPLE, show_edge=False, pad_edge=False)
    for column in ('feature', 'anomaly', 'description'):
      table.add_column(column, overflow='fold')
    for row in rows:
      table.add_row(row['feature'], row['short_description'],
                    row['description'])
    out.print(table)


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
  out.print(f'baseline: model {baseline["id"]}  {baseline["uri"]}' if baseline
            else 'baseline: none (no model was blessed before)')
  for data in result['slices']:
    table = Table(title=f'slice {data["slice"]}', box=box.SIMPLE,
                  show_edge=False, pad_edge=False, title_justify='left')
    table.add_column('metric')
    table.add_column('value', justify='right')
    if baseline:
      table.add_column('baseline', justify='right')
      table.add_column('diff', justify='right')
    for row in data['metrics']:
      cells = [row['metric'], _number(row.get('value'))]
      if baseline:
        diff = row.get('diff')
        cells += [_number(row.get('baseline')),
                  '-' if diff is None else f'{diff:+.4g}']
      table.add_row(*cells)
    out.print(table)
  if result['validation_failures']:
    out.print(Text('validation failed:', style='bold red'))
    for failure in result['validation_failures']:
      out.print(f'  {failure["metric"]} = {_number(failure["value"])}: '
                f'{failure["message"]}')
  else:
    out.print(Text('validation: every threshold met', style='green')
              if result['validation_ok'] else 'validation: not OK')


def confusion(out: Console, result: Dict[str, Any]) -> None:
  examples = result['examples']
  out.print(f'Model {result["model"]["id"]} on Examples {examples["id"]} '
            f'split {examples["split"]}: accuracy {result["accuracy"]:.2%} '
            f'on {result["examples_count"]:,} records '
            '(rows: true class, columns: predicted)')
  names = result['class_names']
  table = Table(box=box.SIMPLE, show_edge=False, pad_edge=False)
  table.add_column('true \\ predicted')
  for name in names:
    table.add_column(name, justify='right')
  for i, (name, row) in enumerate(zip(names, result['matrix'])):
    table.add_row(name, *[Text(f'{v:,}', style='bold' if i == j else '')
                          for j, v in enumerate(row)])
  out.print(table)
  if result.get('png'):
    out.print(f'wrote {result["png"]["path"]} '
              f'({result["png"]["width"]}x{result["png"]["height"]})')


def samples(out: Console, result: Dict[str, Any]) -> None:
  counts = ', '.join(f'{c["name"]}: {c["count"]}' for c in result['classes'])
  out.print(f'Examples {result["examples"]["id"]} split '
            f'{result["examples"]["split"]}: {counts}')
  out.print(f'wrote {result["png"]["path"]} '
            f'({result["png"]["width"]}x{result["png"]["height"]})')


def report(out: Console, result: Dict[str, Any]) -> None:
  out.print(f'Run {result["run"]["id"]}: {result["outcome"]["headline"]}')
  for name in ('dag', 'data', 'training', 'evaluation', 'lineage'):
    section = result[name]
    status = section.get('status', 'ok')
    note = section.get('reason') or section.get('error') or ''
    out.print(f'  {name:<11} {status}{"  " + note if note else ""}')
  out.print(f'wrote {result["html"]["path"]}')
