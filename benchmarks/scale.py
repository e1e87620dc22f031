"""Scale: 1x, 10x and 100x MNIST through the whole DAG (`--scale`).

For each size (`--scale-copies`), `python -m data.scaled_mnist` writes the
data (N deformed copies of MNIST's training set, its official test set),
then `local_runner.py` runs the whole DAG from a fresh output directory
with a fixed Trainer step budget (so CPU training time does not hide the
input). Measured per component: wall time (the runner's progress lines),
examples/s, the peak resident memory of the whole process tree while it
ran (the runner and every Beam worker, their proportional set sizes
summed; psutil samples every SAMPLE_S), and the bytes it left on disk. One size (`--scale-cap-copies`,
100 by default) runs again under a memory cap below its raw pixels: a
cgroup v1 memory limit on the run's process tree (root only; the row is
skipped, saying why, where no cgroup can be made).

Then the Trainer's streaming input_fn (the path a split too large for the
memory budget takes) against the bare read of the same shards, at the
size `--scale-stream-copies` (10 by default), one epoch each, interleaved.

Each row is written to WORK_DIR/rows/ as it is measured, so an interrupted
run given the same --work-dir resumes at the first row not yet measured;
each row's output directory is removed once measured, and the data once
no later row needs it (--keep-data keeps it).
"""

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional, Sequence, Tuple

from benchmarks import cgroup
from benchmarks.timing import Figure

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COPIES = (1, 10, 100)
CAP_COPIES = 100
STREAM_COPIES = 10
# The Trainer's fixed budget: steps of its default batch, one epoch.
TRAIN_STEPS = 300
SAMPLE_S = 0.5
# MNIST's training and test sets, and an image's raw pixels.
MNIST_TRAIN, MNIST_EVAL, PIXELS = 60_000, 10_000, 28 * 28
# The cap's default: this fraction of the capped size's raw pixels.
CAP_FRACTION = 0.85
# Disk a size needs, per copy (its IDX files, TFRecords, statistics), and
# in all (models, logs): generous, from the 1x and 10x runs.
DISK_PER_COPY, DISK_FIXED = 60 << 20, 1 << 30
_FINISHED = re.compile(r'^✔ (\S+): ([\d.]+)s')
_STARTED = re.compile(r'^▶ (\S+) \.\.\.$')
_TRAINER_INPUT = re.compile(r'Trainer input: (.*)\.$', re.MULTILINE)
WHOLE_RUN = 'whole run'

# Goals (the issue's): numbers the report's goal lines compare with.
EXAMPLE_GEN_GOAL = 150_000  # examples/s at 100x
PEAK_GROWTH_GOAL = 1.5  # peak at 100x / peak at 10x
STREAM_GOAL = 0.7  # streaming input_fn / bare read
PER_EXAMPLE_COMPONENTS = ('ImageExampleGen', 'StatisticsGen', 'Transform')


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
    return (self.train + self.eval) * PIXELS

  def examples(self, component: str) -> Optional[int]:
    """Examples the component works through in this run."""
    return {
        'ImageExampleGen': self.train + self.eval,
        'StatisticsGen': self.train + self.eval,
        'Transform': self.train,  # Analysed: the training split.
        'Trainer': self.train_steps * self.batch_size,
        'Evaluator': self.eval,
    }.get(component)

  def rate(self, component: str) -> Optional[float]:
    examples, seconds = self.examples(component), self.seconds.get(component)
    return examples / seconds if examples and seconds else None

  def to_json(self) -> str:
    return json.dumps(dataclasses.asdict(self), indent=1)

  @classmethod
  def from_json(cls, text: str) -> 'Row':
    return cls(**json.loads(text))


@dataclasses.dataclass
class StreamResult:
  copies: int
  examples: int
  rate: Dict[str, Figure]  # 'streaming input_fn', 'bare read': examples/s
  plan: str  # The streaming plan, as the Trainer logs it.


@dataclasses.dataclass
class Goal:
  name: str
  measured: str
  met: Optional[bool]  # None: not measured.


def find(rows: Sequence[Row], copies: int, capped: bool = False
         ) -> Optional[Row]:
  for row in rows:
    if (row.copies == copies and (row.cap_bytes is not None) == capped
        and not row.skipped):
      return row
  return None


def goals(rows: Sequence[Row], stream: Optional[StreamResult]) -> List[Goal]:
  """The issue's goals, from what was measured (missing rows: not met,
  'not measured')."""
  ten, hundred = find(rows, 10), find(rows, 100)
  capped = find(rows, 100, capped=True)
  out = []
  if capped:
    ok = not capped.failed and capped.cap_bytes < capped.raw_pixel_bytes
    out.append(Goal(
        '100x completes under a memory cap below its raw pixels',
        f'{"completed" if not capped.failed else capped.failed} under '
        f'{_gb(capped.cap_bytes)} (raw pixels {_gb(capped.raw_pixel_bytes)})',
        ok))
  else:
    skipped = [r.skipped for r in rows
               if r.cap_bytes is not None and r.skipped]
    out.append(Goal('100x completes under a memory cap below its raw pixels',
                    'not measured' + (f': {skipped[0]}' if skipped else ''),
                    None))
  if ten and hundred:
    growth = hundred.peak_memory[WHOLE_RUN] / ten.peak_memory[WHOLE_RUN]
    out.append(Goal(f'peak memory at 100x <= {PEAK_GROWTH_GOAL}x peak at 10x',
                    f'{growth:.2f}x ({_gb(hundred.peak_memory[WHOLE_RUN])} vs '
                    f'{_gb(ten.peak_memory[WHOLE_RUN])})',
                    growth <= PEAK_GROWTH_GOAL))
  else:
    out.append(Goal(f'peak memory at 100x <= {PEAK_GROWTH_GOAL}x peak at 10x',
                    'not measured', None))
  rate = hundred and hundred.rate('ImageExampleGen')
  out.append(Goal(
      f'ExampleGen >= {EXAMPLE_GEN_GOAL:,} examples/s at 100x',
      f'{rate:,.0f}' if rate else 'not measured',
      rate >= EXAMPLE_GEN_GOAL if rate else None))
  for component in PER_EXAMPLE_COMPONENTS[1:] + PER_EXAMPLE_COMPONENTS[:1]:
    name = f'{component}: time per example at 100x <= at 10x'
    if ten and hundred and ten.rate(component) and hundred.rate(component):
      at_10, at_100 = 1e6 / ten.rate(component), 1e6 / hundred.rate(component)
      out.append(Goal(name, f'{at_100:.2f} vs {at_10:.2f} µs',
                      at_100 <= at_10))
    else:
      out.append(Goal(name, 'not measured', None))
  name = f'streaming input_fn >= {STREAM_GOAL:.0%} of the bare read'
  if stream:
    share = (stream.rate['streaming input_fn'].median /
             stream.rate['bare read'].median)
    out.append(Goal(name, f'{share:.0%} (at {stream.copies}x)',
                    share >= STREAM_GOAL))
  else:
    out.append(Goal(name, 'not measured', None))
  return out


def _gb(n: Optional[float]) -> str:
  return '-' if n is None else f'{n / 1e9:.2f} GB'


# --- Running a row ---------------------------------------------------------

def _tree_memory(process) -> int:
  """Resident bytes of a process and all its descendants, each counting
  its share of the pages they share (PSS: TensorFlow's libraries, mapped by
  every process, would count once per process in RSS, 1.5x as much for a
  Beam component). Processes that exit meanwhile are skipped."""
  import psutil  # pylint: disable=g-import-not-at-top
  total = 0
  for p in [process, *process.children(recursive=True)]:
    try:
      total += p.memory_full_info().pss
    except psutil.NoSuchProcess:
      pass
  return total


class _Sampler(threading.Thread):
  """Peak memory of the tree, overall and per component (the one
  running)."""

  def __init__(self, pid: int):
    super().__init__(daemon=True)
    import psutil  # pylint: disable=g-import-not-at-top
    self._process = psutil.Process(pid)
    self.component = None
    self.peaks: Dict[str, int] = {}
    self._done = threading.Event()

  def run(self):
    import psutil  # pylint: disable=g-import-not-at-top
    while not self._done.wait(SAMPLE_S):
      try:
        used = _tree_memory(self._process)
      except psutil.NoSuchProcess:
        return
      for key in (WHOLE_RUN, self.component):
        if key:
          self.peaks[key] = max(self.peaks.get(key, 0), used)

  def stop(self):
    self._done.set()
    self.join()


def _disk_bytes(out_dir: str) -> Dict[str, int]:
  """Bytes under each component's directory of the pipeline root."""
  root = os.path.join(out_dir, 'pipeline')
  sizes = {}
  for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
    sizes[name] = _du(os.path.join(root, name))
  return sizes


def _du(path: str) -> int:
  return sum(os.path.getsize(os.path.join(folder, name))
             for folder, _, names in os.walk(path) for name in names)


def run_dag(row: Row, data_dir: str, out_dir: str,
            runner_args: Sequence[str], group: Optional[cgroup.Group]
            ) -> Row:
  """Runs local_runner.py for `row`, filling in its measurements."""
  command = [sys.executable, os.path.join(PROJECT_DIR, 'local_runner.py'),
             '--data-dir', data_dir, '--output-dir', out_dir,
             '--epochs', '1', '--train-steps', str(row.train_steps),
             '--batch-size', str(row.batch_size), '--accuracy-threshold',
             '0', *runner_args]
  start = time.perf_counter()
  process = subprocess.Popen(
      group.wrap(command) if group else command, cwd=PROJECT_DIR,
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
  sampler = _Sampler(process.pid)
  sampler.start()
  output = []
  for line in process.stdout:
    output.append(line)
    started, finished = _STARTED.match(line), _FINISHED.match(line)
    if started:
      sampler.component = started[1]
      print(f'    {line.rstrip()}', flush=True)
    elif finished:
      row.seconds[finished[1]] = float(finished[2])
      sampler.component = None
      print(f'    {line.rstrip()}', flush=True)
  returncode = process.wait()
  row.seconds[WHOLE_RUN] = time.perf_counter() - start
  sampler.stop()
  row.peak_memory = sampler.peaks
  if group:
    row.cgroup_max_usage, row.oom_kills = group.max_usage(), group.oom_kills()
  text = ''.join(output)
  if returncode:
    why = (f'killed by the OOM killer ({row.oom_kills}x)' if row.oom_kills
           else f'exit status {returncode}')
    if row.cap_bytes is None:  # Only the capped run may fail.
      raise SystemExit(f'error: {" ".join(command)} failed ({why}):\n'
                       f'{text[-5000:]}')
    row.failed = why
    print(f'    {why}; last output:\n{text[-2000:]}', flush=True)
  row.disk_bytes = _disk_bytes(out_dir)
  row.trainer_input = _trainer_input(out_dir)
  return row


def _trainer_input(out_dir: str) -> List[str]:
  """The Trainer's 'Trainer input:' lines, from the run's full log."""
  logs = os.path.join(out_dir, 'logs')
  lines = []
  for name in sorted(os.listdir(logs)) if os.path.isdir(logs) else []:
    with open(os.path.join(logs, name), errors='replace') as f:
      lines += _TRAINER_INPUT.findall(f.read())
  return lines


# --- Data ------------------------------------------------------------------

def make_data(copies: int, source: str, work_dir: str) -> str:
  """The data of `copies` (made once: a finished directory is marked)."""
  out = os.path.join(work_dir, f'data-{copies}x')
  done = os.path.join(out, '.complete')
  if os.path.exists(done):
    return out
  shutil.rmtree(out, ignore_errors=True)
  command = [sys.executable, '-m', 'data.scaled_mnist', '--copies',
             str(copies), '--out', out, '--source', source]
  print(f'  data: python -m data.scaled_mnist --copies {copies} ...',
        flush=True)
  started = time.perf_counter()
  subprocess.run(command, cwd=PROJECT_DIR, check=True)
  print(f'  data: {_du(out) / 1e6:,.0f} MB in '
        f'{time.perf_counter() - started:.0f} s', flush=True)
  with open(done, 'w'):
    pass
  return out


def check_disk(path: str, copies: int) -> None:
  free = shutil.disk_usage(path).free
  need = copies * DISK_PER_COPY + DISK_FIXED
  if free < need:
    raise SystemExit(f'error: {path}: {free / 1e9:.1f} GB free, {copies}x '
                     f'needs about {need / 1e9:.1f} GB')


# --- Streaming vs the bare read --------------------------------------------

def stream_vs_bare_read(out_dir: str, copies: int, batch_size: int,
                        repetitions: int) -> StreamResult:
  """One epoch of the training split each, from the run's Examples and
  transform graph: the Trainer's streaming plan, and the bare read."""
  import tensorflow_transform as tft  # pylint: disable=g-import-not-at-top
  from benchmarks import input_speed  # pylint: disable=g-import-not-at-top
  from benchmarks.timing import timed  # pylint: disable=g-import-not-at-top
  from modules import input_pipeline  # pylint: disable=g-import-not-at-top
  from modules.training_config import InputConfig  # pylint: disable=g-import-not-at-top
  root = os.path.join(out_dir, 'pipeline')
  examples = _newest(os.path.join(root, 'ImageExampleGen', 'examples'))
  graph = _newest(os.path.join(root, 'Transform', 'transform_graph'))
  pattern = os.path.join(examples, 'Split-train', '*')
  output = tft.TFTransformOutput(graph)
  size = input_pipeline.measure(pattern)
  # As the Trainer reads a split one byte too large for its budget.
  plan = input_pipeline.plan_split(
      'train', size, InputConfig(), training=True,
      budget=size.memory_bytes - 1)
  makers = {
      'streaming input_fn': lambda: input_pipeline.make_planned_dataset(
          pattern, output, batch_size, plan),
      'bare read': lambda: input_speed.bare_read(pattern, batch_size),
  }
  rate = {name: Figure() for name in makers}
  for make in makers.values():  # Warm-up: TensorFlow's one-off costs.
    input_speed.epoch(make().take(50))
  for _ in range(repetitions):
    for name, make in makers.items():
      dataset = make()
      seconds, examples = timed(lambda: input_speed.epoch(dataset, size.records))  # pylint: disable=cell-var-from-loop
      rate[name].add(examples / seconds)
      print(f'    {name}: {examples / seconds:,.0f} examples/s', flush=True)
  return StreamResult(copies=copies, examples=size.records, rate=rate,
                      plan=plan.describe())


def _newest(directory: str) -> str:
  """The artifact directory with the highest execution id."""
  return os.path.join(directory, max(os.listdir(directory), key=int))


# --- The whole section -----------------------------------------------------

def plan_rows(copies: Sequence[int], cap_copies: Optional[int],
              cap_bytes: Optional[int], train_steps: int, batch_size: int
              ) -> List[Row]:
  rows = []
  for n in copies:
    rows.append(Row(name=f'{n}x', copies=n, train=n * MNIST_TRAIN,
                    eval=MNIST_EVAL, train_steps=train_steps,
                    batch_size=batch_size))
  if cap_copies:
    row = Row(name='', copies=cap_copies, train=cap_copies * MNIST_TRAIN,
              eval=MNIST_EVAL, train_steps=train_steps, batch_size=batch_size)
    row.cap_bytes = cap_bytes or int(row.raw_pixel_bytes * CAP_FRACTION)
    row.name = f'{cap_copies}x under a {_gb(row.cap_bytes)} cap'
    rows.append(row)
  return rows


def _last_use(rows: Sequence[Row]) -> Dict[int, int]:
  """copies -> index of the last row that needs that data."""
  return {row.copies: i for i, row in enumerate(rows)}


def run(source: str, work_dir: str, rows: List[Row],
        stream_copies: Optional[int], runner_args: Sequence[str],
        repetitions: int, keep_data: bool
        ) -> Tuple[List[Row], Optional[StreamResult]]:
  """Measures every row not yet measured in `work_dir`; returns all rows
  and the streaming comparison (measured on the run of `stream_copies`)."""
  rows_dir = os.path.join(work_dir, 'rows')
  os.makedirs(rows_dir, exist_ok=True)
  last_use = _last_use(rows)
  stream = _load_stream(rows_dir)
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
      group, why = cgroup.make(f'image-pipeline-scale-{os.getpid()}',
                               row.cap_bytes)
      if not group:
        row.skipped = why
        print(f'  skipped: {why}', flush=True)
    if not row.skipped:
      check_disk(work_dir, row.copies)
      data_dir = make_data(row.copies, source, work_dir)
      out_dir = os.path.join(work_dir, f'out-{slug}')
      shutil.rmtree(out_dir, ignore_errors=True)
      try:
        run_dag(row, data_dir, out_dir, runner_args, group)
      finally:
        if group:
          group.remove()
      if (row.copies == stream_copies and row.cap_bytes is None and
          not stream):
        print('  streaming input_fn vs bare read ...', flush=True)
        stream = stream_vs_bare_read(out_dir, row.copies, row.batch_size,
                                     repetitions)
        _save_stream(rows_dir, stream)
      shutil.rmtree(out_dir, ignore_errors=True)
      if last_use[row.copies] == i and not keep_data:
        shutil.rmtree(data_dir, ignore_errors=True)
    with open(saved, 'w') as f:
      f.write(row.to_json())
  return rows, stream


def _save_stream(rows_dir: str, stream: StreamResult) -> None:
  with open(os.path.join(rows_dir, 'stream.json'), 'w') as f:
    json.dump({**dataclasses.asdict(stream),
               'rate': {k: v.samples for k, v in stream.rate.items()}}, f)


def _load_stream(rows_dir: str) -> Optional[StreamResult]:
  path = os.path.join(rows_dir, 'stream.json')
  if not os.path.exists(path):
    return None
  with open(path) as f:
    d = json.load(f)
  d['rate'] = {k: Figure(v) for k, v in d['rate'].items()}
  return StreamResult(**d)
