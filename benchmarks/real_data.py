"""The real-data section: LabelCheck on labels the project did not get wrong itself.

MNIST's published label errors (data/mnist_label_errors.py), and MNIST and
Fashion-MNIST folders with labels planted wrong, through the whole DAG.
"""

import os
from typing import Any, Dict, List

from benchmarks import harness
from data import idx_folders
from data import mnist_label_errors
from data import planted
from records import label_check_results

# Per folder: train and eval images, then wrong labels in train and eval.
FULL = (3000, 1000, 150, 30)
QUICK = (300, 100, 15, 3)
QUICK_FLAGS = ('--epochs', '2', '--train-steps', '10', harness.ONE_PROCESS)


def _suspects(output_dir: str) -> List[Dict[str, Any]]:
  return label_check_results.read_suspects(
      harness.newest_artifact(output_dir, 'LabelCheck',
                              label_check_results.OUTPUT_KEY))


def _seconds(local_run: harness.LocalRun) -> Dict[str, float]:
  return {'label_check_s': local_run.nodes['LabelCheck'][0],
          'data_checks_s': local_run.nodes['DataChecks'][0],
          'run_s': round(local_run.seconds, 1)}


def mnist_confirmed(ctx: harness.Context, flags) -> Dict[str, Any]:
  """The default MNIST run's eval suspects against the published list."""
  wrong = mnist_label_errors.load(mnist_label_errors.default_dir())
  local_run, output_dir = ctx.run('real-mnist', *flags)
  rows = [r for r in _suspects(output_dir) if r['split'] == 'eval']
  listed = {int(r['source'].rsplit(':', 1)[1]) for r in rows}
  mistakes = label_check_results.read_mistakes(harness.newest_artifact(
      output_dir, 'LabelCheck', label_check_results.OUTPUT_KEY))
  return dict(confirmed=len(wrong), found=len(set(wrong) & listed),
              listed=len(rows), eval_records=10_000 if not ctx.quick else None,
              mistakes=len(mistakes),
              in_mistakes=len(set(wrong) & {
                  int(r['source'].rsplit(':', 1)[1]) for r in mistakes}),
              method=rows[0]['method'] if rows else '', **_seconds(local_run))


def planted_folder(ctx: harness.Context, name: str, source: str, sizes,
                   flags) -> Dict[str, Any]:
  """A folder of `source`'s IDX images with wrong labels planted, scored."""
  train, evaluation, wrong_train, wrong_eval = sizes
  folder, root = ctx.path(f'{name}-folder'), ctx.path(f'{name}-planted')
  for (prefix, split), limit in zip(idx_folders.SPLITS, (train, evaluation)):
    idx_folders.write_split(source, prefix, os.path.join(folder, split), limit)
  manifest = planted.plant(folder, root, 0, wrong_train + wrong_eval, 0,
                           eval_wrong_labels=wrong_eval)
  local_run, output_dir = ctx.run(
      f'{name}-run', '--input-format', 'images', *flags,
      data_dir=os.path.join(root, planted.DATA_DIR))
  rows = _suspects(output_dir)
  scores = {}
  for split in ('train', 'eval'):
    wanted = {w['path'] for w in manifest['wrong_labels']
              if w['path'].startswith(split + '/')}
    # The validation split is carved from train/: its records keep the path.
    listed = [r for r in rows if r['source'].startswith(split + '/')]
    scores[split] = dict(
        planted=len(wanted), listed=len(listed),
        found=len(wanted & {r['source'] for r in listed}),
        methods=sorted({r['method'].split(' (')[0] for r in listed}))
  return dict(sizes=sizes, scores=scores, **_seconds(local_run))


def measure(ctx: harness.Context) -> Dict[str, Any]:
  """MNIST's confirmed errors, then the two planted folders."""
  flags = ctx.pick((), QUICK_FLAGS)
  sizes = ctx.pick(FULL, QUICK)
  load_before = os.getloadavg()[0]
  print('  real data: MNIST, default flags', flush=True)
  measured = {'mnist': mnist_confirmed(ctx, flags), 'flags': flags}
  for name, source in (('mnist-folder', ctx.data_dir),
                       ('fashion-folder', harness.FASHION_MNIST_DIR)):
    if not os.path.isdir(source):
      measured[name] = f'{source} is missing (apt-get install dataset-fashion-mnist)'
      continue
    print(f'  real data: {name}, planted labels', flush=True)
    measured[name] = planted_folder(ctx, name, source, sizes, flags)
  measured['load'] = (load_before, os.getloadavg()[0])
  return measured


def render(measured: Dict[str, Any], ctx: harness.Context) -> Dict[str, Any]:
  """The template's names."""
  del ctx
  return dict(mnist=measured['mnist'], flags=measured['flags'],
              load=measured['load'],
              measured_folders={k: measured[k] for k in ('mnist-folder',
                                                         'fashion-folder')})


SECTION = harness.Section(
    heading='## Real data: label errors people confirmed, and folders as '
    'people keep them', measure=measure, template='real_data.md.j2',
    render=render)
