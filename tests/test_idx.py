"""IDX reading: plain and gzipped files, and every way such a file goes bad."""

import gzip
import os

import numpy as np
import pytest

from components.image_example_gen import idx
from components.image_example_gen.errors import InputDataError
from tests import datasets


@pytest.fixture
def images(tmp_path):
  return datasets.images_and_labels(12)[0]


@pytest.mark.parametrize('compress', [True, False])
def test_round_trip(tmp_path, images, compress):
  path = str(tmp_path / 'train-images-idx3-ubyte')
  idx.write(path, images, compress=compress)
  header = idx.validate(path)
  assert header.shape == (12, 28, 28)
  assert header.gzipped == compress
  assert header.dtype == np.uint8
  np.testing.assert_array_equal(idx.read_all(header), images)
  np.testing.assert_array_equal(idx.ItemReader(header).read(5, 9),
                                images[5:9])


def test_multibyte_labels_are_big_endian(tmp_path):
  labels = np.array([1, 300, 70000], dtype=np.int32)
  path = str(tmp_path / 'labels')
  idx.write(path, labels)
  with gzip.open(path) as f:
    assert f.read(4) == b'\x00\x00\x0c\x01'
  np.testing.assert_array_equal(idx.read_all(idx.validate(path)), labels)


def test_truncated_gzip_names_the_file(tmp_path, images):
  path = str(tmp_path / 'train-images-idx3-ubyte.gz')
  idx.write(path, images)
  data = open(path, 'rb').read()
  open(path, 'wb').write(data[:len(data) // 2])
  with pytest.raises(InputDataError, match='train-images-idx3-ubyte.gz: .*truncated'):
    idx.validate(path)


def test_short_uncompressed_file(tmp_path, images):
  path = str(tmp_path / 'imgs')
  idx.write(path, images, compress=False)
  data = open(path, 'rb').read()
  open(path, 'wb').write(data[:-100])
  with pytest.raises(InputDataError, match=r'imgs: file ends 100 bytes early'):
    idx.validate(path)


def test_trailing_data(tmp_path, images):
  path = str(tmp_path / 'imgs')
  idx.write(path, images, compress=False)
  with open(path, 'ab') as f:
    f.write(b'extra')
  with pytest.raises(InputDataError, match='imgs: file has data beyond'):
    idx.validate(path)


def test_wrong_magic(tmp_path):
  path = str(tmp_path / 'not-idx.gz')
  with gzip.open(path, 'wb') as f:
    f.write(b'\x89PNG\r\n\x1a\n' + bytes(100))
  with pytest.raises(InputDataError, match=r'not-idx.gz: not an IDX file: bad magic number 0x89504e47'):
    idx.validate(path)


def test_not_gzip_and_not_idx(tmp_path):
  path = str(tmp_path / 'train-images-idx3-ubyte.gz')
  open(path, 'wb').write(b'hello, this is plain text and no IDX file')
  with pytest.raises(InputDataError, match='not an IDX file'):
    idx.validate(path)


def test_corrupt_gzip_stream(tmp_path, images):
  path = str(tmp_path / 'corrupt.gz')
  idx.write(path, images)
  data = bytearray(open(path, 'rb').read())
  data[40:60] = bytes(20)
  open(path, 'wb').write(bytes(data))
  with pytest.raises(InputDataError, match='corrupt.gz: corrupt or truncated gzip'):
    idx.validate(path)


def test_missing_file(tmp_path):
  with pytest.raises(InputDataError, match='nope: cannot read file'):
    idx.validate(str(tmp_path / 'nope'))


def test_error_survives_pickling():
  import pickle
  error = pickle.loads(pickle.dumps(InputDataError('/a/b', 'bad')))
  assert (error.path, error.problem, str(error)) == ('/a/b', 'bad', '/a/b: bad')


def test_empty_file(tmp_path):
  path = str(tmp_path / 'empty')
  open(path, 'wb').close()
  with pytest.raises(InputDataError, match='empty: file ends after 0 of the 4 bytes'):
    idx.read_header(path)
  assert os.path.exists(path)
