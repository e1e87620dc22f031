"""LabelCheck on MNIST with labels planted wrong: recall, list length, cost.

Relabels --percent of train and of t10k, runs the whole default pipeline
(extra local_runner flags after --) and prints per split the planted
records found among the suspects, the list's length and the check's seconds.
"""

import argparse
import glob
import json
import os
import re
import shutil
import sys

import numpy as np

from benchmarks import harness
from components.image_example_gen import idx
from pipeline import knobs
from records import label_check_results

SPLITS = {'train': 'train', 't10k': 'eval'}


def plant(data_dir: str, out_dir: str, percent: float, seed: int = 0):
  """MNIST copied to `out_dir` with `percent` of each split's labels moved
  to another class; {split: the planted records' sources}."""
  os.makedirs(out_dir, exist_ok=True)
  rng = np.random.default_rng(seed)
  planted = {}
  for prefix, split in SPLITS.items():
    images = glob.glob(os.path.join(data_dir, f'{prefix}-images-idx3-ubyte*'))
    shutil.copy(images[0], out_dir)
    path = glob.glob(os.path.join(data_dir, f'{prefix}-labels-idx1-ubyte*'))[0]
    labels = idx.read_all(idx.read_header(path)).copy()
    count = int(round(len(labels) * percent / 100))
    where = np.sort(rng.choice(len(labels), count, replace=False))
    labels[where] = (labels[where] + rng.integers(1, 10, count)) % 10
    idx.write(os.path.join(out_dir, f'{prefix}-labels-idx1-ubyte.gz'), labels,
              True)
    # The records' `source` (records/features.py): images file:index.
    planted[split] = {f'{os.path.basename(images[0])}:{i}'
                      for i in where.tolist()}
  return planted


def unchecked_sources(out: str, checked_records: int):
  """The sources of the training and validation records LabelCheck's
  samples left out (records/shards.py), an empty set where all were
  checked."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from records import features  # pylint: disable=g-import-not-at-top
  from records import shards  # pylint: disable=g-import-not-at-top
  spec = {features.SOURCE_KEY: tf.io.FixedLenFeature([], tf.string)}
  unchecked = set()
  for split in ('train', 'validation'):
    files = sorted(glob.glob(os.path.join(
        out, 'pipeline', 'ImageExampleGen', 'examples', '*', f'Split-{split}',
        '*.gz')))
    buckets = shards.sample_buckets(shards.count_records(files),
                                    checked_records)
    for block in shards.records(files).batch(4096):
      keep = (shards.bucket_of(block) >= buckets).numpy()
      names = tf.io.parse_example(block, spec)[features.SOURCE_KEY].numpy()
      unchecked |= {n.decode() for n in names[keep]}
  return unchecked


def main() -> int:
  """Plants, runs the pipeline, prints the scores as JSON."""
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument('--data-dir', required=True)
  parser.add_argument('--work-dir', required=True)
  parser.add_argument('--percent', type=float, default=1.0)
  parser.add_argument('--checked-records', type=int,
                      default=knobs.EvaluationConfig().label_check_records,
                      help='As --label-check-records in the flags.')
  parser.add_argument('flags', nargs='*', help='More local_runner.py flags.')
  args = parser.parse_args()
  data = os.path.join(args.work_dir, 'data')
  out = os.path.join(args.work_dir, 'out')
  shutil.rmtree(out, ignore_errors=True)
  planted = plant(args.data_dir, data, args.percent)
  run = harness.run_local_runner(
      data, out, '--label-check-records', str(args.checked_records),
      *args.flags)
  finished = re.search(r'finished in ([\d.]+)s', run.stdout)
  report = {'pipeline_seconds': float(finished.group(1)) if finished else None,
            'wall_seconds': round(run.seconds, 1),
            'label_check_seconds': run.nodes.get('LabelCheck', (None,))[0],
            'splits': {}}
  rows = label_check_results.read_suspects(
      harness.newest_artifact(out, 'LabelCheck',
                              label_check_results.OUTPUT_KEY))
  unchecked = unchecked_sources(out, args.checked_records)
  for split, sources in planted.items():
    # The train file's records are in the validation split too.
    splits = ('train', 'validation') if split == 'train' else (split,)
    listed = {r['source'] for r in rows if r['split'] in splits}
    # Only the training and validation splits are sampled.
    sources = sources - unchecked
    report['splits'][split] = {
        'planted_checked': len(sources),
        'listed': sum(1 for r in rows if r['split'] in splits),
        'found': len(sources & listed),
        'recall': round(len(sources & listed) / max(len(sources), 1), 4),
        'methods': sorted({r['method'] for r in rows
                           if r['split'] in splits})}
  print(json.dumps(report, indent=1))
  return 0


if __name__ == '__main__':
  sys.exit(main())
