"""MNIST's test labels that people confirmed wrong, as published.

The list of cleanlab/label-errors (Northcutt, Athalye and Mueller, NeurIPS
2021), downloaded with its SHA-256 checked.
"""

import json
import os
from typing import Dict, List

from data import mnist

FILE = 'mnist_mturk.json'
# The file at the commit that added it.
URL = ('https://raw.githubusercontent.com/cleanlab/label-errors/'
       '5457895eee26e49187de5c4d6617b9de6f172221/mturk/')
SHA256 = {FILE: '448bd00fc9df262c68d50d48709d7fa3d5dc966bc66580e5df20e0dcba6e5612'}
WORKERS = 5


def confirmed(entries: List[Dict]) -> Dict[int, int]:
  """Returns {t10k index: given label} of the labels the workers rejected.

  The paper counts a label as an error when fewer than half of the five
  workers chose it (15 of MNIST's test labels).
  """
  return {int(e['id']): int(e['given_original_label']) for e in entries
          if 2 * e['mturk']['given'] < WORKERS}


def load(directory: str, mirrors=(URL,), checksums=None,
         log=print) -> Dict[int, int]:
  """Downloads the list into `directory` if missing; the confirmed errors.

  Args:
    directory: where the list is kept (default_dir()).
    mirrors: base URLs the list is fetched from, in order.
    checksums: the SHA-256 of the file by name; None: SHA256.
    log: prints each URL as its download starts.

  Returns:
    {t10k index: given label}, as confirmed() reads them.

  Raises:
    mnist.DownloadError: no mirror gave the file with its checksum.
  """
  [path] = mnist.download(directory, mirrors, checksums or SHA256, log=log)
  with open(path) as f:
    return confirmed(json.load(f))


def default_dir() -> str:
  """Beside data/mnist.py's downloads (data/downloads/, never in git)."""
  return os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      'downloads', 'label-errors')
