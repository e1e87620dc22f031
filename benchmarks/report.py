"""The benchmarks' Markdown report: goals first, then one table per section."""

import dataclasses
import datetime
import os
import platform
from typing import List, Optional

from benchmarks import conversion
from benchmarks import input_speed
from benchmarks import training_speed
from benchmarks import whole_dag
from benchmarks.timing import ratio

RERUN_GOAL_S = 30.0


@dataclasses.dataclass
class Results:
  command: str
  quick: bool
  repetitions: int
  conversion: conversion.Result
  input: input_speed.Result
  training: training_speed.Result
  dag: Optional[whole_dag.Result]
  dag_skipped: str = ''  # Why there is no DAG section.


def cpu_model() -> str:
  try:
    with open('/proc/cpuinfo') as f:
      for line in f:
        if line.startswith('model name'):
          return line.split(':', 1)[1].strip()
  except OSError:
    pass
  return platform.processor() or platform.machine()


def _versions() -> str:
  import apache_beam  # pylint: disable=g-import-not-at-top
  import tensorflow  # pylint: disable=g-import-not-at-top
  import tensorflow_transform  # pylint: disable=g-import-not-at-top
  import tfx  # pylint: disable=g-import-not-at-top
  return (f'Python {platform.python_version()}, TensorFlow '
          f'{tensorflow.__version__}, TFX {tfx.__version__}, Beam '
          f'{apache_beam.__version__}, TFT {tensorflow_transform.__version__}')


def _gpus() -> str:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  gpus = tf.config.list_physical_devices('GPU')
  return f'{len(gpus)} GPU(s)' if gpus else 'no GPU'


def machine_line() -> str:
  """Date, CPU, GPUs and versions: the first line of every section."""
  return (f'{datetime.date.today()}, {os.cpu_count()} CPU cores '
          f'({cpu_model()}), {_gpus()}; {_versions()}.')


def _goal(name: str, measured: str, met: bool) -> str:
  return f'| {name} | {measured} | {"met" if met else "**not met**"} |'


def _input_cpu_budget(i: input_speed.Result) -> List[str]:
  """Why ours' cold epoch is where it is: its CPU per epoch, by stage."""
  read = i.cpu_seconds['bare read'].median
  ours = i.cpu_seconds['ours, cold'].median
  parse = i.stage_cpu_seconds['parse'].median
  transform = i.stage_cpu_seconds['transform'].median
  rest = ours - read - parse - transform
  bare_wall_s = i.examples / i.rate['bare read'].median
  budget_s = bare_wall_s / 0.8
  return [
      'Where the cold epoch\'s CPU goes, s per epoch (parse and transform '
      'measured alone, on batches in memory):',
      '',
      '| reading (the bare read) | parse | transform | the rest (cache, '
      'shuffle and batching per record; start-up) | ours, cold |',
      '|---|---|---|---|---|',
      f'| {read:.3f} | {parse:.3f} | {transform:.3f} | {rest:.3f} | '
      f'{ours:.3f} |',
      '',
      f'At 80% of the bare read\'s rate an epoch of ours would last '
      f'{budget_s:.3f} s; its {ours:.3f} CPU s would keep {ours / budget_s:.1f} '
      f'cores busy the whole epoch (this machine has {os.cpu_count()}; the bare '
      f'read keeps {read / bare_wall_s:.1f} busy). Reading, parse and transform '
      f'alone, without the per-record rest, would need '
      f'{(read + parse + transform) / budget_s:.1f}, and only if parse and '
      'transform overlapped the reading, which a shuffle over the whole split '
      'does not allow in its first epoch.',
  ]


def render(r: Results) -> str:
  c, i, t, d = r.conversion, r.input, r.training, r.dag
  conv_x = ratio(c.rate['ours'], c.rate['reference'])
  conv_marginal_x = ratio(c.marginal_rate['ours'],
                          c.marginal_rate['reference'])
  bytes_x = c.bytes['ours'] / c.bytes['reference']
  input_x = ratio(i.rate['ours, cold'], i.rate['reference'])
  input_bare = ratio(i.rate['ours, cold'], i.rate['bare read'])
  train_mem = ratio(t.rate['ours'], t.rate['in memory'])
  lines: List[str] = [
      '# Benchmarks' + (' (quick mode: a small subset, not the real figures)'
                        if r.quick else ''),
      '',
      machine_line(),
      '',
      f'    {r.command}',
      '',
      f'Each figure: median (min-max) of {r.repetitions} repetitions, '
      'interleaved; ratios are of medians from this one run. Sections and '
      'method: `benchmarks/`.',
      '',
      '## Goals',
      '',
      '| goal | measured | |',
      '|---|---|---|',
      _goal('conversion: ours >= 10x the reference\'s examples/s',
            f'{conv_x:.1f}x (steady state, without fixed costs: '
            f'{conv_marginal_x:.1f}x)', conv_x >= 10),
      _goal('conversion: ours <= 0.3x the reference\'s bytes',
            f'{bytes_x:.3f}x', bytes_x <= 0.3),
      _goal('input: ours >= 5x the reference (cold epoch)',
            f'{input_x:.1f}x', input_x >= 5),
      _goal('input: ours >= 80% of the bare read (cold epoch)',
            f'{input_bare:.0%}', input_bare >= 0.8),
      _goal('training: fed by ours >= 95% of fed from memory',
            f'{train_mem:.0%}', train_mem >= 0.95),
  ]
  if d:
    rerun_s = d.rerun['whole run'].median
    lines.append(_goal(f're-run with nothing changed <= {RERUN_GOAL_S:.0f} s',
                       f'{rerun_s:.1f} s', rerun_s <= RERUN_GOAL_S))
  else:
    lines.append(f'| re-run with nothing changed <= {RERUN_GOAL_S:.0f} s | '
                 f'not measured: {r.dag_skipped} | |')

  lines += [
      '',
      f'## 1. Conversion: {c.examples:,} images, IDX files to TFRecords',
      '',
      'Reference: the tutorial loop (`benchmarks/reference_tutorial.py`), 784 '
      'float pixels per Example, 10 uncompressed files per split. Ours: '
      'the ImageExampleGen executor as the pipeline runs it (its Beam args), '
      'validation of the input, Beam start-up and gzip included. Steady '
      'state: (N - N/10) / (t(N) - t(N/10)), i.e. without the fixed costs.',
      '',
      '| | wall time (s) | examples/s | steady-state examples/s | bytes on '
      'disk |',
      '|---|---|---|---|---|',
  ]
  for name in ('reference', 'ours'):
    lines.append(f'| {name} | {c.seconds[name].format(".2f")} | '
                 f'{c.rate[name].format()} | {c.marginal_rate[name].format()} '
                 f'| {c.bytes[name] / 1e6:,.1f} MB |')
  lines += [
      f'| ours / reference | {1 / conv_x:.2f}x | {conv_x:.1f}x | '
      f'{conv_marginal_x:.1f}x | {bytes_x:.3f}x |',
      '',
      f'## 2. Input pipeline: one epoch of the train split, batch '
      f'{i.batch_size} ({i.examples:,} examples)',
      '',
      'Reference: the tutorial input_fn on its files. Ours: the Trainer\'s '
      'input_fn on our ExampleGen\'s shards with a real tf.Transform graph. '
      'Bare read: the same shards as fast as tf.data reads them, a batched '
      'TFRecordDataset per shard in a parallel interleave, not parsed (the '
      'ceiling). Cold: a fresh dataset\'s first epoch (the goals); cached: '
      'ours again, from its tf.data cache.',
      '',
      '| input | examples/s | vs reference | vs bare read | CPU s per '
      'epoch |',
      '|---|---|---|---|---|',
  ]
  for name, figure in i.rate.items():
    lines.append(f'| {name} | {figure.format()} | '
                 f'{ratio(figure, i.rate["reference"]):.1f}x | '
                 f'{ratio(figure, i.rate["bare read"]):.0%} | '
                 f'{i.cpu_seconds[name].format(".2f")} |')
  lines += ['', *_input_cpu_budget(i)]
  lines += [
      '',
      f'## 3. Training: the CNN, batch {t.batch_size}, {t.steps} steps '
      'after warm-up',
      '',
      '| fed by | examples/s | vs in memory |',
      '|---|---|---|',
  ]
  for name, figure in t.rate.items():
    lines.append(f'| {name} | {figure.format()} | '
                 f'{ratio(figure, t.rate["in memory"]):.0%} |')
  lines += ['', '## 4. Whole DAG: `local_runner.py`, wall time per component',
            '']
  if d:
    first_n = len(d.first['whole run'].samples)
    rerun_n = len(d.rerun['whole run'].samples)
    lines += [
        f'    {" ".join(d.command)}',
        '',
        f'A run from a fresh output directory ({first_n} run(s)), then '
        f'{rerun_n} immediate re-run(s) with nothing changed. Whole run: the '
        'process, start-up and summary included.',
        '',
        '| component | fresh run (s) | re-run (s) | re-run from cache |',
        '|---|---|---|---|',
    ]
    for name in [*d.components, 'whole run']:
      rerun = d.rerun.get(name)
      cached = ('' if name == 'whole run' else
                'n/a (a resolver)' if name in d.resolvers else
                'yes' if d.rerun_cached.get(name) else '**no**')
      lines.append(f'| {name} | {d.first[name].format(".1f")} | '
                   f'{rerun.format(".1f") if rerun else "-"} | {cached} |')
  else:
    lines.append(f'Not measured: {r.dag_skipped}.')
  return '\n'.join(lines) + '\n'

