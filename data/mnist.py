"""Downloading MNIST, with checksum verification.

Each gzip IDX file is checked against its published SHA-256 before it is
moved into place, so the pipeline never reads a partial or tampered one.
"""

import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from typing import Dict, Iterable, List, Optional

# SHA-256 of the original files (LeCun, Cortes, Burges).
SHA256 = {
    'train-images-idx3-ubyte.gz':
        '440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609',
    'train-labels-idx1-ubyte.gz':
        '3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c',
    't10k-images-idx3-ubyte.gz':
        '8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6',
    't10k-labels-idx1-ubyte.gz':
        'f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6',
}

MIRRORS = (
    'https://ossci-datasets.s3.amazonaws.com/mnist/',
    'https://storage.googleapis.com/cvdf-datasets/mnist/',
    'http://yann.lecun.com/exdb/mnist/',
)


class DownloadError(RuntimeError):
  pass


def sha256_of(path: str) -> str:
  digest = hashlib.sha256()
  with open(path, 'rb') as f:
    for block in iter(lambda: f.read(1 << 20), b''):
      digest.update(block)
  return digest.hexdigest()


def missing_files(directory: str,
                  checksums: Optional[Dict[str, str]] = None) -> List[str]:
  """Names of the files that are absent from `directory`."""
  checksums = SHA256 if checksums is None else checksums
  return [name for name in checksums
          if not os.path.exists(os.path.join(directory, name))]


def _fetch(url: str, destination: str, timeout: float) -> None:
  """Copies `url` to `destination`; DownloadError if the server sent fewer
  bytes than it announced (urllib reads a closed connection as the end)."""
  # An opener of its own: urlopen's global one keeps the proxy settings of
  # the first call in the process, and this reads them now.
  opener = urllib.request.build_opener()
  with opener.open(url, timeout=timeout) as response, \
      open(destination, 'wb') as out:
    shutil.copyfileobj(response, out)
    announced = response.headers.get('Content-Length')
    if announced and announced.isdigit() and out.tell() < int(announced):
      raise DownloadError(f'the connection closed after {out.tell():,} of '
                          f'{int(announced):,} bytes')


def download(directory: str,
             mirrors: Iterable[str] = MIRRORS,
             checksums: Optional[Dict[str, str]] = None,
             timeout: float = 60.0,
             log=print) -> List[str]:
  """Downloads the missing files into `directory`, verifying each checksum.

  Files already present are verified too: a corrupt copy is an error to fix
  (delete it), not something to train on. Returns the paths of all files.

  Args:
    directory: where the files go, made if missing.
    mirrors: base URLs, each ending in '/', tried in order for each file.
    checksums: the SHA-256 of each file by name, the files fetched; None:
      MNIST's four.
    timeout: seconds a connection may wait for the server.
    log: prints each URL as its download starts.

  Raises:
    DownloadError: a file present has another checksum, or no mirror gave
      a file with its checksum (the message says where a copy would go).
  """
  checksums = SHA256 if checksums is None else checksums
  mirrors = list(mirrors)
  os.makedirs(directory, exist_ok=True)
  paths = []
  for name, expected in checksums.items():
    path = os.path.join(directory, name)
    paths.append(path)
    if os.path.exists(path):
      actual = sha256_of(path)
      if actual != expected:
        raise DownloadError(
            f'{path}: SHA-256 is {actual}, expected {expected}; delete the '
            'file to download it again')
      continue
    errors = []
    for mirror in mirrors:
      url = mirror + name
      fd, partial = tempfile.mkstemp(prefix=name + '.', suffix='.part',
                                     dir=directory)
      os.close(fd)
      try:
        log(f'Downloading {url}')
        _fetch(url, partial, timeout)
        actual = sha256_of(partial)
        if actual != expected:
          raise DownloadError(f'SHA-256 is {actual}, expected {expected}')
        os.replace(partial, path)
        break
      except (urllib.error.URLError, OSError, DownloadError) as e:
        errors.append(f'{url}: {e}')
      finally:
        if os.path.exists(partial):
          os.remove(partial)
    else:
      raise DownloadError(
          f'could not download {name}:\n  ' + '\n  '.join(errors) +
          f'\nWithout a network, copy the missing files into {directory}, '
          'where each is checked against its SHA-256:\n  ' + '\n  '.join(
              f'{missing} {checksums[missing]}'
              for missing in missing_files(directory, checksums)))
  return paths
