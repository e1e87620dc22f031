"""How the benchmarks run the pipeline, in one place so that they measure
what a run does: local_runner.py processes, our ExampleGen on its own, the
pushed model as a client calls it, and the pipeline's settings."""

import dataclasses
import os
import re
import subprocess
import sys
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from benchmarks import data
from modules.training_config import TrainingConfig
from pipeline import configs
from pipeline.knobs import DataConfig
from records import features

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The knobs of a run without flags: ExampleGen's and the Trainer's.
DATA = DataConfig()
TRAINING = TrainingConfig()
# Beam args of every Beam component in a local run (local_runner.py).
BEAM_ARGS = [*configs.BEAM_PIPELINE_ARGS, *configs.LOCAL_BEAM_PIPELINE_ARGS]
# --quick: a DAG run of a few training steps in one process.
QUICK_ARGS = ('--epochs', '1', '--train-steps', '5', '--accuracy-threshold',
              '0', '--beam-args=--direct_running_mode=in_memory '
              '--direct_num_workers=1')
WHOLE_RUN = 'whole run'
# runners/run_summary.py's progress lines, and the Trainer's epoch lines.
_STARTED = re.compile(r'^▶ (\S+) \.\.\.$')
_FINISHED = re.compile(r'^✔ (\S+): ([\d.]+)s( \(cached\))?$')
_EPOCH = re.compile(r'Epoch \d+/\d+: .* in ([\d.]+)s .*val_accuracy ([\d.]+)')


def default_encoding(geometry: features.ImageGeometry) -> str:
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
  import glob  # pylint: disable=g-import-not-at-top
  import json  # pylint: disable=g-import-not-at-top
  [model_dir] = glob.glob(os.path.join(output_dir, 'pipeline', 'Trainer',
                                       'model', '*', 'Format-Serving'))
  with open(os.path.join(model_dir, 'assets.extra',
                         'training_plan.json')) as f:
    return model_dir, json.load(f)


@dataclasses.dataclass
class LocalRun:
  command: List[str]
  returncode: int
  seconds: float  # Wall time of the process.
  nodes: Dict[str, Tuple[float, bool]]  # component -> (seconds, cached)
  stdout: str
  stderr: str
  # component -> CPU seconds of the runner's own process while it ran (the
  # components that run in it, as the Trainer does; not Beam's workers):
  # unlike wall time, hardly changed by other work on the machine.
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
  """PSS of a process and its descendants: shared pages (TensorFlow's
  libraries, mapped by every process) count once, not once per process as
  in RSS. Processes that exit meanwhile are skipped."""
  import psutil  # pylint: disable=g-import-not-at-top
  total = 0
  for p in [process, *process.children(recursive=True)]:
    try:
      total += p.memory_full_info().pss
    except psutil.NoSuchProcess:
      pass
  return total


def run_local_runner(args: Sequence[str], check: bool = True,
                     wrap: Optional[Callable[[List[str]], List[str]]] = None,
                     sample_memory_s: Optional[float] = None) -> LocalRun:
  """One local_runner.py process, its progress lines echoed as they come.

  check: a failed run stops the benchmark. wrap: the command as it is
  started (e.g. inside a cgroup). sample_memory_s: sample the process
  tree's memory this often, for its peak while each component ran.
  """
  import psutil  # pylint: disable=g-import-not-at-top
  command = [sys.executable, os.path.join(PROJECT_DIR, 'local_runner.py'),
             *args]
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


def pushed_accuracy(output_dir: str, data_dir: str) -> Tuple[float, int]:
  """(accuracy, count) of a run's newest pushed model on the raw t10k IDX
  files of `data_dir`."""
  from tests import serving  # pylint: disable=g-import-not-at-top
  images, labels = data.load_split(data_dir, 't10k')
  model_dir = serving.latest_pushed_model(os.path.join(output_dir,
                                                       'serving_model'))
  return accuracy(model_dir, images, labels), len(labels)
