"""The planted-faults tool: copies, wrong labels and sideways photos, and
the manifest that lists them."""

import json

import numpy as np
from PIL import Image, ImageOps

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


def test_cropped_and_shrunk_copies_keep_the_size_and_lose_what_they_should():
  rng = np.random.default_rng(0)
  image = Image.fromarray(
      np.random.default_rng(1).integers(0, 256, (48, 64, 3), np.uint8))
  cut = planted.cropped(image, rng, keep=(0.8, 0.95), resize_back=False)
  assert 0.8 * 64 - 1 <= cut.width <= 0.95 * 64 + 1
  assert 0.8 * 48 - 1 <= cut.height <= 0.95 * 48 + 1
  bordered = planted.cropped(image, rng, border=(1, 3))
  assert bordered.size == image.size
  assert not np.array_equal(np.asarray(bordered), np.asarray(image))
  smaller = planted.shrunk(image, rng, share=(0.5, 0.5))
  assert smaller.size == image.size
  # Saved at half its size, the noise's finest detail is gone.
  assert np.diff(np.asarray(smaller, np.float32), axis=1).std() < 0.8 * np.diff(
      np.asarray(image, np.float32), axis=1).std()
