"""The scale section of BENCHMARKS.md: goals, then per component and size
the wall time, examples/s, peak memory and bytes on disk.

benchmarks/results_file.py writes it as a block of its own in BENCHMARKS.md,
so `--scale` replaces only it and the other sections keep it.
"""

import datetime
import os
from typing import List, Optional, Sequence

from benchmarks import report
from benchmarks import scale
from benchmarks.timing import rate_rows

def _verdict(met: Optional[bool]) -> str:
  return '' if met is None else 'met' if met else '**not met**'


def _mb(n: Optional[int]) -> str:
  return '-' if n is None else f'{n / 1e6:,.0f}'


def _gb(n: Optional[int]) -> str:
  return '-' if n is None else f'{n / 1e9:.2f}'


def render(rows: Sequence[scale.Row], stream: Optional[scale.StreamResult],
           command: str) -> str:
  measured = [r for r in rows if not r.skipped]
  components = list(dict.fromkeys(
      c for r in measured for c in r.seconds if c != scale.WHOLE_RUN))
  steps = rows[0].train_steps if rows else 0
  batch = rows[0].batch_size if rows else 0
  lines: List[str] = [
      '## Scale: 1x, 10x and 100x MNIST through the whole DAG',
      '',
      f'{datetime.date.today()}, {os.cpu_count()} CPU cores '
      f'({report.cpu_model()}).',
      '',
      f'    {command}',
      '',
      'Each size: N deformed copies of MNIST\'s training set and its test '
      'set (`python -m data.scaled_mnist`), one run of `local_runner.py` from '
      f'a fresh output directory, the Trainer at a fixed {steps} steps of '
      f'{batch} (`--epochs 1 --train-steps {steps}`). Peak memory: the '
      'resident memory of the whole process tree (the runner and every Beam '
      'worker, their proportional set sizes summed: shared pages count '
      f'once), sampled every {scale.SAMPLE_S} s. Method: '
      '`benchmarks/scale.py`.',
      '',
      '| goal | measured | |',
      '|---|---|---|',
  ]
  for goal in scale.goals(rows, stream):
    lines.append(f'| {goal.name} | {goal.measured} | {_verdict(goal.met)} |')

  lines += ['', '| size | examples (train + eval) | raw pixels (GB) | whole '
            'run (s) | peak memory (GB) | on disk (MB) | Trainer input |',
            '|---|---|---|---|---|---|---|']
  for r in rows:
    if r.skipped:
      lines.append(f'| {r.name} | {r.train:,} + {r.eval:,} | '
                   f'{_gb(r.raw_pixel_bytes)} | skipped: {r.skipped} | | | |')
      continue
    peak = _gb(r.peak_memory.get(scale.WHOLE_RUN))
    if r.cgroup_max_usage is not None:
      peak += (f' (the cgroup\'s peak, page cache included: '
               f'{_gb(r.cgroup_max_usage)})')
    whole = f'{r.seconds[scale.WHOLE_RUN]:,.0f}'
    if r.failed:
      whole += f', **failed: {r.failed}**'
    lines.append(
        f'| {r.name} | {r.train:,} + {r.eval:,} | {_gb(r.raw_pixel_bytes)} | '
        f'{whole} | {peak} | {_mb(sum(r.disk_bytes.values()))} | '
        f'{"; ".join(r.trainer_input) or "-"} |')

  def table(title: str, cell) -> None:
    nonlocal lines
    lines += ['', title, '',
              '| component | ' + ' | '.join(r.name for r in measured) + ' |',
              '|---|' + '---|' * len(measured)]
    for c in [*components, scale.WHOLE_RUN]:
      lines.append(f'| {c} | ' + ' | '.join(cell(r, c) for r in measured)
                   + ' |')

  def time_cell(r: scale.Row, c: str) -> str:
    if c not in r.seconds:
      return '-'
    rate = r.rate(c)
    return f'{r.seconds[c]:,.1f}' + (f' ({rate:,.0f}/s)' if rate else '')

  table('Wall time per component, s (examples/s):', time_cell)
  table('Peak memory (PSS) of the process tree while the component ran, '
        'GB:', lambda r, c: _gb(r.peak_memory.get(c)))
  table('Bytes on disk, MB (the component\'s artifacts):',
        lambda r, c: _mb(r.disk_bytes.get(c)) if c != scale.WHOLE_RUN
        else _mb(sum(r.disk_bytes.values())))

  if stream:
    lines += [
        '',
        f'Streaming input_fn vs the bare read, one epoch of the {stream.copies}x '
        f'training split ({stream.examples:,} examples), median (min-max) of '
        f'{len(stream.rate["bare read"].samples)}: the Trainer\'s streaming '
        f'path as it reads a split too large for its budget ({stream.plan}).',
        '',
        '| input | examples/s | vs bare read |',
        '|---|---|---|',
    ]
    lines += rate_rows(stream.rate, 'bare read', '{:.0%}')
  return '\n'.join(lines) + '\n'
