"""The published list of MNIST's wrong test labels: the paper's rule, read
from a file the test writes and downloads through a file:// mirror."""

import hashlib
import json

import pytest

from data import mnist
from data import mnist_label_errors


def entry(index, given, workers_for_given, guessed=9):
  return {'id': index, 'given_original_label': given,
          'our_guessed_label': guessed,
          'mturk': {'given': workers_for_given, 'guessed':
                    5 - workers_for_given, 'neither': 0}}


def test_a_label_is_wrong_when_most_workers_reject_it(tmp_path):
  entries = [entry(3, 1, 0), entry(8, 2, 2), entry(13, 4, 3), entry(21, 5, 5)]
  mirror = tmp_path / 'mirror'
  mirror.mkdir()
  payload = json.dumps(entries).encode()
  (mirror / mnist_label_errors.FILE).write_bytes(payload)
  checksums = {mnist_label_errors.FILE: hashlib.sha256(payload).hexdigest()}
  found = mnist_label_errors.load(str(tmp_path / 'dest'), [f'file://{mirror}/'],
                                  checksums, log=lambda _: None)
  assert found == {3: 1, 8: 2}
  # The real file's checksum guards what is read: another file is refused.
  with pytest.raises(mnist.DownloadError, match='SHA-256 is'):
    mnist_label_errors.load(str(tmp_path / 'other'), [f'file://{mirror}/'],
                            log=lambda _: None)
