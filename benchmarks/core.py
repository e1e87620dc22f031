"""The core sections, BENCHMARKS.md's head: conversion, input pipeline,
training, whole DAG (each module says what it compares), goals first."""

import os
from typing import List, Optional

from benchmarks import conversion
from benchmarks import input_speed
from benchmarks import runs
from benchmarks import training_speed
from benchmarks import whole_dag
from benchmarks.figures import machine_line, row, table

RERUN_GOAL_S = 30.0
INPUT_BATCH_SIZE = 256


def section(args, data_dir: str, work_dir: str, command: str) -> str:
  from records import features  # pylint: disable=g-import-not-at-top
  from tests import transform_analysis  # pylint: disable=g-import-not-at-top
  repetitions, train_steps, warmup = (
      (1, 5, 2) if args.quick else
      (args.repetitions, args.train_steps, args.warmup_steps))
  print('1/4 conversion ...', flush=True)
  conv = conversion.run(data_dir, work_dir, repetitions)
  train_pattern = os.path.join(conv.our_examples_uri, 'Split-train', '*')
  transform_output = transform_analysis.analyze(
      train_pattern, features.MNIST_GEOMETRY,
      os.path.join(work_dir, 'transform'), runs.BEAM_ARGS)
  num_classes = len(features.read_class_names(
      os.path.join(conv.our_examples_uri, features.CLASS_NAMES_FILE)))
  print('2/4 input pipeline ...', flush=True)
  inputs = input_speed.run(conv.reference_files['train'], train_pattern,
                           transform_output, INPUT_BATCH_SIZE, repetitions)
  print('3/4 training ...', flush=True)
  training = training_speed.run(train_pattern, transform_output,
                                num_classes, train_steps, warmup,
                                repetitions)
  dag, skipped = None, 'left out (--skip-dag)'
  print(f'4/4 whole DAG{": skipped" if args.skip_dag else " ..."}',
        flush=True)
  if not args.skip_dag:
    dag = whole_dag.run(
        data_dir, work_dir, runs.QUICK_ARGS if args.quick else (),
        fresh_runs=1 if args.quick else args.dag_runs, reruns=repetitions,
        data_dir_shown=args.data_dir_shown)
  return render(command, args.quick, repetitions, conv, inputs, training,
                dag, skipped)


def _goal(name: str, measured: str, met: bool) -> str:
  return row(name, measured, 'met' if met else '**not met**')


def _or_na(value: Optional[float], template: str) -> str:
  return 'n/a' if value is None else template.format(value)


def _input_cpu_budget(i: input_speed.Result) -> List[str]:
  """Why ours' cold epoch is where it is: its CPU per epoch, by stage."""
  read = i.cpu_seconds['bare read'].median
  ours = i.cpu_seconds['ours, cold'].median
  parse = i.stage_cpu_seconds['parse'].median
  transform = i.stage_cpu_seconds['transform'].median
  bare_wall_s = i.examples / i.rate['bare read'].median
  budget_s = bare_wall_s / 0.8
  return [
      'Where the cold epoch\'s CPU goes, s per epoch (parse and transform '
      'measured alone, on batches in memory):',
      '',
      *table('reading (the bare read)', 'parse', 'transform', 'the rest '
             '(cache, shuffle and batching per record; start-up)',
             'ours, cold'),
      row(*(f'{s:.3f}' for s in (read, parse, transform,
                                 ours - read - parse - transform, ours))),
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


def render(command: str, quick: bool, repetitions: int,
           c: conversion.Result, i: input_speed.Result,
           t: training_speed.Result, d: Optional[whole_dag.Result],
           dag_skipped: str) -> str:
  ratio = lambda a, b: a.median / b.median  # pylint: disable=unnecessary-lambda-assignment
  conv_x = ratio(c.rate['ours'], c.rate['reference'])
  marginal = c.marginal_rate
  conv_marginal_x = (marginal['ours'] / marginal['reference']
                     if None not in marginal.values() else None)
  bytes_x = c.bytes['ours'] / c.bytes['reference']
  input_x = ratio(i.rate['ours, cold'], i.rate['reference'])
  input_bare = ratio(i.rate['ours, cold'], i.rate['bare read'])
  train_mem = ratio(t.rate['ours'], t.rate['in memory'])
  rerun_goal = f're-run with nothing changed <= {RERUN_GOAL_S:.0f} s'
  rerun_s = d and d.rerun[runs.WHOLE_RUN].median
  lines: List[str] = [
      '# Benchmarks' + (' (quick mode: a small subset, not the real figures)'
                        if quick else ''),
      '',
      machine_line(),
      '',
      f'    {command}',
      '',
      f'Each figure: median (min-max) of {repetitions} repetitions, '
      'interleaved; ratios are of medians from this one run. Sections and '
      'method: `benchmarks/`.',
      '',
      '## Goals',
      '',
      *table('goal', 'measured', ''),
      _goal('conversion: ours >= 10x the reference\'s examples/s',
            f'{conv_x:.1f}x (steady state, without fixed costs: '
            f'{_or_na(conv_marginal_x, "{:.1f}x")})', conv_x >= 10),
      _goal('conversion: ours <= 0.3x the reference\'s bytes',
            f'{bytes_x:.3f}x', bytes_x <= 0.3),
      _goal('input: ours >= 5x the reference (cold epoch)',
            f'{input_x:.1f}x', input_x >= 5),
      _goal('input: ours >= 80% of the bare read (cold epoch)',
            f'{input_bare:.0%}', input_bare >= 0.8),
      _goal('training: fed by ours >= 95% of fed from memory',
            f'{train_mem:.0%}', train_mem >= 0.95),
      _goal(rerun_goal, f'{rerun_s:.1f} s', rerun_s <= RERUN_GOAL_S) if d
      else row(rerun_goal, f'not measured: {dag_skipped}', ''),
      '',
      f'## 1. Conversion: {c.examples:,} images, IDX files to TFRecords',
      '',
      'Reference: the tutorial loop (`benchmarks/reference_tutorial.py`), 784 '
      'float pixels per Example, 10 uncompressed files per split. Ours: '
      'the ImageExampleGen executor as the pipeline runs it (its Beam args), '
      'validation of the input, Beam start-up and gzip included. Steady '
      'state: (N - N/10) / (t(N) - t(N/10)) of the median times, i.e. without '
      'the fixed costs (n/a: the tenth took as long as the whole).',
      '',
      *table('', 'wall time (s)', 'examples/s', 'steady-state examples/s',
             'bytes on disk'),
      *(row(name, c.seconds[name].format('.2f'), c.rate[name].format(),
            _or_na(marginal[name], '{:,.0f}'), f'{c.bytes[name] / 1e6:,.1f} MB')
        for name in ('reference', 'ours')),
      row('ours / reference', f'{1 / conv_x:.2f}x', f'{conv_x:.1f}x',
          _or_na(conv_marginal_x, '{:.1f}x'), f'{bytes_x:.3f}x'),
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
      *table('input', 'examples/s', 'vs reference', 'vs bare read',
             'CPU s per epoch'),
      *(row(name, figure.format(),
            f'{ratio(figure, i.rate["reference"]):.1f}x',
            f'{ratio(figure, i.rate["bare read"]):.0%}',
            i.cpu_seconds[name].format('.2f'))
        for name, figure in i.rate.items()),
      '',
      *_input_cpu_budget(i),
      '',
      f'## 3. Training: the CNN, batch {t.batch_size}, {t.steps} steps '
      'after warm-up',
      '',
      *table('fed by', 'examples/s', 'vs in memory'),
      *(row(name, figure.format(), f'{ratio(figure, t.rate["in memory"]):.0%}')
        for name, figure in t.rate.items()),
      '',
      '## 4. Whole DAG: `local_runner.py`, wall time per component',
      '',
  ]
  if not d:
    return '\n'.join(lines + [f'Not measured: {dag_skipped}.']) + '\n'
  lines += [
      f'    {" ".join(d.command)}',
      '',
      f'A run from a fresh output directory '
      f'({len(d.first[runs.WHOLE_RUN].samples)} run(s)), then '
      f'{len(d.rerun[runs.WHOLE_RUN].samples)} immediate re-run(s) with '
      'nothing changed. Whole run: the process, start-up and summary included.',
      '',
      *table('component', 'fresh run (s)', 're-run (s)', 're-run from cache'),
  ]
  for name in [*d.components, runs.WHOLE_RUN]:
    rerun = d.rerun.get(name)
    cached = ('' if name == runs.WHOLE_RUN else
              'n/a (a resolver)' if name in d.resolvers else
              'yes' if d.rerun_cached.get(name) else '**no**')
    lines.append(row(name, d.first[name].format('.1f'),
                     rerun.format('.1f') if rerun else '-', cached))
  return '\n'.join(lines) + '\n'
