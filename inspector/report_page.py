"""The run report's page: report.gather's facts drawn by the Jinja2 templates
in templates/ (autoescaped) into one self-contained HTML file: inline CSS,
inline SVG charts, pictures as data: URIs; no scripts, no network.
Each section is drawn on its own. See docs/metadata.md, "The run report".
"""

import logging
from typing import Any, Dict

import jinja2
from markupsafe import Markup

from inspector import artifacts
from inspector import charts
from inspector import history
from inspector import labels
from inspector import lineage
from inspector import render

SECTIONS = (('pipeline', 'Pipeline', 'dag'), ('data', 'Data', 'data'),
            ('training', 'Training', 'training'),
            ('evaluation', 'Evaluation and push', 'evaluation'),
            ('history', 'History', 'history'),
            ('labels', 'Doubtful labels', 'labels'),
            ('lineage', 'Lineage', 'lineage'))


def _flatten(values: Dict[str, Any], prefix: str = ''):
  """(dotted key, value) of nested settings."""
  for key, value in values.items():
    if isinstance(value, dict):
      yield from _flatten(value, f'{prefix}{key}.')
    else:
      yield prefix + key, value


def _chart(draw):
  return lambda *args: Markup(draw(*args))


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader('inspector', 'templates'),
    autoescape=True, undefined=jinja2.StrictUndefined,
    trim_blocks=True, lstrip_blocks=True)
_ENV.filters.update(
    number=render.number, duration=render.duration,
    short_time=render.short_time,
    timestamp=lambda seconds: render.timestamp(int(seconds * 1000)),
    flatten=_flatten, summary=artifacts.summary_text,
    short_source=lambda source: labels.short(source, 32),
    split_facts=lineage.split_facts, more_files=lineage.more_files)
_ENV.globals.update(
    STATE_COLOURS=charts.STATE_COLOURS, NOT_RUN='NOT RUN',
    dag_chart=_chart(lambda nodes: charts.dag(nodes, render.duration)),
    bars_chart=_chart(charts.grouped_bars), lines_chart=_chart(charts.lines),
    gauge_chart=_chart(charts.gauge), confusion_chart=_chart(charts.confusion),
    history_chart=_chart(lambda runs: charts.history(runs, _run_label)),
    history_table=history.table, history_legend=history.LEGEND)


def _run_label(run: Dict[str, Any]) -> str:
  """A run's tick in the history chart: when it started, and its spans."""
  when = render.short_time(run['started'])[5:16]  # MM-DD HH:MM
  return f'{when}\nspan {history.spans_text(run["spans"])}'


def _section(anchor: str, title: str, part: Dict[str, Any]) -> Markup:
  sections = _ENV.get_template('sections.html').module
  try:
    return getattr(sections, anchor)(anchor, title, part)
  except Exception as e:  # pylint: disable=broad-except
    logging.exception('run report: the %s section could not be drawn', title)
    return sections.failed(anchor, title, {
        'error': f'drawing the section: {type(e).__name__}: {e}'})


def page(facts: Dict[str, Any]) -> str:
  """The whole report as one HTML document; a section whose facts are None
  (the history of a first run) is left out."""
  shown = [s for s in SECTIONS if facts.get(s[2]) is not None]
  return _ENV.get_template('report.html').render(
      facts=facts, sections=shown,
      drawn=[_section(anchor, title, facts[key])
             for anchor, title, key in shown])
