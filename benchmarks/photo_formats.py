"""What reading one phone-sized photo costs an image folder, by file format.

  python -m benchmarks.photo_formats [--width 4032 --height 3024] [--repeats 3]

One generated photo (shapes on noise, drawn at a quarter of the size,
blurred and enlarged, as a camera's smooth pixels) saved as each format
image folders read, then ImageExampleGen's `decode_image` of each file to
the geometry a photo folder trains at: the mean of `--repeats` calls after
a first. HEIC needs libheif's `heif-enc` (Debian: libheif-examples).
"""

import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, Optional, Sequence, Tuple

from PIL import Image, ImageFilter
import numpy as np

from benchmarks import harness
from components.image_example_gen import image_folder
from data import photos
from data import shapes
from records import features

# The geometry a photo folder trains at (ImageExampleGen's choice for
# 4:3 photos on this project's two cores).
GEOMETRY = features.ImageGeometry(72, 96, 3)
# Each format as a phone, a browser or an export saves it.
_PILLOW = {'JPEG (quality 90)': ('JPEG', {'quality': 90}),
           'PNG': ('PNG', {}),
           'WebP (quality 80)': ('WEBP', {'quality': 80}),
           'AVIF (quality 60)': ('AVIF', {'quality': 60})}
HEIC = 'HEIC (heif-enc -q 50)'
_EXTENSIONS = {'JPEG': '.jpg', 'PNG': '.png', 'WEBP': '.webp', 'AVIF': '.avif',
               HEIC: '.heic'}


def photo(width: int, height: int, seed: int = 0) -> Image.Image:
  """A smooth colour photo of `width` x `height`."""
  rng = np.random.default_rng(seed)
  small = shapes.draw('star', max(1, width // 4), rng, photos.RADIUS_RANGE,
                      photos.NOISE, height=max(1, height // 4))
  return small.filter(ImageFilter.GaussianBlur(1)).resize(
      (width, height), Image.Resampling.BICUBIC)


def _heic(image: Image.Image, work: str) -> Optional[bytes]:
  """`image` as libheif's heif-enc writes it, or None without heif-enc."""
  if not shutil.which('heif-enc'):
    return None
  source, heic = os.path.join(work, 'in.png'), os.path.join(work, 'out.heic')
  image.save(source)
  subprocess.run(['heif-enc', '-q', '50', '-o', heic, source], check=True,
                 capture_output=True)
  with open(heic, 'rb') as f:
    return f.read()


def files(image: Image.Image, work: str) -> Dict[str, Tuple[str, bytes]]:
  """`image` saved as each format: name -> (file name, bytes)."""
  saved = {}
  for name, (format_, options) in _PILLOW.items():
    buffer = io.BytesIO()
    image.save(buffer, format_, **options)
    saved[name] = ('photo' + _EXTENSIONS[format_], buffer.getvalue())
  heic = _heic(image, work)
  if heic is not None:
    saved[HEIC] = ('photo' + _EXTENSIONS[HEIC], heic)
  return saved


def mean_seconds(decode: Callable[[], object], repeats: int) -> float:
  """The mean seconds of `repeats` calls of `decode`, after a first."""
  decode()
  start = time.perf_counter()
  for _ in range(repeats):
    decode()
  return (time.perf_counter() - start) / repeats


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  parser.add_argument('--width', type=int, default=4032)
  parser.add_argument('--height', type=int, default=3024)
  parser.add_argument('--repeats', type=int, default=3)
  args = parser.parse_args(argv)
  with tempfile.TemporaryDirectory(prefix='photo-formats-') as work:
    saved = files(photo(args.width, args.height), work)
  print(harness.machine_line())
  print(f'CPU flags: {harness.cpu_flags("none of note")}')
  print(f'One {args.width}x{args.height} photo, decode_image to '
        f'{GEOMETRY.height}x{GEOMETRY.width}x{GEOMETRY.channels}, the mean '
        f'of {args.repeats} calls after a first:')
  print(harness.row('format', 'file', 'decode_image', 'vs JPEG'))
  print(harness.row('---', '---', '---', '---'))
  seconds = {name: mean_seconds(
      lambda file=file: image_folder.decode_image(*file, GEOMETRY),
      args.repeats) for name, file in saved.items()}
  jpeg = seconds['JPEG (quality 90)']
  for name, (_, data) in saved.items():
    print(harness.row(name, f'{len(data) / 1e6:.2f} MB',
                      f'{seconds[name] * 1e3:.0f} ms',
                      f'{seconds[name] / jpeg:.1f}x'))
  if HEIC not in saved:
    print('HEIC not measured: heif-enc is missing '
          '(apt-get install libheif-examples).')
  return 0


if __name__ == '__main__':
  sys.exit(main())
