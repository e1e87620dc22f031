"""BENCHMARKS.md, written a section at a time.

The four core sections (`python -m benchmarks`) are the file's head; every
other section (`--section NAME`) is a block of its own after them, between
`<!-- section NAME -->` and `<!-- end NAME -->`, so that running one section
replaces its block and leaves the others' figures as they were measured,
and any text outside the blocks (notes on a section) as it was written.
"""

import os
import re
from typing import Optional

_BLOCK = re.compile(r'<!-- section (\S+) -->\n(.*?)<!-- end \1 -->\n',
                    re.DOTALL)


def _read(path: str) -> str:
  return open(path).read() if os.path.exists(path) else ''


def _save(path: str, text: str) -> None:
  with open(path, 'w') as f:
    f.write(text)


def publish(text: str, path: Optional[str]) -> None:
  """Prints a report, and writes it to `path` when given."""
  print(text)
  if path:
    _save(path, text)


def write_head(path: str, text: str) -> None:
  """The core sections' report, keeping everything from the first block
  on (the blocks, and notes written between or after them)."""
  old = _read(path)
  first = _BLOCK.search(old)
  rest = old[first.start():] if first else ''
  _save(path, text.rstrip('\n') + '\n' + ('\n' + rest if rest else ''))


def write_section(path: str, name: str, text: str) -> None:
  """Replaces section `name`'s block in place (or appends it), keeping
  every other line of the file as it is."""
  old = _read(path)
  block = f'<!-- section {name} -->\n{text.rstrip()}\n<!-- end {name} -->\n'
  for match in _BLOCK.finditer(old):
    if match[1] == name:
      return _save(path, old[:match.start()] + block + old[match.end():])
  _save(path, (old.rstrip('\n') + '\n\n' if old.strip() else '') + block)
