"""Benchmarks: each prints a Markdown report and can also write it to a file."""

from typing import Optional


def publish(report: str, path: Optional[str]) -> None:
  print(report)
  if path:
    with open(path, 'w') as f:
      f.write(report)
