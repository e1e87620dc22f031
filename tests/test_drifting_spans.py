"""The drifting spans tool: layout, the drift its manifest lists and the
images show, and determinism."""

import hashlib
import json

import numpy as np
from PIL import Image

from data import drifting_spans
from data import shapes

SPANS = 6
ARGS = ['--spans', str(SPANS), '--per-span', '30', '--eval-per-span', '6',
        '--classes', '3', '--size', '16']
CLASSES = sorted(shapes.SHAPES)[:3]


def _digest(directory):
  return {str(p.relative_to(directory)):
          hashlib.sha256(p.read_bytes()).hexdigest()
          for p in sorted(directory.rglob('*')) if p.is_file()}


def _pixels(span_dir):
  return [np.asarray(Image.open(p), np.float32)
          for p in sorted(span_dir.rglob('*.png'))]


def test_spans_drift_in_balance_and_style(tmp_path):
  out = tmp_path / 'spans'
  assert drifting_spans.main([str(out), *ARGS]) == 0
  manifest = json.loads((out / drifting_spans.MANIFEST).read_text())
  assert [s['span'] for s in manifest['spans']] == list(range(1, SPANS + 1))

  # Each span a folder of images as --span-dir-pattern 'span-{SPAN}' reads
  # it, every class in every split, as many images as the manifest says.
  for entry in manifest['spans']:
    span_dir = out / f'span-{entry["span"]}'
    for split in ('train', 'eval'):
      assert sorted(p.name for p in (span_dir / split).iterdir()) == CLASSES
      for name, count in entry[split].items():
        assert count >= 1
        assert len(list((span_dir / split / name).glob('*.png'))) == count
    assert sum(entry['train'].values()) == 30
    assert sum(entry['eval'].values()) == 6

  # The balance drifts a little each span: the first class's share falls,
  # the last's rises.
  first = [s['train'][CLASSES[0]] for s in manifest['spans']]
  last = [s['train'][CLASSES[-1]] for s in manifest['spans']]
  assert first[0] == last[0] == 10
  assert first == sorted(first, reverse=True) and first[-1] < 6
  assert last == sorted(last) and last[-1] > 14

  # The style drifts, and the images show it: noisier, warmer, darker.
  styles = [s['style'] for s in manifest['spans']]
  assert [s['noise'] for s in styles] == sorted(s['noise'] for s in styles)
  early, late = _pixels(out / 'span-1'), _pixels(out / f'span-{SPANS}')

  def roughness(images):  # Neighbouring pixels' mean difference.
    return np.mean([np.abs(np.diff(i, axis=1)).mean() for i in images])

  def warmth(images):  # Red minus blue.
    return np.mean([(i[..., 0] - i[..., 2]).mean() for i in images])

  assert roughness(late) > 1.5 * roughness(early)
  assert warmth(late) > warmth(early) + 30
  assert np.mean(late) < np.mean(early)


def test_same_arguments_same_bytes_and_no_drift_when_asked(tmp_path, capsys):
  assert drifting_spans.main([str(tmp_path / 'a'), *ARGS]) == 0
  assert drifting_spans.main([str(tmp_path / 'b'), *ARGS]) == 0
  assert _digest(tmp_path / 'a') == _digest(tmp_path / 'b')

  assert drifting_spans.main([str(tmp_path / 'c'), *ARGS, '--drift', '0',
                              '--spans', '2']) == 0
  manifest = json.loads((tmp_path / 'c' / drifting_spans.MANIFEST).read_text())
  first, second = manifest['spans']
  assert first['train'] == second['train'] and first['style'] == second[
      'style']

  # Spans are never written over.
  assert drifting_spans.main([str(tmp_path / 'a'), *ARGS]) == 1
  assert 'span-1 exists' in capsys.readouterr().err
