"""The planted-faults tool: copies (cropped and shrunk too, of photos and
of small images), wrong labels and sideways photos, and the manifest that
lists them."""

import json

import numpy as np
from PIL import Image, ImageOps
import pytest

from data import photos
from data import planted
from data import shapes


def _pixels(path):
  with Image.open(path) as image:
    return np.asarray(ImageOps.exif_transpose(image).convert('RGB'), np.int16)


def test_plants_what_its_manifest_lists(tmp_path):
  shapes.write(str(tmp_path / 'src'), per_class=6, size=32, eval_per_class=4)
  root = tmp_path / 'planted'
  assert planted.main(['--source', str(tmp_path / 'src'), '--out', str(root),
                       '--copies', '6', '--wrong-labels', '4',
                       '--sideways', '3']) == 0
  manifest = json.loads((root / planted.MANIFEST).read_text())
  data = root / planted.DATA_DIR

  kinds = [c['kind'] for c in manifest['copies']]
  assert sorted(kinds) == sorted(planted.COPY_KINDS * 2)
  for copy in manifest['copies']:
    original, duplicate = data / copy['train'], data / copy['eval']
    assert copy['eval'].startswith('eval/') and original.exists()
    # Same class folder; the same picture, within what re-encoding does.
    assert original.parent.name == duplicate.parent.name
    if copy['kind'] == 'exact':
      assert original.read_bytes() == duplicate.read_bytes()
    else:
      assert original.read_bytes() != duplicate.read_bytes()
      difference = np.abs(_pixels(original) - _pixels(duplicate)).mean()
      assert 0 < difference < 40, copy

  wrong = manifest['wrong_labels']
  assert sorted(w['path'].split('/')[0] for w in wrong) == [
      'eval', 'eval', 'train', 'train']
  for label in wrong:
    assert (data / label['path']).parent.name == label['given_class']
    assert label['given_class'] != label['true_class']
  assert len(list(data.rglob('*.*'))) == 10 * (6 + 4) + 6  # Moved, not added.

  for photo in manifest['sideways']:
    with Image.open(root / photo['sideways']) as image:
      assert image.getexif()[0x0112] == 6
      as_stored = np.asarray(image.convert('RGB'), np.int16)
    upright = _pixels(root / photo['upright'])
    # Stored turned; upright once its orientation is applied.
    assert np.abs(as_stored - upright).mean() > 10
    assert np.abs(_pixels(root / photo['sideways']) - upright).mean() < 4


def test_refuses_an_existing_folder_and_a_small_source(tmp_path, capsys):
  shapes.write(str(tmp_path / 'src'), per_class=2, size=16, eval_per_class=1)
  (tmp_path / 'taken').mkdir()
  assert planted.main(['--source', str(tmp_path / 'src'),
                       '--out', str(tmp_path / 'taken')]) == 1
  assert 'exists' in capsys.readouterr().err
  assert planted.main(['--source', str(tmp_path / 'src'),
                       '--out', str(tmp_path / 'new'), '--copies', '100']) == 1
  assert 'too small' in capsys.readouterr().err


def test_plants_crops_and_shrinks_of_photos_and_small_images(tmp_path):
  photos.write(str(tmp_path / 'photos'), per_class=2, eval_per_class=1)
  shapes.write(str(tmp_path / 'small'), per_class=2, size=28,
               eval_per_class=1)
  sizes = {}
  for name in ('photos', 'small'):
    manifest = planted.plant(str(tmp_path / name), str(tmp_path / f'p-{name}'),
                             5, 0, 0, copy_kinds=planted.ALL_COPY_KINDS)
    assert [c['kind'] for c in manifest['copies']] == list(
        planted.ALL_COPY_KINDS)
    for copy in manifest['copies']:
      with Image.open(tmp_path / f'p-{name}' / 'data' / copy['eval']) as image:
        sizes[name, copy['kind']] = image.size
  # A photo is cut to 80-90% of its frame, or halved; a small image keeps
  # its size (cut by a border and resized back, or shrunk and enlarged).
  width, height = sizes['photos', 'crop']
  assert 0.8 * 640 <= width <= 0.9 * 640 and abs(width / height - 4 / 3) < 0.01
  assert sizes['photos', 'shrink'] == (320, 240)
  assert sizes['small', 'crop'] == sizes['small', 'shrink'] == (28, 28)
  with pytest.raises(ValueError, match='copy kinds'):
    planted.plant(str(tmp_path / 'small'), str(tmp_path / 'p-bad'), 1, 0, 0,
                  copy_kinds=('rotated',))
