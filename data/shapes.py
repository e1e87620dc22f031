"""A colour image-folder dataset: ten classes of shapes on varied colour
backgrounds, deterministic by seed (Pillow and numpy only).

  python -m data.shapes --out DIR --per-class 300 --size 96

writes DIR/train/<shape>/<n>.png (--per-class each) and DIR/eval/<shape>/...
(--eval-per-class each), the layout of `--input-format images`. Each image
is one shape in a random colour, position, size and rotation on a
background that is a gradient between two random colours, with noise: the
colours say nothing about the class, only the outline does. The same seed
writes the same bytes.
"""

import argparse
import math
import os
import sys
from typing import List, Optional, Sequence, Tuple

import numpy as np
from PIL import Image, ImageDraw

SHAPES = ('circle', 'cross', 'crescent', 'diamond', 'hexagon', 'pentagon',
          'ring', 'square', 'star', 'triangle')
# Foreground and background at least this far apart (mean of |RGB delta|):
# the shape must be visible, however the colours fall.
_MIN_CONTRAST = 80
# The shape's radius, as a share of the image's side, is drawn from this range.
RADIUS_RANGE = (0.2, 0.38)
# The background noise's standard deviation, on the 0-255 scale.
NOISE = 8.0


def _regular_polygon(cx, cy, radius, sides, angle) -> List[Tuple[float, float]]:
  return [(cx + radius * math.cos(angle + 2 * math.pi * i / sides),
           cy + radius * math.sin(angle + 2 * math.pi * i / sides))
          for i in range(sides)]


def _star(cx, cy, radius, angle) -> List[Tuple[float, float]]:
  points = []
  for i in range(10):
    r = radius if i % 2 == 0 else radius * 0.42
    a = angle + math.pi * i / 5
    points.append((cx + r * math.cos(a), cy + r * math.sin(a)))
  return points


def _cross(cx, cy, radius, angle) -> List[Tuple[float, float]]:
  arm = radius * 0.33
  outline = [(arm, radius), (arm, arm), (radius, arm), (radius, -arm),
             (arm, -arm), (arm, -radius), (-arm, -radius), (-arm, -arm),
             (-radius, -arm), (-radius, arm), (-arm, arm), (-arm, radius)]
  cos, sin = math.cos(angle), math.sin(angle)
  return [(cx + x * cos - y * sin, cy + x * sin + y * cos) for x, y in outline]


def _colour(rng: np.random.Generator) -> Tuple[int, int, int]:
  return tuple(int(v) for v in rng.integers(0, 256, 3))


def _background(rng: np.random.Generator, width: int, height: int,
                noise: float = NOISE) -> np.ndarray:
  """A linear gradient between two colours in a random direction, with
  Gaussian noise of standard deviation `noise`."""
  start, end = (np.array(_colour(rng), np.float32) for _ in range(2))
  angle = rng.uniform(0, 2 * math.pi)
  ys, xs = np.mgrid[0:height, 0:width] / max(max(width, height) - 1, 1)
  t = (xs * math.cos(angle) + ys * math.sin(angle))
  t = (t - t.min()) / max(float(np.ptp(t)), 1e-6)
  image = start + (end - start) * t[..., None]
  image += rng.normal(0, noise, image.shape)
  return image.clip(0, 255).astype(np.uint8)


def draw(shape: str, size: int, rng: np.random.Generator,
         radius_range: Tuple[float, float] = RADIUS_RANGE,
         noise: float = NOISE, height: Optional[int] = None) -> Image.Image:
  """One `shape` image of size x size pixels (size x height if given).

  Args:
    shape: one of SHAPES.
    size: the image's width (and height, unless `height` is given).
    rng: where the colours, place, size and angle come from.
    radius_range: the radius is drawn from this range, as a share of the
      image's shorter side.
    noise: the background noise's standard deviation (0-255 scale).
    height: the image's height, if not `size`.
  """
  width, height = size, height or size
  background = _background(rng, width, height, noise)
  mean = background.reshape(-1, 3).mean(axis=0)
  while True:
    colour = _colour(rng)
    if np.abs(np.array(colour) - mean).mean() >= _MIN_CONTRAST:
      break
  image = Image.fromarray(background, 'RGB')
  pen = ImageDraw.Draw(image)
  radius = min(width, height) * rng.uniform(*radius_range)
  margin = radius + 1
  cx, cy = (rng.uniform(margin, side - margin) for side in (width, height))
  angle = rng.uniform(0, 2 * math.pi)
  box = (cx - radius, cy - radius, cx + radius, cy + radius)
  if shape == 'circle':
    pen.ellipse(box, fill=colour)
  elif shape == 'ring':
    pen.ellipse(box, outline=colour, width=max(2, int(radius * 0.3)))
  elif shape == 'crescent':
    pen.ellipse(box, fill=colour)
    dx, dy = radius * 0.55 * math.cos(angle), radius * 0.55 * math.sin(angle)
    inner = radius * 0.85
    bite = Image.fromarray(background, 'RGB')
    mask = Image.new('L', image.size, 0)
    ImageDraw.Draw(mask).ellipse((cx + dx - inner, cy + dy - inner,
                                  cx + dx + inner, cy + dy + inner), fill=255)
    image.paste(bite, (0, 0), mask)
  elif shape == 'square':
    pen.polygon(_regular_polygon(cx, cy, radius, 4, angle), fill=colour)
  elif shape == 'diamond':  # A rhombus: a square squashed along one axis.
    points = _regular_polygon(0, 0, radius, 4, 0)
    cos, sin = math.cos(angle), math.sin(angle)
    pen.polygon([(cx + x * cos - y * 0.55 * sin, cy + x * sin + y * 0.55 * cos)
                 for x, y in points], fill=colour)
  elif shape == 'triangle':
    pen.polygon(_regular_polygon(cx, cy, radius, 3, angle), fill=colour)
  elif shape == 'pentagon':
    pen.polygon(_regular_polygon(cx, cy, radius, 5, angle), fill=colour)
  elif shape == 'hexagon':
    pen.polygon(_regular_polygon(cx, cy, radius, 6, angle), fill=colour)
  elif shape == 'star':
    pen.polygon(_star(cx, cy, radius, angle), fill=colour)
  elif shape == 'cross':
    pen.polygon(_cross(cx, cy, radius, angle), fill=colour)
  else:
    raise ValueError(f'unknown shape {shape!r}; known: {SHAPES}')
  return image


def write(out: str, per_class: int, size: int, eval_per_class: int,
          seed: int = 0, shapes: Sequence[str] = SHAPES) -> None:
  """Writes the dataset under `out` (see the module docstring).

  Args:
    out: the dataset folder: train/<shape>/ and eval/<shape>/.
    per_class: training images of each shape.
    size: the images' height and width, in pixels.
    eval_per_class: eval images of each shape.
    seed: the same seed writes the same images.
    shapes: the shapes drawn (of SHAPES), a class each.
  """
  for split, count in (('train', per_class), ('eval', eval_per_class)):
    for c, shape in enumerate(shapes):
      # A generator per (seed, split, class): the same image whatever else
      # is written, e.g. with fewer classes or another count of others.
      rng = np.random.default_rng([seed, split == 'eval', c])
      folder = os.path.join(out, split, shape)
      os.makedirs(folder, exist_ok=True)
      for i in range(count):
        draw(shape, size, rng).save(os.path.join(folder, f'{i:05d}.png'))


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(
      description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--out', required=True, help='Dataset directory.')
  parser.add_argument('--per-class', type=int, default=300,
                      help='Training images per class (default: %(default)s).')
  parser.add_argument('--eval-per-class', type=int, default=None,
                      help='Eval images per class (default: a fifth of '
                      '--per-class, at least 1).')
  parser.add_argument('--size', type=int, default=96,
                      help='Image height and width (default: %(default)s).')
  parser.add_argument('--seed', type=int, default=0,
                      help='Same seed, same images (default: %(default)s).')
  args = parser.parse_args(argv)
  eval_per_class = (args.eval_per_class if args.eval_per_class is not None
                    else max(1, args.per_class // 5))
  write(args.out, args.per_class, args.size, eval_per_class, args.seed)
  print(f'{len(SHAPES)} classes x ({args.per_class} train + {eval_per_class} '
        f'eval) images of {args.size}x{args.size} in {args.out}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
