"""Repeated measurements, and the Markdown lines they are reported in."""

import dataclasses
import datetime
import os
import platform
import statistics
import time
from typing import Callable, Dict, Iterable, List, Optional, Tuple


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


def figures(names: Iterable[str]) -> Dict[str, Figure]:
  return {name: Figure() for name in names}


def timed(fn: Callable[[], object]) -> Tuple[float, object]:
  """(seconds, result) of one call."""
  start = time.perf_counter()
  result = fn()
  return time.perf_counter() - start, result


def row(*cells) -> str:
  return '| ' + ' | '.join(str(c) for c in cells) + ' |'


def table(*header: str) -> List[str]:
  """A Markdown table's header and rule; rows follow (`row`)."""
  return [row(*header), '|' + '---|' * len(header)]


def rate_rows(rates: Dict[str, Figure], base: str, ratio_format: str,
              extra: Optional[Dict[str, str]] = None) -> List[str]:
  """`| name | median (min-max) | its ratio to rates[base] |` per rate (the
  ratio as `ratio_format` formats it, e.g. '{:.1f}x' or '{:.0%}'), each
  with `extra[name]` as a last cell when given."""
  return [row(name, figure.format(),
              ratio_format.format(figure.median / rates[base].median),
              *([extra[name]] if extra else []))
          for name, figure in rates.items()]


def cpu_model() -> str:
  try:
    with open('/proc/cpuinfo') as f:
      for line in f:
        if line.startswith('model name'):
          return line.split(':', 1)[1].strip()
  except OSError:
    pass
  return platform.processor() or platform.machine()


def machine_line() -> str:
  """Date, CPU, GPUs and versions: the first line of every section."""
  import apache_beam  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_transform  # pylint: disable=g-import-not-at-top
  import tfx  # pylint: disable=g-import-not-at-top
  gpus = len(tf.config.list_physical_devices('GPU'))
  isa_cap = os.environ.get('ONEDNN_MAX_CPU_ISA')
  cap = f', oneDNN capped at {isa_cap} (ONEDNN_MAX_CPU_ISA)' if isa_cap else ''
  return (f'{datetime.date.today()}, {os.cpu_count()} CPU cores '
          f'({cpu_model()}{cap}), {f"{gpus} GPU(s)" if gpus else "no GPU"}; '
          f'Python {platform.python_version()}, TensorFlow {tf.__version__}, '
          f'TFX {tfx.__version__}, Beam {apache_beam.__version__}, TFT '
          f'{tensorflow_transform.__version__}.')


def header(command: str) -> str:
  """A section's opening: the machine, then the command that measured it."""
  return f'{machine_line()}\n\n    {command}'
