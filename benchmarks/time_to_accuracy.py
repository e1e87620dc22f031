"""The time-to-accuracy section: the whole DAG on MNIST against a bare Keras
script training the seeds' CNN to the same test accuracy (bare_keras_mnist.py),
seed by seed, interleaved. Each `--candidate NAME=FLAGS` is run too, as a
pipeline variant.
"""

import dataclasses
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from typing import Dict, List, Optional, Tuple

from benchmarks import harness
from records import epoch_probabilities

ACCURACY_GOAL = 0.993
RATIO_GOAL = 0.4  # The pipeline's wall time over the bare script's.
FIXED_COST_GOAL_S = 25.0  # Everything but the Trainer's epochs.
SEEDS = (1, 2, 3)
CHECKS_COST_GOAL = 0.10  # The checks' seconds over the run without them.
DEFAULTS = 'defaults'
# The checks' components, priced by their own seconds with the Trainer's
# predictions for LabelCheck (its model run records them). Not by a run
# without them: the same Trainer's wall time varies between runs by more
# than the checks cost.
CHECK_COMPONENTS = ('DataChecks', 'LabelCheck')


@dataclasses.dataclass
class PipelineRun:
  """A pipeline variant's run, from the command to the pushed model."""
  variant: str
  seed: int
  wall_s: float
  components: Dict[str, float]  # Seconds per component.
  epoch_s: List[float]
  val_accuracy: List[float]
  test_accuracy: float
  # The Trainer's predictions for LabelCheck: its training sample's, and
  # validation's by the kept weights.
  label_scoring_s: float = 0.0

  @property
  def checks_s(self) -> float:
    """The checks' seconds: their components' and the Trainer's scoring."""
    return (sum(self.components.get(name, 0.0) for name in CHECK_COMPONENTS)
            + self.label_scoring_s)

  @property
  def fixed_s(self) -> float:
    """Wall time but the Trainer's epochs."""
    return self.wall_s - sum(self.epoch_s)


@dataclasses.dataclass
class ScriptRun:
  """A run of the bare Keras script."""
  seed: int
  wall_s: float
  epoch_s: List[float]
  test_accuracy: List[float]


def parse_candidate(text: str) -> Tuple[str, Tuple[str, ...]]:
  """'NAME=FLAGS' -> (NAME, flags)."""
  name, sep, flags = text.partition('=')
  if not sep or not name:
    raise SystemExit(f'error: --candidate {text!r}: expected NAME=FLAGS')
  return name, tuple(shlex.split(flags))


def run_script(data_dir: str, seed: int, quick: bool) -> ScriptRun:
  """bare_keras_mnist.py to the goal, in a process of its own."""
  command = [sys.executable, '-m', 'benchmarks.bare_keras_mnist',
             '--data-dir', data_dir, '--seed', str(seed),
             '--target', str(ACCURACY_GOAL)]
  if quick:
    command += ['--max-epochs', '1', '--steps-per-epoch', '5']
  start = time.perf_counter()
  done = subprocess.run(command, cwd=harness.PROJECT_DIR, capture_output=True,
                        text=True, check=False)
  wall = time.perf_counter() - start
  if done.returncode:
    raise SystemExit(f'error: {" ".join(command)} failed:\n{done.stderr}')
  result = json.loads(done.stdout.strip().splitlines()[-1])
  return ScriptRun(seed=seed, wall_s=wall, epoch_s=result['epoch_seconds'],
                   test_accuracy=result['test_accuracy'])


def run_pipeline(variant: str, flags: Tuple[str, ...], seed: int,
                 ctx: harness.Context) -> PipelineRun:
  """local_runner.py with a variant's flags, and its pushed model's test
  accuracy."""
  local_run, output_dir = ctx.run(
      f'tta-{variant}-{seed}',
      *ctx.pick(('--seed', str(seed)), harness.QUICK_ARGS), *flags)
  epoch_s, val_accuracy = local_run.epochs()
  model_run = harness.newest_artifact(output_dir, 'Trainer', 'model_run')
  scored = [epoch_probabilities.read(model_run, name) for name in (
      epoch_probabilities.FILE_NAME, epoch_probabilities.HELD_OUT_FILE)]
  return PipelineRun(
      variant=variant, seed=seed, wall_s=local_run.seconds,
      components={name: seconds
                  for name, (seconds, _) in local_run.nodes.items()},
      epoch_s=epoch_s, val_accuracy=val_accuracy,
      test_accuracy=harness.pushed_accuracy(output_dir, ctx.data_dir),
      label_scoring_s=sum(s.seconds for s in scored if s))


def measure(ctx: harness.Context) -> Tuple[List[ScriptRun], List[PipelineRun]]:
  """Per seed, the bare script and every variant, interleaved: both see the
  same machine."""
  variants = [(DEFAULTS, ()), *map(parse_candidate, ctx.args.candidate)]
  scripts, pipelines = [], []
  for seed in ctx.pick(SEEDS, (harness.QUICK_SEED,)):
    print(f'  time to accuracy: bare Keras script, seed {seed}', flush=True)
    scripts.append(run_script(ctx.data_dir, seed, ctx.quick))
    for name, flags in variants:
      print(f'  time to accuracy: pipeline {name}, seed {seed}', flush=True)
      pipelines.append(run_pipeline(name, flags, seed, ctx))
  return scripts, pipelines


def heading(isa_cap: Optional[str]) -> str:
  """The section's heading. Docs cite the uncapped one by name, so a run
  under a oneDNN ISA cap (its own block) heads it differently."""
  if isa_cap:
    return (f'## MNIST with oneDNN capped at {isa_cap}: time to accuracy of '
            'the whole DAG against a bare Keras script')
  return '## MNIST time to accuracy: the whole DAG against a bare Keras script'


def checks_cost(ours: List[PipelineRun]) -> Tuple[float, float, float]:
  """The checks' seconds, their share of the run without them (the goal's)
  and of the whole run, medians over the default runs."""
  return (statistics.median(p.checks_s for p in ours),
          statistics.median(p.checks_s / (p.wall_s - p.checks_s)
                            for p in ours),
          statistics.median(p.checks_s / p.wall_s for p in ours))


def render(runs: Tuple[List[ScriptRun], List[PipelineRun]],
           ctx: harness.Context) -> Dict:
  """What templates/time_to_accuracy.md.j2 reads: goals, runs, components."""
  del ctx  # The template reads it.
  scripts, pipelines = runs
  ours = [p for p in pipelines if p.variant == DEFAULTS]
  return dict(
      scripts=scripts, pipelines=pipelines, ours=ours,
      ratio=(statistics.median(p.wall_s for p in ours) /
             statistics.median(s.wall_s for s in scripts)),
      lowest=min(p.test_accuracy for p in ours),
      fixed=statistics.median(p.fixed_s for p in ours),
      accuracy_goal=ACCURACY_GOAL, ratio_goal=RATIO_GOAL,
      fixed_goal_s=FIXED_COST_GOAL_S, checks=checks_cost(ours),
      checks_goal=CHECKS_COST_GOAL,
      cpu_line=harness.cpu_line('none of ' + ', '.join(harness.CPU_FLAGS),
                                '; the bare script in float32'),
      components=list(dict.fromkeys(name for p in pipelines
                                    for name in p.components)))


SECTION = harness.Section(
    heading=lambda ctx: heading(os.environ.get('ONEDNN_MAX_CPU_ISA')),
    measure=measure, render=render, template='time_to_accuracy.md.j2')
