"""The schedule section: spans arriving one after another (as scheduled
drops would), two pipelines side by side on them, one training from
scratch and one with --warm-start; their history from `inspector history`.
"""

import os
import shlex
import shutil
from typing import Any, Dict

from benchmarks import harness
from data import drifting_spans
from data import shapes

SPANS, PER_SPAN, EVAL_PER_SPAN, SIZE, CLASSES = 6, 3000, 800, 32, 5
QUICK = (3, 50, 25, SIZE, CLASSES)
# Two spans: the drift is slow, so the span before is close to today's data
# and doubles what a model from scratch learns from, and a fine-tuned model
# sees the span before again (it forgets less); three would make the
# from-scratch Trainer half as long again for data further from today's.
WINDOW = 2
# The newest two runs, so that a rollback has the run before; the served
# model's run stays as well when it is older.
KEEP_RUNS = 2
FLAGS = ('--input-format', 'images', '--span-dir-pattern',
         drifting_spans.SPAN_DIR, '--span-window', str(WINDOW),
         '--keep-runs', str(KEEP_RUNS),
         '--beam-args=--direct_running_mode=in_memory --direct_num_workers=1')
QUICK_FLAGS = ('--epochs', '4', '--train-steps', '8')
PIPELINES = {'scratch': (), 'warm': ('--warm-start',)}
GOAL_POINTS, GOAL_TIME = 0.5, 1 / 3


def _history(output_dir: str, path: str) -> Dict[int, Dict[str, str]]:
  """The runs of `inspector history --csv`, by their newest span."""
  harness.tool('inspector', '--output-dir', output_dir, 'history', '--csv',
               path)
  return {max(int(s) for s in r['spans'].split()): r
          for r in harness.read_csv(path)}


def _on_disk(output_dir: str, spans: Dict[str, int]) -> str:
  """The runs (by span; `spans`: run name -> span) whose own large
  artifacts (keep_runs's types) are still on disk, from ML Metadata: '5, 6'
  or, for a run with only some of them, '4 (Model)'."""
  from metadata import queries  # pylint: disable=g-import-not-at-top
  from metadata import store  # pylint: disable=g-import-not-at-top
  from runs import keep_runs_local  # pylint: disable=g-import-not-at-top
  path = store.sqlite_path(output_dir=output_dir)
  md = queries.Metadata(store.open_store(path), path)
  found = {}
  for run in md.runs():
    mine = [a for a in md.run_artifacts(run)
            if a.type in keep_runs_local.LARGE_TYPES
            and getattr(md.producer(a.id), 'run', None) == run.name]
    kept = sorted({a.type for a in mine if os.path.exists(a.uri)})
    if kept:
      everything = len(kept) == len({a.type for a in mine})
      found[spans[run.name]] = '' if everything else f' ({", ".join(kept)})'
  return ', '.join(f'{span}{what}' for span, what in sorted(found.items()))


def _served_answers(output_dir: str, eval_dir: str, work_dir: str) -> str:
  """The served model's accuracy on the images of `eval_dir` (class
  folders) through the predict command."""
  predictions = os.path.join(work_dir, 'schedule-served.csv')
  harness.tool('predict', output_dir, eval_dir, '-o', predictions)
  rows = harness.read_csv(predictions)
  right = sum(os.path.basename(os.path.dirname(r['path'])) == r['class']
              for r in rows)
  return f'{right} of {len(rows)} right ({right / max(len(rows), 1):.1%})'


def measure(ctx: harness.Context) -> Dict[str, Any]:
  """Each span arriving, both pipelines run on it; then their history, what
  is left on disk and the served model's answers."""
  spans, per_span, eval_per_span, size, classes = ctx.pick(
      (SPANS, PER_SPAN, EVAL_PER_SPAN, SIZE, CLASSES), QUICK)
  written, arriving = ctx.path('schedule-spans'), ctx.path('schedule-data')
  for folder in (written, arriving):
    shutil.rmtree(folder, ignore_errors=True)
  drifting_spans.write(written, spans, per_span, eval_per_span, size,
                       sorted(shapes.SHAPES)[:classes])
  flags = (*FLAGS, *ctx.pick((), QUICK_FLAGS))
  outputs = {name: ctx.path(f'schedule-{name}') for name in PIPELINES}
  training_s: Dict[str, Dict[int, float]] = {name: {} for name in PIPELINES}
  for span in range(1, spans + 1):
    folder = drifting_spans.SPAN_DIR.format(SPAN=span)
    shutil.copytree(os.path.join(written, folder),
                    os.path.join(arriving, folder))
    for name, extra in PIPELINES.items():
      if span == 1:
        shutil.rmtree(outputs[name], ignore_errors=True)
      print(f'  schedule: span {span}, {name}', flush=True)
      run = harness.run_local_runner(arriving, outputs[name], *flags, *extra)
      training_s[name][span] = sum(run.epochs()[0])
  rows = {name: _history(output, ctx.path(f'{name}.csv'))
          for name, output in outputs.items()}
  newest = os.path.join(written, drifting_spans.SPAN_DIR.format(SPAN=spans),
                        'eval')
  after = {name: (_on_disk(output, {r['run']: span
                                    for span, r in rows[name].items()}),
                  _served_answers(output, newest, ctx.work_dir))
           for name, output in outputs.items()}
  return dict(data=(spans, per_span, eval_per_span, size, classes),
              flags=flags, training_s=training_s, rows=rows, after=after)


def render(r: Dict[str, Any], ctx: harness.Context) -> Dict[str, Any]:
  """What templates/schedule.md.j2 reads: per span both pipelines and the
  goal's verdict; then the disk and the served model."""
  del ctx  # The measurements say it all.
  rows, training_s = r['rows'], r['training_s']
  verdicts = {}
  for span in range(2, r['data'][0] + 1):
    cold, warm = rows['scratch'][span], rows['warm'][span]
    points = 100 * (float(warm['accuracy']) - float(cold['accuracy']))
    ratio = float(warm['trainer_seconds']) / float(cold['trainer_seconds'])
    verdicts[span] = dict(
        points=points, ratio=ratio,
        in_epochs=training_s['warm'][span] / training_s['scratch'][span],
        met=points >= -GOAL_POINTS and ratio <= GOAL_TIME)
  return dict(
      r, verdicts=verdicts, shell_flags=shlex.join(r['flags']),
      cpu_line=harness.cpu_line('none'), window=WINDOW, keep_runs=KEEP_RUNS,
      goal_points=GOAL_POINTS, goal_time=GOAL_TIME,
      served={name: next((s for s in sorted(runs, reverse=True)
                          if runs[s]['pushed'] == 'True'), None)
              for name, runs in rows.items()})


SECTION = harness.Section(
    heading='## A schedule: spans arriving, from scratch vs --warm-start',
    measure=measure, render=render, template='schedule.md.j2')
