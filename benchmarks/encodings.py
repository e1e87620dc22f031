"""How records should hold the pixels: raw, PNG or JPEG, at 96x96x3 and
224x224x3; and Keras's image_dataset_from_directory against ours at 96x96x3.

  .venv/bin/python -m benchmarks --section encodings

For each size, the shapes dataset (data/shapes.py, 300 training images per
class, PNG files) is converted by our ExampleGen with each
`--image-encoding`, and one epoch of the train split is read by the
Trainer's input_fn (folder_input.py: batch 128, parse + transform graph,
PNG/JPEG decoded in the graph): cold (a fresh dataset's first epoch, the
records read and decoded) and cached (its second epoch, from tf.data's
cache of the raw records, so PNG/JPEG are decoded again). Bytes: the
train split's gzipped TFRecord shards on disk. At 96x96x3 Keras's
image_dataset_from_directory reads the same folder (cold: decoding every
PNG file; cached: .cache() after decoding). The last table is the default
pipeline/knobs.py derives from these figures for each size.
"""

import os
from typing import Dict, List

from benchmarks import folder_input
from benchmarks.timing import rate_rows
from modules.training_config import TrainingConfig
from pipeline.knobs import DataConfig
from records import features

SIZES = (96, 224)
KERAS_SIZE = 96
PER_CLASS = 300
QUICK_PER_CLASS = 3


def run(work_dir: str, quick: bool, repetitions: int, header: str) -> str:
  per_class = QUICK_PER_CLASS if quick else PER_CLASS
  results: Dict[int, folder_input.Result] = {}
  for size in SIZES:
    print(f'  encodings: {size}x{size}x3', flush=True)
    results[size] = folder_input.measure(
        work_dir, per_class, repetitions, TrainingConfig().batch_size, size=size,
        with_keras=size == KERAS_SIZE)
  return render(results, header)


def render(results: Dict[int, folder_input.Result], header: str) -> str:
  some = next(iter(results.values()))
  lines: List[str] = [
      '## Encodings: raw, PNG or JPEG records, and '
      'image_dataset_from_directory',
      '',
      header,
      '',
      f'The shapes dataset, {some.images:,} training images '
      f'({some.per_class} per class) per size; one epoch of the train '
      f'split, batch {some.batch_size}; median (min-max) of '
      f'{some.repetitions} interleaved repetitions. Cold: a fresh dataset\'s '
      'first epoch (the files are in the OS page cache after the first '
      'repetition: this is decoding, not the disk); cached: its next epoch '
      '(ours caches the records, so PNG and JPEG are decoded again).',
      '',
      '| image | encoding | bytes per image on disk | vs raw | ExampleGen '
      '(s) | ours, cold (examples/s) | ours, cached (examples/s) |',
      '|---|---|---|---|---|---|---|',
  ]
  for size, r in results.items():
    raw_bytes = r.bytes_read['ours raw, cold']
    for encoding in r.conversion_s:
      on_disk = r.bytes_read[f'ours {encoding}, cold']
      lines.append(
          f'| {r.geometry} | {encoding} | {on_disk / r.images:,.0f} | '
          f'{on_disk / raw_bytes:.2f}x | {r.conversion_s[encoding]:.1f} | '
          f'{r.rates[f"ours {encoding}, cold"].format()} | '
          f'{r.rates[f"ours {encoding}, cached"].format()} |')
  keras = results.get(KERAS_SIZE)
  if keras:
    lines += [
        '',
        f'At {keras.geometry}, image_dataset_from_directory on the same '
        'folder against ours:',
        '',
        '| input | examples/s | vs Keras, cold | files read (bytes) |',
        '|---|---|---|---|',
    ]
    lines += rate_rows(keras.rates, 'keras', '{:.1f}x', {
        name: f'{read:,}' for name, read in keras.bytes_read.items()})
  lines += [
      '',
      f'The default, `DataConfig.image_encoding = {DataConfig().image_encoding!r}`,'
      ' gives: ' + '; '.join(
          f'{r.geometry} {features.resolve_encoding(DataConfig().image_encoding, r.geometry, DataConfig().png_min_pixels)}'
          for r in results.values()) + '.',
  ]
  return '\n'.join(lines) + '\n'


if __name__ == '__main__':
  raise SystemExit('run it as: python -m benchmarks --section encodings')
