"""DataChecks on a dataset: its cost, what it found, pictures of the pairs.

  python -m benchmarks.data_checks --data-dir DIR [--work-dir DIR]
      [--png pairs.png] [--beam-args "..."]

Converts DIR (IDX files) once with ImageExampleGen
(tests/example_gen_standalone.py), then times the DataChecks executor's Do
on the Examples in this process: Beam's signatures of every shard, then
matching and the files. Prints the wall time, the CPU time of this
process (and its Beam workers, as the operating system counts its
children), its peak resident memory, the counts per split pair and the
image issues; --png draws the pairs found (the cross-split ones first),
each pair side by side with its correlation, to look at whether they are
copies.
"""

import argparse
import os
import resource
import shlex
import sys
import tempfile
import time

import numpy as np
from PIL import Image, ImageDraw

from components.image_example_gen.options import ImageExampleGenOptions
from records import data_checks as results
from tests import artifacts
from tests import test_data_checks

SHOWN_PAIRS = 40


def _cpu_seconds() -> float:
  total = 0.0
  for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
    usage = resource.getrusage(who)
    total += usage.ru_utime + usage.ru_stime
  return total


def _record_images(examples_uri: str, split: str, names):
  """{record name: HxW(xC) uint8} of the records named shard:index."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  wanted = {}
  for name in names:
    shard, index = name.rsplit(':', 1)
    wanted.setdefault(shard, set()).add(int(index))
  found = {}
  for shard, indices in wanted.items():
    path = os.path.join(examples_uri, f'Split-{split}', shard)
    dataset = tf.data.TFRecordDataset(path, compression_type='GZIP')
    for index, record in enumerate(dataset.take(max(indices) + 1)):
      if index in indices:
        example = tf.train.Example.FromString(record.numpy())
        feature = example.features.feature
        shape = [feature[k].int64_list.value[0]
                 for k in ('height', 'width', 'channels')]
        pixels = np.frombuffer(feature['image'].bytes_list.value[0], np.uint8)
        found[f'{shard}:{index}'] = pixels.reshape(shape)[..., 0]
  return found


def draw_pairs(examples_uri: str, rows, path: str) -> None:
  """The pairs side by side, five to a row, with their correlation."""
  rows = list(rows)[:SHOWN_PAIRS]
  if not rows:
    return
  images = {}
  for split in {r['split_a'] for r in rows} | {r['split_b'] for r in rows}:
    names = [r['record_a'] for r in rows if r['split_a'] == split] + [
        r['record_b'] for r in rows if r['split_b'] == split]
    images[split] = _record_images(examples_uri, split, names)
  cell = 28 * 3
  width, height = 2 * cell + 12, cell + 16
  canvas = Image.new('L', (5 * width, (len(rows) + 4) // 5 * height), 255)
  draw = ImageDraw.Draw(canvas)
  for number, row in enumerate(rows):
    x, y = number % 5 * width, number // 5 * height
    for side, (split, record) in enumerate(((row['split_a'], row['record_a']),
                                            (row['split_b'], row['record_b']))):
      image = Image.fromarray(images[split][record]).resize(
          (cell, cell), Image.NEAREST)
      canvas.paste(image, (x + side * (cell + 2), y))
    draw.text((x, y + cell + 2), f'{row["split_a"][:2]}-{row["split_b"][:2]} '
              f'{row["kind"]} {float(row["correlation"]):.3f}', fill=0)
  canvas.save(path)


def main(argv=None) -> int:
  """Converts, times DataChecks, prints what it found."""
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--data-dir', required=True)
  parser.add_argument('--work-dir', default=None)
  parser.add_argument('--png', default=None)
  parser.add_argument('--beam-args', default='--direct_running_mode=in_memory')
  args = parser.parse_args(argv)
  work = args.work_dir or tempfile.mkdtemp(prefix='data-checks-bench-')
  examples = artifacts.run_example_gen(
      args.data_dir, os.path.join(work, 'examples'),
      ImageExampleGenOptions(input_format='idx', num_shards=16))
  artifacts.IN_MEMORY[:] = shlex.split(args.beam_args)
  start_wall, start_cpu = time.monotonic(), _cpu_seconds()
  output = test_data_checks.run_data_checks(
      examples, os.path.join(work, 'checks'))
  wall, cpu = time.monotonic() - start_wall, _cpu_seconds() - start_cpu
  peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  images = results.json_property(output, results.IMAGES_PROPERTY)
  print(f'DataChecks on {sum(images.values()):,} images ({images}): '
        f'{wall:.2f}s wall, {cpu:.2f}s CPU, peak RSS of this process '
        f'{peak:.0f} MiB (Beam: {args.beam_args})')
  print('copies:', results.json_property(output, results.COPIES_PROPERTY))
  print('held out:', results.json_property(output, results.HELD_OUT_PROPERTY))
  print('issues:', results.json_property(output, results.ISSUES_PROPERTY))
  print('pairs file:', os.path.join(output.uri, results.COPIES_FILE))
  if args.png:
    draw_pairs(examples.uri, results.read_pairs(output.uri), args.png)
    print('pairs drawn:', args.png)
  return 0


if __name__ == '__main__':
  sys.exit(main())
