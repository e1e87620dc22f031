"""The copies section: DataChecks on copies planted in MNIST and in photos,
and on Fashion-MNIST as Debian ships it.

Pairs found are scored against what was planted (data/planted.py,
data/photos.py); a pair not planted between two originals is a false pair.
"""

import collections
import io
import os
import time
from typing import Any, Dict, List, Tuple

import numpy as np
from PIL import Image, ImageEnhance

from benchmarks import harness
from components.image_example_gen import idx
from components.image_example_gen.options import ImageExampleGenOptions
from data import photos
from data import planted
from records import data_check_results as results
from tests import artifacts
from tests import test_data_checks

# Photos people took, as Debian ships them: apt-get install mate-backgrounds
# ukui-wallpapers lomiri-wallpapers.
WALLPAPER_DIR = '/usr/share/backgrounds'
WALLPAPER_PACKAGES = 'mate-backgrounds ukui-wallpapers lomiri-wallpapers'
DIGIT_KINDS = ('exact', 'jpeg', 'brightened', 'noisy', 'cropped', 'shrunk')
PHOTO_KINDS = ('cropped', 'half size')
# Cropped digits: a border of this many pixels cut from each side.
DIGIT_BORDER = (1, 3)
# Copies per kind; photos per class in train and in eval.
FULL = dict(digits=200, photos=30, per_class=60)
QUICK = dict(digits=10, photos=5, per_class=8)


def _digit_copy(image: np.ndarray, kind: str, rng) -> np.ndarray:
  picture = Image.fromarray(image)
  if kind == 'exact':
    return image.copy()
  if kind == 'jpeg':
    buffer = io.BytesIO()
    picture.save(buffer, 'JPEG', quality=planted.JPEG_QUALITY)
    return np.asarray(Image.open(buffer))
  if kind == 'brightened':
    return np.asarray(ImageEnhance.Brightness(picture).enhance(
        planted.BRIGHTEN))
  if kind == 'noisy':
    return np.clip(image + rng.normal(0, 6, image.shape), 0, 255).astype(
        np.uint8)
  if kind == 'cropped':
    return np.asarray(planted.cropped(picture, rng, border=DIGIT_BORDER))
  return np.asarray(planted.shrunk(picture, rng))


def _check(data_dir: str, work: str, options
           ) -> Tuple[List[Dict[str, str]], float]:
  """(the rows of copies.csv, DataChecks' seconds) of ImageExampleGen's
  Examples of `data_dir`."""
  examples = artifacts.run_example_gen(data_dir, os.path.join(work, 'examples'),
                                       options)
  start = time.monotonic()
  output = test_data_checks.run_data_checks(examples, os.path.join(work,
                                                                   'checks'))
  seconds = time.monotonic() - start
  return list(results.read_pairs(output.uri)), seconds


def _index(source: str) -> int:
  return int(source.rsplit(':', 1)[1])


def digits(ctx: harness.Context, per_kind: int) -> Dict[str, Any]:
  """MNIST with `per_kind` copies of each kind planted in eval."""
  rng = np.random.default_rng(0)
  (train, train_labels), (test, test_labels) = (
      harness.load_split(ctx.data_dir, prefix) for prefix in ('train', 't10k'))
  test, test_labels = test.copy(), test_labels.copy()
  sources = rng.choice(len(train), per_kind * len(DIGIT_KINDS), replace=False)
  planted_at = {}  # eval index: (train index, kind)
  for number, source in enumerate(sources):
    kind = DIGIT_KINDS[number // per_kind]
    test[number] = _digit_copy(train[source], kind, rng)
    test_labels[number] = train_labels[source]
    planted_at[number] = (int(source), kind)
  data = ctx.path('copies-mnist')
  os.makedirs(data, exist_ok=True)
  for prefix, images, labels in (('train', train, train_labels),
                                 ('t10k', test, test_labels)):
    idx.write(os.path.join(data, f'{prefix}-images-idx3-ubyte.gz'), images)
    idx.write(os.path.join(data, f'{prefix}-labels-idx1-ubyte.gz'), labels)
  rows, seconds = _check(data, ctx.path('copies-mnist-work'),
                         ImageExampleGenOptions(input_format='idx',
                                                num_shards=16))
  found = {kind: 0 for kind in DIGIT_KINDS}
  false_pairs = other = 0
  for row in rows:
    a, b = (_index(row[f'source_{side}']) for side in 'ab')
    crossing = (row['split_a'], row['split_b']) == ('train', 'eval')
    if crossing and planted_at.get(b, (None,))[0] == a:
      found[planted_at[b][1]] += 1
    elif not ((row['split_a'] == 'eval' and a in planted_at) or
              (row['split_b'] == 'eval' and b in planted_at)):
      false_pairs += 1
    else:
      other += 1
  return dict(per_kind=per_kind, found=found, seconds=seconds,
              false_pairs=false_pairs, other=other,
              images=len(train) + len(test), kinds=_kinds(rows))


def _kinds(rows: List[Dict[str, str]]) -> Dict[str, int]:
  return dict(collections.Counter(row['kind'] for row in rows))


def photo_folder(ctx: harness.Context, per_kind: int, per_class: int
                 ) -> Dict[str, Any]:
  """A photo folder with cropped and half-size copies of train in eval."""
  rng = np.random.default_rng(1)
  root = ctx.path('copies-photos')
  for split, seed in (('train', 0), ('eval', 1)):
    photos.write(os.path.join(root, split), per_class, seed=seed)
  train = sorted(os.path.join(c, f) for c in photos.CLASSES
                 for f in os.listdir(os.path.join(root, 'train', c)))
  picks = rng.choice(len(train), per_kind * len(PHOTO_KINDS), replace=False)
  planted_as: Dict[str, Tuple[str, str]] = {}
  for number, pick in enumerate(picks):
    kind = PHOTO_KINDS[number // per_kind]
    source = train[pick]
    with Image.open(os.path.join(root, 'train', source)) as image:
      image = image.convert('RGB')
      copy = (planted.cropped(image, rng, resize_back=False)
              if kind == 'cropped' else
              image.resize((image.width // 2, image.height // 2),
                           Image.Resampling.BILINEAR))
    target = os.path.join(os.path.dirname(source), f'copy-{number:03d}.jpg')
    copy.save(os.path.join(root, 'eval', target), quality=90)
    planted_as['eval/' + target] = ('train/' + source, kind)
  # The geometry a default run chooses: from the images' headers.
  rows, seconds = _check(root, ctx.path('copies-photos-work'),
                         ImageExampleGenOptions(input_format='images',
                                                num_shards=2, infer_size=True,
                                                infer_channels=True))
  found = {kind: 0 for kind in PHOTO_KINDS}
  false_pairs = 0
  for row in rows:
    wanted = planted_as.get(row['source_b'])
    if wanted and wanted[0] == row['source_a']:
      found[wanted[1]] += 1
    elif not (row['source_a'] in planted_as or row['source_b'] in planted_as):
      false_pairs += 1
  return dict(per_kind=per_kind, found=found, seconds=seconds,
              false_pairs=false_pairs, images=2 * per_class * len(
                  photos.CLASSES) + len(picks), kinds=_kinds(rows))


def wallpapers(ctx: harness.Context) -> Any:
  """Debian's wallpapers (photos and artwork) in train, a crop of each in
  eval: the pairs found, against what was planted."""
  found = sorted(os.path.join(folder, name)
                 for folder, _, names in os.walk(WALLPAPER_DIR)
                 for name in names if name.lower().endswith(('.jpg', '.png')))
  if len(found) < 10:
    return f'{WALLPAPER_DIR} holds too few images (apt-get install ' \
        f'{WALLPAPER_PACKAGES})'
  rng = np.random.default_rng(2)
  root = ctx.path('copies-wallpapers')
  planted_as: Dict[str, str] = {}
  for number, path in enumerate(found):
    # A class per folder: mate/nature, mate/abstract, ...
    label = os.path.relpath(os.path.dirname(path), WALLPAPER_DIR).replace(
        os.sep, '-').strip('.') or 'top'
    name = f'{label}/{number:03d}.png'
    with Image.open(path) as image:
      image = image.convert('RGB')
      for split, picture in (('train', image),
                             ('eval', planted.cropped(image, rng,
                                                      resize_back=False))):
        os.makedirs(os.path.join(root, split, label), exist_ok=True)
        picture.save(os.path.join(root, split, name))
    planted_as['eval/' + name] = 'train/' + name
  rows, seconds = _check(root, ctx.path('copies-wallpapers-work'),
                         ImageExampleGenOptions(input_format='images',
                                                num_shards=2, infer_size=True,
                                                infer_channels=True))
  # The packages hold the same picture more than once (sizes, edits):
  # pairs within train join such families, and a crop paired with another
  # of its original's family is no false pair.
  family = {source: source for source in planted_as.values()}

  def root_of(source):
    while family[source] != source:
      source = family[source]
    return source

  for row in rows:
    if row['split_a'] == row['split_b'] == 'train':
      family[root_of(row['source_a'])] = root_of(row['source_b'])
  hits, false_pairs = set(), []
  for row in rows:
    if row['split_a'] == row['split_b']:
      continue
    original, copy = ((row['source_a'], row['source_b'])
                      if row['split_a'] == 'train' else
                      (row['source_b'], row['source_a']))
    if root_of(planted_as.get(copy, copy)) == root_of(original):
      hits.add(copy)
    else:
      false_pairs.append((row['source_a'], row['source_b'], row['kind']))
  return dict(images=len(found), found=len(hits), seconds=seconds,
              false_pairs=false_pairs, kinds=_kinds(rows),
              within=sum(row['split_a'] == row['split_b'] for row in rows))


def fashion(ctx: harness.Context) -> Any:
  """Fashion-MNIST as shipped: the pairs DataChecks lists, by kind."""
  if not os.path.isdir(harness.FASHION_MNIST_DIR):
    return (f'{harness.FASHION_MNIST_DIR} is missing '
            '(apt-get install dataset-fashion-mnist)')
  data = harness.FASHION_MNIST_DIR
  if ctx.quick:
    data = ctx.path('copies-fashion-subset')
    harness.write_subset(harness.FASHION_MNIST_DIR, data, 0.05)
  rows, seconds = _check(data, ctx.path('copies-fashion-work'),
                         ImageExampleGenOptions(input_format='idx',
                                                num_shards=16))
  return dict(seconds=seconds, kinds=_kinds(rows), pairs=len(rows),
              rescaled=[(r['source_a'], r['source_b'], r['max_difference'])
                        for r in rows if r['kind'] == 'rescaled'][:12])


def measure(ctx: harness.Context) -> Dict[str, Any]:
  """Planted digits, planted photos, then Fashion-MNIST."""
  sizes = ctx.pick(FULL, QUICK)
  load_before = os.getloadavg()[0]
  print('  copies: MNIST with planted copies', flush=True)
  measured = {'digits': digits(ctx, sizes['digits'])}
  print('  copies: a photo folder with planted copies', flush=True)
  measured['photos'] = photo_folder(ctx, sizes['photos'], sizes['per_class'])
  print('  copies: Debian\'s wallpapers with crops planted', flush=True)
  measured['wallpapers'] = wallpapers(ctx)
  print('  copies: Fashion-MNIST', flush=True)
  measured['fashion'] = fashion(ctx)
  measured['load'] = (load_before, os.getloadavg()[0])
  return measured


SECTION = harness.Section(
    heading='## Copies: planted in MNIST and in photos, and in Fashion-MNIST',
    measure=measure, template='copies.md.j2')
