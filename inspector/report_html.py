"""The run report's page: report.gather's facts as one self-contained HTML
file (inline CSS, inline SVG charts, pictures as data: URIs; no scripts, no
network, no external fonts), readable on a laptop screen.

Every text from the store or the files is escaped here (`_e`), so names,
paths and anomaly descriptions cannot break the page.
"""

import html
import os
from typing import Any, Dict, List, Optional

from inspector import svg
from inspector.artifacts import summary_text
from inspector.render import duration, timestamp

_STYLE = """
*{box-sizing:border-box}
body{margin:0;background:#f3f4f6;color:#1f2937;
 font:14px/1.45 -apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
main{max-width:1240px;margin:0 auto;padding:20px 16px 40px}
header.top{display:flex;justify-content:space-between;align-items:flex-end;
 flex-wrap:wrap;gap:8px;margin-bottom:14px}
header.top h1{font-size:22px;margin:2px 0 0}
.kicker{color:#6b7280;font-size:12px;text-transform:uppercase;
 letter-spacing:.06em}
.meta{color:#4b5563;font-size:13px;text-align:right}
.chip{display:inline-block;padding:1px 8px;border-radius:999px;
 font-size:12px;font-weight:600;color:#fff;vertical-align:1px}
.outcome{border-radius:10px;padding:14px 18px;margin:0 0 16px;
 border-left:6px solid}
.outcome h2{margin:0;font-size:17px}
.outcome ul{margin:6px 0 0;padding-left:20px}
.outcome-pushed,.outcome-served{background:#ecfdf5;border-color:#16a34a}
.outcome-not_blessed,.outcome-partial,.outcome-running,.outcome-unknown{
 background:#fffbeb;border-color:#d97706}
.outcome-stopped,.outcome-failed{background:#fef2f2;border-color:#dc2626}
nav{display:flex;gap:6px;flex-wrap:wrap;margin:0 0 16px}
nav a{background:#fff;border:1px solid #e5e7eb;border-radius:999px;
 padding:3px 12px;color:#1f2937;text-decoration:none;font-size:13px}
section.card{background:#fff;border-radius:12px;padding:16px 18px;
 margin:0 0 16px;box-shadow:0 1px 2px rgba(0,0,0,.06);
 border:1px solid #e5e7eb}
section.card>h2{font-size:18px;margin:0 0 10px;display:flex;
 align-items:center;gap:10px}
h3{font-size:14px;margin:16px 0 6px;color:#374151}
.tiles{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));
 gap:10px;margin:4px 0 12px}
.tile{background:#f9fafb;border:1px solid #e5e7eb;border-radius:10px;
 padding:8px 12px}
.tile .label{color:#6b7280;font-size:12px}
.tile .value{font-size:20px;font-weight:650}
.tile .sub{color:#6b7280;font-size:12px}
.row{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));
 gap:18px;align-items:start}
table{border-collapse:collapse;width:100%;font-size:13px;margin:4px 0 8px}
th,td{padding:4px 8px;border-bottom:1px solid #f0f1f3;text-align:left;
 vertical-align:top}
th{color:#6b7280;font-weight:600;background:#f9fafb;white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr:nth-child(even) td{background:#fcfcfd}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
 font-size:12px;word-break:break-all}
.muted{color:#6b7280}
.ok{color:#15803d;font-weight:600}
.bad{color:#b91c1c;font-weight:600}
.notrun{background:#f9fafb;border:1px dashed #d1d5db;border-radius:8px;
 padding:10px 14px;color:#4b5563}
.error{background:#fef2f2;border:1px solid #fecaca;border-radius:8px;
 padding:8px 12px;color:#991b1b;margin:6px 0}
img.picture{max-width:100%;height:auto;border:1px solid #e5e7eb;
 border-radius:6px;image-rendering:pixelated}
ul.tree,ul.tree ul{list-style:none;margin:0;padding-left:18px}
ul.tree{padding-left:0}
ul.tree li{position:relative;padding:2px 0 2px 14px;
 border-left:1px solid #d1d5db}
ul.tree li::before{content:"";position:absolute;left:0;top:12px;width:10px;
 border-top:1px solid #d1d5db}
ul.tree li:last-child{border-left-color:transparent}
ul.tree li:last-child::before{border-left:1px solid #d1d5db;height:12px;
 top:0}
.exec{color:#7c3aed;font-weight:600}
footer{color:#6b7280;font-size:12px;text-align:center;margin-top:24px}
"""


def _e(value: Any) -> str:
  return html.escape('' if value is None else str(value), quote=True)


def _chip(state: str) -> str:
  colour = svg.STATE_COLOURS.get(state, '#6b7280')
  return f'<span class="chip" style="background:{colour}">{_e(state)}</span>'


def _number(value: Any, digits: int = 4) -> str:
  if value is None:
    return '-'
  if isinstance(value, bool):
    return 'yes' if value else 'no'
  if isinstance(value, int):
    return f'{value:,}'
  if isinstance(value, float):
    if value.is_integer() and abs(value) < 1e15:
      return f'{int(value):,}'
    return f'{value:,.{digits}g}'
  return str(value)


def _error(part: Dict[str, Any]) -> str:
  return (f'<div class="error"><b>Could not build this part:</b> '
          f'{_e(part["error"])} <span class="muted">(the log has the '
          'traceback)</span></div>')


def _not_run(part: Dict[str, Any]) -> str:
  return f'<div class="notrun"><b>Not run.</b> {_e(part["reason"])}</div>'


def _failed_or_missing(part: Optional[Dict[str, Any]]) -> Optional[str]:
  """The error or not-run box of a part, or None when it has content."""
  if part is None:
    return '<div class="notrun">Not recorded.</div>'
  if 'error' in part:
    return _error(part)
  if part.get('status') == 'not_run':
    return _not_run(part)
  return None


def _tile(label: str, value: str, sub: str = '') -> str:
  return (f'<div class="tile"><div class="label">{_e(label)}</div>'
          f'<div class="value">{value}</div>'
          + (f'<div class="sub">{sub}</div>' if sub else '') + '</div>')


def _table(headers: List[str], rows: List[List[str]],
           numeric: Optional[List[bool]] = None) -> str:
  """`rows` cells are HTML already (escaped by the caller)."""
  numeric = numeric or [False] * len(headers)
  head = ''.join(f'<th class="num">{_e(h)}</th>' if n else f'<th>{_e(h)}</th>'
                 for h, n in zip(headers, numeric))
  body = ''.join('<tr>' + ''.join(
      f'<td class="num">{c}</td>' if n else f'<td>{c}</td>'
      for c, n in zip(row, numeric)) + '</tr>' for row in rows)
  if not any(headers):  # A key-value table: no header row.
    return f'<table><tbody>{body}</tbody></table>'
  return f'<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _picture(part: Dict[str, Any], alt: str) -> str:
  return (f'<img class="picture" alt="{_e(alt)}" src="{_e(part["png"])}" '
          f'width="{part["width"]}" height="{part["height"]}">')


def _section(anchor: str, title: str, content: str,
             state: Optional[str] = None) -> str:
  chip = _chip(state) if state else ''
  return (f'<section class="card" id="{anchor}"><h2>{_e(title)} {chip}</h2>'
          f'{content}</section>')


def _section_state(section: Dict[str, Any]) -> Optional[str]:
  if section.get('status') == 'not_run':
    return 'NOT RUN'
  if section.get('status') == 'error':
    return 'FAILED'
  return 'CACHED' if section.get('cached') else None


# ---------------------------------------------------------------- header --


def _header(run: Dict[str, Any]) -> str:
  counts = ', '.join(f'{n} {s.lower()}' for s, n in run['states'].items())
  return (
      '<header class="top"><div>'
      f'<div class="kicker">Run report · pipeline {_e(run["pipeline"])}</div>'
      f'<h1>run {_e(run["id"])} {_chip(run["state"])}</h1></div>'
      f'<div class="meta">{_e(_short_time(run["started"]))} → '
      f'{_e(_short_time(run["ended"]))} ({_e(duration(run["seconds"]))}); '
      f'components: {_e(counts)}<br><span class="mono">{_e(run["store"])}'
      '</span></div></header>')


def _short_time(iso: Optional[str]) -> str:
  return iso.replace('T', ' ')[:19] if iso else '-'


def _outcome(outcome: Dict[str, Any]) -> str:
  details = ''.join(f'<li>{_e(d)}</li>' for d in outcome['details'])
  return (f'<div class="outcome outcome-{_e(outcome["kind"])}" '
          f'id="outcome"><h2>{_e(outcome["headline"])}</h2>'
          + (f'<ul>{details}</ul>' if details else '') + '</div>')


# ------------------------------------------------------------------- DAG --


def _dag(section: Dict[str, Any]) -> str:
  if section.get('status') == 'error':
    return _section('pipeline', 'Pipeline', _error(section), 'FAILED')
  nodes = section['nodes']
  rows = []
  for node in nodes:
    outputs = ', '.join(f'{_e(o["key"])}: {_e(o["type"])} {o["id"]}'
                        for o in node['outputs']) or '-'
    made_by = sorted({o['made_by_run'] or '?' for o in node['outputs']
                      if o['reused']})
    if made_by:
      outputs += (f'<br><span class="muted">reused from run '
                  f'{_e(", ".join(made_by))}</span>')
    rows.append([
        f'<b>{_e(node["node"])}</b>', _chip(node['state']),
        _e(duration(node['seconds']) if node['seconds'] is not None
           else '-'),
        '<span class="ok">yes</span>' if node['cached'] else
        ('-' if node['state'] == 'NOT RUN' else 'no'),
        _e(node['execution_id'] if node['execution_id'] is not None else '-'),
        outputs])
  note = (f'<p class="muted">Components marked NOT RUN: '
          f'{_e(section["why_not_run"])}.</p>'
          if section.get('why_not_run') else '')
  content = (
      svg.dag(nodes, duration)
      + '<p class="muted">Arrows: what each component waits for (the ones '
      'a longer path implies are left out). Wall time is the execution\'s; '
      'a cache hit reused an earlier run\'s outputs.</p>' + note
      + _table(['component', 'state', 'wall time', 'cache hit', 'execution',
                'outputs'], rows,
               [False, False, True, False, True, False]))
  return _section('pipeline', 'Pipeline', content)


# ------------------------------------------------------------------ data --


def _data(section: Dict[str, Any]) -> str:
  missing = _failed_or_missing(section)
  if missing:
    return _section('data', 'Data', missing, _section_state(section))
  examples = section['examples']
  props = examples['properties']
  names = section['class_names'].get('names') or props.get('class_names') or []
  tiles = [_tile(f'{split} records', _number(count))
           for split, count in (props.get('splits') or {}).items()]
  tiles.append(_tile('classes', _number(len(names)) if names else '?',
                     _e(', '.join(names[:6]) + (', …' if len(names) > 6
                                                 else ''))))
  if 'span' in props:
    tiles.append(_tile('span', _number(props['span'])))
  parts = [
      f'<p class="muted">Examples {examples["id"]} '
      f'<code>{_e(examples["uri"])}</code>'
      + (' (reused from the cache)' if examples['cached'] else '') + '</p>',
      f'<div class="tiles">{"".join(tiles)}</div>', '<div class="row">']
  balance = section['class_balance']
  parts.append('<div><h3>Class balance</h3>' + (
      _failed_or_missing(balance) or svg.grouped_bars(
          balance['classes'], balance['splits'],
          'records per class and split')) + '</div>')
  samples = section['samples']
  parts.append('<div><h3>Samples</h3>' + (
      _failed_or_missing(samples) or
      f'<p class="muted">Up to {samples["per_class"]} images of each '
      f'class, the first in split {_e(samples["split"])}.</p>'
      + _picture(samples, 'sample images per class')) + '</div>')
  parts.append('</div>')
  parts.append('<h3>Anomalies (ExampleValidator)</h3>' + _anomalies(
      section['anomalies']))
  parts.append('<h3>Statistics (StatisticsGen)</h3>' + _statistics(
      section['statistics']))
  return _section('data', 'Data', ''.join(parts),
                  'CACHED' if examples['cached'] else None)


def _anomalies(part: Dict[str, Any]) -> str:
  missing = _failed_or_missing(part)
  if missing:
    return missing
  out = []
  for split, rows in part['splits'].items():
    if not rows:
      out.append(f'<p>split <b>{_e(split)}</b>: '
                 '<span class="ok">none</span></p>')
      continue
    out.append(f'<p>split <b>{_e(split)}</b>: <span class="bad">'
               f'{len(rows)} anomalies</span></p>')
    out.append(_table(['feature', 'anomaly', 'description'], [
        [f'<b>{_e(r["feature"])}</b>', _e(r['short_description']),
         _e(r['description'])] for r in rows]))
  return ''.join(out)


def _statistics(part: Dict[str, Any]) -> str:
  missing = _failed_or_missing(part)
  if missing:
    return missing
  out = []
  if part.get('cached'):
    out.append('<p class="muted">Computed by an earlier run (StatisticsGen '
               'was answered from the cache).</p>')
  out.append('<div class="row">')
  for split, data in part['splits'].items():
    rows = []
    for f in data['features']:
      note = ''
      if 'avg_bytes' in f:
        note = f'{_number(f.get("avg_bytes"))} bytes on average'
        if f.get('unique') is not None:
          note += f', {_number(f["unique"])} unique'
      rows.append([f'<b>{_e(f["feature"])}</b>', _e(f['type'].lower()),
                   _number(f.get('present')), _number(f.get('missing')),
                   _number(f.get('min')), _number(f.get('max')),
                   _number(f.get('mean')), _e(note)])
    out.append(f'<div><p>split <b>{_e(split)}</b>: '
               f'{_number(data["records"])} records</p>'
               + _table(['feature', 'type', 'count', 'missing', 'min', 'max',
                         'mean', ''], rows,
                        [False, False, True, True, True, True, True, False])
               + '</div>')
  out.append('</div>')
  return ''.join(out)


# -------------------------------------------------------------- training --

_CURVES = (('loss', 'Loss', False), ('accuracy', 'Accuracy', True))


def _training(section: Dict[str, Any]) -> str:
  missing = _failed_or_missing(section)
  if missing:
    return _section('training', 'Training', missing, _section_state(section))
  curves = section['curves']
  parts = [f'<p class="muted">Model {section["model"]["id"]} '
           f'<code>{_e(section["model"]["uri"])}</code>'
           + (f' — trained by run {_e(section["trained_in_run"])} (the '
              'Trainer was answered from the cache)' if section['cached']
              else '') + '</p>']
  tiles = [_tile('training time', _e(duration(section['seconds'])))]
  if 'error' not in curves:
    tiles.insert(0, _tile('epochs', _number(curves['epochs'])))
    for metric, title, _ in _CURVES:
      for subset, values in curves['metrics'].get(metric, {}).items():
        last = next((v for v in reversed(values) if v is not None), None)
        tiles.append(_tile(f'{subset} {metric}, last epoch', _number(last)))
  parts.append(f'<div class="tiles">{"".join(tiles)}</div>')
  if 'error' in curves:
    parts.append(_error(curves))
  else:
    charts = []
    for metric, title, unit in _CURVES:
      series = curves['metrics'].get(metric)
      charts.append(f'<div class="curve" data-metric="{metric}"><h3>{title} '
                    'per epoch</h3>' + (svg.lines(
                        curves['epochs'], series, f'{metric} per epoch',
                        unit_range=unit) if series else
                    '<div class="notrun">Not logged.</div>') + '</div>')
    parts.append(f'<div class="row">{"".join(charts)}</div>')
  parts.append('<div class="row"><div><h3>Settings</h3>'
               + _settings(section['settings'], curves) + '</div>'
               '<div><h3>Devices</h3>' + _devices(section['device_plan'])
               + '</div></div>')
  return _section('training', 'Training', ''.join(parts),
                  _section_state(section))


def _flatten(values: Dict[str, Any], prefix: str = '') -> List[List[str]]:
  rows = []
  for key, value in values.items():
    if isinstance(value, dict):
      rows += _flatten(value, f'{prefix}{key}.')
    else:
      shown = (', '.join(map(str, value)) if isinstance(value, list)
               else _number(value) if not isinstance(value, str) else value)
      rows.append([f'<code>{_e(prefix + key)}</code>', _e(shown)])
  return rows


def _settings(part: Dict[str, Any], curves: Dict[str, Any]) -> str:
  missing = _failed_or_missing(part)
  if missing:
    return missing
  rows = _flatten(part['training'])
  rows.append(['<code>train_steps</code>', _e(
      _number(part['train_steps']) if part['train_steps'] else
      'one pass over the data per epoch')])
  rows.append(['<code>eval_steps</code>', _e(
      _number(part['eval_steps']) if part['eval_steps'] else
      'the whole eval split')])
  rates = curves.get('metrics', {}).get('lr', {}).get('train')
  if rates:
    rows.append(['learning rate per epoch', _e(', '.join(
        f'{r:.3g}' for r in rates if r is not None))])
  return _table(['setting', 'value'], rows)


def _devices(part: Dict[str, Any]) -> str:
  missing = _failed_or_missing(part)
  if missing:
    return missing
  rows = [['devices', _e(', '.join(part.get('devices') or []) or 'CPU')],
          ['strategy', _e(part.get('strategy'))],
          ['precision', _e(part.get('precision'))],
          ['global batch', _number(part.get('global_batch_size'))]]
  return (f'<p>{_e(part.get("description", ""))}</p>'
          + _table(['', ''], rows))


# ------------------------------------------------------------ evaluation --


def _evaluation(section: Dict[str, Any]) -> str:
  missing = _failed_or_missing(section)
  if missing:
    return _section('evaluation', 'Evaluation and push', missing,
                    _section_state(section))
  verdict = section['verdict']
  parts = []
  if 'error' in verdict:
    parts.append(_error(verdict))
  else:
    parts.append(_verdict(verdict, section['model']))
  parts.append('<div class="row"><div><h3>Confusion matrix</h3>')
  confusion = section['confusion']
  parts.append(_failed_or_missing(confusion) or (
      f'<p class="muted">Model {section["model"]["id"]} on the '
      f'{_e(confusion["examples"]["split"])} split of Examples '
      f'{confusion["examples"]["id"]}: rows are the true class, columns the '
      f'predicted one; accuracy {confusion["accuracy"]:.2%} of '
      f'{confusion["examples_count"]:,}.</p>'
      + _picture(confusion, 'confusion matrix')))
  parts.append('</div><div><h3>Push</h3>' + _push(section['push'])
               + '</div></div>')
  return _section('evaluation', 'Evaluation and push', ''.join(parts),
                  _section_state(section))


def _verdict(verdict: Dict[str, Any], model: Dict[str, Any]) -> str:
  blessed = verdict['blessed']
  word = ('<span class="ok">blessed</span>' if blessed else
          '<span class="bad">NOT blessed</span>' if blessed is not None
          else 'no blessing recorded')
  baseline = verdict['baseline']
  out = [f'<p>Model {model["id"]} is {word}'
         + (f' (evaluation of run {_e(verdict["evaluation"]["run"])}).'
            if verdict.get('evaluation') else '.')
         + (' Baseline: model ' + _e(baseline['id']) + ', the last blessed '
            'one.' if baseline else ' No baseline: no model was blessed '
            'before.') + '</p>']
  if not blessed and verdict['reasons']:
    out.append('<p class="bad">Why not: ' + _e('; '.join(verdict['reasons']))
               + '</p>')
  tiles, gauges, rows = [], [], []
  for check in verdict['checks']:
    value = check.get('value')
    tiles.append(_tile(check['metric'].replace('_', ' '), _number(value),
                       f'threshold ≥ {check["lower_bound"]:g}'
                       if check.get('lower_bound') is not None else ''))
    if check.get('baseline') is not None:
      tiles.append(_tile('baseline', _number(check['baseline']),
                         'diff ' + (f'{check["diff"]:+.4f}'
                                    if check.get('diff') is not None else '-')))
    if value is not None:
      gauges.append(svg.gauge(value, check.get('lower_bound'),
                              check.get('baseline'), check['metric']))
    rows.append([f'<code>{_e(check["metric"])}</code>', _number(value),
                 _e(f'≥ {check["lower_bound"]:g}'
                    if check.get('lower_bound') is not None else '-'),
                 _number(check.get('baseline')),
                 _e(f'{check["diff"]:+.4f}' if check.get('diff') is not None
                    else '-'),
                 _e('no worse than the baseline'
                    if check.get('no_worse_than_baseline') else '-')])
  if verdict.get('examples') is not None:
    tiles.append(_tile('evaluated on', _number(verdict['examples']),
                       'eval records'))
  out.append(f'<div class="tiles">{"".join(tiles)}</div>')
  out.extend(gauges)
  out.append(_table(['metric', 'value', 'threshold', 'baseline', 'diff',
                     'change rule'], rows,
                    [False, True, True, True, True, False]))
  return ''.join(out)


def _push(part: Dict[str, Any]) -> str:
  missing = _failed_or_missing(part)
  if missing:
    return missing
  if part['already_served']:
    what = ('<span class="ok">Already served</span>, not pushed again: '
            f'<code>{_e(part["destination"])}</code>')
  elif part['pushed']:
    what = (f'<span class="ok">Pushed</span> to '
            f'<code>{_e(part["destination"])}</code>')
  else:
    what = '<span class="bad">Not pushed</span> (the model was not blessed)'
  return (f'<p>{what}</p><p class="muted">PushedModel {part["id"]} '
          f'<code>{_e(part["uri"])}</code>'
          + (' (Pusher answered from the cache)' if part['cached'] else '')
          + '</p>')


# --------------------------------------------------------------- lineage --


def _lineage(section: Dict[str, Any]) -> str:
  missing = _failed_or_missing(section)
  if missing:
    return _section('lineage', 'Lineage', missing, _section_state(section))
  root = section['root']
  content = (f'<p class="muted">From {_e(root["type"])} {root["id"]} back to '
             'the input files: each artifact, the execution that made it, '
             'and that execution\'s inputs. An artifact met again is not '
             'expanded twice.</p><ul class="tree">'
             + _tree_node(section['tree']) + '</ul>')
  return _section('lineage', 'Lineage', content)


def _tree_node(node: Dict[str, Any]) -> str:
  artifact = node['artifact']
  key = f'<span class="muted">{_e(node["key"])}:</span> ' if node.get(
      'key') else ''
  label = f'{key}<b>{_e(artifact["type"])} {artifact["id"]}</b>'
  if node.get('seen'):
    return f'<li>{label} <span class="muted">(shown above)</span></li>'
  summary = summary_text(artifact['properties'])
  label += (f' <code>{_e(artifact["uri"])}</code>'
            + (f' <span class="muted">[{_e(summary)}]</span>'
               if summary else ''))
  producer = node.get('producer')
  if not producer:
    return (f'<li>{label}<ul><li class="muted">no producing execution '
            'recorded</li></ul></li>')
  reused = (f' <span class="muted">(reused by run '
            f'{_e(", ".join(producer["reused_by_runs"]))})</span>'
            if producer.get('reused_by_runs') else '')
  execution = (f'<span class="exec">← {_e(producer["node"])}</span> '
               f'execution {producer["id"]} {_chip(producer["state"])} '
               f'{_e(duration(producer["seconds"]))} '
               f'<span class="muted">run {_e(producer["run"])}</span>{reused}')
  children = ''
  if 'input_data' in producer:
    children += _input_data(producer['input_data'])
  children += ''.join(_tree_node(child) for child in producer['inputs'])
  return (f'<li>{label}<ul><li>{execution}'
          + (f'<ul>{children}</ul>' if children else '') + '</li></ul></li>')


def _input_data(data: Dict[str, Any]) -> str:
  span = f'span {data["span"]}' if data.get('span') is not None else 'no span'
  splits = []
  for split in data['splits']:
    recorded = split.get('recorded')
    facts = (f'read {recorded["num_files"]} files, '
             f'{recorded["total_bytes"]:,} bytes' if recorded
             else 'no input fingerprint recorded')
    if 'unchanged' in split:
      facts += ('; the files there now are the same' if split['unchanged']
                else '; the files there now differ in: '
                + ', '.join(dict.fromkeys(split['changed'])))
    files = ''.join(
        f'<li class="input-file"><code>{_e(os.path.basename(f["path"]))}'
        f'</code> {f["bytes"]:,} bytes <span class="muted">modified '
        f'{_e(_short_time(timestamp(int(f["mtime"] * 1000))))}</span></li>'
        for f in split['files_now'])
    splits.append(f'<li>split <b>{_e(split["name"])}</b>: '
                  f'<code>{_e(split["pattern"])}</code> '
                  f'<span class="muted">({_e(facts)})</span>'
                  + (f'<ul>{files}</ul>' if files else '') + '</li>')
  return (f'<li><b>input</b> <code>{_e(data["input_base"])}</code> '
          f'<span class="muted">({_e(span)})</span><ul>{"".join(splits)}'
          '</ul></li>')


# ------------------------------------------------------------------ page --


def page(facts: Dict[str, Any]) -> str:
  """The whole report as one HTML document."""
  run = facts['run']
  title = f'Run {run["id"]} of {run["pipeline"]}'
  sections = [('pipeline', 'Pipeline'), ('data', 'Data'),
              ('training', 'Training'), ('evaluation', 'Evaluation and push'),
              ('lineage', 'Lineage')]
  nav = ''.join(f'<a href="#{anchor}">{_e(name)}</a>'
                for anchor, name in sections)
  body = (_header(run) + _outcome(facts['outcome']) + f'<nav>{nav}</nav>'
          + _dag(facts['dag']) + _data(facts['data'])
          + _training(facts['training']) + _evaluation(facts['evaluation'])
          + _lineage(facts['lineage']))
  return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
          '<meta name="viewport" content="width=device-width, '
          'initial-scale=1">'
          f'<title>{_e(title)}</title><style>{_STYLE}</style></head>\n'
          f'<body><main>{body}<footer>Written by <code>python -m inspector '
          f'report {_e(run["id"])}</code> from {_e(run["store"])}.</footer>'
          '</main></body></html>\n')
