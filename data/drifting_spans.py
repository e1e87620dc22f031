"""Spans of shape images whose class balance and style drift slowly.

The command's help is _HELP. Why and how:
docs/input-data.md#spans-that-drift.
"""

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
from PIL import Image

from data import shapes

# The command's --help text.
_HELP = """Spans of shape images whose class balance and style drift slowly, as a
pipeline run on a schedule would see them arrive.

  python -m data.drifting_spans OUT --spans 6 --per-span 600 --size 64

writes OUT/span-1/, OUT/span-2/, ... each laid out as an image folder
(`train/<shape>/<n>.png` and `eval/<shape>/<n>.png`, the shapes of
`data.shapes`), read span by span with `--span-dir-pattern 'span-{SPAN}'`.
From the first span to the last, linearly in the span's place:
  class balance  the first class's share falls and the last's rises (each
                 class keeps at least one image per split: a span must hold
                 every class folder);
  style          the shapes shrink, the background noise grows, the colours
                 take a warm cast and the images darken.
`--drift` scales both (0: every span alike). What each span holds and its
style is in OUT/spans.json. The same arguments write the same bytes.
"""

MANIFEST = 'spans.json'
SPAN_DIR = 'span-{SPAN}'
# At --drift 1, the last span's class weights run from 1 - BALANCE_DRIFT
# (first class) to 1 + BALANCE_DRIFT (last class); the first span's are even.
BALANCE_DRIFT = 0.7
# At --drift 1, the style of the first span and of the last.
FIRST_STYLE = {'radius_min': shapes.RADIUS_RANGE[0],
               'radius_max': shapes.RADIUS_RANGE[1], 'noise': shapes.NOISE,
               'warmth': 0.0, 'brightness': 1.0}
LAST_STYLE = {'radius_min': 0.12, 'radius_max': 0.26, 'noise': 30.0,
              'warmth': 0.3, 'brightness': 0.75}


def _progress(span: int, spans: int, drift: float) -> float:
  """How far `span` (1-based) has drifted: 0 for the first, `drift` for the
  last."""
  return drift * (span - 1) / max(spans - 1, 1)


def style(span: int, spans: int, drift: float = 1.0) -> Dict[str, float]:
  """The style parameters of `span`: FIRST_STYLE moved towards LAST_STYLE.

  Args:
    span: the span's number, 1 for the first.
    spans: how many spans there are.
    drift: the share of the way to LAST_STYLE the last span goes; 0: none.
  """
  t = _progress(span, spans, drift)
  return {key: round(FIRST_STYLE[key] + t * (LAST_STYLE[key] -
                                             FIRST_STYLE[key]), 4)
          for key in FIRST_STYLE}


def class_counts(total: int, classes: int, span: int, spans: int,
                 drift: float = 1.0) -> List[int]:
  """`total` images shared among `classes` by the span's weights (largest
  remainders), at least one each.

  Args:
    total: images of the split, in all.
    classes: how many classes share them.
    span: the span's number, 1 for the first.
    spans: how many spans there are.
    drift: how far the last span's class weights move from even, up to
      1 +- BALANCE_DRIFT at 1.

  Raises:
    ValueError: fewer images than classes.
  """
  if total < classes:
    raise ValueError(f'{total} images cannot hold {classes} classes: every '
                     'class needs at least one image in every split')
  t = _progress(span, spans, drift)
  weights = np.clip(1 + t * BALANCE_DRIFT * np.linspace(-1, 1, classes),
                    0, None)
  shares = (total - classes) * weights / weights.sum()
  counts = np.floor(shares).astype(int)
  left = (total - classes) - counts.sum()
  counts[np.argsort(counts - shares, kind='stable')[:left]] += 1
  return (counts + 1).tolist()


def _styled(image: Image.Image, parameters: Dict[str, float]) -> Image.Image:
  """The colour cast and brightness of the style (the shape's size and the
  noise are drawn with it)."""
  warmth = parameters['warmth']
  gains = np.array([1 + warmth, 1, 1 - warmth]) * parameters['brightness']
  pixels = np.asarray(image, np.float32) * gains
  return Image.fromarray(pixels.clip(0, 255).astype(np.uint8), 'RGB')


def write(out: str, spans: int, per_span: int, eval_per_span: int,
          size: int, classes: Sequence[str] = shapes.SHAPES,
          drift: float = 1.0, seed: int = 0) -> Dict[str, Any]:
  """Writes the spans under `out` and the manifest; returns the manifest.

  Args:
    out: the folder of span-1/, span-2/, ... and the manifest.
    spans: how many spans, 1 or more.
    per_span: training images of each span, shared among the classes.
    eval_per_span: eval images of each span, likewise.
    size: the images' height and width, in pixels.
    classes: the shapes drawn (of shapes.SHAPES), a class each.
    drift: how far the last span's style and class balance move from the
      first span's: 0: not at all; 1: to LAST_STYLE and BALANCE_DRIFT.
    seed: the same seed writes the same images.

  Raises:
    ValueError: fewer than 1 span, a span folder is already there, or a
      split is too small to hold every class.
  """
  # In label order (the sorted folder names): the first class is label 0.
  classes = sorted(classes)
  if spans < 1:
    raise ValueError(f'--spans must be at least 1, got {spans}')
  for span in range(1, spans + 1):
    folder = os.path.join(out, SPAN_DIR.format(SPAN=span))
    if os.path.exists(folder):
      raise ValueError(f'{folder} exists: write the spans into a new folder')
  manifest: Dict[str, Any] = {
      'seed': seed, 'size': size, 'drift': drift, 'classes': list(classes),
      'span_dir_pattern': SPAN_DIR, 'spans': []}
  for span in range(1, spans + 1):
    parameters = style(span, spans, drift)
    entry = {'span': span, 'style': parameters}
    for split, total in (('train', per_span), ('eval', eval_per_span)):
      counts = class_counts(total, len(classes), span, spans, drift)
      entry[split] = dict(zip(classes, counts))
      for c, (shape, count) in enumerate(zip(classes, counts)):
        # A generator per (seed, span, split, class), as data.shapes does.
        rng = np.random.default_rng([seed, span, split == 'eval', c])
        folder = os.path.join(out, SPAN_DIR.format(SPAN=span), split, shape)
        os.makedirs(folder, exist_ok=True)
        for i in range(count):
          image = shapes.draw(
              shape, size, rng, noise=parameters['noise'],
              radius_range=(parameters['radius_min'],
                            parameters['radius_max']))
          _styled(image, parameters).save(
              os.path.join(folder, f'{i:05d}.png'))
    manifest['spans'].append(entry)
  with open(os.path.join(out, MANIFEST), 'w') as f:
    json.dump(manifest, f, indent=1)
  return manifest


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(
      prog='python -m data.drifting_spans', description=_HELP,
      formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('out', metavar='OUT',
                      help='Folder for span-1/, span-2/, ... and spans.json.')
  parser.add_argument('--spans', type=int, default=6,
                      help='Number of spans (default: %(default)s).')
  parser.add_argument('--per-span', type=int, default=600,
                      help='Training images per span (default: %(default)s).')
  parser.add_argument('--eval-per-span', type=int, default=None,
                      help='Eval images per span (default: a fifth of '
                      '--per-span, at least one per class).')
  parser.add_argument('--size', type=int, default=64,
                      help='Image height and width (default: %(default)s).')
  parser.add_argument('--classes', type=int, default=len(shapes.SHAPES),
                      help='The first N shapes of data.shapes, in name order '
                      '(default: %(default)s, all).')
  parser.add_argument('--drift', type=float, default=1.0,
                      help='How far the last span drifts from the first; 0: '
                      'not at all (default: %(default)s).')
  parser.add_argument('--seed', type=int, default=0,
                      help='Same seed, same images (default: %(default)s).')
  args = parser.parse_args(argv)
  if not 2 <= args.classes <= len(shapes.SHAPES):
    parser.error(f'--classes must be 2 to {len(shapes.SHAPES)}, got '
                 f'{args.classes}')
  eval_per_span = (args.eval_per_span if args.eval_per_span is not None
                   else max(args.classes, args.per_span // 5))
  try:
    manifest = write(args.out, args.spans, args.per_span, eval_per_span,
                     args.size, sorted(shapes.SHAPES)[:args.classes],
                     args.drift, args.seed)
  except ValueError as e:
    print(f'error: {e}', file=sys.stderr)
    return 1
  for entry in manifest['spans']:
    counts = entry['train']
    print(f'span {entry["span"]}: train {sum(counts.values())} '
          f'({min(counts.values())} to {max(counts.values())} per class), '
          f'eval {sum(entry["eval"].values())}; style {entry["style"]}')
  print(f'{args.spans} spans of {args.size}x{args.size} images in '
        f'{args.out}; the list in {os.path.join(args.out, MANIFEST)}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
