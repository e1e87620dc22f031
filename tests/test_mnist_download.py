"""MNIST download with checksum verification, against local mirrors: a
folder through file:// URLs, and files the tests write served over HTTP on
loopback (the path a real download takes)."""

import functools
import hashlib
import http.server
import os
import threading
import urllib.request

import pytest

from data import mnist
from tests import ports


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


def test_without_a_network_a_copy_put_where_the_error_says_is_used(
    tmp_path, mirror):
  root, checksums = mirror
  dest = tmp_path / 'dest'
  unreachable = f'http://127.0.0.1:{ports.free_port()}/'
  with pytest.raises(mnist.DownloadError) as error:
    mnist.download(str(dest), [unreachable], checksums, timeout=10,
                   log=lambda _: None)
  # The message names the folder, and each missing file with its checksum.
  advice = error.value.args[0].split('copy the missing files into ')[1]
  where, listed = advice.split(
      ', where each is checked against its SHA-256:\n  ')
  assert where == str(dest)
  assert listed.split('\n  ') == [f'{n} {s}' for n, s in checksums.items()]
  # Copied there from elsewhere, they are checked and used: nothing is
  # fetched.
  for each in checksums:
    (dest / each).write_bytes((root / each).read_bytes())
  fetched = []
  paths = mnist.download(str(dest), [unreachable], checksums, timeout=10,
                         log=fetched.append)
  assert paths == [str(dest / each) for each in checksums]
  assert fetched == []


def test_corrupt_existing_file_is_an_error(tmp_path, mirror):
  root, checksums = mirror
  dest = tmp_path / 'dest'
  dest.mkdir()
  (dest / 'train-images-idx3-ubyte.gz').write_bytes(b'partial')
  with pytest.raises(mnist.DownloadError, match='train-images-idx3-ubyte.gz: SHA-256 is'):
    mnist.download(str(dest), [f'file://{root}/'], checksums, log=lambda _: None)


class _Handler(http.server.SimpleHTTPRequestHandler):
  """Serves the mirror folder; under /cut/, each file's first half only,
  after promising all of it (a connection lost mid-file)."""

  def do_GET(self):  # pylint: disable=invalid-name
    if not self.path.startswith('/cut/'):
      super().do_GET()
      return
    with open(self.translate_path(self.path[len('/cut'):]), 'rb') as f:
      payload = f.read()
    self.send_response(200)
    self.send_header('Content-Length', str(len(payload)))
    self.end_headers()
    self.wfile.write(payload[:len(payload) // 2])
    self.close_connection = True

  def log_message(self, *args):  # pylint: disable=arguments-differ
    pass


@pytest.fixture
def http_mirror(mirror):
  """The mirror folder served over HTTP on loopback: (URL, checksums)."""
  root, checksums = mirror
  server = http.server.ThreadingHTTPServer(
      ('127.0.0.1', 0), functools.partial(_Handler, directory=str(root)))
  thread = threading.Thread(target=server.serve_forever, args=(0.05,),
                            daemon=True)
  thread.start()
  try:
    yield f'http://127.0.0.1:{server.server_address[1]}/', checksums
  finally:
    server.shutdown()
    server.server_close()
    thread.join()


def _left_in(directory) -> list:
  return sorted(os.listdir(directory)) if os.path.isdir(directory) else []


def test_downloads_over_http_past_a_mirror_that_refuses(tmp_path, mirror,
                                                        http_mirror):
  root, _ = mirror
  url, checksums = http_mirror
  dest = tmp_path / 'dest'
  refused = f'http://127.0.0.1:{ports.free_port()}/'
  paths = mnist.download(str(dest), [refused, url], checksums,
                         timeout=10, log=lambda _: None)
  for path, name in zip(paths, checksums):
    assert open(path, 'rb').read() == (root / name).read_bytes()
  assert _left_in(dest) == sorted(checksums)  # No partial file left.


def test_a_corrupted_file_over_http_is_refused_and_not_kept(tmp_path, mirror,
                                                             http_mirror):
  root, _ = mirror
  url, checksums = http_mirror
  name = 't10k-labels-idx1-ubyte.gz'
  corrupted = bytearray((root / name).read_bytes())
  corrupted[10] ^= 0xFF  # One flipped byte.
  (root / name).write_bytes(bytes(corrupted))
  dest = tmp_path / 'dest'
  with pytest.raises(mnist.DownloadError) as error:
    mnist.download(str(dest), [url], checksums, timeout=10, log=lambda _: None)
  assert str(error.value) == (
      f'could not download {name}:\n  {url}{name}: SHA-256 is '
      f'{hashlib.sha256(corrupted).hexdigest()}, expected {checksums[name]}\n'
      f'Without a network, copy the missing files into {dest}, where each is '
      f'checked against its SHA-256:\n  {name} {checksums[name]}')
  # The good file stays; of the corrupted one, not a byte.
  assert _left_in(dest) == ['train-images-idx3-ubyte.gz']


def test_a_transfer_cut_short_is_refused_and_the_next_mirror_tried(
    tmp_path, mirror, http_mirror):
  root, _ = mirror
  url, checksums = http_mirror
  dest = tmp_path / 'dest'
  with pytest.raises(mnist.DownloadError,
                     match=r'could not download train-images-idx3-ubyte.gz:'
                     r'\n  http://\S+/cut/train-images-idx3-ubyte.gz: '
                     r'the connection closed after 1,300 of 2,600 bytes\n'
                     r'Without a network, copy the missing files into \S+, '
                     r'where each is checked against its SHA-256:'
                     r'(\n  \S+ [0-9a-f]{64}){2}$'):
    mnist.download(str(dest), [url + 'cut/'], checksums, timeout=10,
                   log=lambda _: None)
  assert _left_in(dest) == []
  paths = mnist.download(str(dest), [url + 'cut/', url], checksums,
                         timeout=10, log=lambda _: None)
  for path, name in zip(paths, checksums):
    assert open(path, 'rb').read() == (root / name).read_bytes()


def test_downloads_are_checked_against_the_published_checksums(
    tmp_path, http_mirror):
  """Without checksums of its own, download checks the published ones: a
  file that is not MNIST's, under MNIST's name, is refused."""
  url, _ = http_mirror
  name = 'train-images-idx3-ubyte.gz'
  assert list(mnist.SHA256)[0] == name
  dest = tmp_path / 'dest'
  with pytest.raises(mnist.DownloadError,
                     match=f'could not download {name}:\n  {url}{name}: '
                     f'SHA-256 is [0-9a-f]{{64}}, expected {mnist.SHA256[name]}'):
    mnist.download(str(dest), [url], timeout=10, log=lambda _: None)
  assert _left_in(dest) == []


def test_proxy_settings_are_read_at_each_download(tmp_path, http_mirror,
                                                  monkeypatch):
  # urllib's global opener keeps the proxy of its first use in a process:
  # a download after a proxy went away must not go through it.
  url, checksums = http_mirror
  # No global opener yet, whatever other tests of this process used: the
  # first use below makes one with the proxy, kept after it went away.
  monkeypatch.setattr(urllib.request, '_opener', None)
  with monkeypatch.context() as env:
    env.setenv('http_proxy', f'http://127.0.0.1:{ports.free_port()}')
    env.setenv('no_proxy', '')
    with pytest.raises(OSError):
      urllib.request.urlopen(url, timeout=10)
  paths = mnist.download(str(tmp_path / 'dest'), [url], checksums,
                         timeout=10, log=lambda _: None)
  assert len(paths) == len(checksums)
