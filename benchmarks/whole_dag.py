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
from typing import Dict, List, Sequence

from benchmarks.timing import Figure, timed

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


def run_local_runner(args: Sequence[str]) -> tuple:
  """(wall seconds, {component: (seconds, cached)}, stdout) of one
  local_runner.py process; a failed run stops the benchmark."""
  command = [sys.executable, os.path.join(PROJECT_DIR, 'local_runner.py'),
             *args]
  seconds, result = timed(lambda: subprocess.run(
      command, cwd=PROJECT_DIR, capture_output=True, text=True))
  if result.returncode:
    raise SystemExit(f'error: {" ".join(command)} failed:\n{result.stdout}'
                     f'\n{result.stderr}')
  nodes = {m[1]: (float(m[2]), bool(m[3]))
           for m in _FINISHED.finditer(result.stdout)}
  if not nodes:
    raise SystemExit('error: no component progress lines in the output of '
                     f'{" ".join(command)}:\n{result.stdout}')
  return seconds, nodes, result.stdout


def _run(args: Sequence[str]) -> tuple:
  seconds, nodes, _ = run_local_runner(args)
  return seconds, nodes


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
