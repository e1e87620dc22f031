"""The benchmarks' one harness: what every section of BENCHMARKS.md shares.

A `Section` is a heading, a measure function and a template;
`python -m benchmarks` runs each in a `Context`. Here too: figures,
timing, the pipeline's runs, the MNIST files, and BENCHMARKS.md's blocks.
"""

import dataclasses
import datetime
import glob
import os
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
from typing import (Any, Callable, Dict, Iterable, List, Optional, Sequence,
                    Tuple, Union)

import jinja2
import numpy as np

from components.image_example_gen import idx
from modules.training.config import TrainingConfig
from pipeline import constants
from pipeline.knobs import DataConfig
from records import csv_cells
from records import features

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The knobs of a run without flags: ExampleGen's and the Trainer's.
DATA = DataConfig()
TRAINING = TrainingConfig()
# Beam args of every Beam component in a local run (local_runner.py).
BEAM_ARGS = [*constants.BEAM_PIPELINE_ARGS, *constants.LOCAL_BEAM_PIPELINE_ARGS]
# Beam in one process: for the runs that measure something else.
IN_MEMORY = ['--direct_running_mode=in_memory', '--direct_num_workers=1']
ONE_PROCESS = '--beam-args=' + ' '.join(IN_MEMORY)
# --quick: a DAG run of a few training steps in one process; one seed, so
# that the sections' quick runs of the defaults are one run (Context.run).
QUICK_SEED = 1
QUICK_ARGS = ('--seed', str(QUICK_SEED), '--epochs', '1', '--train-steps',
              '5', '--accuracy-threshold', '0', ONE_PROCESS)
WHOLE_RUN = 'whole run'
# The CPU flags that decide the Trainer's precision
# (modules/training/devices.py).
CPU_FLAGS = ('avx2', 'avx512f', 'avx512_bf16', 'amx_bf16')
# IDX file prefix of each split (ExampleGen's default input config).
SPLIT_PREFIXES = {'train': 'train', 'eval': 't10k'}
# Where Debian's dataset-fashion-mnist puts Fashion-MNIST's IDX files.
FASHION_MNIST_DIR = '/usr/share/datasets/fashion-mnist'
# runs/run_summary.py's progress lines, and the Trainer's epoch lines.
_STARTED = re.compile(r'^▶ (\S+) \.\.\.$')
_FINISHED = re.compile(r'^✔ (\S+): ([\d.]+)s( \(cached\))?$')
_EPOCH = re.compile(r'Epoch \d+/\d+: .* in ([\d.]+)s .*val_accuracy ([\d.]+)')
# Each section's words: benchmarks/templates/NAME.md.j2, filled with what
# its `render` computes.
TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(os.path.join(os.path.dirname(__file__),
                                                'templates')),
    trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined)
_BLOCK = re.compile(r'<!-- section (\S+) -->\n(.*?)<!-- end \1 -->\n',
                    re.DOTALL)


@dataclasses.dataclass
class Context:
  """What a section runs with: the command line, and where it works."""
  command: str  # As the report shows it.
  quick: bool = False
  repetitions: int = 1  # Per figure (1 in quick mode).
  data_dir: str = ''  # MNIST's IDX files (in quick mode, a subset).
  data_dir_shown: str = ''  # --data-dir as the report shows it.
  work_dir: str = ''
  args: Any = None  # The parsed command line, for a section's own flags.
  # Quick mode: (data, flags) -> (LocalRun, output directory) of each run.
  runs: Dict[Tuple, Tuple['LocalRun', str]] = dataclasses.field(
      default_factory=dict, repr=False)

  def pick(self, full, quick):
    """`quick` in quick mode, else `full`."""
    return quick if self.quick else full

  def path(self, *names: str) -> str:
    """A path in the scratch space."""
    return os.path.join(self.work_dir, *names)

  def run(self, name: str, *flags: str, data_dir: Optional[str] = None
          ) -> Tuple['LocalRun', str]:
    """(local_runner.py on `data_dir` (default: the data) from a fresh
    output directory `name`, that directory). In quick mode, sections that
    ask for the same run share one: its figures mean little, its cost is
    the tests'."""
    key = (data_dir or self.data_dir, flags)
    if self.quick and key in self.runs:
      return self.runs[key]
    output_dir = self.path(name)
    local_run = run_local_runner(key[0], output_dir, *flags)
    if self.quick:
      self.runs[key] = (local_run, output_dir)
    return local_run, output_dir


@dataclasses.dataclass(frozen=True)
class Section:
  """A block of BENCHMARKS.md: its heading, what it measures, how it reads.

  Attributes:
    heading: The block's first line, or a function of the Context giving
      it.
    measure: Context -> the section's measurements.
    template: The file in benchmarks/templates that holds the words. It
      reads `ctx`, `row`, `goal`, `whole_run`, `training` (the Trainer's
      knobs) and `cores`, and the names `render` gives it.
    render: (measurements, Context) -> those names (None: the
      measurements, a dict).
  """
  heading: Union[str, Callable[[Context], str]]
  measure: Callable[[Context], Any]
  template: str
  render: Optional[Callable[[Any, Context], Dict[str, Any]]] = None

  def text(self, results, ctx: Context) -> str:
    """The block's Markdown, from the measurements."""
    heading = self.heading(ctx) if callable(self.heading) else self.heading
    body = TEMPLATES.get_template(self.template).render(
        ctx=ctx, row=row, goal=goal, whole_run=WHOLE_RUN, training=TRAINING,
        cores=os.cpu_count(),
        **(self.render(results, ctx) if self.render else results))
    return '\n\n'.join([heading, header(ctx.command), body.rstrip('\n')]) + '\n'

  def run(self, ctx: Context) -> str:
    """Measures, then renders."""
    return self.text(self.measure(ctx), ctx)


# Figures and tables.


@dataclasses.dataclass
class Figure:
  """Samples of one quantity (seconds, examples/s, ...), one per repetition."""
  samples: List[float] = dataclasses.field(default_factory=list)

  def add(self, value: float) -> None:
    """Adds one repetition's value."""
    self.samples.append(value)

  @property
  def median(self) -> float:
    """The median of the samples."""
    return statistics.median(self.samples)

  def format(self, fmt: str = ',.0f') -> str:
    """'median (min-max)', or just the value when there is one sample."""
    if len(self.samples) == 1:
      return format(self.median, fmt)
    return (f'{self.median:{fmt}} ({min(self.samples):{fmt}}-'
            f'{max(self.samples):{fmt}})')


def figures(names: Iterable[str]) -> Dict[str, Figure]:
  """An empty Figure per name."""
  return {name: Figure() for name in names}


def timed(fn: Callable[[], object]) -> Tuple[float, object]:
  """(seconds, result) of one call."""
  start = time.perf_counter()
  result = fn()
  return time.perf_counter() - start, result


def alternating(workloads: Dict[str, Callable[[], object]],
                ways: Dict[str, Callable[[], object]], repeats: int
                ) -> Tuple[Dict[Tuple[str, str], List[float]],
                           Dict[Tuple[str, str], object]]:
  """Times each workload each way in this process, alternating.

  Each workload runs once untimed first (imports, first-time set-up), the
  first way. Then, each repeat, each workload runs once each way, the ways'
  order reversed every other repeat.

  Args:
    workloads: name -> the work to time.
    ways: name -> what sets this process up that way, before each run.
    repeats: timed runs of each workload each way.

  Returns:
    (seconds, set-ups): the seconds of each (workload, way), and what its
    set-up returned in the last repeat.
  """
  first = next(iter(ways.values()))
  for run in workloads.values():
    first()
    run()
  seconds = {(w, way): [] for w in workloads for way in ways}
  set_ups = {}
  for repeat in range(repeats):
    for workload, run in workloads.items():
      order = list(ways) if repeat % 2 == 0 else list(reversed(ways))
      for way in order:
        set_ups[workload, way] = ways[way]()
        start = time.monotonic()
        run()
        seconds[workload, way].append(time.monotonic() - start)
  return seconds, set_ups


def idx_examples(description: str, argv: Optional[Sequence[str]],
                 prefix: str) -> Tuple[Any, str, Any]:
  """Parses --data-dir, --work-dir and --repeats, and converts the IDX files
  of --data-dir once, as gzipped Examples in 16 shards a split.

  Returns:
    (the parsed arguments, the work directory, the Examples artifact).
  """
  import argparse  # pylint: disable=g-import-not-at-top
  import tempfile  # pylint: disable=g-import-not-at-top
  parser = argparse.ArgumentParser(description=description)
  parser.add_argument('--data-dir', required=True)
  parser.add_argument('--work-dir', default=None)
  parser.add_argument('--repeats', type=int, default=6)
  args = parser.parse_args(argv)
  work = args.work_dir or tempfile.mkdtemp(prefix=prefix)
  return args, work, convert_idx(args.data_dir, work)


def convert_idx(data_dir: str, work: str,
                validation_percent: Optional[int] = None):
  """Runs ImageExampleGen on the IDX files of `data_dir` into WORK/examples,
  gzipped in 16 shards a split, `validation_percent` of train carved into
  validation as a run carves it (ImageExampleGenOptions' own default:
  None); returns the Examples artifact."""
  from components.image_example_gen.options import ImageExampleGenOptions  # pylint: disable=g-import-not-at-top
  from tests import artifacts  # pylint: disable=g-import-not-at-top
  return artifacts.run_example_gen(
      data_dir, os.path.join(work, 'examples'),
      ImageExampleGenOptions(input_format='idx', num_shards=16,
                             validation_percent=validation_percent))


def median_and_all(times: Sequence[float]) -> str:
  """'median (each, ...)' of some seconds."""
  return (f'{statistics.median(times):.2f} '
          f'({", ".join(f"{t:.2f}" for t in times)})')


def alternating_line(workload: str, seconds: Dict[Tuple[str, str], List[float]],
                     before: str, after: str,
                     more: Callable[[str], str] = lambda way: '') -> str:
  """A workload's line of `alternating`'s seconds: each way's median and
  runs, then `more` of the way, and the ratio of after's median to before's."""
  cells = [f'{way} {median_and_all(seconds[workload, way])}{more(way)}'
           for way in (before, after)]
  ratio = (statistics.median(seconds[workload, after])
           / statistics.median(seconds[workload, before]))
  return f'{workload}: {"; ".join(cells)}; ratio {ratio:.2f}'


def median(values: Sequence[float]) -> float:
  """The upper median: a value of the list."""
  return sorted(values)[len(values) // 2]


def row(*cells) -> str:
  """A Markdown table row."""
  return '| ' + ' | '.join(str(c) for c in cells) + ' |'


def goal(name: str, measured: str, met: Optional[bool]) -> str:
  """A goal's row: met, **not met**, or nothing (not measured: None)."""
  return row(name, measured,
             '' if met is None else 'met' if met else '**not met**')


def cpu_model() -> str:
  """The CPU's model name."""
  try:
    with open('/proc/cpuinfo') as f:
      for line in f:
        if line.startswith('model name'):
          return line.split(':', 1)[1].strip()
  except OSError:
    pass
  return platform.processor() or platform.machine()


def cpu_flags(none: str) -> str:
  """Which of CPU_FLAGS this CPU has, or `none`."""
  from modules.training import devices  # pylint: disable=g-import-not-at-top
  flags = devices.cpu_flags()
  return ', '.join(f for f in CPU_FLAGS if f in flags) or none


def cpu_line(none: str, rest: str = '') -> str:
  """'CPU: model; flags: ...; the Trainer trains in ...', then `rest`;
  `none`: the flags when the CPU has none of CPU_FLAGS."""
  from modules.training import devices  # pylint: disable=g-import-not-at-top
  precision, why = devices.cpu_precision(devices.cpu_flags())
  return (f'CPU: {cpu_model()}; flags: {cpu_flags(none)}. The Trainer trains '
          f'in {precision} here ({why}){rest}.')


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


def loads() -> str:
  """The load averages over 1, 5 and 15 minutes: '1.2, 0.9, 0.8'."""
  return ', '.join(f'{x:.1f}' for x in os.getloadavg())


def bare_read(file_pattern: str, batch_size: int):
  """The ceiling of reading: every shard's records in batches, the shards
  read in parallel; no parsing, shuffle or transform."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from modules.training import input_pipeline  # pylint: disable=g-import-not-at-top
  from records import shards  # pylint: disable=g-import-not-at-top
  return shards.interleaved_batches(
      input_pipeline.list_files(file_pattern), batch_size).prefetch(
          tf.data.AUTOTUNE)


def epoch(dataset, records: Optional[int] = None) -> int:
  """Iterates one epoch; returns the number of examples seen.

  With `records`, stops at the last record: tf.data's parallel interleave
  can signal the end long after it, and that wait is not reading.
  """
  count = 0
  for batch in dataset:
    count += int((batch[0] if isinstance(batch, tuple) else batch).shape[0])
    if records is not None and count >= records:
      break
  return count


def timed_epoch(dataset, records: Optional[int] = None
                ) -> Tuple[float, float, int]:
  """(wall s, process CPU s, examples) of one epoch of a dataset built
  beforehand (traced outside the timer)."""
  cpu_start = time.process_time()
  seconds, examples = timed(lambda: epoch(dataset, records))
  return seconds, time.process_time() - cpu_start, examples


# A memory cap.


CGROUP_MOUNT = '/sys/fs/cgroup/memory'


class Cgroup:
  """A cgroup v1 memory limit around a process tree (past it, the OOM
  killer ends one of its processes), and the tree's peak."""

  def __init__(self, path: str):
    self.path = path

  def wrap(self, command: List[str]) -> List[str]:
    """`command`, run inside the group (and so every process it starts)."""
    return ['/bin/sh', '-c', 'echo $$ > "$0" && exec "$@"',
            os.path.join(self.path, 'cgroup.procs'), *command]

  def _read(self, name: str) -> str:
    with open(os.path.join(self.path, name)) as f:
      return f.read()

  def max_usage(self) -> int:
    """Peak bytes charged to the group: resident memory and page cache."""
    return int(self._read('memory.max_usage_in_bytes'))

  def oom_kills(self) -> int:
    """How many processes of the group the OOM killer ended."""
    fields = dict(line.split(' ', 1) for line in
                  self._read('memory.oom_control').splitlines())
    return int(fields.get('oom_kill', 0))

  def remove(self, timeout_s: float = 60) -> None:
    """Removes the group once its processes are gone."""
    deadline = time.monotonic() + timeout_s
    while self._read('cgroup.procs').strip():
      if time.monotonic() > deadline:
        raise RuntimeError(f'{self.path}: processes still in the group after '
                           f'{timeout_s:.0f} s: {self._read("cgroup.procs")}')
      time.sleep(0.5)
    os.rmdir(self.path)


def make_cgroup(name: str, limit_bytes: int) -> Tuple[Optional[Cgroup], str]:
  """(the group, '') or (None, why it cannot be made): a group inside this
  process's own memory cgroup (root and cgroup v1 needed)."""
  with open('/proc/self/cgroup') as f:  # This process's memory cgroup.
    own = next((path for _, controllers, path in
                (line.rstrip('\n').split(':', 2) for line in f)
                if 'memory' in controllers.split(',')), None)
  if own is None or not os.path.isdir(CGROUP_MOUNT):
    return None, f'no cgroup v1 memory hierarchy ({CGROUP_MOUNT})'
  if os.geteuid() != 0:
    return None, 'a memory cgroup needs root'
  path = os.path.join(CGROUP_MOUNT + own, name)
  try:
    os.mkdir(path)
  except OSError as e:
    return None, f'cannot make a memory cgroup in {os.path.dirname(path)}: {e}'
  # Where swap is accounted, the limit covers it too (no swapping instead
  # of the cap).
  for limit in ('memory.limit_in_bytes', 'memory.memsw.limit_in_bytes'):
    if os.path.exists(os.path.join(path, limit)):
      with open(os.path.join(path, limit), 'w') as f:
        f.write(str(limit_bytes))
  return Cgroup(path), ''


# BENCHMARKS.md: the core sections are its head, then each other section
# is a block between `<!-- section NAME -->` and `<!-- end NAME -->`, which
# a run of that section replaces, leaving the rest of the file as it was.


def _read(path: str) -> str:
  return open(path).read() if os.path.exists(path) else ''


def _save(path: str, text: str) -> None:
  with open(path, 'w') as f:
    f.write(text)


def write_head(path: str, text: str) -> None:
  """Writes the core sections' report, keeping the file from its first
  block on."""
  old = _read(path)
  first = _BLOCK.search(old)
  rest = old[first.start():] if first else ''
  _save(path, text.rstrip('\n') + '\n' + ('\n' + rest if rest else ''))


def write_section(path: str, name: str, text: str) -> None:
  """Replaces section `name`'s block in place, or appends it."""
  old = _read(path)
  block = f'<!-- section {name} -->\n{text.rstrip()}\n<!-- end {name} -->\n'
  for match in _BLOCK.finditer(old):
    if match[1] == name:
      return _save(path, old[:match.start()] + block + old[match.end():])
  _save(path, (old.rstrip('\n') + '\n\n' if old.strip() else '') + block)


# The data: MNIST's IDX files, whole or a subset, and bytes on disk.


def load_split(data_dir: str, prefix: str) -> Tuple[np.ndarray, np.ndarray]:
  """(images, labels) of the `prefix`-* IDX files in `data_dir`."""
  images = labels = None
  for path in sorted(glob.glob(os.path.join(data_dir, f'{prefix}-*'))):
    idx_header = idx.validate(path)
    if len(idx_header.shape) == 1:
      labels = idx.read_all(idx_header)
    else:
      images = idx.read_all(idx_header)
  if images is None or labels is None:
    raise SystemExit(f'error: {data_dir}: no {prefix}-* IDX images and '
                     'labels files (MNIST layout expected)')
  return images, labels


def load(data_dir: str) -> Dict[str, Tuple[np.ndarray, np.ndarray]]:
  """(images, labels) per split."""
  return {split: load_split(data_dir, prefix)
          for split, prefix in SPLIT_PREFIXES.items()}


def write_subset(data_dir: str, out_dir: str, fraction: float) -> int:
  """The first `fraction` of each split as gzipped IDX files in `out_dir`;
  returns the number of examples written."""
  os.makedirs(out_dir, exist_ok=True)
  total = 0
  for split, (images, labels) in load(data_dir).items():
    n = max(1, int(len(labels) * fraction))
    for kind, array in (('images-idx3', images), ('labels-idx1', labels)):
      idx.write(os.path.join(out_dir,
                             f'{SPLIT_PREFIXES[split]}-{kind}-ubyte.gz'),
                array[:n])
    total += n
  return total


def bytes_on_disk(pattern: str) -> int:
  """Bytes of the files `pattern` matches, and of those under the
  directories it matches."""
  paths = glob.glob(pattern)
  paths += [os.path.join(folder, name) for top in paths
            for folder, _, names in os.walk(top) for name in names]
  return sum(os.path.getsize(p) for p in paths if os.path.isfile(p))


# The pipeline, run as a user runs it.


def default_encoding(geometry: features.ImageGeometry) -> str:
  """The image encoding a run without flags gives this geometry."""
  return features.resolve_encoding(DATA.image_encoding, geometry,
                                   DATA.png_min_pixels)


def example_gen_beam_args(data_dir: str) -> List[str]:
  """ExampleGen's Beam args in a local run on IDX files in `data_dir`: its
  execution follows the input's size (pipeline/scale.py)."""
  from pipeline import scale  # pylint: disable=g-import-not-at-top
  return BEAM_ARGS + scale.example_gen_beam_args(scale.measure(data_dir,
                                                               'idx'))


def example_gen(data_dir: str, out_dir: str, beam_args: Sequence[str],
                **options):
  """Our ImageExampleGen's executor, as TFX's Beam executor operator runs it
  (no orchestrator), with the pipeline's shards; its Examples artifact."""
  from components.image_example_gen.options import ImageExampleGenOptions  # pylint: disable=g-import-not-at-top
  from tests import example_gen_standalone  # pylint: disable=g-import-not-at-top
  return example_gen_standalone.run_example_gen(
      data_dir, out_dir,
      ImageExampleGenOptions(num_shards=DATA.num_shards, **options),
      list(beam_args))


def newest_artifact(output_dir: str, component: str, output: str) -> str:
  """The URI of a local run's newest artifact of a component's output."""
  parent = os.path.join(output_dir, 'pipeline', component, output)
  return os.path.join(parent, max(os.listdir(parent), key=int))


def trainer_model(output_dir: str) -> Tuple[str, Dict]:
  """(The serving model's directory, its training_plan.json) of a local
  run's Trainer (one run in `output_dir`), pushed or not."""
  from records import serving_model  # pylint: disable=g-import-not-at-top
  [model_dir] = glob.glob(os.path.join(output_dir, 'pipeline', 'Trainer',
                                       'model', '*', 'Format-Serving'))
  return model_dir, serving_model.read_training_plan(model_dir)


def tool(module: str, *args: str) -> None:
  """`python -m module args` in the project, as a user runs it."""
  subprocess.run([sys.executable, '-m', module, *args], check=True,
                 cwd=PROJECT_DIR, capture_output=True, text=True)


def read_csv(path: str) -> List[Dict[str, str]]:
  """The rows of a CSV file the project wrote, as it was given them."""
  with open(path, newline='', encoding='utf-8') as f:
    return list(csv_cells.dict_rows(f))


@dataclasses.dataclass
class LocalRun:
  """One local_runner.py process, as `run_local_runner` saw it."""
  command: List[str]
  returncode: int
  seconds: float  # Wall time of the process.
  nodes: Dict[str, Tuple[float, bool]]  # component -> (seconds, cached)
  stdout: str
  stderr: str
  # component -> CPU seconds of the runner's own process while it ran (not
  # Beam's workers): unlike wall time, hardly changed by other work.
  cpu_seconds: Dict[str, float]
  # component and WHOLE_RUN -> peak memory of the process tree (when asked).
  peak_memory: Dict[str, int]

  def epochs(self) -> Tuple[List[float], List[float]]:
    """(seconds, validation accuracy) of each epoch the Trainer logged."""
    found = _EPOCH.findall(self.stdout)
    if not found:
      raise SystemExit(f'error: no epoch lines in the output of '
                       f'{" ".join(self.command)}:\n{self.stdout}')
    return [float(s) for s, _ in found], [float(a) for _, a in found]


def _tree_memory(process) -> int:
  """PSS of a process and its descendants (shared pages count once)."""
  import psutil  # pylint: disable=g-import-not-at-top
  total = 0
  for p in [process, *process.children(recursive=True)]:
    try:
      total += p.memory_full_info().pss
    except psutil.NoSuchProcess:
      pass
  return total


def run_local_runner(data_dir: str, output_dir: str, *flags: str,
                     check: bool = True,
                     wrap: Optional[Callable[[List[str]], List[str]]] = None,
                     sample_memory_s: Optional[float] = None) -> LocalRun:
  """One local_runner.py process, its progress lines echoed as they come.

  Args:
    data_dir: Its --data-dir.
    output_dir: Its --output-dir.
    *flags: Its other flags.
    check: A failed run stops the benchmark.
    wrap: The command as it is started (e.g. inside a cgroup).
    sample_memory_s: Sample the process tree's memory this often, for its
      peak while each component ran.

  Returns:
    What the run printed, and its times.
  """
  import psutil  # pylint: disable=g-import-not-at-top
  command = [sys.executable, os.path.join(PROJECT_DIR, 'local_runner.py'),
             '--data-dir', data_dir, '--output-dir', output_dir, *flags]
  lines, errors, nodes, cpu, peaks = [], [], {}, {}, {}
  component, cpu_start, done = None, None, threading.Event()

  def cpu_now(process) -> Optional[float]:
    try:
      times = process.cpu_times()
    except psutil.NoSuchProcess:
      return None
    return times.user + times.system

  def sample(process) -> None:
    while not done.wait(sample_memory_s):
      try:
        used = _tree_memory(process)
      except psutil.NoSuchProcess:
        return
      for key in (WHOLE_RUN, component):
        if key:
          peaks[key] = max(peaks.get(key, 0), used)

  start = time.perf_counter()
  with subprocess.Popen(wrap(command) if wrap else command, cwd=PROJECT_DIR,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        text=True) as process:
    runner = psutil.Process(process.pid)
    # stderr in a thread, so neither pipe fills while the other is read.
    threads = [threading.Thread(
        target=lambda: errors.append(process.stderr.read()))]
    if sample_memory_s:
      threads.append(threading.Thread(target=sample, args=(runner,)))
    for thread in threads:
      thread.start()
    for line in process.stdout:
      lines.append(line)
      started = _STARTED.match(line.rstrip())
      finished = _FINISHED.match(line.rstrip())
      if started or finished:
        print(f'    {line.rstrip()}', flush=True)
      if started:
        component, cpu_start = started[1], cpu_now(runner)
      elif finished:
        nodes[finished[1]] = (float(finished[2]), bool(finished[3]))
        end = cpu_now(runner)
        if component == finished[1] and None not in (cpu_start, end):
          cpu[component] = end - cpu_start
        component = None
    returncode = process.wait()
    done.set()
    for thread in threads:
      thread.join()
  run = LocalRun(command=command, returncode=returncode,
                 seconds=time.perf_counter() - start, nodes=nodes,
                 stdout=''.join(lines), stderr=''.join(errors),
                 cpu_seconds=cpu, peak_memory=peaks)
  if check and (returncode or not nodes):
    raise SystemExit(f'error: {" ".join(command)} failed (exit status '
                     f'{returncode}, {len(nodes)} components finished):\n'
                     f'{run.stdout}\n{run.stderr}')
  return run


def accuracy(model_dir: str, images, labels) -> float:
  """The SavedModel's accuracy on uint8 `images` through `serve_images`, as
  a client calls it: no TFX, no Examples."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tests import serving  # pylint: disable=g-import-not-at-top
  _, classes = serving.classify_images(tf.saved_model.load(model_dir), images,
                                       batch_size=200)
  return float((classes == labels).mean())


def pushed_accuracy(output_dir: str, data_dir: str) -> float:
  """The accuracy of a run's newest pushed model on the raw t10k IDX files
  of `data_dir`."""
  from tests import serving  # pylint: disable=g-import-not-at-top
  images, labels = load_split(data_dir, 't10k')
  model_dir = serving.latest_pushed_model(os.path.join(output_dir,
                                                       'serving_model'))
  return accuracy(model_dir, images, labels)
