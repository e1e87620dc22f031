"""The scale section (`--scale`): the whole DAG at each size of
`python -m data.scaled_mnist` with a fixed Trainer step budget, one size
again under a memory cap, and the streaming input_fn against the bare read.

Each row is saved in WORK_DIR/rows/ as it is measured, for a resumed run.
"""

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

from benchmarks import harness
from benchmarks.harness import Figure

WHOLE_RUN = harness.WHOLE_RUN
# The Trainer's fixed budget: steps of its default batch, one epoch.
TRAIN_STEPS = 300
SAMPLE_S = 0.5
# MNIST's training and test sets, and an image's raw pixels.
MNIST_TRAIN, MNIST_EVAL, PIXELS = 60_000, 10_000, 28 * 28
# The cap's default: this fraction of the capped size's raw pixels.
CAP_FRACTION = 0.85
# Disk a size needs, per copy (its IDX files, TFRecords, statistics), and
# in all (models, logs): generous.
DISK_PER_COPY, DISK_FIXED = 60 << 20, 1 << 30
_TRAINER_INPUT = re.compile(r'Trainer input: (.*)\.$', re.MULTILINE)

# Goals (the issue's): numbers the report's goal lines compare with.
EXAMPLE_GEN_GOAL = 150_000  # examples/s at 100x
PEAK_GROWTH_GOAL = 1.5  # peak at 100x / peak at 10x
STREAM_GOAL = 0.7  # streaming input_fn / bare read
PER_EXAMPLE_COMPONENTS = ('StatisticsGen', 'Transform', 'ImageExampleGen')


@dataclasses.dataclass
class Row:
  """One whole-DAG run at one size."""
  name: str  # '10x', '100x under a 4.0 GB cap'
  copies: int
  train: int  # Training records.
  eval: int
  train_steps: int
  batch_size: int
  cap_bytes: Optional[int] = None
  skipped: str = ''  # Why the row was not run.
  failed: str = ''  # Why the run failed (the capped row only).
  seconds: Dict[str, float] = dataclasses.field(default_factory=dict)
  peak_memory: Dict[str, int] = dataclasses.field(default_factory=dict)
  disk_bytes: Dict[str, int] = dataclasses.field(default_factory=dict)
  trainer_input: List[str] = dataclasses.field(default_factory=list)
  cgroup_max_usage: Optional[int] = None  # Page cache included.
  oom_kills: Optional[int] = None

  @property
  def raw_pixel_bytes(self) -> int:
    """The size's images, one byte per pixel."""
    return (self.train + self.eval) * PIXELS

  def rate(self, component: str) -> Optional[float]:
    """Examples/s of the examples the component works through."""
    examples = {
        'ImageExampleGen': self.train + self.eval,
        'StatisticsGen': self.train + self.eval,
        'Transform': self.train,  # Analysed: the training split.
        'Trainer': self.train_steps * self.batch_size,
        'Evaluator': self.eval,
    }.get(component)
    seconds = self.seconds.get(component)
    return examples / seconds if examples and seconds else None

  def to_json(self) -> str:
    """The row as saved."""
    return json.dumps(dataclasses.asdict(self), indent=1)

  @classmethod
  def from_json(cls, text: str) -> 'Row':
    """A row as saved."""
    return cls(**json.loads(text))


@dataclasses.dataclass
class StreamResult:
  """The streaming input_fn against the bare read."""
  copies: int
  examples: int
  rate: Dict[str, Figure]  # 'streaming input_fn', 'bare read': examples/s
  plan: str  # The streaming plan, as the Trainer logs it.


@dataclasses.dataclass
class Goal:
  """A goal of the issue, and what was measured of it."""
  name: str
  measured: str
  met: Optional[bool]  # None: not measured.


def find(rows: Sequence[Row], copies: int, capped: bool = False
         ) -> Optional[Row]:
  """The measured row of a size, capped or not."""
  return next((r for r in rows if r.copies == copies and not r.skipped and
               (r.cap_bytes is not None) == capped), None)


def gb(n: Optional[float]) -> str:
  """Bytes in GB, '-' for none."""
  return '-' if n is None else f'{n / 1e9:.2f} GB'


def goals(rows: Sequence[Row], stream: Optional[StreamResult]) -> List[Goal]:
  """The issue's goals, from what was measured (missing rows: neither met
  nor not met, 'not measured')."""
  ten, hundred = find(rows, 10), find(rows, 100)
  capped = find(rows, 100, capped=True)
  out = []
  why = [r.skipped for r in rows if r.cap_bytes is not None and r.skipped]
  out.append(Goal(
      '100x completes under a memory cap below its raw pixels',
      f'{capped.failed or "completed"} under {gb(capped.cap_bytes)} (raw '
      f'pixels {gb(capped.raw_pixel_bytes)})' if capped else
      'not measured' + (f': {why[0]}' if why else ''),
      capped and not capped.failed and
      capped.cap_bytes < capped.raw_pixel_bytes))
  peaks = ten and hundred and (hundred.peak_memory[WHOLE_RUN],
                               ten.peak_memory[WHOLE_RUN])
  out.append(Goal(
      f'peak memory at 100x <= {PEAK_GROWTH_GOAL}x peak at 10x',
      f'{peaks[0] / peaks[1]:.2f}x ({gb(peaks[0])} vs {gb(peaks[1])})'
      if peaks else 'not measured',
      peaks and peaks[0] / peaks[1] <= PEAK_GROWTH_GOAL))
  rate = hundred and hundred.rate('ImageExampleGen')
  out.append(Goal(f'ExampleGen >= {EXAMPLE_GEN_GOAL:,} examples/s at 100x',
                  f'{rate:,.0f}' if rate else 'not measured',
                  rate and rate >= EXAMPLE_GEN_GOAL))
  for component in PER_EXAMPLE_COMPONENTS:
    rates = ten and hundred and (hundred.rate(component), ten.rate(component))
    us = rates and all(rates) and [1e6 / r for r in rates]
    out.append(Goal(f'{component}: time per example at 100x <= at 10x',
                    f'{us[0]:.2f} vs {us[1]:.2f} µs' if us else
                    'not measured', us and us[0] <= us[1]))
  share = stream and (stream.rate['streaming input_fn'].median /
                      stream.rate['bare read'].median)
  out.append(Goal(f'streaming input_fn >= {STREAM_GOAL:.0%} of the bare read',
                  f'{share:.0%} (at {stream.copies}x)' if stream else
                  'not measured', stream and share >= STREAM_GOAL))
  for g in out:
    g.met = None if g.measured.startswith('not measured') else bool(g.met)
  return out


def run_dag(row: Row, data_dir: str, out_dir: str,
            group: Optional[harness.Cgroup]) -> Row:
  """Runs local_runner.py for `row`, filling in its measurements."""
  local_run = harness.run_local_runner(
      data_dir, out_dir, '--epochs', '1', '--train-steps',
      str(row.train_steps), '--batch-size', str(row.batch_size),
      '--accuracy-threshold', '0',
      # Its images are deformed copies of MNIST's: DataChecks finds many
      # across train and validation, and the gate would stop the run. The
      # checks still run and list them.
      '--eval-copies', 'keep',
      check=row.cap_bytes is None,  # Only the capped run may fail.
      wrap=group and group.wrap, sample_memory_s=SAMPLE_S)
  row.seconds = {name: s for name, (s, _) in local_run.nodes.items()}
  row.seconds[WHOLE_RUN] = local_run.seconds
  row.peak_memory = local_run.peak_memory
  if group:
    row.cgroup_max_usage, row.oom_kills = group.max_usage(), group.oom_kills()
  if local_run.returncode:
    row.failed = (f'killed by the OOM killer ({row.oom_kills}x)'
                  if row.oom_kills else
                  f'exit status {local_run.returncode}')
    print(f'    {row.failed}; last output:\n'
          f'{(local_run.stdout + local_run.stderr)[-2000:]}', flush=True)
  root = os.path.join(out_dir, 'pipeline')
  row.disk_bytes = {name: harness.bytes_on_disk(os.path.join(root, name))
                    for name in (sorted(os.listdir(root))
                                 if os.path.isdir(root) else [])}
  # The Trainer's 'Trainer input:' lines, from the run's full log.
  logs = os.path.join(out_dir, 'logs')
  for name in sorted(os.listdir(logs)) if os.path.isdir(logs) else []:
    with open(os.path.join(logs, name), errors='replace') as f:
      row.trainer_input += _TRAINER_INPUT.findall(f.read())
  return row


def make_data(copies: int, source: str, work_dir: str) -> str:
  """The data of `copies` (made once: a finished directory is marked)."""
  out = os.path.join(work_dir, f'data-{copies}x')
  done = os.path.join(out, '.complete')
  if os.path.exists(done):
    return out
  shutil.rmtree(out, ignore_errors=True)
  print(f'  data: python -m data.scaled_mnist --copies {copies} ...',
        flush=True)
  started = time.perf_counter()
  subprocess.run([sys.executable, '-m', 'data.scaled_mnist', '--copies',
                  str(copies), '--out', out, '--source', source],
                 cwd=harness.PROJECT_DIR, check=True)
  print(f'  data: {harness.bytes_on_disk(out) / 1e6:,.0f} MB in '
        f'{time.perf_counter() - started:.0f} s', flush=True)
  open(done, 'w').close()
  return out


def check_disk(path: str, copies: int) -> None:
  """Stops the benchmark when the disk has too little room for a size."""
  free = shutil.disk_usage(path).free
  need = copies * DISK_PER_COPY + DISK_FIXED
  if free < need:
    raise SystemExit(f'error: {path}: {free / 1e9:.1f} GB free, {copies}x '
                     f'needs about {need / 1e9:.1f} GB')


def stream_vs_bare_read(out_dir: str, copies: int, batch_size: int,
                        repetitions: int) -> StreamResult:
  """One epoch of the training split each, from the run's Examples and
  transform graph: the Trainer's streaming plan, and the bare read."""
  import tensorflow_transform as tft  # pylint: disable=g-import-not-at-top
  from modules.training import input_pipeline  # pylint: disable=g-import-not-at-top
  pattern = os.path.join(harness.newest_artifact(
      out_dir, 'ImageExampleGen', 'examples'), 'Split-train', '*')
  output = tft.TFTransformOutput(harness.newest_artifact(
      out_dir, 'Transform', 'transform_graph'))
  size = input_pipeline.measure(pattern)
  # As the Trainer reads a split one byte too large for its budget.
  plan = input_pipeline.plan_split(
      'train', size, harness.TRAINING.input, training=True,
      budget=size.memory_bytes - 1)
  makers = {
      'streaming input_fn': lambda: input_pipeline.make_planned_dataset(
          pattern, output, batch_size, plan),
      'bare read': lambda: harness.bare_read(pattern, batch_size),
  }
  rate = {name: Figure() for name in makers}
  for make in makers.values():  # Warm-up: TensorFlow's one-off costs.
    harness.epoch(make().take(50))
  for _ in range(repetitions):
    for name, make in makers.items():
      seconds, _, examples = harness.timed_epoch(make(), size.records)
      rate[name].add(examples / seconds)
      print(f'    {name}: {examples / seconds:,.0f} examples/s', flush=True)
  return StreamResult(copies=copies, examples=size.records, rate=rate,
                      plan=plan.describe())


def plan_rows(copies: Sequence[int], cap_copies: Optional[int],
              cap_bytes: Optional[int], train_steps: int, batch_size: int
              ) -> List[Row]:
  """The rows to measure: each size, then the capped one."""
  rows = [Row(name=f'{n}x', copies=n, train=n * MNIST_TRAIN, eval=MNIST_EVAL,
              train_steps=train_steps, batch_size=batch_size)
          for n in [*copies, *([cap_copies] if cap_copies else [])]]
  if cap_copies:
    row = rows[-1]
    row.cap_bytes = cap_bytes or int(row.raw_pixel_bytes * CAP_FRACTION)
    row.name = f'{cap_copies}x under a {gb(row.cap_bytes)} cap'
  return rows


def run(source: str, work_dir: str, rows: List[Row],
        stream_copies: Optional[int], repetitions: int, keep_data: bool
        ) -> Tuple[List[Row], Optional[StreamResult]]:
  """Measures every row not yet measured in `work_dir`; returns all rows
  and the streaming comparison (measured on the run of `stream_copies`)."""
  rows_dir = os.path.join(work_dir, 'rows')
  os.makedirs(rows_dir, exist_ok=True)
  last_use = {row.copies: i for i, row in enumerate(rows)}
  stream_path = os.path.join(rows_dir, 'stream.json')
  stream = load_stream(stream_path)
  for i, row in enumerate(rows):
    slug = re.sub(r'[^0-9a-z]+', '-', row.name.lower()).strip('-')
    saved = os.path.join(rows_dir, slug + '.json')
    print(f'scale {i + 1}/{len(rows)}: {row.name}', flush=True)
    if os.path.exists(saved):
      with open(saved) as f:
        rows[i] = Row.from_json(f.read())
      print('  measured before (resumed)', flush=True)
      continue
    group = None
    if row.cap_bytes is not None:
      group, row.skipped = harness.make_cgroup(
          f'image-pipeline-scale-{os.getpid()}', row.cap_bytes)
      if row.skipped:
        print(f'  skipped: {row.skipped}', flush=True)
    if not row.skipped:
      check_disk(work_dir, row.copies)
      data_dir = make_data(row.copies, source, work_dir)
      out_dir = os.path.join(work_dir, f'out-{slug}')
      shutil.rmtree(out_dir, ignore_errors=True)
      try:
        run_dag(row, data_dir, out_dir, group)
      finally:
        if group:
          group.remove()
      if (row.copies == stream_copies and row.cap_bytes is None and
          not stream):
        print('  streaming input_fn vs bare read ...', flush=True)
        stream = stream_vs_bare_read(out_dir, row.copies, row.batch_size,
                                     repetitions)
        with open(stream_path, 'w') as f:
          json.dump({**dataclasses.asdict(stream), 'rate': {
              k: v.samples for k, v in stream.rate.items()}}, f)
      shutil.rmtree(out_dir, ignore_errors=True)
      if last_use[row.copies] == i and not keep_data:
        shutil.rmtree(data_dir, ignore_errors=True)
    with open(saved, 'w') as f:
      f.write(row.to_json())
  return rows, stream


def load_stream(path: str) -> Optional[StreamResult]:
  """The streaming comparison as saved, or None."""
  if not os.path.exists(path):
    return None
  with open(path) as f:
    saved = json.load(f)
  return StreamResult(**{**saved, 'rate': {
      k: Figure(v) for k, v in saved['rate'].items()}})


def measure(ctx: harness.Context
            ) -> Tuple[List[Row], Optional[StreamResult]]:
  """Every size the flags ask for, resuming in --work-dir."""
  args = ctx.args
  rows = plan_rows(
      [int(n) for n in args.scale_copies.split(',') if n.strip()],
      args.scale_cap_copies or None,
      args.scale_cap_mb and args.scale_cap_mb * 10**6,
      args.scale_train_steps or TRAIN_STEPS, harness.TRAINING.batch_size)
  return run(ctx.data_dir, ctx.work_dir, rows, args.scale_stream_copies or None,
             repetitions=args.repetitions, keep_data=args.keep_data)


def render(measured_rows: Tuple[Sequence[Row], Optional[StreamResult]],
           ctx: harness.Context) -> Dict:
  """What templates/scale.md.j2 reads: goals, sizes, components."""
  del ctx  # The measurements say it all.
  rows, stream = measured_rows
  measured = [r for r in rows if not r.skipped]
  steps, batch = (rows[0].train_steps, rows[0].batch_size) if rows else (0, 0)
  return dict(rows=rows, stream=stream, measured=measured, steps=steps,
              batch=batch, sample_s=SAMPLE_S,
              goals=goals(rows, stream), components=list(dict.fromkeys(
                  c for r in measured for c in r.seconds if c != WHOLE_RUN)))


SECTION = harness.Section(
    heading='## Scale: 1x, 10x and 100x MNIST through the whole DAG',
    measure=measure, render=render, template='scale.md.j2')
