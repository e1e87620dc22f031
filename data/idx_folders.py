"""IDX files (MNIST, Fashion-MNIST) written as an image folder, as people keep one.

  python -m data.idx_folders --source DIR --out DIR [--train 3000] [--eval 1000]

writes the first N images of `train-*` to OUT/train/<class>/<index>.png and
of `t10k-*` to OUT/eval/<class>/, a class folder per label. Images stream
from the gzip files a block at a time.
"""

import argparse
import glob
import os
import sys
from typing import Optional, Sequence

from PIL import Image

from components.image_example_gen import idx

BLOCK = 1_000
SPLITS = (('train', 'train'), ('t10k', 'eval'))


def _file(source: str, prefix: str, kind: str) -> str:
  found = sorted(glob.glob(os.path.join(source, f'{prefix}-{kind}-idx*')))
  if not found:
    raise FileNotFoundError(f'{source}: no {prefix}-{kind}-idx* file')
  return found[0]


def write_split(source: str, prefix: str, folder: str,
                limit: Optional[int]) -> int:
  """Writes the first `limit` images (all with None) of IDX `prefix` as PNG
  files in folder/<label>/; returns how many.

  Args:
    source: the folder of the IDX files.
    prefix: the split's file name start: 'train' or 't10k'.
    folder: the split's image folder, made if missing.
    limit: images written at most; None: all.

  Raises:
    FileNotFoundError: no `prefix` images or labels file in `source`.
    ValueError: the images and labels files hold different counts.
  """
  images = idx.validate(_file(source, prefix, 'images'))
  labels = idx.validate(_file(source, prefix, 'labels'))
  if images.count != labels.count:
    raise ValueError(f'{images.path}: {images.count} images but '
                     f'{labels.path} has {labels.count} labels')
  count = images.count if limit is None else min(limit, images.count)
  image_reader, label_reader = idx.ItemReader(images), idx.ItemReader(labels)
  try:
    for start in range(0, count, BLOCK):
      stop = min(start + BLOCK, count)
      for n, (image, label) in enumerate(zip(
          image_reader.read(start, stop), label_reader.read(start, stop))):
        class_dir = os.path.join(folder, str(int(label)))
        os.makedirs(class_dir, exist_ok=True)
        Image.fromarray(image).save(
            os.path.join(class_dir, f'{start + n:05d}.png'))
  finally:
    image_reader.close()
    label_reader.close()
  return count


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(
      description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--source', required=True,
                      help='Directory of the four IDX .gz files.')
  parser.add_argument('--out', required=True, help='The image folder.')
  parser.add_argument('--train', type=int, default=None,
                      help='Training images written (default: all).')
  parser.add_argument('--eval', type=int, default=None,
                      help='Test images written, to eval/ (default: all).')
  args = parser.parse_args(argv)
  for (prefix, split), limit in zip(SPLITS, (args.train, args.eval)):
    written = write_split(args.source, prefix, os.path.join(args.out, split),
                          limit)
    print(f'{split}: {written:,} images in {os.path.join(args.out, split)}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
