"""MNIST download with checksum verification, against a local mirror."""

import hashlib

import pytest

from data import mnist


@pytest.fixture
def mirror(tmp_path):
  """A directory served through file:// URLs, with its checksums."""
  root = tmp_path / 'mirror'
  root.mkdir()
  checksums = {}
  for name in ('train-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz'):
    payload = name.encode() * 100
    (root / name).write_bytes(payload)
    checksums[name] = hashlib.sha256(payload).hexdigest()
  return root, checksums


def test_downloads_missing_files_from_first_working_mirror(tmp_path, mirror):
  root, checksums = mirror
  dest = tmp_path / 'dest'
  mirrors = [f'file://{tmp_path}/no-such-mirror/', f'file://{root}/']
  assert mnist.missing_files(str(dest), checksums) == list(checksums)
  paths = mnist.download(str(dest), mirrors, checksums, log=lambda _: None)
  assert mnist.missing_files(str(dest), checksums) == []
  for path, name in zip(paths, checksums):
    assert open(path, 'rb').read() == (root / name).read_bytes()


def test_checksum_mismatch_leaves_nothing_behind(tmp_path, mirror):
  root, checksums = mirror
  checksums['t10k-labels-idx1-ubyte.gz'] = '0' * 64
  dest = tmp_path / 'dest'
  with pytest.raises(mnist.DownloadError,
                     match=r'could not download t10k-labels-idx1-ubyte.gz:\n.*SHA-256 is [0-9a-f]{64}, expected 0{64}'):
    mnist.download(str(dest), [f'file://{root}/'], checksums, log=lambda _: None)
  assert sorted(p.name for p in dest.iterdir()) == ['train-images-idx3-ubyte.gz']


def test_corrupt_existing_file_is_an_error(tmp_path, mirror):
  root, checksums = mirror
  dest = tmp_path / 'dest'
  dest.mkdir()
  (dest / 'train-images-idx3-ubyte.gz').write_bytes(b'partial')
  with pytest.raises(mnist.DownloadError, match='train-images-idx3-ubyte.gz: SHA-256 is'):
    mnist.download(str(dest), [f'file://{root}/'], checksums, log=lambda _: None)


def test_published_checksums_match_the_reference_copy():
  import os
  reference = os.path.join(os.path.dirname(__file__), '..', '..', 'shared',
                           'data', 'mnist')
  if not os.path.isdir(reference):
    pytest.skip('no reference MNIST copy beside the checkout')
  for name, expected in mnist.SHA256.items():
    assert mnist.sha256_of(os.path.join(reference, name)) == expected
