"""BENCHMARKS.md, written a section at a time.

The four core sections (`python -m benchmarks`) are the file's head; every
other section (`--section NAME`) is a block of its own after them, between
`<!-- section NAME -->` and `<!-- end NAME -->`, so that running one section
replaces its block and leaves the others' figures as they were measured.
"""

import os
import re
from typing import Dict, List, Tuple

_BLOCK = re.compile(r'<!-- section (\S+) -->\n(.*?)<!-- end \1 -->\n',
                    re.DOTALL)


def _read(path: str) -> Tuple[str, Dict[str, str], List[str]]:
  """(head, blocks by name, block names in file order)."""
  text = open(path).read() if os.path.exists(path) else ''
  first = _BLOCK.search(text)
  head = text[:first.start()] if first else text
  blocks = {m[1]: m[2] for m in _BLOCK.finditer(text)}
  return head, blocks, list(blocks)


def _write(path: str, head: str, blocks: Dict[str, str],
           order: List[str]) -> None:
  parts = [head.rstrip('\n') + '\n' if head.strip() else '']
  for name in order:
    parts.append(f'\n<!-- section {name} -->\n{blocks[name].rstrip()}\n'
                 f'<!-- end {name} -->\n')
  with open(path, 'w') as f:
    f.write(''.join(parts).lstrip('\n'))


def write_head(path: str, text: str) -> None:
  """The core sections' report, keeping the other sections' blocks."""
  _, blocks, order = _read(path)
  _write(path, text, blocks, order)


def write_section(path: str, name: str, text: str) -> None:
  """Replaces section `name`'s block (or appends it)."""
  head, blocks, order = _read(path)
  if name not in blocks:
    order.append(name)
  blocks[name] = text
  _write(path, head, blocks, order)
