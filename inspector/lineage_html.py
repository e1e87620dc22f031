"""A lineage tree (lineage.lineage) as nested HTML lists: each artifact, the
execution that made it, that execution's inputs, down to ExampleGen's input
files; an artifact met again is not expanded twice."""

import os
from typing import Any, Dict

from inspector import lineage
from inspector.artifacts import summary_text
from inspector.html_blocks import chip, escape, short_time
from inspector.render import duration, timestamp


def tree(node: Dict[str, Any]) -> str:
  """`node` and everything below it, as an <li> of a ul.tree."""
  artifact = node['artifact']
  key = f'<span class="muted">{escape(node["key"])}:</span> ' if node.get(
      'key') else ''
  label = f'{key}<b>{escape(artifact["type"])} {artifact["id"]}</b>'
  if node.get('seen'):
    return f'<li>{label} <span class="muted">(shown above)</span></li>'
  summary = summary_text(artifact['properties'])
  label += (f' <code>{escape(artifact["uri"])}</code>'
            + (f' <span class="muted">[{escape(summary)}]</span>'
               if summary else ''))
  producer = node.get('producer')
  if not producer:
    return (f'<li>{label}<ul><li class="muted">no producing execution '
            'recorded</li></ul></li>')
  reused = (f' <span class="muted">(reused by run '
            f'{escape(", ".join(producer["reused_by_runs"]))})</span>'
            if producer.get('reused_by_runs') else '')
  execution = (f'<span class="exec">← {escape(producer["node"])}</span> '
               f'execution {producer["id"]} {chip(producer["state"])} '
               f'{escape(duration(producer["seconds"]))} '
               f'<span class="muted">run {escape(producer["run"])}</span>'
               f'{reused}')
  children = ''
  if 'input_data' in producer:
    children += _input_data(producer['input_data'])
  children += ''.join(tree(child) for child in producer['inputs'])
  return (f'<li>{label}<ul><li>{execution}'
          + (f'<ul>{children}</ul>' if children else '') + '</li></ul></li>')


def _input_data(data: Dict[str, Any]) -> str:
  span = f'span {data["span"]}' if data.get('span') is not None else 'no span'
  splits = []
  for split in data['splits']:
    facts = lineage.split_facts(split)
    files = ''.join(
        f'<li class="input-file"><code>{escape(os.path.basename(f["path"]))}'
        f'</code> {f["bytes"]:,} bytes <span class="muted">modified '
        f'{escape(short_time(timestamp(int(f["mtime"] * 1000))))}</span></li>'
        for f in split['files_now'])
    splits.append(f'<li>split <b>{escape(split["name"])}</b>: '
                  f'<code>{escape(split["pattern"])}</code> '
                  f'<span class="muted">({escape(facts)})</span>'
                  + (f'<ul>{files}</ul>' if files else '') + '</li>')
  return (f'<li><b>input</b> <code>{escape(data["input_base"])}</code> '
          f'<span class="muted">({escape(span)})</span><ul>{"".join(splits)}'
          '</ul></li>')
