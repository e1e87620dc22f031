"""Inline SVG for the run report: the DAG, bar charts and line charts.

Hand-written SVG, no plotting library: the charts are few and simple, and the
report must hold everything itself (no scripts, no external files). Every
text is escaped; every mark carries data-* attributes saying what it shows,
so a test can read a chart back from the page.
"""

import html
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

# One colour per series (train, validation/eval, ...), colour-blind safe.
SERIES_COLOURS = ('#2563eb', '#ea580c', '#059669', '#9333ea')
STATE_COLOURS = {'COMPLETE': '#16a34a', 'CACHED': '#0891b2',
                 'FAILED': '#dc2626', 'RUNNING': '#ca8a04',
                 'CANCELED': '#c026d3', 'NOT RUN': '#9ca3af'}
_TEXT = '#1f2937'
_MUTED = '#6b7280'
_GRID = '#e5e7eb'
_FONT = ('font-family="-apple-system, Segoe UI, Roboto, Helvetica, Arial, '
         'sans-serif"')


def _e(value: Any) -> str:
  return html.escape(str(value), quote=True)


def _svg(width: float, height: float, body: List[str], label: str) -> str:
  # viewBox and width 100%: the picture scales to its column. Inline SVG in
  # HTML needs no xmlns (and the page names no URL at all).
  return (f'<svg role="img" '
          f'aria-label="{_e(label)}" viewBox="0 0 {width:.0f} {height:.0f}" '
          f'width="100%" style="max-width:{width:.0f}px" {_FONT}>'
          + ''.join(body) + '</svg>')


def _number(value: float) -> str:
  if abs(value) >= 1000:
    return f'{value:,.0f}'
  return f'{value:.3g}'


# ------------------------------------------------------------------- DAG --

_BOX_W, _GAP_X, _GAP_Y, _LINE_H, _MARGIN = 122, 18, 16, 14, 4


def _layers(nodes: Sequence[Dict[str, Any]]) -> Dict[str, int]:
  """Column of each node: its longest path from a source; a source that
  feeds later components sits just before its first consumer."""
  upstream = {n['node']: [u for u in n['upstream']] for n in nodes}
  layer: Dict[str, int] = {}

  def depth(name: str, seen=()) -> int:
    if name not in layer:
      parents = [u for u in upstream.get(name, []) if u not in seen]
      layer[name] = 1 + max((depth(u, seen + (name,)) for u in parents),
                            default=-1)
    return layer[name]

  for name in upstream:
    depth(name)
  for name, parents in upstream.items():
    consumers = [c for c, ups in upstream.items() if name in ups]
    if not parents and consumers:
      layer[name] = max(0, min(layer[c] for c in consumers) - 1)
  return layer


def _reduced_edges(nodes: Sequence[Dict[str, Any]]) -> List[Tuple[str, str]]:
  """u -> v for each direct dependency not implied by a longer path (the
  Trainer also reads ExampleGen's output, but after Transform anyway)."""
  upstream = {n['node']: set(n['upstream']) for n in nodes}

  def ancestors(name: str, seen=None) -> set:
    seen = set() if seen is None else seen
    for parent in upstream.get(name, ()):
      if parent not in seen:
        seen.add(parent)
        ancestors(parent, seen)
    return seen

  edges = []
  for v, parents in upstream.items():
    for u in parents:
      implied = any(u in ancestors(other) for other in parents if other != u)
      if not implied:
        edges.append((u, v))
  return edges


def _name_lines(name: str) -> List[str]:
  """Long component ids over two lines, split after an underscore."""
  if len(name) <= 16 or '_' not in name:
    return [name]
  middle = len(name) // 2
  cut = min((i for i, c in enumerate(name) if c == '_'),
            key=lambda i: abs(i - middle))
  return [name[:cut + 1], name[cut + 1:]]


def _fit(text: str) -> str:
  """Squeezes a name that would overflow its box (fonts differ by machine:
  the estimate is a wide bold sans serif's)."""
  room = _BOX_W - 13 - 6
  if len(text) * 11.5 * 0.66 <= room:
    return ''
  return f' textLength="{room}" lengthAdjust="spacingAndGlyphs"'


def dag(nodes: Sequence[Dict[str, Any]], duration) -> str:
  """Boxes left to right by dependency, coloured by state, with wall time
  and cache hits; `duration` formats seconds."""
  layer = _layers(nodes)
  rows: Dict[int, int] = {}
  place = {}
  for node in nodes:
    column = layer[node['node']]
    place[node['node']] = (column, rows.get(column, 0))
    rows[column] = rows.get(column, 0) + 1
  lines = {n['node']: _name_lines(n['node']) + ['state', 'time']
           for n in nodes}
  box_h = max(len(v) for v in lines.values()) * _LINE_H + 12
  columns = max(layer.values()) + 1 if layer else 1
  width = 2 * _MARGIN + columns * (_BOX_W + _GAP_X) - _GAP_X
  height = 2 * _MARGIN + max(rows.values(), default=1) * (box_h + _GAP_Y) \
      - _GAP_Y

  def corner(name: str) -> Tuple[float, float]:
    column, row = place[name]
    return (_MARGIN + column * (_BOX_W + _GAP_X),
            _MARGIN + row * (box_h + _GAP_Y))

  body = ['<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" '
          'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
          f'<path d="M0,0 L8,4 L0,8 z" fill="{_MUTED}"/></marker></defs>']
  for u, v in _reduced_edges(nodes):
    (x1, y1), (x2, y2) = corner(u), corner(v)
    x1, y1, x2, y2 = x1 + _BOX_W, y1 + box_h / 2, x2 - 2, y2 + box_h / 2
    bend = (x2 - x1) / 2
    body.append(f'<path class="dag-edge" data-from="{_e(u)}" '
                f'data-to="{_e(v)}" d="M{x1:.0f},{y1:.0f} C{x1 + bend:.0f},'
                f'{y1:.0f} {x2 - bend:.0f},{y2:.0f} {x2:.0f},{y2:.0f}" '
                f'fill="none" stroke="{_MUTED}" stroke-width="1.4" '
                'marker-end="url(#arrow)"/>')
  for node in nodes:
    x, y = corner(node['node'])
    state = node['state']
    colour = STATE_COLOURS.get(state, _MUTED)
    dashed = ' stroke-dasharray="5 4"' if state == 'NOT RUN' else ''
    fill = '#f9fafb' if state == 'NOT RUN' else '#ffffff'
    body.append(f'<g class="dag-node" data-node="{_e(node["node"])}" '
                f'data-state="{_e(state)}" '
                f'data-cached="{str(node["cached"]).lower()}">')
    body.append(f'<title>{_e(node["node"])}: {_e(state)}</title>')
    body.append(f'<rect x="{x}" y="{y}" width="{_BOX_W}" height="{box_h}" '
                f'rx="8" fill="{fill}" stroke="{colour}" stroke-width="2"'
                f'{dashed}/>')
    body.append(f'<rect x="{x}" y="{y}" width="6" height="{box_h}" rx="3" '
                f'fill="{colour}"/>')
    text_y = y + 18
    for part in _name_lines(node['node']):
      body.append(f'<text x="{x + 13}" y="{text_y}" font-size="11.5" '
                  f'font-weight="600" fill="{_TEXT}"{_fit(part)}>{_e(part)}'
                  '</text>')
      text_y += _LINE_H
    body.append(f'<text x="{x + 13}" y="{text_y}" font-size="11" '
                f'font-weight="600" fill="{colour}">{_e(state)}</text>')
    text_y += _LINE_H
    if state == 'NOT RUN':
      when = 'did not run'
    elif node['cached']:
      when = 'cache hit'
    else:
      when = duration(node['seconds'])
    body.append(f'<text x="{x + 13}" y="{text_y}" font-size="11" '
                f'fill="{_MUTED}">{_e(when)}</text>')
    body.append('</g>')
  return _svg(width, height, body, 'the pipeline DAG')


# ------------------------------------------------------------ bar charts --


def grouped_bars(categories: Sequence[str], series: Dict[str, Sequence[int]],
                 label: str) -> str:
  """One group per category, one bar per series (e.g. per split)."""
  names = list(series)
  top = max((v for values in series.values() for v in values), default=0) or 1
  bar_w = max(6, min(24, 440 // max(1, len(categories) * len(names))))
  group_w = bar_w * len(names) + 10
  left, bottom, head = 48, 40, 30
  plot_h = 200
  width = max(360, left + len(categories) * group_w + 16)
  height = head + plot_h + bottom
  body = _legend(names, left, 14)
  for tick in _ticks(0, top):
    y = head + plot_h - tick / top * plot_h
    body.append(f'<line x1="{left}" x2="{width - 8}" y1="{y:.1f}" '
                f'y2="{y:.1f}" stroke="{_GRID}"/>')
    body.append(f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="11" '
                f'text-anchor="end" fill="{_MUTED}">{_number(tick)}</text>')
  # Counts above the bars only where they fit (9px digits are ~5.4px wide);
  # the bars' tooltips always have them.
  widest = max((len(f'{v:,}') for values in series.values() for v in values),
               default=0)
  show_values = widest * 5.4 <= bar_w
  for c, category in enumerate(categories):
    x0 = left + c * group_w + 5
    for s, name in enumerate(names):
      value = series[name][c]
      h = value / top * plot_h
      x, y = x0 + s * bar_w, head + plot_h - h
      body.append(
          f'<rect class="bar" data-series="{_e(name)}" '
          f'data-category="{_e(category)}" data-value="{value}" x="{x}" '
          f'y="{y:.1f}" width="{bar_w - 2}" height="{h:.1f}" '
          f'fill="{SERIES_COLOURS[s % len(SERIES_COLOURS)]}">'
          f'<title>{_e(name)}, {_e(category)}: {value:,}</title></rect>')
      if show_values and value:
        body.append(f'<text x="{x + (bar_w - 2) / 2:.1f}" y="{y - 3:.1f}" '
                    f'font-size="9" text-anchor="middle" fill="{_MUTED}">'
                    f'{value:,}</text>')
    body.append(f'<text x="{x0 + bar_w * len(names) / 2:.1f}" '
                f'y="{head + plot_h + 16}" font-size="11" text-anchor="middle"'
                f' fill="{_TEXT}">{_e(_short(category))}</text>')
  body.append(f'<text x="{left + (width - left) / 2:.0f}" y="{height - 6}" '
              f'font-size="11" text-anchor="middle" fill="{_MUTED}">class'
              '</text>')
  return _svg(width, height, body, label)


def _short(text: str, limit: int = 10) -> str:
  return text if len(text) <= limit else text[:limit - 1] + '…'


def _legend(names: Sequence[str], x: float, y: float) -> List[str]:
  body = []
  for s, name in enumerate(names):
    colour = SERIES_COLOURS[s % len(SERIES_COLOURS)]
    body.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" rx="2" '
                f'fill="{colour}"/><text x="{x + 14}" y="{y}" font-size="11" '
                f'fill="{_TEXT}">{_e(name)}</text>')
    x += 22 + 7 * len(name)
  return body


def _ticks(low: float, high: float, count: int = 4) -> List[float]:
  """About `count` round values (1, 2, 2.5 or 5 times a power of 10 apart)
  from low to high."""
  span = high - low
  if span <= 0:
    return [low]
  raw = span / count
  magnitude = 10 ** math.floor(math.log10(raw))
  step = next(m * magnitude for m in (1, 2, 2.5, 5, 10)
              if m * magnitude >= raw)
  ticks = []
  value = math.ceil(low / step) * step
  while value <= high + step * 1e-9:
    ticks.append(round(value, 10))
    value += step
  return ticks


# ----------------------------------------------------------- line charts --


def lines(epochs: int, series: Dict[str, Sequence[Optional[float]]],
          label: str, unit_range: bool = False) -> str:
  """One line per series over epochs 1..N, a dot per epoch.

  unit_range: the values are fractions (accuracies): the y axis ends at 1
  and starts low enough to show them apart (unit_floor); else it spans
  0..the largest value.
  """
  left, right, head, bottom = 52, 14, 28, 34
  plot_w, plot_h = 420, 190
  width, height = left + plot_w + right, head + plot_h + bottom
  values = [v for vs in series.values() for v in vs if v is not None]
  high = 1.0 if unit_range else (max(values) * 1.1 if values else 1.0)
  low = unit_floor(values) if unit_range else 0.0
  if not unit_range and values and min(values) < 0:
    low = min(values) * 1.1
  high = high if high > low else low + 1

  def x_of(epoch: int) -> float:  # epoch counts from 1
    if epochs <= 1:
      return left + plot_w / 2
    return left + (epoch - 1) / (epochs - 1) * plot_w

  def y_of(value: float) -> float:
    return head + plot_h - (value - low) / (high - low) * plot_h

  body = _legend(list(series), left, 14)
  for tick in _ticks(low, high):
    y = y_of(tick)
    body.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" '
                f'y2="{y:.1f}" stroke="{_GRID}"/><text x="{left - 6}" '
                f'y="{y + 4:.1f}" font-size="11" text-anchor="end" '
                f'fill="{_MUTED}">{_number(tick)}</text>')
  step = max(1, epochs // 10)
  for epoch in range(1, epochs + 1, step):
    body.append(f'<text x="{x_of(epoch):.1f}" y="{head + plot_h + 16}" '
                f'font-size="11" text-anchor="middle" fill="{_MUTED}">'
                f'{epoch}</text>')
  body.append(f'<text x="{left + plot_w / 2:.0f}" y="{height - 4}" '
              f'font-size="11" text-anchor="middle" fill="{_MUTED}">epoch'
              '</text>')
  for s, (name, values) in enumerate(series.items()):
    colour = SERIES_COLOURS[s % len(SERIES_COLOURS)]
    points = [(e + 1, v) for e, v in enumerate(values) if v is not None]
    if len(points) > 1:
      path = ' '.join(f'{x_of(e):.1f},{y_of(v):.1f}' for e, v in points)
      body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                  'stroke-width="2"/>')
    for epoch, value in points:
      body.append(f'<circle class="point" data-series="{_e(name)}" '
                  f'data-epoch="{epoch}" data-value="{value:.6g}" '
                  f'cx="{x_of(epoch):.1f}" cy="{y_of(value):.1f}" r="3.5" '
                  f'fill="{colour}"><title>{_e(name)}, epoch {epoch}: '
                  f'{value:.4g}</title></circle>')
  return _svg(width, height, body, label)


# ----------------------------------------------------------------- gauge --


def unit_floor(values: Sequence[float]) -> float:
  """Where an axis of fractions (ending at 1) should start: low enough to
  show the smallest value, high enough that 0.9895 and 0.99 look apart."""
  if not values:
    return 0.0
  smallest = min(values)
  # As far again below the smallest value as it is below 1.
  wanted = smallest - (1 - smallest)
  return max([0.0] + [c for c in (0.5, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99)
                      if c <= wanted])


def gauge(value: float, threshold: Optional[float], baseline: Optional[float],
          label: str) -> str:
  """A bar filled to `value` (a fraction), with the threshold and baseline
  marked; it starts at unit_floor of the three, so close values look apart."""
  left, width, bar_y, bar_h = 12, 520, 26, 16
  span = width - 2 * left
  low = unit_floor([v for v in (value, threshold, baseline) if v is not None])

  def x_of(v: float) -> float:
    return left + max(0.0, min(1.0, (v - low) / (1 - low))) * span

  colour = SERIES_COLOURS[0]
  if threshold is not None and value < threshold:
    colour = STATE_COLOURS['FAILED']
  body = [f'<rect x="{left}" y="{bar_y}" width="{span}" height="{bar_h}" '
          f'rx="4" fill="{_GRID}"/>',
          f'<rect class="gauge-value" data-value="{value:.6g}" x="{left}" '
          f'y="{bar_y}" width="{x_of(value) - left:.1f}" '
          f'height="{bar_h}" rx="4" fill="{colour}"/>']
  for tick in _ticks(low, 1.0):
    body.append(f'<text x="{x_of(tick):.1f}" y="{bar_y + bar_h + 14}"'
                f' font-size="10" text-anchor="middle" fill="{_MUTED}">'
                f'{tick:g}</text>')
  marks = [('threshold', threshold, STATE_COLOURS['FAILED'], 12),
           ('baseline', baseline, _TEXT, bar_y + bar_h + 28)]
  for name, mark, mark_colour, text_y in marks:
    if mark is None:
      continue
    x = x_of(mark)
    body.append(f'<line class="gauge-{name}" data-value="{mark:.6g}" '
                f'x1="{x:.1f}" x2="{x:.1f}" y1="{bar_y - 4}" '
                f'y2="{bar_y + bar_h + 4}" stroke="{mark_colour}" '
                f'stroke-width="2.5"/>')
    where = (x - left) / span
    anchor = 'end' if where > 0.8 else 'start' if where < 0.2 else 'middle'
    body.append(f'<text x="{x:.1f}" y="{text_y}" font-size="10" '
                f'text-anchor="{anchor}" fill="{mark_colour}">{name} '
                f'{mark:.4g}</text>')
  return _svg(width, bar_y + bar_h + 34, body, label)
