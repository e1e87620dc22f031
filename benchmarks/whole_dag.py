"""Section 4, the whole DAG: local_runner.py as a user runs it.

A run from a fresh output directory, then immediate re-runs with nothing
changed (every component should come from ML Metadata's cache). Wall time
of each run (the whole process: start-up, imports, the DAG, the summary)
and per component, from the progress lines local_runner prints
(runners/run_summary.py: '✔ <component>: <seconds>s[ (cached)]').
"""

import dataclasses
import os
import re
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional, Sequence

from benchmarks.timing import Figure

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_FINISHED = re.compile(r'^✔ (\S+): ([\d.]+)s( \(cached\))?$', re.MULTILINE)


@dataclasses.dataclass
class Result:
  command: List[str]
  components: List[str]
  first: Dict[str, Figure]  # component (and 'whole run') -> seconds
  rerun: Dict[str, Figure]
  rerun_cached: Dict[str, bool]  # component -> reused from the cache
  resolvers: List[str]  # Nodes with no execution to cache.


_STARTED = re.compile(r'^▶ (\S+)')


def _cpu_seconds(pid: int) -> Optional[float]:
  """CPU time of process `pid`, all its threads (Linux's /proc), or None."""
  try:
    with open(f'/proc/{pid}/stat') as f:
      fields = f.read().rsplit(')', 1)[1].split()
  except OSError:
    return None
  return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


@dataclasses.dataclass
class LocalRun:
  seconds: float  # Wall time of the process.
  nodes: Dict[str, tuple]  # component -> (seconds, cached)
  stdout: str
  # component -> CPU seconds of the runner's own process while it ran
  # (components that run in it, as the Trainer does; not Beam's workers).
  # Unlike wall time, hardly changed by other work on the machine.
  cpu_seconds: Dict[str, float]


def run_local_runner(args: Sequence[str]) -> LocalRun:
  """One local_runner.py process, its output read as it comes; a failed run
  stops the benchmark."""
  command = [sys.executable, os.path.join(PROJECT_DIR, 'local_runner.py'),
             *args]
  lines, cpu_at_start, cpu = [], {}, {}
  start = time.perf_counter()
  with subprocess.Popen(command, cwd=PROJECT_DIR, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True) as process:
    # stderr to a thread, so neither pipe fills while the other is read.
    errors = []
    reader = threading.Thread(target=lambda: errors.append(
        process.stderr.read()))
    reader.start()
    for line in process.stdout:
      lines.append(line)
      started, finished = _STARTED.match(line), _FINISHED.match(line.rstrip())
      if started:
        cpu_at_start[started[1]] = _cpu_seconds(process.pid)
      elif finished and cpu_at_start.get(finished[1]) is not None:
        now = _cpu_seconds(process.pid)
        if now is not None:
          cpu[finished[1]] = now - cpu_at_start[finished[1]]
    returncode = process.wait()
    reader.join()
  seconds = time.perf_counter() - start
  stdout = ''.join(lines)
  if returncode:
    raise SystemExit(f'error: {" ".join(command)} failed:\n{stdout}'
                     f'\n{"".join(errors)}')
  nodes = {m[1]: (float(m[2]), bool(m[3])) for m in _FINISHED.finditer(stdout)}
  if not nodes:
    raise SystemExit('error: no component progress lines in the output of '
                     f'{" ".join(command)}:\n{stdout}')
  return LocalRun(seconds=seconds, nodes=nodes, stdout=stdout,
                  cpu_seconds=cpu)


def _run(args: Sequence[str]) -> tuple:
  run = run_local_runner(args)
  return run.seconds, run.nodes


def _add(figures: Dict[str, Figure], seconds: float, nodes: dict) -> None:
  for name, (node_seconds, _) in nodes.items():
    figures.setdefault(name, Figure()).add(node_seconds)
  figures.setdefault('whole run', Figure()).add(seconds)


def run(data_dir: str, work_dir: str, runner_args: Sequence[str], runs: int,
        reruns: int, data_dir_shown: str) -> Result:
  """`runs` fresh runs, each followed by `reruns` re-runs.

  data_dir_shown: --data-dir as the report shows it.
  """
  first: Dict[str, Figure] = {}
  rerun: Dict[str, Figure] = {}
  cached: Dict[str, bool] = {}
  for i in range(runs):
    args = ['--data-dir', data_dir,
            '--output-dir', os.path.join(work_dir, f'dag-{i}'), *runner_args]
    seconds, nodes = _run(args)
    _add(first, seconds, nodes)
    for _ in range(reruns):
      seconds, nodes = _run(args)
      _add(rerun, seconds, nodes)
      for name, (_, was_cached) in nodes.items():
        cached[name] = cached.get(name, True) and was_cached
  components = [name for name in first if name != 'whole run']
  shown = ['local_runner.py', '--data-dir', data_dir_shown, '--output-dir',
           'FRESH_DIR', *runner_args]
  return Result(command=shown, components=components,
                resolvers=[n for n in components if n.endswith('resolver')],
                first=first, rerun=rerun, rerun_cached=cached)
