"""Repeated measurements: median with min and max, and ratios of medians."""

import dataclasses
import statistics
import time
from typing import Callable, Dict, List, Optional, Tuple


@dataclasses.dataclass
class Figure:
  """Samples of one quantity (seconds, examples/s, ...), one per repetition."""
  samples: List[float] = dataclasses.field(default_factory=list)

  def add(self, value: float) -> None:
    self.samples.append(value)

  @property
  def median(self) -> float:
    return statistics.median(self.samples)

  def format(self, fmt: str = ',.0f') -> str:
    """'median (min-max)', or just the value when there is one sample."""
    if len(self.samples) == 1:
      return format(self.median, fmt)
    return (f'{self.median:{fmt}} ({min(self.samples):{fmt}}-'
            f'{max(self.samples):{fmt}})')


def timed(fn: Callable[[], object]) -> Tuple[float, object]:
  """(seconds, result) of one call."""
  start = time.perf_counter()
  result = fn()
  return time.perf_counter() - start, result


def ratio(a: Figure, b: Figure) -> float:
  return a.median / b.median


def rate_rows(rates: Dict[str, Figure], base: str, ratio_format: str,
              extra: Optional[Dict[str, str]] = None) -> List[str]:
  """Markdown rows `| name | median (min-max) | its ratio to rates[base] |`
  (the ratio as `ratio_format` formats it, e.g. '{:.1f}x' or '{:.0%}'),
  each with `extra[name]` as a last cell when given."""
  return [f'| {name} | {figure.format()} | '
          f'{ratio_format.format(ratio(figure, rates[base]))} |' +
          (f' {extra[name]} |' if extra else '')
          for name, figure in rates.items()]
