"""The time-to-accuracy section: the whole DAG on MNIST (local_runner.py,
from the command to the pushed model) against a bare Keras script training
the seeds' CNN to the same test accuracy (bare_keras_mnist.py), seed by
seed, interleaved, in one benchmark run. Each `--candidate NAME=FLAGS` is
run too, as a pipeline variant."""

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
from benchmarks.harness import goal, row, table

ACCURACY_GOAL = 0.993
RATIO_GOAL = 0.4  # The pipeline's wall time over the bare script's.
FIXED_COST_GOAL_S = 25.0  # Everything but the Trainer's epochs.
SEEDS = (1, 2, 3)
DEFAULTS = 'defaults'


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
  output_dir = ctx.path(f'tta-{variant}-{seed}')
  local_run = harness.run_local_runner(
      ctx.data_dir, output_dir, '--seed', str(seed),
      *ctx.pick((), harness.QUICK_ARGS), *flags)
  epoch_s, val_accuracy = local_run.epochs()
  return PipelineRun(
      variant=variant, seed=seed, wall_s=local_run.seconds,
      components={name: seconds
                  for name, (seconds, _) in local_run.nodes.items()},
      epoch_s=epoch_s, val_accuracy=val_accuracy,
      test_accuracy=harness.pushed_accuracy(output_dir, ctx.data_dir))


def measure(ctx: harness.Context) -> Tuple[List[ScriptRun], List[PipelineRun]]:
  """Per seed, the bare script and every variant, interleaved: both see the
  same machine."""
  variants = [(DEFAULTS, ()), *map(parse_candidate, ctx.args.candidate)]
  scripts, pipelines = [], []
  for seed in ctx.pick(SEEDS, SEEDS[:1]):
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


def render(runs: Tuple[List[ScriptRun], List[PipelineRun]],
           ctx: harness.Context) -> List[str]:
  """Goals, each run, and each component's seconds."""
  scripts, pipelines = runs
  ours = [p for p in pipelines if p.variant == DEFAULTS]
  ratio = (statistics.median(p.wall_s for p in ours) /
           statistics.median(s.wall_s for s in scripts))
  lowest = min(p.test_accuracy for p in ours)
  fixed = statistics.median(p.fixed_s for p in ours)
  goals = [
      (f'lowest test accuracy of the {len(ours)} seed(s) >= '
       f'{ACCURACY_GOAL:.1%}', f'{lowest:.2%}', lowest >= ACCURACY_GOAL),
      (f'whole DAG <= {RATIO_GOAL}x the bare script\'s wall time (medians)',
       f'{ratio:.2f}x', ratio <= RATIO_GOAL),
      (f'fixed costs (all but the Trainer\'s epochs) <= '
       f'{FIXED_COST_GOAL_S:.0f} s (median)', f'{fixed:.1f} s',
       fixed <= FIXED_COST_GOAL_S),
  ]
  lines = [
      harness.cpu_line('none of ' + ', '.join(harness.CPU_FLAGS),
                       '; the bare script in float32'),
      '',
      f'    local_runner.py --data-dir {ctx.data_dir_shown} --seed SEED '
      '[variant flags]',
      f'    python -m benchmarks.bare_keras_mnist --data-dir '
      f'{ctx.data_dir_shown} '
      f'--seed SEED --target {ACCURACY_GOAL}',
      '',
      'Per seed, the bare script, then each pipeline variant, each from a '
      'fresh process (and output directory), one after the other. Pipeline: '
      'wall time from the command to the pushed model, start-up and report '
      'included; fixed costs are that minus the Trainer\'s epochs. Test '
      'accuracy: the pushed model through `serve_images` on the raw t10k IDX '
      'files (10,000 images, the official test set). Bare script: the '
      'seeds\' CNN in float32 on numpy arrays, evaluated on the same test '
      'set after every epoch, stopping at the first epoch that reaches the '
      'goal; wall time of its whole process.',
      '',
      *table('goal', 'measured', ''),
      *[goal(*g) for g in goals],
      '',
      *table('seed', 'run', 'wall', 'epochs', 's in epochs', 'fixed',
             'test accuracy', 'vs bare script', 'accuracy per epoch'),
  ]
  for script in scripts:
    # Stopped at --max-epochs short of the goal: its time to the goal is
    # longer than its wall time.
    short = script.test_accuracy[-1] < ACCURACY_GOAL
    lines.append(row(
        script.seed, 'bare Keras script' + (
            ' (goal not reached: a lower bound)' if short else ''),
        f'{script.wall_s:.0f} s',
        len(script.epoch_s), f'{sum(script.epoch_s):.0f}',
        f'{script.wall_s - sum(script.epoch_s):.1f} s',
        f'{script.test_accuracy[-1]:.2%}', '1.00x',
        ', '.join(f'{a:.2%}' for a in script.test_accuracy) + ' (test)'))
    for p in (p for p in pipelines if p.seed == script.seed):
      lines.append(row(
          p.seed, f'pipeline, {p.variant}', f'{p.wall_s:.0f} s',
          len(p.epoch_s), f'{sum(p.epoch_s):.0f}', f'{p.fixed_s:.1f} s',
          f'{p.test_accuracy:.2%}', f'{p.wall_s / script.wall_s:.2f}x',
          ', '.join(f'{a:.2%}' for a in p.val_accuracy) + ' (validation)'))
  names = list(dict.fromkeys(name for p in pipelines for name in p.components))
  lines += ['', 'Seconds per component (pipeline runs):', '',
            *table('component', *[f'{p.variant}, seed {p.seed}'
                                  for p in pipelines])]
  for name in names:
    lines.append(row(name, *[f'{p.components.get(name, 0.0):.1f}'
                             for p in pipelines]))
  lines.append(row('whole run', *[f'{p.wall_s:.1f}' for p in pipelines]))
  return lines


SECTION = harness.Section(
    heading=lambda ctx: heading(os.environ.get('ONEDNN_MAX_CPU_ISA')),
    measure=measure, render=render)
