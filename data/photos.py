"""A folder of 640x480 photo-like JPEGs, one object on a textured background.

  python -m data.photos --out DIR [--per-class 40] [--eval-per-class 10]

The object (a disc, a box or a bar: the class) lies inside the frame's
central 60%, so a crop to 80% keeps it whole. The same seed, the same bytes.
"""

import argparse
import sys
from typing import Optional, Sequence

import numpy as np
from PIL import Image, ImageDraw

from data import shapes

CLASSES = ('disc', 'box', 'bar')
WIDTH, HEIGHT = 640, 480
# The background's blotches and noise (0-255 scale), and how far the
# object's brightness stands from the background's at least.
BLOTCHES, NOISE, MIN_CONTRAST = 14.0, 5.0, 70


def draw(kind: str, rng: np.random.Generator) -> Image.Image:
  """One 640x480 photo of a `kind` object (one of CLASSES)."""
  base = rng.uniform(60, 190, 3)
  coarse = rng.normal(0, BLOTCHES, (6, 8, 3))
  blotches = np.asarray(Image.fromarray(
      (coarse + 128).clip(0, 255).astype(np.uint8)).resize(
          (WIDTH, HEIGHT), Image.BICUBIC), np.float32) - 128
  background = base + blotches + rng.normal(0, NOISE, (HEIGHT, WIDTH, 3))
  image = Image.fromarray(background.clip(0, 255).astype(np.uint8))
  shift = rng.choice([-1, 1]) * rng.uniform(MIN_CONTRAST, 110)
  colour = tuple(int(v) for v in (base + shift + rng.normal(0, 15, 3)
                                  ).clip(0, 255))
  cx = rng.uniform(0.4, 0.6) * WIDTH
  cy = rng.uniform(0.4, 0.6) * HEIGHT
  radius = rng.uniform(0.08, 0.11) * WIDTH
  pen = ImageDraw.Draw(image)
  if kind == 'disc':
    pen.ellipse((cx - radius, cy - radius, cx + radius, cy + radius),
                fill=colour)
  elif kind == 'box':
    pen.rectangle((cx - radius, cy - 0.7 * radius, cx + radius,
                   cy + 0.7 * radius), fill=colour)
  elif kind == 'bar':
    pen.rectangle((cx - 0.3 * radius, cy - radius, cx + 0.3 * radius,
                   cy + radius), fill=colour)
  else:
    raise ValueError(f'unknown object {kind!r}; known: {CLASSES}')
  return image


def write(out: str, per_class: int, eval_per_class: int, seed: int = 0
          ) -> None:
  """Writes the folder under `out` (see the module docstring)."""
  shapes.write_classes(out, per_class, eval_per_class, seed, CLASSES,
                       lambda kind, rng, path: draw(kind, rng).save(
                           path + '.jpg', quality=90))


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(
      description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--out', required=True, help='Dataset directory.')
  parser.add_argument('--per-class', type=int, default=40)
  parser.add_argument('--eval-per-class', type=int, default=10)
  parser.add_argument('--seed', type=int, default=0)
  args = parser.parse_args(argv)
  write(args.out, args.per_class, args.eval_per_class, args.seed)
  print(f'{len(CLASSES)} classes x ({args.per_class} train + '
        f'{args.eval_per_class} eval) photos of {WIDTH}x{HEIGHT} in '
        f'{args.out}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
