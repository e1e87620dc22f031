"""The predict tool (`image-pipeline-predict`, `python -m predict`) on a tiny
model trained by the Trainer's run_fn (tests/tiny_models.py) and placed as a
pipeline pushes it."""

import csv
import io
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from components.image_example_gen import idx
from predict import cli
from predict import inputs
from records import csv_cells as records_csv
from records import features
from records import serving_model
from tests import datasets
from tests import local_run
from tests import tiny_models

VERSION = '1700000000'


@pytest.fixture(scope='module')
def served(grey_model, tmp_path_factory):
  """(pipeline output dir, eval images, their classes and names through
  serve_images)."""
  path, written = grey_model  # tests/tiny_models.py: shared, read only.
  out = tmp_path_factory.mktemp('predict') / 'out'
  shutil.copytree(path, out / 'serving_model' / VERSION)
  images, _ = written['t10k']
  answer = tf.saved_model.load(path).signatures[serving_model.IMAGES_SIGNATURE](
      images=tf.constant(images))
  names = [n.decode() for n in answer[serving_model.CLASS_NAMES].numpy()]
  return out, images, answer[serving_model.PROBABILITIES].numpy(), names


def _png(pixels) -> bytes:
  buffer = io.BytesIO()
  Image.fromarray(pixels).save(buffer, 'PNG')
  return buffer.getvalue()


def _write(path, data: bytes):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, 'wb') as f:
    f.write(data)
  return str(path)


def _run(capsys, *argv):
  code = cli.main([str(a) for a in argv])
  captured = capsys.readouterr()
  return code, captured.out, captured.err


def test_files_folders_and_globs_are_predicted_as_serve_images(
    served, tmp_path, capsys):
  out, images, probabilities, names = served
  # Folders nest; a hidden file and a file of another kind are not images.
  folder = [_write(tmp_path / 'a' / f'{i // 5}' / f'{i}.png', _png(images[i]))
            for i in range(12)]
  _write(tmp_path / 'a' / '.hidden.png', _png(images[0]))
  _write(tmp_path / 'a' / 'notes.txt', b'not an image')
  globbed = [_write(tmp_path / 'b' / f'{i}.PNG', _png(images[i]))
             for i in range(12, 15)]
  named = _write(tmp_path / '15.image', _png(images[15]))  # Named: tried.
  table = tmp_path / 'rows.csv'
  code, stdout, stderr = _run(
      capsys, out, tmp_path / 'a', str(tmp_path / 'b' / '*.PNG'), named,
      '-o', table, '--batch-size', '5', '--top-k', '3')
  assert code == 0 and stdout == ''
  with open(table) as f:
    rows = list(csv.DictReader(f))
  assert [r['path'] for r in rows] == sorted(
      folder, key=lambda p: (os.path.dirname(p), os.path.basename(p))
  ) + globbed + [named]
  order = [int(os.path.basename(r['path']).split('.')[0]) for r in rows]
  assert [r['class'] for r in rows] == [names[i] for i in order]
  np.testing.assert_allclose([float(r['probability']) for r in rows],
                             probabilities[order].max(axis=1), atol=1e-5)
  for row, i in zip(rows, order):
    second = np.argsort(-probabilities[i])[1]
    assert float(row['probability_2']) == pytest.approx(
        probabilities[i][second], abs=1e-5)
    assert row['error'] == ''
  assert list(rows[0]) == ['path', 'class', 'probability', 'class_2',
                           'probability_2', 'class_3', 'probability_3',
                           'error']
  assert f'Predicted 16 images in' in stderr
  assert os.path.join('serving_model', VERSION) in stderr


def test_unreadable_files_are_rows_with_errors_and_the_run_goes_on(
    served, tmp_path, capsys):
  out, images, _, names = served
  good = [_write(tmp_path / f'{i}.png', _png(images[i])) for i in range(3)]
  empty = _write(tmp_path / 'empty.png', b'')
  text = _write(tmp_path / 'text.png', b'hello, not a PNG')
  cut = _write(tmp_path / 'cut.png', _png(images[3])[:60])
  webp = io.BytesIO()
  Image.fromarray(images[4]).save(webp, 'WEBP')
  cut_webp = _write(tmp_path / 'cut.webp', webp.getvalue()[:40])
  missing = str(tmp_path / 'missing.png')
  code, stdout, stderr = _run(
      capsys, out, good[0], empty, good[1], text, cut, missing, cut_webp,
      good[2], '--format', 'jsonl', '--batch-size', '4', '--top-k', '50')
  assert code == 0
  rows = [json.loads(line) for line in stdout.splitlines()]
  assert [r['path'] for r in rows] == [good[0], empty, good[1], text, cut,
                                       missing, cut_webp, good[2]]
  errors = {r['path']: r['error'] for r in rows if r['error']}
  assert set(errors) == {empty, text, cut, missing, cut_webp}
  assert 'empty' in errors[empty]
  assert errors[text] == ('not an image file (PNG, JPEG, GIF, BMP, WebP, '
                          'TIFF, HEIF, AVIF)')
  assert 'cannot decode' in errors[cut]
  assert 'cannot decode' in errors[cut_webp]
  assert 'no such file' in errors[missing]
  for row, i in zip((rows[0], rows[2], rows[7]), range(3)):
    assert row['class'] == names[i]
    assert len(row['top_k']) == 10  # --top-k above the classes: all of them.
    assert row['top_k'][0]['class'] == row['class']
  assert 'Predicted 3 images' in stderr
  assert '5 could not be predicted' in stderr
  for path, error in errors.items():
    assert f'  {path}: {error}\n' in stderr


def test_names_a_spreadsheet_would_run_are_marked_as_text(
    served, tmp_path, capsys, monkeypatch):
  # Paths as the user gives them, relative to where the tool runs; the
  # JSON Lines keep them as they are.
  from tests.test_review_lists import formula_cells  # pylint: disable=g-import-not-at-top
  out, images, _, names = served
  monkeypatch.chdir(tmp_path)
  good = ['=HYPERLINK("http:evil","x").png', '+1.png', '@a.png']
  for i, name in enumerate(good):
    _write(tmp_path / name, _png(images[i]))
  bad = _write(tmp_path / '-bad.png', b'junk')
  paths = good + [os.path.basename(bad)]
  table, lines = tmp_path / 'rows.csv', tmp_path / 'rows.jsonl'
  for written in (table, lines):
    code, _, _ = _run(capsys, '-o', written.name, out, '--', *paths)
    assert code == 0
  assert formula_cells(table) == []
  with open(table, newline='') as f:
    rows = list(records_csv.dict_rows(f))
  assert [r['path'] for r in rows] == paths
  assert [r['class'] for r in rows[:3]] == names[:3]
  assert all(0 < float(r['probability']) <= 1 for r in rows[:3])
  assert rows[3]['error'] and rows[3]['class'] == ''
  with open(lines) as f:
    assert [json.loads(line)['path'] for line in f] == paths


def test_nothing_predicted_is_a_failure(served, tmp_path, capsys):
  out = served[0]
  bad = _write(tmp_path / 'bad.png', b'junk')
  code, _, stderr = _run(capsys, out, bad)
  assert code == 1
  assert 'Predicted 0 images' in stderr and bad in stderr


@pytest.mark.parametrize('make', ['missing', 'empty', 'no versions'])
def test_no_model_is_one_line_saying_what_was_expected(tmp_path, make):
  model = tmp_path / 'model'
  if make != 'missing':
    model.mkdir()
  if make == 'no versions':
    (model / 'serving_model' / '3').mkdir(parents=True)  # No saved_model.pb.
  image = _write(tmp_path / 'x.png', _png(np.zeros((28, 28), np.uint8)))
  result = subprocess.run(
      [sys.executable, '-m', 'predict', str(model), image],
      capture_output=True, text=True, cwd=local_run.PROJECT_DIR, timeout=300)
  assert result.returncode == 1
  assert result.stdout == ''
  [line] = result.stderr.splitlines()
  assert line.startswith(f'error: {model}') and 'saved_model.pb' in line
  assert 'serving_model/<version>' in line


def test_a_model_given_as_its_version_or_its_versions_folder(
    served, tmp_path, capsys):
  out, images, _, names = served
  image = _write(tmp_path / 'x.png', _png(images[0]))
  for model in (out / 'serving_model', out / 'serving_model' / VERSION):
    code, stdout, _ = _run(capsys, model, image)
    assert code == 0
    assert next(csv.DictReader(io.StringIO(stdout)))['class'] == names[0]


def test_files_are_read_one_batch_at_a_time(tmp_path):
  paths = [_write(tmp_path / f'{i}.png', b'\x89PNG...') for i in range(10)]
  handed_out = []

  def items():
    for path in paths:
      handed_out.append(path)
      yield inputs.Item(path)

  batches = inputs.batches(items(), 4)
  first = next(batches)
  assert [item.path for item in first] == paths[:4]
  assert handed_out == paths[:4]  # Nothing read ahead of the batch.
  assert [len(b) for b in batches] == [4, 2]


def _write_sides(directory, counts, geometry):
  """MNIST-layout files whose class is the side of a bright band (top,
  right, bottom, left): turned or flipped, an image is of another class."""
  os.makedirs(directory, exist_ok=True)
  written = {}
  for seed, (prefix, count) in enumerate(counts.items()):
    rng = np.random.default_rng(seed)
    labels = (np.arange(count) % 4).astype(np.uint8)
    images = rng.integers(0, 60, (count, geometry.height, geometry.width),
                          dtype=np.uint8)
    for image, label in zip(images, labels):
      np.rot90(image, -int(label))[:geometry.height // 4] += 150  # A view.
    idx.write(os.path.join(directory, f'{prefix}-images-idx3-ubyte.gz'),
              images)
    idx.write(os.path.join(directory, f'{prefix}-labels-idx1-ubyte.gz'),
              labels)
    written[prefix] = (images, labels)
  return written


@pytest.fixture(scope='module')
def sides(tmp_path_factory):
  """(pipeline output dir, eval images, their classes by serve_images) of
  a model that tells which side of an image is bright."""
  tmp = tmp_path_factory.mktemp('sides')
  path, written = tiny_models.train(tmp, features.MNIST_GEOMETRY,
                                    write_dataset=_write_sides)
  out = tmp / 'out'
  shutil.copytree(path, out / 'serving_model' / VERSION)
  images, labels = written['t10k']
  answer = tf.saved_model.load(path).signatures[serving_model.IMAGES_SIGNATURE](
      images=tf.constant(images))
  classes = answer[serving_model.CLASSES].numpy()
  assert (classes == labels).mean() > 0.9  # It learnt the sides.
  names = [n.decode() for n in answer[serving_model.CLASS_NAMES].numpy()]
  return out, images, names


def _encoded(pixels, format_, orientation=None) -> bytes:
  options = {'quality': 100} if format_ == 'JPEG' else {}
  if format_ == 'WEBP':
    options['lossless'] = True
  if orientation is not None:
    exif = Image.Exif()
    exif[0x0112] = orientation
    options['exif'] = exif.tobytes()
  buffer = io.BytesIO()
  Image.fromarray(pixels).save(buffer, format_, **options)
  return buffer.getvalue()


# How a camera stores an upright picture for some orientation tags: the
# pixels turned or flipped so that Pillow's exif_transpose undoes it.
_STORED = {3: lambda p: np.rot90(p, 2), 6: lambda p: np.rot90(p, 1),
           8: lambda p: np.rot90(p, -1), 5: lambda p: p.T,
           2: lambda p: p[:, ::-1]}


def test_a_sideways_photo_gets_the_class_of_its_upright_twin(
    sides, tmp_path, capsys):
  out, images, names = sides
  formats = {'PNG': '.png', 'JPEG': '.jpg', 'WEBP': '.webp', 'TIFF': '.tif'}
  cases = [(f, o) for f in formats for o in _STORED]
  sideways, untagged = [], []
  for i, (format_, orientation) in enumerate(cases):
    stored = np.ascontiguousarray(_STORED[orientation](images[i]))
    sideways.append(_write(tmp_path / 'sideways' / f'{i}{formats[format_]}',
                           _encoded(stored, format_, orientation)))
    untagged.append(_encoded(stored, format_))
  code, stdout, _ = _run(capsys, out, tmp_path / 'sideways', '--format',
                         'jsonl')
  assert code == 0
  rows = [json.loads(line) for line in stdout.splitlines()]
  assert len(rows) == len(cases)
  for row in rows:
    assert row['error'] is None
    assert row['class'] == names[int(os.path.basename(row['path']).split(
        '.')[0])], row['path']
  # Straight to the served model: the PNG and JPEG files as they are.
  serve = tf.saved_model.load(
      os.path.join(out, 'serving_model', VERSION)).signatures[
          serving_model.IMAGE_BYTES_SIGNATURE]
  raw = [i for i, path in enumerate(sideways)
         if path.endswith(('.png', '.jpg'))]
  files = []
  for i in raw:
    with open(sideways[i], 'rb') as f:
      files.append(f.read())
  answer = serve(image_bytes=tf.constant(files))
  assert [n.decode() for n in answer[serving_model.CLASS_NAMES].numpy()] == [
      names[i] for i in raw]
  # The same pixels without the tag: the model sees another side.
  plain = serve(image_bytes=tf.constant([untagged[i] for i in raw]))
  wrong = [n.decode() for n in plain[serving_model.CLASS_NAMES].numpy()] != (
      np.array([names[i] for i in raw]))
  assert wrong.mean() > 0.5


def test_an_iphone_photo_in_heic_gets_the_class_of_its_png_twin(
    sides, tmp_path, capsys):
  out, images, names = sides
  paths = [_write(tmp_path / 'photos' / f'IMG_{i}.HEIC', datasets.heic_file(
      np.repeat(images[i][..., None], 3, axis=-1))) for i in range(4)]
  for path in paths:
    with open(path, 'rb') as f:
      assert inputs.check(f.read()) is None
  code, stdout, _ = _run(capsys, out, tmp_path / 'photos', '--format',
                         'jsonl')
  assert code == 0
  rows = {os.path.basename(r['path']): r
          for r in map(json.loads, stdout.splitlines())}
  assert {name: (row['error'], row['class']) for name, row in rows.items()} == {
      f'IMG_{i}.HEIC': (None, names[i]) for i in range(4)}
