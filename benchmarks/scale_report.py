"""The scale section of BENCHMARKS.md (`--scale`): goals, then per
component and size the wall time, examples/s, peak memory and bytes on
disk, and the streaming input_fn against the bare read."""

from typing import List, Optional, Sequence

from benchmarks import runs
from benchmarks import scale
from benchmarks.figures import header, rate_rows, row, table


def section(args, data_dir: str, work_dir: str, command: str) -> str:
  rows = scale.plan_rows(
      [int(n) for n in args.scale_copies.split(',') if n.strip()],
      args.scale_cap_copies or None,
      args.scale_cap_mb and args.scale_cap_mb * 10**6,
      args.scale_train_steps or scale.TRAIN_STEPS, runs.TRAINING.batch_size)
  rows, stream = scale.run(data_dir, work_dir, rows,
                           args.scale_stream_copies or None,
                           repetitions=args.repetitions,
                           keep_data=args.keep_data)
  return render(rows, stream, command)


def _gb(n: Optional[int]) -> str:
  return '-' if n is None else f'{n / 1e9:.2f}'


def _mb(n: Optional[int]) -> str:
  return '-' if n is None else f'{n / 1e6:,.0f}'


def render(rows: Sequence[scale.Row], stream: Optional[scale.StreamResult],
           command: str) -> str:
  measured = [r for r in rows if not r.skipped]
  components = list(dict.fromkeys(
      c for r in measured for c in r.seconds if c != scale.WHOLE_RUN))
  steps, batch = (rows[0].train_steps, rows[0].batch_size) if rows else (0, 0)
  lines: List[str] = [
      '## Scale: 1x, 10x and 100x MNIST through the whole DAG',
      '',
      header(command),
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
      *table('goal', 'measured', ''),
      *(row(g.name, g.measured,
            '' if g.met is None else 'met' if g.met else '**not met**')
        for g in scale.goals(rows, stream)),
      '',
      *table('size', 'examples (train + eval)', 'raw pixels (GB)',
             'whole run (s)', 'peak memory (GB)', 'on disk (MB)',
             'Trainer input'),
  ]
  for r in rows:
    size = (r.name, f'{r.train:,} + {r.eval:,}', _gb(r.raw_pixel_bytes))
    if r.skipped:
      lines.append(row(*size, f'skipped: {r.skipped}', '', '', ''))
      continue
    peak = _gb(r.peak_memory.get(scale.WHOLE_RUN))
    if r.cgroup_max_usage is not None:
      peak += (f' (the cgroup\'s peak, page cache included: '
               f'{_gb(r.cgroup_max_usage)})')
    whole = f'{r.seconds[scale.WHOLE_RUN]:,.0f}' + (
        f', **failed: {r.failed}**' if r.failed else '')
    lines.append(row(*size, whole, peak, _mb(sum(r.disk_bytes.values())),
                     '; '.join(r.trainer_input) or '-'))

  def per_component(title: str, cell) -> None:
    lines.extend(['', title, '',
                  *table('component', *(r.name for r in measured))])
    for c in [*components, scale.WHOLE_RUN]:
      lines.append(row(c, *(cell(r, c) for r in measured)))

  def time_cell(r: scale.Row, c: str) -> str:
    if c not in r.seconds:
      return '-'
    rate = r.rate(c)
    return f'{r.seconds[c]:,.1f}' + (f' ({rate:,.0f}/s)' if rate else '')

  per_component('Wall time per component, s (examples/s):', time_cell)
  per_component('Peak memory (PSS) of the process tree while the component '
                'ran, GB:', lambda r, c: _gb(r.peak_memory.get(c)))
  per_component('Bytes on disk, MB (the component\'s artifacts):',
                lambda r, c: _mb(sum(r.disk_bytes.values())
                                 if c == scale.WHOLE_RUN
                                 else r.disk_bytes.get(c)))
  if stream:
    lines += [
        '',
        f'Streaming input_fn vs the bare read, one epoch of the '
        f'{stream.copies}x training split ({stream.examples:,} examples), '
        f'median (min-max) of {len(stream.rate["bare read"].samples)}: the '
        'Trainer\'s streaming path as it reads a split too large for its '
        f'budget ({stream.plan}).',
        '',
        *table('input', 'examples/s', 'vs bare read'),
        *rate_rows(stream.rate, 'bare read', '{:.0%}'),
    ]
  return '\n'.join(lines) + '\n'
