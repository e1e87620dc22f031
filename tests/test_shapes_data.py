"""The shapes dataset generator: layout, size, colour and determinism."""

import hashlib

import numpy as np
from PIL import Image

from data import shapes


def _digest(directory):
  return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
          for p in sorted(directory.rglob('*.png'))}


def test_layout_size_and_determinism(tmp_path):
  assert shapes.main(['--out', str(tmp_path / 'a'), '--per-class', '2',
                      '--eval-per-class', '1', '--size', '40']) == 0
  files = _digest(tmp_path / 'a')
  assert len(files) == 3 * len(shapes.SHAPES)
  assert {f.split('/')[1] for f in files} == set(shapes.SHAPES)
  assert sorted({f.split('/')[0] for f in files}) == ['eval', 'train']
  with Image.open(tmp_path / 'a' / 'train' / 'star' / '00001.png') as image:
    assert image.size == (40, 40) and image.mode == 'RGB'
    pixels = np.asarray(image)
  assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 100  # Varied colour.
  # The same seed writes the same bytes; another seed other images.
  shapes.main(['--out', str(tmp_path / 'b'), '--per-class', '2',
               '--eval-per-class', '1', '--size', '40'])
  assert _digest(tmp_path / 'b') == files
  shapes.main(['--out', str(tmp_path / 'c'), '--per-class', '2',
               '--eval-per-class', '1', '--size', '40', '--seed', '1'])
  assert not set(_digest(tmp_path / 'c').values()) & set(files.values())
