"""The trust section: the checks scored on a folder with known faults.

data/planted.py plants train copies in eval, wrong labels in train and eval,
and sideways phone photos into a shapes folder (data/shapes.py); one run of
the whole DAG reads it as a new user would (no flags but `--eval-copies
keep`, so that it goes on past the copies), and what DataChecks, LabelCheck
and the predict command say is scored against the planted list.
"""

import csv
import os
import subprocess
import sys
from typing import Dict, List, Set, Tuple

from benchmarks import runs
from benchmarks.figures import header, row, table
from data import planted
from data import shapes

SIZE = 64
# Per class: train, eval; then copies, wrong labels, sideways photos.
FULL = (300, 60, 30, 60, 100)
QUICK = (20, 6, 6, 6, 6)
QUICK_FLAGS = ('--epochs', '2', '--train-steps', '10',
               '--beam-args=--direct_running_mode=in_memory '
               '--direct_num_workers=1')


def _csv(path: str) -> List[Dict[str, str]]:
  with open(path, newline='', encoding='utf-8') as f:
    return list(csv.DictReader(f))


def _tool(module: str, *args: str) -> None:
  subprocess.run([sys.executable, '-m', module, *args], check=True,
                 cwd=runs.PROJECT_DIR, capture_output=True, text=True)


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
  _tool('predict', output_dir, os.path.join(root, planted.SIDEWAYS_DIR),
        '-o', predictions)
  classes = {os.path.relpath(r['path'], root): r['class']
             for r in _csv(predictions)}
  agree = sum(classes[p['sideways']] == classes[p['upright']]
              for p in manifest['sideways'])
  return len(manifest['sideways']), agree


def section(args, data_dir: str, work_dir: str, command: str) -> str:
  del data_dir  # The section writes its own data.
  per_class, eval_per_class, copies, wrong, sideways = (
      QUICK if args.quick else FULL)
  source = os.path.join(work_dir, 'trust-shapes')
  root = os.path.join(work_dir, 'trust-planted')
  output_dir = os.path.join(work_dir, 'trust-run')
  shapes.write(source, per_class, SIZE, eval_per_class)
  manifest = planted.plant(source, root, copies, wrong, sideways)
  flags = ('--input-format', 'images', '--eval-copies', 'keep',
           *(QUICK_FLAGS if args.quick else ()))
  print('  trust: whole run on the planted folder', flush=True)
  local_run = runs.run_local_runner(
      ['--data-dir', os.path.join(root, planted.DATA_DIR), '--output-dir',
       output_dir, *flags])
  pairs_csv = os.path.join(work_dir, 'trust-copies.csv')
  labels_csv = os.path.join(work_dir, 'trust-labels.csv')
  _tool('inspector', '--output-dir', output_dir, 'duplicates', '--csv',
        pairs_csv)
  _tool('inspector', '--output-dir', output_dir, 'labels', '--csv',
        labels_csv)
  copies_planted, copies_found, exact, exact_found, extra = score_copies(
      manifest, _csv(pairs_csv))
  labels = score_labels(manifest, _csv(labels_csv))
  turned, agree = score_sideways(manifest, root, output_dir, work_dir)
  seconds = {node: local_run.nodes[node][0]
             for node in ('DataChecks', 'Trainer', 'LabelCheck')
             if node in local_run.nodes}

  def share(part: int, whole: int) -> str:
    return f'{part} of {whole} ({part / max(whole, 1):.0%})'

  return '\n'.join([
      '## Trust: the checks on a folder with planted faults',
      '',
      header(command),
      '',
      f'SHAPES: `python -m data.shapes --per-class {per_class} '
      f'--eval-per-class {eval_per_class} --size {SIZE}`, then `python -m '
      f'data.planted --copies {copies} --wrong-labels {wrong} --sideways '
      f'{sideways}`: train images copied into eval (exact, JPEG quality 75, '
      'brightened, a third each), labels moved to a wrong class (half in '
      'train, half in eval), eval photos stored sideways with their EXIF '
      'orientation. One run, `local_runner.py --data-dir PLANTED/data '
      f'{" ".join(flags)}`; the lists from `inspector duplicates --csv`, '
      '`inspector labels --csv` and `image-pipeline-predict` scored against '
      'the planted list (goals: copies >= 80% and every exact one, at most '
      '10% of reported pairs not planted; wrong labels >= 70% in train, '
      '>= 90% in eval, a list at most twice as long as planted; sideways '
      '>= 98% the class of their upright twin).',
      '',
      *table('copies found', 'exact copies found',
             'reported train/held-out pairs not planted',
             'wrong labels found in train (listed)',
             'wrong labels found in eval (listed)',
             'sideways photos with their twin\'s class'),
      row(share(copies_found, copies_planted), share(exact_found, exact),
          extra,
          *(f'{share(found, wanted)} ({listed} listed)'
            for wanted, found, listed in (labels['train'], labels['eval'])),
          share(agree, turned)),
      '',
      'Seconds of the run: ' + ', '.join(
          f'{node} {s:.1f}' for node, s in seconds.items()) +
      f', whole run {local_run.seconds:.1f}.',
  ]) + '\n'

