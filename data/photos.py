"""A folder of phone-sized colour photos, one class folder each, no splits.

  python -m data.photos --out DIR [--per-class 360] [--seed 0]

writes DIR/<class>/<n>.jpg: 640x480 JPEGs (quality 90) of one of five
shapes (data/shapes.py) at a random place, scale and angle, in a random
colour, on a noisy gradient background. With no train/eval folders,
ImageExampleGen splits the folder itself. The same seed, the same bytes.
"""

import argparse
import os
import sys
from typing import Optional, Sequence, Tuple

import numpy as np

from data import shapes

CLASSES = ('circle', 'cross', 'ring', 'star', 'triangle')
WIDTH, HEIGHT = 640, 480
# The object's radius, as a share of the shorter side: from a small object
# in a corner to one that fills most of the frame.
RADIUS_RANGE = (0.1, 0.4)
NOISE = 12.0


def write(out: str, per_class: int, seed: int = 0,
          size: Tuple[int, int] = (WIDTH, HEIGHT)) -> None:
  """Writes `per_class` photos of each class, of `size` (width, height),
  under `out`.

  Args:
    out: the dataset folder; each class's JPEG files go in out/<class>/.
    per_class: photos of each of CLASSES.
    seed: the same seed writes the same photos.
    size: (width, height) in pixels.
  """
  width, height = size
  for c, shape in enumerate(CLASSES):
    rng = np.random.default_rng([seed, c])
    folder = os.path.join(out, shape)
    os.makedirs(folder, exist_ok=True)
    for i in range(per_class):
      shapes.draw(shape, width, rng, RADIUS_RANGE, NOISE, height=height).save(
          os.path.join(folder, f'{i:05d}.jpg'), quality=90)


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(
      description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--out', required=True, help='Dataset directory.')
  parser.add_argument('--per-class', type=int, default=360,
                      help='Photos per class (default: %(default)s).')
  parser.add_argument('--seed', type=int, default=0,
                      help='Same seed, same photos (default: %(default)s).')
  args = parser.parse_args(argv)
  write(args.out, args.per_class, args.seed)
  print(f'{len(CLASSES)} classes x {args.per_class} photos of '
        f'{WIDTH}x{HEIGHT} in {args.out}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
