"""The run report's page: report.gather's facts as one self-contained HTML
file (inline CSS, inline SVG charts, pictures as data: URIs; no scripts, no
network, no external fonts), readable on a laptop screen.

Sections are drawn from html_blocks.py's parts (which escape every text
from the store or the files), svg.py's charts and lineage_html.py's tree.
"""

import logging
from typing import Any, Dict, List, Optional

from inspector import lineage_html
from inspector import svg
from inspector.html_blocks import STYLE
from inspector.html_blocks import chip
from inspector.html_blocks import error_box
from inspector.html_blocks import escape
from inspector.html_blocks import failed_or_missing
from inspector.html_blocks import not_run_box
from inspector.html_blocks import number
from inspector.html_blocks import picture
from inspector.html_blocks import short_time
from inspector.html_blocks import table
from inspector.html_blocks import tile
from inspector.render import duration


def _section(anchor: str, title: str, content: str,
             state: Optional[str] = None) -> str:
  badge = chip(state) if state else ''
  return (f'<section class="card" id="{anchor}"><h2>{escape(title)} {badge}'
          f'</h2>{content}</section>')


def _section_state(section: Dict[str, Any]) -> Optional[str]:
  if section.get('status') == 'not_run':
    return 'NOT RUN'
  if section.get('status') == 'error':
    return 'FAILED'
  return 'CACHED' if section.get('cached') else None


# ---------------------------------------------------------------- header --


def _header(run: Dict[str, Any]) -> str:
  counts = ', '.join(f'{n} {s.lower()}' for s, n in run['states'].items())
  when = (f'{short_time(run["started"])} → {short_time(run["ended"])} '
          f'({duration(run["seconds"])}); components: {counts}')
  return (
      '<header class="top"><div><div class="kicker">Run report · pipeline '
      f'{escape(run["pipeline"])}</div><h1>run {escape(run["id"])} '
      f'{chip(run["state"])}</h1></div><div class="meta">{escape(when)}<br>'
      f'<span class="mono">{escape(run["store"])}</span></div></header>')


def _outcome(outcome: Dict[str, Any]) -> str:
  details = ''.join(f'<li>{escape(d)}</li>' for d in outcome['details'])
  return (f'<div class="outcome outcome-{escape(outcome["kind"])}" '
          f'id="outcome"><h2>{escape(outcome["headline"])}</h2>'
          + (f'<ul>{details}</ul>' if details else '') + '</div>')


# ------------------------------------------------------------------- DAG --


def _dag(section: Dict[str, Any]) -> str:
  if section.get('status') == 'error':
    return _section('pipeline', 'Pipeline', error_box(section), 'FAILED')
  nodes = section['nodes']
  rows = []
  for node in nodes:
    outputs = ', '.join(f'{escape(o["key"])}: {escape(o["type"])} {o["id"]}'
                        for o in node['outputs']) or '-'
    made_by = sorted({o['made_by_run'] or '?' for o in node['outputs']
                      if o['reused']})
    if made_by:
      outputs += (f'<br><span class="muted">reused from run '
                  f'{escape(", ".join(made_by))}</span>')
    rows.append([
        f'<b>{escape(node["node"])}</b>', chip(node['state']),
        escape('-' if node['seconds'] is None else duration(node['seconds'])),
        '<span class="ok">yes</span>' if node['cached'] else
        ('-' if node['state'] == 'NOT RUN' else 'no'),
        escape('-' if node['execution_id'] is None else node['execution_id']),
        outputs])
  note = (f'<p class="muted">Components marked NOT RUN: '
          f'{escape(section["why_not_run"])}.</p>'
          if section.get('why_not_run') else '')
  content = (
      svg.dag(nodes, duration)
      + '<p class="muted">Arrows: what each component waits for (the ones '
      'a longer path implies are left out). Wall time is the execution\'s; '
      'a cache hit reused an earlier run\'s outputs.</p>' + note
      + table(['component', 'state', 'wall time', 'cache hit', 'execution',
               'outputs'], rows, [False, False, True, False, True, False]))
  return _section('pipeline', 'Pipeline', content)


# ------------------------------------------------------------------ data --


def _data(section: Dict[str, Any]) -> str:
  missing = failed_or_missing(section)
  if missing:
    return _section('data', 'Data', missing, _section_state(section))
  examples = section['examples']
  props = examples['properties']
  names = section['class_names'].get('names', [])
  tiles = [tile(f'{split} records', number(count))
           for split, count in (props.get('splits') or {}).items()]
  shown = ', '.join(names[:6]) + (', …' if len(names) > 6 else '')
  tiles.append(tile('classes', number(len(names)) if names else '?',
                    escape(shown)))
  if 'span' in props:
    tiles.append(tile('span', number(props['span'])))
  parts = [
      f'<p class="muted">Examples {examples["id"]} '
      f'<code>{escape(examples["uri"])}</code>'
      + (' (reused from the cache)' if examples['cached'] else '') + '</p>',
      f'<div class="tiles">{"".join(tiles)}</div>',
      failed_or_missing(section['class_names']) or '', '<div class="row">']
  balance = section['class_balance']
  parts.append('<div><h3>Class balance</h3>' + (
      failed_or_missing(balance) or svg.grouped_bars(
          balance['classes'], balance['splits'],
          'records per class and split') + _balance_table(balance))
               + '</div>')
  samples = section['samples']
  parts.append('<div><h3>Samples</h3>' + (
      failed_or_missing(samples) or
      f'<p class="muted">Up to {samples["per_class"]} images of each '
      f'class, the first in split {escape(samples["split"])}.</p>'
      + picture(samples, 'sample images per class')) + '</div>')
  parts.append('</div>')
  parts.append('<h3>Anomalies (ExampleValidator)</h3>' + _anomalies(
      section['anomalies']))
  parts.append('<h3>Statistics (StatisticsGen)</h3>' + _statistics(
      section['statistics']))
  return _section('data', 'Data', ''.join(parts),
                  'CACHED' if examples['cached'] else None)


def _balance_table(balance: Dict[str, Any]) -> str:
  """The chart's counts, folded away (long for many classes)."""
  splits = list(balance['splits'])
  rows = [[escape(name)] + [number(balance['splits'][split][i])
                            for split in splits]
          for i, name in enumerate(balance['classes'])]
  return ('<details><summary class="muted">records per class</summary>'
          + table(['class'] + splits, rows, [False] + [True] * len(splits))
          + '</details>')


def _anomalies(part: Dict[str, Any]) -> str:
  missing = failed_or_missing(part)
  if missing:
    return missing
  out = []
  for split, rows in part['splits'].items():
    if not rows:
      out.append(f'<p>split <b>{escape(split)}</b>: '
                 '<span class="ok">none</span></p>')
      continue
    out.append(f'<p>split <b>{escape(split)}</b>: <span class="bad">'
               f'{len(rows)} anomalies</span></p>')
    out.append(table(['feature', 'anomaly', 'description'], [
        [f'<b>{escape(r["feature"])}</b>', escape(r['short_description']),
         escape(r['description'])] for r in rows]))
  return ''.join(out)


def _statistics(part: Dict[str, Any]) -> str:
  missing = failed_or_missing(part)
  if missing:
    return missing
  out = []
  if part.get('cached'):
    out.append('<p class="muted">Computed by an earlier run (StatisticsGen '
               'was answered from the cache).</p>')
  out.append('<div class="row">')
  for split, data in part['splits'].items():
    rows = []
    # By name: every split's table in the same order.
    for f in sorted(data['features'], key=lambda f: f['feature']):
      note = ''
      if 'avg_bytes' in f:
        note = f'{number(f.get("avg_bytes"))} bytes on average'
        if f.get('unique') is not None:
          note += f', {number(f["unique"])} unique'
      rows.append([f'<b>{escape(f["feature"])}</b>',
                   escape(f['type'].lower()),
                   number(f.get('present')), number(f.get('missing')),
                   number(f.get('min')), number(f.get('max')),
                   number(f.get('mean')), escape(note)])
    out.append(f'<div><p>split <b>{escape(split)}</b>: '
               f'{number(data["records"])} records</p>'
               + table(['feature', 'type', 'count', 'missing', 'min', 'max',
                        'mean', ''], rows,
                       [False, False, True, True, True, True, True, False])
               + '</div>')
  out.append('</div>')
  return ''.join(out)


# -------------------------------------------------------------- training --

_CURVES = (('loss', 'Loss', False), ('accuracy', 'Accuracy', True))


def _training(section: Dict[str, Any]) -> str:
  missing = failed_or_missing(section)
  if missing:
    return _section('training', 'Training', missing, _section_state(section))
  curves = section['curves']
  parts = [f'<p class="muted">Model {section["model"]["id"]} '
           f'<code>{escape(section["model"]["uri"])}</code>'
           + (f' — trained by run {escape(section["trained_in_run"])} (the '
              'Trainer was answered from the cache)' if section['cached']
              else '') + '</p>']
  tiles = [tile('training time', escape(duration(section['seconds'])))]
  if 'error' not in curves:
    tiles.insert(0, tile('epochs', number(curves['epochs'])))
    for metric, title, _ in _CURVES:
      for subset, values in curves['metrics'].get(metric, {}).items():
        last = next((v for v in reversed(values) if v is not None), None)
        tiles.append(tile(f'{subset} {metric}, last epoch', number(last)))
  parts.append(f'<div class="tiles">{"".join(tiles)}</div>')
  if 'error' in curves:
    parts.append(error_box(curves))
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
               else number(value) if not isinstance(value, str) else value)
      rows.append([f'<code>{escape(prefix + key)}</code>', escape(shown)])
  return rows


def _settings(part: Dict[str, Any], curves: Dict[str, Any]) -> str:
  missing = failed_or_missing(part)
  if missing:
    return missing
  rows = _flatten(part['training'])
  rows.append(['<code>train_steps</code>', escape(
      number(part['train_steps']) if part['train_steps'] else
      'one pass over the data per epoch')])
  rows.append(['<code>eval_steps</code>', escape(
      number(part['eval_steps']) if part['eval_steps'] else
      'the whole eval split')])
  rates = curves.get('metrics', {}).get('lr', {}).get('train')
  if rates:
    rows.append(['learning rate per epoch', escape(', '.join(
        f'{r:.3g}' for r in rates if r is not None))])
  return table(['setting', 'value'], rows)


def _devices(part: Dict[str, Any]) -> str:
  missing = failed_or_missing(part)
  if missing:
    return missing
  rows = [['devices', escape(', '.join(part.get('devices') or []) or 'CPU')],
          ['strategy', escape(part.get('strategy'))],
          ['precision', escape(part.get('precision'))],
          ['global batch', number(part.get('global_batch_size'))],
          # Plans written before multi-worker training have no count: one.
          ['workers', number(part.get('workers', 1))]]
  return (f'<p>{escape(part.get("description", ""))}</p>'
          + table(['', ''], rows))


# ------------------------------------------------------------ evaluation --


def _evaluation(section: Dict[str, Any]) -> str:
  missing = failed_or_missing(section)
  if missing:
    return _section('evaluation', 'Evaluation and push', missing,
                    _section_state(section))
  verdict = section['verdict']
  parts = []
  if 'error' in verdict:
    parts.append(error_box(verdict))
  else:
    parts.append(_verdict(verdict, section['model']))
  parts.append('<div class="row"><div><h3>Confusion matrix</h3>')
  confusion = section['confusion']
  parts.append(failed_or_missing(confusion) or (
      f'<p class="muted">Model {section["model"]["id"]} on the '
      f'{escape(confusion["examples"]["split"])} split of Examples '
      f'{confusion["examples"]["id"]}: rows are the true class, columns the '
      f'predicted one; accuracy {confusion["accuracy"]:.2%} of '
      f'{confusion["examples_count"]:,}.</p>'
      + picture(confusion, 'confusion matrix')))
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
         + (f' (evaluation of run {escape(verdict["evaluation"]["run"])}).'
            if verdict.get('evaluation') else '.')
         + (' Baseline: model ' + escape(baseline['id']) + ', the last blessed '
            'one.' if baseline else ' No baseline: no model was blessed '
            'before.') + '</p>']
  if not blessed and verdict['reasons']:
    out.append('<p class="bad">Why not: '
               + escape('; '.join(verdict['reasons']))
               + '</p>')
  tiles, gauges, rows = [], [], []
  for check in verdict['checks']:
    value = check.get('value')
    tiles.append(tile(check['metric'].replace('_', ' '), number(value),
                      f'threshold ≥ {check["lower_bound"]:g}'
                      if check.get('lower_bound') is not None else ''))
    threshold = ('-' if check.get('lower_bound') is None
                 else f'≥ {check["lower_bound"]:g}')
    diff = '-' if check.get('diff') is None else f'{check["diff"]:+.4f}'
    if check.get('baseline') is not None:
      tiles.append(tile('baseline', number(check['baseline']),
                        escape(f'diff {diff}')))
    if value is not None:
      gauges.append(svg.gauge(value, check.get('lower_bound'),
                              check.get('baseline'), check['metric']))
    rows.append([f'<code>{escape(check["metric"])}</code>', number(value),
                 escape(threshold), number(check.get('baseline')),
                 escape(diff),
                 escape('no worse than the baseline'
                        if check.get('no_worse_than_baseline') else '-')])
  if verdict.get('examples') is not None:
    tiles.append(tile('evaluated on', number(verdict['examples']),
                      'eval records'))
  out.append(f'<div class="tiles">{"".join(tiles)}</div>')
  out.extend(gauges)
  out.append(table(['metric', 'value', 'threshold', 'baseline', 'diff',
                    'change rule'], rows,
                   [False, True, True, True, True, False]))
  return ''.join(out)


def _push(part: Dict[str, Any]) -> str:
  missing = failed_or_missing(part)
  if missing:
    return missing
  if part['already_served']:
    what = ('<span class="ok">Already served</span>, not pushed again: '
            f'<code>{escape(part["destination"])}</code>')
  elif part['pushed']:
    what = (f'<span class="ok">Pushed</span> to '
            f'<code>{escape(part["destination"])}</code>')
  else:
    what = '<span class="bad">Not pushed</span> (the model was not blessed)'
  return (f'<p>{what}</p><p class="muted">PushedModel {part["id"]} '
          f'<code>{escape(part["uri"])}</code>'
          + (' (Pusher answered from the cache)' if part['cached'] else '')
          + '</p>')


# --------------------------------------------------------------- lineage --


def _lineage(section: Dict[str, Any]) -> str:
  missing = failed_or_missing(section)
  if missing:
    return _section('lineage', 'Lineage', missing, _section_state(section))
  root = section['root']
  content = (f'<p class="muted">From {escape(root["type"])} {root["id"]} '
             'back to '
             'the input files: each artifact, the execution that made it, '
             'and that execution\'s inputs. An artifact met again is not '
             'expanded twice.</p><ul class="tree">'
             + lineage_html.tree(section['tree']) + '</ul>')
  return _section('lineage', 'Lineage', content)


# ------------------------------------------------------------------ page --


# The sections in page order: anchor, title, facts key, renderer.
_SECTIONS = (('pipeline', 'Pipeline', 'dag', _dag),
             ('data', 'Data', 'data', _data),
             ('training', 'Training', 'training', _training),
             ('evaluation', 'Evaluation and push', 'evaluation', _evaluation),
             ('lineage', 'Lineage', 'lineage', _lineage))


def _render(anchor: str, title: str, render, facts: Dict[str, Any]) -> str:
  """One section; if drawing it fails, a section saying so (the log has
  the traceback), so the rest of the page still comes."""
  try:
    return render(facts)
  except Exception as e:  # pylint: disable=broad-except
    logging.exception('run report: the %s section could not be drawn', title)
    return _section(anchor, title, error_box(
        {'error': f'drawing the section: {type(e).__name__}: {e}'}), 'FAILED')


def page(facts: Dict[str, Any]) -> str:
  """The whole report as one HTML document."""
  run = facts['run']
  title = f'Run {run["id"]} of {run["pipeline"]}'
  nav = ''.join(f'<a href="#{anchor}">{escape(name)}</a>'
                for anchor, name, _, _ in _SECTIONS)
  body = (_header(run) + _outcome(facts['outcome']) + f'<nav>{nav}</nav>'
          + ''.join(_render(anchor, name, render, facts[key])
                    for anchor, name, key, render in _SECTIONS))
  return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
          '<meta name="viewport" content="width=device-width, '
          'initial-scale=1">'
          f'<title>{escape(title)}</title><style>{STYLE}</style></head>\n'
          f'<body><main>{body}<footer>From {escape(run["store"])}. The '
          'report of any run: <code>python -m inspector report RUN --html '
          'FILE</code>.</footer>'
          '</main></body></html>\n')
