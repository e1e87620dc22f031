"""The trust section: the checks scored on a folder with known faults.

One run of the whole DAG on a shapes folder with planted faults
(data/planted.py), as a new user would run it; what DataChecks, LabelCheck
and the predict command say is scored against the planted list.
"""

import os
from typing import Any, Dict, List, Set, Tuple

from benchmarks import harness
from data import planted
from data import shapes

SIZE = 64
# Per class: train, eval; then copies, wrong labels, sideways photos.
FULL = (300, 60, 30, 60, 100)
QUICK = (20, 6, 6, 6, 6)
QUICK_FLAGS = ('--epochs', '2', '--train-steps', '10', harness.ONE_PROCESS)


def score_copies(manifest, pairs: List[Dict[str, str]]
                 ) -> Tuple[int, int, int, int, int]:
  """(planted, found, exact planted, exact found, reported pairs between
  train and a held-out split that are not planted)."""
  wanted = {frozenset((c['train'], c['eval'])): c['kind']
            for c in manifest['copies']}
  # The validation split is carved from train: its images keep their
  # train/ path, so a pair is told by its sources, whatever the splits.
  reported = {frozenset((p['source_a'], p['source_b'])) for p in pairs
              if p['source_a'].split('/')[0] != p['source_b'].split('/')[0]}
  found = set(wanted) & reported
  exact = {k for k, kind in wanted.items() if kind == 'exact'}
  return (len(wanted), len(found), len(exact), len(exact & found),
          len(reported - set(wanted)))


def score_labels(manifest, suspects: List[Dict[str, str]]
                 ) -> Dict[str, Tuple[int, int, int]]:
  """Per folder split (train, eval): (planted, found, listed)."""
  result = {}
  for folder in ('train', 'eval'):
    wanted = {w['path'] for w in manifest['wrong_labels']
              if w['path'].startswith(folder + '/')}
    listed: Set[str] = {s['source'] for s in suspects
                        if s['source'].startswith(folder + '/')}
    result[folder] = (len(wanted), len(wanted & listed), len(listed))
  return result


def score_sideways(manifest, root: str, output_dir: str, work_dir: str
                   ) -> Tuple[int, int]:
  """(sideways photos, those given their upright twin's class) by the
  predict command."""
  predictions = os.path.join(work_dir, 'sideways.csv')
  harness.tool('predict', output_dir, os.path.join(root, planted.SIDEWAYS_DIR),
        '-o', predictions)
  classes = {os.path.relpath(r['path'], root): r['class']
             for r in harness.read_csv(predictions)}
  agree = sum(classes[p['sideways']] == classes[p['upright']]
              for p in manifest['sideways'])
  return len(manifest['sideways']), agree


def measure(ctx: harness.Context) -> Dict[str, Any]:
  """Plants the faults, runs the DAG, scores the lists."""
  per_class, eval_per_class, copies, wrong, sideways = ctx.pick(FULL, QUICK)
  source, root = ctx.path('trust-shapes'), ctx.path('trust-planted')
  shapes.write(source, per_class, SIZE, eval_per_class)
  manifest = planted.plant(source, root, copies, wrong, sideways)
  flags = ('--input-format', 'images', '--eval-copies', 'keep',
           *ctx.pick((), QUICK_FLAGS))
  print('  trust: whole run on the planted folder', flush=True)
  local_run, output_dir = ctx.run(
      'trust-run', *flags, data_dir=os.path.join(root, planted.DATA_DIR))
  pairs_csv, labels_csv = ctx.path('trust-copies.csv'), ctx.path(
      'trust-labels.csv')
  harness.tool('inspector', '--output-dir', output_dir, 'duplicates', '--csv',
               pairs_csv)
  harness.tool('inspector', '--output-dir', output_dir, 'labels', '--csv',
               labels_csv)
  return dict(
      planted=(per_class, eval_per_class, copies, wrong, sideways),
      size=SIZE, flags=flags,
      copies_found_of=score_copies(manifest, harness.read_csv(pairs_csv)),
      labels=score_labels(manifest, harness.read_csv(labels_csv)),
      sideways_found=score_sideways(manifest, root, output_dir,
                                    ctx.work_dir),
      seconds={node: local_run.nodes[node][0]
               for node in ('DataChecks', 'Trainer', 'LabelCheck')
               if node in local_run.nodes}, whole_run_s=local_run.seconds)


SECTION = harness.Section(
    heading='## Trust: the checks on a folder with planted faults',
    measure=measure, template='trust.md.j2')
