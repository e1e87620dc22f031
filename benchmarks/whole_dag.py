"""Section 4, the whole DAG: local_runner.py from a fresh output directory,
then re-runs with nothing changed (every component should come from ML
Metadata's cache): wall time per run and per component."""

import dataclasses
import os
from typing import Dict, List, Sequence

from benchmarks import runs
from benchmarks.figures import Figure


@dataclasses.dataclass
class Result:
  command: List[str]
  components: List[str]
  first: Dict[str, Figure]  # component (and runs.WHOLE_RUN) -> seconds
  rerun: Dict[str, Figure]
  rerun_cached: Dict[str, bool]  # component -> reused from the cache
  resolvers: List[str]  # Nodes with no execution to cache.


def run(data_dir: str, work_dir: str, runner_args: Sequence[str], fresh_runs: int,
        reruns: int, data_dir_shown: str) -> Result:
  """`fresh_runs` fresh runs, each followed by `reruns` re-runs.

  data_dir_shown: --data-dir as the report shows it.
  """
  first: Dict[str, Figure] = {}
  rerun: Dict[str, Figure] = {}
  cached: Dict[str, bool] = {}
  for i in range(fresh_runs):
    args = ['--data-dir', data_dir,
            '--output-dir', os.path.join(work_dir, f'dag-{i}'), *runner_args]
    for n in range(1 + reruns):
      local_run = runs.run_local_runner(args)
      measured = rerun if n else first
      for name, (seconds, was_cached) in local_run.nodes.items():
        measured.setdefault(name, Figure()).add(seconds)
        if n:
          cached[name] = cached.get(name, True) and was_cached
      measured.setdefault(runs.WHOLE_RUN, Figure()).add(local_run.seconds)
  components = [name for name in first if name != runs.WHOLE_RUN]
  return Result(command=['local_runner.py', '--data-dir', data_dir_shown,
                         '--output-dir', 'FRESH_DIR', *runner_args],
                components=components, first=first, rerun=rerun,
                rerun_cached=cached,
                resolvers=[n for n in components if n.endswith('resolver')])
