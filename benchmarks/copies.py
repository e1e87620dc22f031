"""DataChecks on planted copies of every kind, before and now, side by side.

MNIST with copies of training images added to t10k, and photo-like JPEGs
(data/photos.py) with copies planted (data/planted.py), checked by the
DataChecks of BEFORE (from `git archive`) and of this tree, one after the
other; the pairs found are scored against the planted list."""

import io
import os
import re
import shutil
import subprocess
import sys
from typing import Any, Dict, List, Tuple

import numpy as np
from PIL import Image

from benchmarks import harness
from components.image_example_gen import idx
from data import photos
from data import planted

# DataChecks before copies were found by their objects.
BEFORE = 'd825e22'
# Copies per kind: digits, photos; photos per class: train, eval.
FULL = (100, 20, 60, 15)
QUICK = (5, 2, 6, 2)
_WALL = re.compile(r'DataChecks on ([\d,]+) images .*?: ([\d.]+)s wall')
_PAIRS = re.compile(r'^pairs file: (.*)$', re.MULTILINE)


def plant_digits(data_dir: str, out: str, per_kind: int, seed: int = 0
                 ) -> Tuple[List[Tuple[str, str, str]], int]:
  """Writes MNIST to `out` with `per_kind` copies of each kind of training
  images appended to t10k; returns ((train source, eval source, kind) of
  each, the images written)."""
  os.makedirs(out, exist_ok=True)
  rng = np.random.default_rng(seed)
  train, train_labels = harness.load_split(data_dir, 'train')
  test, test_labels = harness.load_split(data_dir, 't10k')
  kinds = planted.ALL_COPY_KINDS
  picked = rng.choice(len(train), per_kind * len(kinds), replace=False)
  copies, wanted = [], []
  for number, (index, kind) in enumerate(
      zip(picked.tolist(), np.repeat(kinds, per_kind))):
    image = Image.fromarray(train[index])
    if kind != 'exact':
      image, suffix = planted.copy_image(image, str(kind), rng)
      encoded = io.BytesIO()
      planted.save_copy(image, suffix, encoded)
      image = Image.open(encoded).convert('L')
    copies.append(np.asarray(image))
    wanted.append((f'train-images-idx3-ubyte.gz:{index}',
                   f't10k-images-idx3-ubyte.gz:{len(test) + number}',
                   str(kind)))
  for prefix, images, labels in (
      ('train', train, train_labels),
      ('t10k', np.concatenate([test, np.stack(copies)]),
       np.concatenate([test_labels, train_labels[picked]]))):
    idx.write(os.path.join(out, f'{prefix}-images-idx3-ubyte.gz'), images)
    idx.write(os.path.join(out, f'{prefix}-labels-idx1-ubyte.gz'), labels)
  return wanted, len(train) + len(test) + len(copies)


def plant_photos(root: str, per_kind: int, per_class: int,
                 eval_per_class: int) -> List[Tuple[str, str, str]]:
  """Writes the photo folder with `per_kind` copies of each kind in
  `root`/data; returns (train source, eval source, kind)."""
  source = root + '-source'
  photos.write(source, per_class, eval_per_class)
  manifest = planted.plant(source, root, per_kind *
                           len(planted.ALL_COPY_KINDS), 0, 0,
                           copy_kinds=planted.ALL_COPY_KINDS)
  return [(c['train'], c['eval'], c['kind']) for c in manifest['copies']]


def score(wanted: List[Tuple[str, str, str]], pairs: List[Dict[str, str]]
          ) -> Dict[str, Any]:
  """Found of planted per kind, and the reported pairs not planted."""
  reported = {frozenset((p['source_a'], p['source_b'])) for p in pairs}
  planted_pairs = {frozenset(w[:2]) for w in wanted}
  found = {kind: [0, 0] for kind in planted.ALL_COPY_KINDS}
  for train, evaluation, kind in wanted:
    found[kind][1] += 1
    found[kind][0] += frozenset((train, evaluation)) in reported
  return {'found': found, 'false_pairs': len(reported - planted_pairs),
          'pairs': len(reported)}


def check(tree: str, data_dir: str, work_dir: str, input_format: str
          ) -> Tuple[float, List[Dict[str, str]]]:
  """(DataChecks' wall seconds, its pairs) by the code in `tree`."""
  shutil.rmtree(work_dir, ignore_errors=True)
  result = subprocess.run(
      [sys.executable, '-m', 'benchmarks.data_checks', '--data-dir', data_dir,
       '--work-dir', work_dir, '--input-format', input_format],
      cwd=tree, env={**os.environ, 'PYTHONPATH': tree}, capture_output=True,
      text=True, check=False)
  if result.returncode:
    raise RuntimeError(f'benchmarks.data_checks in {tree} failed:\n'
                       f'{result.stderr[-3000:]}')
  wall = _WALL.search(result.stdout)
  return float(wall[2]), harness.read_csv(_PAIRS.search(result.stdout)[1])


def before_tree(work_dir: str) -> str:
  """The project at BEFORE, with this tree's benchmarks/data_checks.py (the
  same measurement for both)."""
  tree = os.path.join(work_dir, f'before-{BEFORE}')
  shutil.rmtree(tree, ignore_errors=True)
  os.makedirs(tree)
  archive = subprocess.run(['git', '-C', harness.PROJECT_DIR, 'archive',
                            BEFORE], capture_output=True, check=True).stdout
  subprocess.run(['tar', '-x', '-C', tree], input=archive, check=True)
  shutil.copy(os.path.join(harness.PROJECT_DIR, 'benchmarks',
                           'data_checks.py'),
              os.path.join(tree, 'benchmarks', 'data_checks.py'))
  return tree


def measure(ctx: harness.Context) -> Dict[str, Any]:
  """Plants, then checks each dataset before and now."""
  digits_per_kind, photos_per_kind, per_class, eval_per_class = ctx.pick(
      FULL, QUICK)
  digits, digits_images = plant_digits(
      ctx.data_dir, ctx.path('copies-digits'), digits_per_kind)
  datasets = {
      'digits': ('idx', ctx.path('copies-digits'), digits),
      'photos': ('images', ctx.path('copies-photos', planted.DATA_DIR),
                 plant_photos(ctx.path('copies-photos'), photos_per_kind,
                              per_class, eval_per_class))}
  trees = {'before': before_tree(ctx.work_dir), 'now': harness.PROJECT_DIR}
  results, loads = {}, [harness.loads()]
  for name, (input_format, data_dir, wanted) in datasets.items():
    for version, tree in trees.items():
      print(f'  copies: {name}, DataChecks {version}', flush=True)
      seconds, pairs = check(tree, data_dir,
                             ctx.path(f'copies-{name}-{version}'),
                             input_format)
      results[name, version] = dict(score(wanted, pairs), seconds=seconds)
  loads.append(harness.loads())
  return dict(before=BEFORE, kinds=planted.ALL_COPY_KINDS,
              digits_images=digits_images,
              digits_copies=digits_per_kind * len(planted.ALL_COPY_KINDS),
              photos=(per_class, eval_per_class, photos_per_kind),
              loads=loads,
              results=[(name, version, results[name, version])
                       for name in datasets for version in trees])


SECTION = harness.Section(
    heading='## Copies: exact, re-encoded, brightened, cropped and shrunk',
    measure=measure, template='copies.md.j2')
