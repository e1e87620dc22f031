"""The report's charts and the confusion matrix picture, drawn by matplotlib.

Figures are made without pyplot (no global state, no interactive backend);
SVG output keeps its text as text, carries no date and a fixed hash salt, so
the same facts give the same picture.
"""

import functools
import io
import re
from typing import Any, Dict, List, Optional, Sequence

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch
import numpy as np

STATE_COLOURS = {'COMPLETE': '#16a34a', 'CACHED': '#0891b2',
                 'FAILED': '#dc2626', 'RUNNING': '#ca8a04',
                 'CANCELED': '#c026d3', 'NOT RUN': '#9ca3af'}
_SVG = {'svg.hashsalt': 'inspector', 'svg.fonttype': 'none',
        'font.size': 9, 'axes.spines.top': False, 'axes.spines.right': False}


def _styled(draw):
  @functools.wraps(draw)
  def drawn(*args, **kwargs):
    with matplotlib.rc_context(_SVG):
      return draw(*args, **kwargs)
  return drawn


def _save(figure: Figure, fmt: str = 'svg', path: Optional[str] = None):
  """The figure as inline SVG text, or written to `path` as `fmt` (then
  its size in pixels)."""
  if path:
    figure.savefig(path, format=fmt, dpi=100, metadata={'Software': None})
    return {'width': round(figure.get_figwidth() * 100),
            'height': round(figure.get_figheight() * 100)}
  buffer = io.BytesIO()
  figure.savefig(buffer, format='svg', metadata={'Date': None})
  text = buffer.getvalue().decode()
  # Inline in HTML: no XML prologue, namespaces or RDF metadata (URLs all).
  text = re.sub(r'<metadata>.*?</metadata>|\s?xmlns(:xlink)?="[^"]*"', '',
                text[text.index('<svg'):], flags=re.S)
  return text


def _figure(width: float, height: float, layout='constrained') -> Figure:
  return Figure(figsize=(width, height), layout=layout)


@_styled
def dag(nodes: Sequence[Dict[str, Any]], duration) -> str:
  """Boxes left to right by dependency, coloured by state, with wall time
  and cache hits; arrows for what each node waits for (ones a longer path
  implies left out). `duration` formats seconds."""
  upstream = {n['node']: set(n['upstream']) for n in nodes}
  column: Dict[str, int] = {}
  for name in upstream:  # Nodes come in topological order.
    column[name] = 1 + max((column[u] for u in upstream[name] if u in column),
                           default=-1)
  for name in upstream:  # A source sits just before its first consumer.
    consumers = [column[c] for c, ups in upstream.items() if name in ups]
    if not upstream[name] and consumers:
      column[name] = max(0, min(consumers) - 1)
  rows: Dict[int, int] = {}
  place = {}
  for name in upstream:
    place[name] = (column[name], rows.get(column[name], 0))
    rows[column[name]] = rows.get(column[name], 0) + 1
  width, height = max(column.values(), default=0) + 1, max(rows.values(),
                                                            default=1)
  figure = _figure(1.4 * width, 0.85 * height + 0.1, layout=None)
  axes = figure.add_axes((0, 0, 1, 1))
  axes.set_xlim(-0.05, width - 0.07)
  axes.set_ylim(height - 0.15, -0.15)
  axes.axis('off')

  def ancestors(name, seen):
    for parent in upstream[name]:
      if parent not in seen:
        seen.add(parent)
        ancestors(parent, seen)
    return seen

  for name, parents in upstream.items():
    for parent in parents:
      if any(parent in ancestors(o, set()) for o in parents if o != parent):
        continue
      (x1, y1), (x2, y2) = place[parent], place[name]
      axes.annotate('', xy=(x2, y2 + 0.3), xytext=(x1 + 0.88, y1 + 0.3),
                    arrowprops={'arrowstyle': '-|>', 'color': '#6b7280',
                                'connectionstyle': 'arc3,rad=0.1'})
  for node in nodes:
    x, y = place[node['node']]
    state = node['state']
    colour = STATE_COLOURS.get(state, '#6b7280')
    axes.add_patch(FancyBboxPatch(
        (x, y - 0.08), 0.88, 0.7, boxstyle='round,pad=0,rounding_size=0.06',
        facecolor='#f9fafb' if state == 'NOT RUN' else 'white',
        edgecolor=colour, linewidth=1.8,
        linestyle='--' if state == 'NOT RUN' else '-'))
    when = ('did not run' if state == 'NOT RUN' else 'cache hit'
            if node['cached'] else duration(node['seconds']))
    name = node['node']
    if len(name) > 16 and '_' in name:  # Two lines, cut at an underscore.
      cut = min((i for i, c in enumerate(name) if c == '_'),
                key=lambda i: abs(i - len(name) / 2))
      name = f'{name[:cut + 1]}\n{name[cut + 1:]}'
    axes.text(x + 0.05, y + 0.2, name, fontweight='bold', va='bottom',
              fontsize=7.5, linespacing=1.15)
    axes.text(x + 0.05, y + 0.37, state, color=colour, fontweight='bold')
    axes.text(x + 0.05, y + 0.54, when, color='#6b7280')
  return _save(figure)


@_styled
def grouped_bars(categories: Sequence[str],
                 series: Dict[str, Sequence[int]], ylabel: str) -> str:
  """One group of bars per category, one bar per series (e.g. split)."""
  figure = _figure(5.2, 2.6)
  axes = figure.add_subplot()
  width = 0.8 / max(1, len(series))
  positions = np.arange(len(categories))
  for i, (name, values) in enumerate(series.items()):
    bars = axes.bar(positions + i * width, values, width, label=name)
    if len(categories) <= 12:
      axes.bar_label(bars, fontsize=6.5)
  axes.set_xticks(positions + width * (len(series) - 1) / 2, categories,
                  rotation=45 if len(categories) > 12 else 0)
  axes.set_xlabel('class')
  axes.set_ylabel(ylabel)
  axes.legend(frameon=False, ncols=len(series), loc='lower right',
              bbox_to_anchor=(1, 1))
  return _save(figure)


@_styled
def lines(epochs: int, series: Dict[str, Sequence[Optional[float]]],
          ylabel: str) -> str:
  """One line per series over epochs 1..N, a dot per epoch."""
  figure = _figure(4.6, 2.5)
  axes = figure.add_subplot()
  for name, values in series.items():
    points = [(e + 1, v) for e, v in enumerate(values) if v is not None]
    axes.plot(*zip(*points), marker='o', label=name)
  axes.set_xticks(range(1, epochs + 1, max(1, epochs // 10)))
  axes.set_xlabel('epoch')
  axes.set_ylabel(ylabel)
  axes.grid(axis='y', color='#e5e7eb')
  axes.legend(frameon=False)
  return _save(figure)


@_styled
def gauge(value: float, threshold: Optional[float],
          baseline: Optional[float], metric: str) -> str:
  """The metric's value as a bar, with the threshold and baseline marked;
  the axis starts low enough to show all three, high enough to tell
  close values apart.

  Args:
    value: the candidate model's value of the metric, 0 to 1.
    threshold: the blessing's lower bound; None: no mark.
    baseline: the baseline model's value; None: no mark.
    metric: the metric's name, for the axis.

  Returns:
    The chart as inline SVG text.
  """
  marks = [v for v in (value, threshold, baseline) if v is not None]
  low = max([0.0] + [c for c in (0.5, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99)
                     if c <= min(marks) - (1 - min(marks))])
  figure = _figure(5.2, 0.9)
  axes = figure.add_subplot()
  failed = threshold is not None and value < threshold
  axes.barh([0], [value - low], left=low, height=0.5,
            color=STATE_COLOURS['FAILED'] if failed else '#2563eb')
  for name, mark, colour in (('threshold', threshold, '#dc2626'),
                             ('baseline', baseline, '#1f2937')):
    if mark is not None:
      axes.axvline(mark, color=colour, linewidth=2)
      axes.annotate(f'{name} {mark:.4g}', (mark, 0.4), color=colour,
                    ha='center', fontsize=7.5)
  axes.set_xlim(low, 1)
  axes.set_ylim(-0.5, 0.8)
  axes.set_yticks([])
  axes.set_title(f'{metric} {value:.4f}', loc='left', fontsize=8.5)
  return _save(figure)


@_styled
def confusion(matrix: List[List[int]], names: Sequence[str], title: str,
              fmt: str = 'svg', path: Optional[str] = None):
  """Counts in cells coloured by their share of the true class's row.

  Args:
    matrix: counts[true][predicted].
    names: the classes' names, in label order.
    title: the picture's title.
    fmt: with `path`, the file's format (e.g. png).
    path: where to write the picture; None: return it as SVG text.

  Returns:
    The SVG text, or with `path` the written picture's size in pixels.
  """
  counts = np.asarray(matrix, np.int64)
  rows = counts.sum(axis=1, keepdims=True)
  shares = np.divide(counts, rows, out=np.zeros(counts.shape),
                     where=rows > 0)
  side = max(4.5, 0.5 * len(names) + 1.5)
  figure = _figure(side, side)
  axes = figure.add_subplot()
  axes.imshow(shares, cmap='Blues', vmin=0, vmax=1)
  for (i, j), count in np.ndenumerate(counts):
    axes.text(j, i, f'{count:,}', ha='center', va='center', fontsize=8,
              color='white' if shares[i, j] > 0.5 else '#1f2937')
  ticks = range(len(names))
  axes.set_xticks(ticks, names, rotation=90)
  axes.set_yticks(ticks, names)
  axes.set_xlabel('predicted class')
  axes.set_ylabel('true class')
  axes.set_title(title, fontsize=9)
  return _save(figure, fmt, path)


@_styled
def history(runs: Sequence[Dict[str, Any]], label) -> str:
  """The chosen model's accuracy per run, oldest left, beside the served
  model's: a green dot if blessed, a red cross if not, ringed if pushed; a
  run with no evaluation breaks the lines and says what became of it.
  `runs` are inspector.history's rows, newest first; `label(run)` names a
  run's tick."""
  runs = list(reversed(runs))
  figure = _figure(min(12.0, max(5.2, 1.4 + 0.9 * len(runs))), 3.0)
  axes = figure.add_subplot()
  x = np.arange(len(runs))

  def line(key):  # NaN where a run has none: the line breaks there.
    return np.array([np.nan if run[key] is None else run[key]
                     for run in runs], float)

  def where(keep):
    return [i for i, run in enumerate(runs)
            if run['accuracy'] is not None and keep(run)]

  chosen, served = line('accuracy'), line('served_accuracy')
  values = [v for v in (*chosen, *served) if not np.isnan(v)]
  low = max(0.0, min(values, default=0.0) - 0.05)
  axes.plot(x, served, color='#6b7280', linestyle='--', marker='s',
            markersize=4, label='served model')
  axes.plot(x, chosen, color='#2563eb', label='chosen model')
  for keep, style in (
      (lambda run: run['blessed'], {'marker': 'o', 'label': 'blessed',
                                    'color': STATE_COLOURS['COMPLETE']}),
      (lambda run: run['blessed'] is False, {
          'marker': 'X', 'label': 'not blessed',
          'color': STATE_COLOURS['FAILED']}),
      (lambda run: run['pushed'] and not run['already_served'], {
          's': 170, 'facecolors': 'none', 'linewidths': 1.5,
          'edgecolors': STATE_COLOURS['COMPLETE'], 'label': 'pushed'})):
    chosen_here = where(keep)
    if chosen_here:  # The legend names only what the chart shows.
      axes.scatter(chosen_here, chosen[chosen_here], zorder=3, **style)
  for i, run in enumerate(runs):
    if run['accuracy'] is None:
      axes.text(i, low + 0.01, run['outcome'], rotation=90, ha='center',
                va='bottom', fontsize=7, color=STATE_COLOURS['FAILED'])
  axes.set_xlim(-0.6, len(runs) - 0.4)
  axes.set_ylim(low, 1.0)
  axes.set_xticks(x, [label(run) for run in runs], fontsize=7,
                  rotation=45 if len(runs) > 10 else 0)
  axes.set_xlabel('run (oldest left)')
  axes.set_ylabel('accuracy')
  axes.grid(axis='y', color='#e5e7eb')
  figure.legend(frameon=False, ncols=5, loc='outside upper center',
                fontsize=7)
  return _save(figure)
