"""An image folder with known faults planted in it, and the list of them.

  python -m data.planted --source DIR --out DIR [--copies 30] [--wrong-labels 30]

copies DIR (the `train/<class>/<image>` and `eval/<class>/<image>` layout,
e.g. written by `python -m data.shapes`) to OUT/data and plants:
  copies        train images copied into eval under their own class: exact
                bytes, re-encoded as JPEG, and brightened, a third each;
  wrong labels  images moved to another class's folder, in train and eval;
  sideways      eval images (in OUT/sideways/, not in the data) stored
                rotated with the EXIF orientation that turns them upright,
                each beside its upright twin.
What was planted is in OUT/planted.json (data paths relative to OUT/data), the truth the pipeline's checks
are scored against (benchmarks/trust.py). The same seed plants the same.
"""

import argparse
import json
import os
import shutil
import sys
from typing import Dict, List, Optional, Sequence

import numpy as np
from PIL import Image, ImageEnhance, ImageOps

MANIFEST = 'planted.json'
DATA_DIR = 'data'
SIDEWAYS_DIR = 'sideways'
COPY_KINDS = ('exact', 'jpeg', 'brightened')
# EXIF orientation 6: the stored pixels are the upright image turned a
# quarter anticlockwise; a viewer turns them a quarter clockwise.
_ORIENTATION_TAG = 0x0112
_SIDEWAYS = 6
JPEG_QUALITY = 75
BRIGHTEN = 1.15


def _images(root: str, split: str) -> List[str]:
  """Every image of a split, as a path relative to `root`, sorted."""
  found = []
  split_dir = os.path.join(root, split)
  for name in sorted(os.listdir(split_dir)):
    class_dir = os.path.join(split_dir, name)
    if os.path.isdir(class_dir):
      found += [os.path.join(split, name, f) for f in sorted(os.listdir(class_dir))
                if not f.startswith('.')]
  return found


def _class_of(relative: str) -> str:
  return relative.split(os.sep)[1]


# Cropped copies keep this share of each side, anywhere in the frame.
CROP_KEEP = (0.8, 0.95)
# Shrunk copies are saved at this share of each side, then enlarged again,
# by one of these resamplers.
SHRINK_SHARE = (0.5, 0.85)
RESAMPLERS = (Image.Resampling.BILINEAR, Image.Resampling.BICUBIC,
              Image.Resampling.LANCZOS, Image.Resampling.BOX)


def cropped(image: Image.Image, rng, keep=CROP_KEEP, border=None,
            resize_back: bool = True) -> Image.Image:
  """A part of `image`: a share in `keep` of each side, at a random place,
  or (given `border`, a (low, high) pixel range) the image with a border of
  that many pixels cut from each side; resized back to the image's size, or
  kept as cut (as a photo exported).

  Args:
    image: the image cut.
    rng: a NumPy Generator, which picks the share and place, or the border.
    keep: the (low, high) share of each side kept.
    border: the (low, high) pixels cut from each side, drawn per side;
      None: a share in `keep` instead.
    resize_back: resize the part to the image's size; False: as cut.
  """
  width, height = image.size
  if border:
    left, top, right, bottom = (int(cut) for cut in rng.integers(
        border[0], border[1] + 1, 4))
    box = (left, top, width - right, height - bottom)
  else:
    part_w, part_h = (max(1, round(side * rng.uniform(*keep)))
                      for side in (width, height))
    left = int(rng.integers(0, width - part_w + 1))
    top = int(rng.integers(0, height - part_h + 1))
    box = (left, top, left + part_w, top + part_h)
  part = image.crop(box)
  if not resize_back:
    return part
  return part.resize(image.size, Image.Resampling.BILINEAR)


def shrunk(image: Image.Image, rng, share=SHRINK_SHARE) -> Image.Image:
  """`image` saved smaller (a share in `share` of each side) and enlarged
  again, both by one resampler picked at random.

  Args:
    image: the image shrunk.
    rng: a NumPy Generator, which picks the resampler and the share.
    share: the (low, high) range the share of each side is drawn from.
  """
  resampler = RESAMPLERS[int(rng.integers(len(RESAMPLERS)))]
  factor = rng.uniform(*share)
  small = image.resize((max(1, round(image.width * factor)),
                        max(1, round(image.height * factor))), resampler)
  return small.resize(image.size, resampler)


def _plant_copy(out: str, source: str, kind: str, index: int) -> str:
  """Writes a `kind` copy of train image `source` into eval; its path."""
  stem = f'planted-copy-{index:04d}'
  folder = os.path.join('eval', _class_of(source))
  if kind == 'exact':
    target = os.path.join(folder, stem + os.path.splitext(source)[1])
    shutil.copyfile(os.path.join(out, source), os.path.join(out, target))
    return target
  with Image.open(os.path.join(out, source)) as image:
    image = image.convert('RGB')
    if kind == 'jpeg':
      target = os.path.join(folder, stem + '.jpg')
      image.save(os.path.join(out, target), quality=JPEG_QUALITY)
    else:
      target = os.path.join(folder, stem + '.png')
      ImageEnhance.Brightness(image).enhance(BRIGHTEN).save(
          os.path.join(out, target))
  return target


def _plant_wrong_label(out: str, source: str, classes: Sequence[str],
                       rng: np.random.Generator) -> Dict[str, str]:
  given = _class_of(source)
  planted = str(rng.choice([c for c in classes if c != given]))
  split = source.split(os.sep)[0]
  target = os.path.join(split, planted, 'planted-label-' +
                        os.path.basename(source))
  os.replace(os.path.join(out, source), os.path.join(out, target))
  return {'path': target, 'true_class': given, 'given_class': planted}


def _plant_sideways(out: str, sideways_dir: str, source: str,
                    index: int) -> Dict[str, str]:
  folder = os.path.join(sideways_dir, _class_of(source))
  os.makedirs(folder, exist_ok=True)
  upright = os.path.join(folder, f'{index:04d}-upright.jpg')
  sideways = os.path.join(folder, f'{index:04d}-sideways.jpg')
  with Image.open(os.path.join(out, source)) as image:
    image = image.convert('RGB')
    image.save(upright, quality=95)
    exif = Image.Exif()
    exif[_ORIENTATION_TAG] = _SIDEWAYS
    image.transpose(Image.Transpose.ROTATE_90).save(sideways, quality=95,
                                                   exif=exif)
  with Image.open(sideways) as check:  # The tag must turn it back.
    assert ImageOps.exif_transpose(check).size == image.size, sideways
  return {'upright': os.path.relpath(upright, os.path.dirname(sideways_dir)),
          'sideways': os.path.relpath(sideways, os.path.dirname(sideways_dir)),
          'class': _class_of(source)}


def plant(source: str, root: str, copies: int, wrong_labels: int,
          sideways: int, seed: int = 0,
          eval_wrong_labels: Optional[int] = None) -> Dict[str, object]:
  """Copies `source` to `root`/data, plants the faults; returns the
  manifest.

  Args:
    source: an image folder of train/<class>/ and eval/<class>/.
    root: a new folder: the data, the sideways pairs (SIDEWAYS_DIR) and
      the manifest go in it.
    copies: train images copied into eval, in turn exact, as JPEG and
      brightened.
    wrong_labels: images moved into another class's folder.
    sideways: eval images written upright and turned, with an EXIF tag that
      turns them back.
    seed: the same seed plants the same faults.
    eval_wrong_labels: how many of the `wrong_labels` are planted in eval,
      the others in train; None: half, rounded down.

  Raises:
    ValueError: `root` exists, `source` lacks train/ or eval/,
      `eval_wrong_labels` is not within 0 and `wrong_labels`, or `source`
      has too few images for the faults.
  """
  if os.path.exists(root):
    raise ValueError(f'{root} exists: planting needs a new folder')
  out = os.path.join(root, DATA_DIR)
  for split in ('train', 'eval'):
    if not os.path.isdir(os.path.join(source, split)):
      raise ValueError(f'{source} has no {split}/ folder: expected '
                       'train/<class>/<image> and eval/<class>/<image>')
  shutil.copytree(source, out)
  rng = np.random.default_rng(seed)
  train, evaluation = _images(out, 'train'), _images(out, 'eval')
  classes = sorted({_class_of(p) for p in train})
  in_eval = wrong_labels // 2 if eval_wrong_labels is None else (
      eval_wrong_labels)
  if not 0 <= in_eval <= wrong_labels:
    raise ValueError(f'{in_eval} wrong labels in eval is not within the '
                     f'{wrong_labels} planted')
  wanted = {'train': wrong_labels - in_eval, 'eval': in_eval}
  if copies + wanted['train'] > len(train) or (
      sideways + wanted['eval'] > len(evaluation)):
    raise ValueError(f'{source} is too small for {copies} copies, '
                     f'{wrong_labels} wrong labels and {sideways} sideways')
  # Disjoint draws: a copied image keeps its label, so a copy pair is never
  # also a wrong label.
  train_pick = rng.permutation(len(train))
  eval_pick = rng.permutation(len(evaluation))
  copy_sources = [train[i] for i in train_pick[:copies]]
  mislabel = ([train[i] for i in train_pick[copies:copies + wanted['train']]] +
              [evaluation[i] for i in eval_pick[:wanted['eval']]])
  turned = [evaluation[i] for i in
            eval_pick[wanted['eval']:wanted['eval'] + sideways]]

  sideways_dir = os.path.join(root, SIDEWAYS_DIR)
  manifest = {
      'seed': seed,
      'copies': [{'train': s, 'eval': _plant_copy(out, s, kind, i),
                  'kind': kind}
                 for i, (s, kind) in enumerate(
                     zip(copy_sources, np.resize(COPY_KINDS, copies)))],
      'wrong_labels': [_plant_wrong_label(out, s, classes, rng)
                       for s in mislabel],
      'sideways': [_plant_sideways(out, sideways_dir, s, i)
                   for i, s in enumerate(turned)],
  }
  with open(os.path.join(root, MANIFEST), 'w') as f:
    json.dump(manifest, f, indent=1)
  return manifest


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(
      description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--source', required=True,
                      help='An image folder with train/ and eval/.')
  parser.add_argument('--out', required=True,
                      help='A new folder: the data goes in OUT/data.')
  parser.add_argument('--copies', type=int, default=30,
                      help='Train images copied into eval (default: '
                      '%(default)s).')
  parser.add_argument('--wrong-labels', type=int, default=30,
                      help='Images moved to a wrong class, half in train, '
                      'half in eval (default: %(default)s).')
  parser.add_argument('--eval-wrong-labels', type=int, default=None,
                      help='Of the wrong labels, how many go to eval '
                      '(default: half).')
  parser.add_argument('--sideways', type=int, default=50,
                      help='Eval images written sideways with their EXIF '
                      'orientation (default: %(default)s).')
  parser.add_argument('--seed', type=int, default=0)
  args = parser.parse_args(argv)
  try:
    manifest = plant(args.source, args.out, args.copies, args.wrong_labels,
                     args.sideways, args.seed, args.eval_wrong_labels)
  except ValueError as e:
    print(f'error: {e}', file=sys.stderr)
    return 1
  print(f'{os.path.join(args.out, DATA_DIR)}: {len(manifest["copies"])} '
        f'copies, {len(manifest["wrong_labels"])} wrong labels planted; '
        f'{len(manifest["sideways"])} sideways photos in '
        f'{os.path.join(args.out, SIDEWAYS_DIR)}; the list in '
        f'{os.path.join(args.out, MANIFEST)}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
