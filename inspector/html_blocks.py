"""The building blocks of the run report's HTML: its stylesheet, escaping,
state chips, number formats, tables, tiles, pictures, and the boxes that
say a part did not run or could not be built.

Every text from the store or the files goes through `escape`, so names,
paths and anomaly descriptions cannot break the page.
"""

import html
from typing import Any, Dict, List, Optional

from inspector import svg

STYLE = """
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


def escape(value: Any) -> str:
  return html.escape('' if value is None else str(value), quote=True)


def chip(state: str) -> str:
  colour = svg.STATE_COLOURS.get(state, '#6b7280')
  return (f'<span class="chip" style="background:{colour}">{escape(state)}'
          '</span>')


def number(value: Any, digits: int = 4) -> str:
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


def error_box(part: Dict[str, Any]) -> str:
  return (f'<div class="error"><b>Could not build this part:</b> '
          f'{escape(part["error"])} <span class="muted">(the log has the '
          'traceback)</span></div>')


def not_run_box(part: Dict[str, Any]) -> str:
  return f'<div class="notrun"><b>Not run.</b> {escape(part["reason"])}</div>'


def failed_or_missing(part: Optional[Dict[str, Any]]) -> Optional[str]:
  """The error or not-run box of a part, or None when it has content."""
  if part is None:
    return '<div class="notrun">Not recorded.</div>'
  if 'error' in part:
    return error_box(part)
  if part.get('status') == 'not_run':
    return not_run_box(part)
  return None


def tile(label: str, value: str, sub: str = '') -> str:
  return (f'<div class="tile"><div class="label">{escape(label)}</div>'
          f'<div class="value">{value}</div>'
          + (f'<div class="sub">{sub}</div>' if sub else '') + '</div>')


def table(headers: List[str], rows: List[List[str]],
          numeric: Optional[List[bool]] = None) -> str:
  """`rows` cells are HTML already (escaped by the caller); `numeric`
  columns are right-aligned."""
  numeric = numeric or [False] * len(headers)
  right = ' class="num"'
  head = ''.join(f'<th{right if n else ""}>{escape(h)}</th>'
                 for h, n in zip(headers, numeric))
  body = ''.join('<tr>' + ''.join(
      f'<td{right if n else ""}>{c}</td>'
      for c, n in zip(row, numeric)) + '</tr>' for row in rows)
  if not any(headers):  # A key-value table: no header row.
    return f'<table><tbody>{body}</tbody></table>'
  return f'<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def picture(part: Dict[str, Any], alt: str) -> str:
  """A picture of the report (a data: URI and its size)."""
  return (f'<img class="picture" alt="{escape(alt)}" '
          f'src="{escape(part["png"])}" width="{part["width"]}" '
          f'height="{part["height"]}">')


def short_time(iso: Optional[str]) -> str:
  return iso.replace('T', ' ')[:19] if iso else '-'
