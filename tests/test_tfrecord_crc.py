"""Beam reads TFRecords checking their CRC32C with google-crc32c
(pipeline/tfrecord_crc.py): the same records, and a damaged one still
refused. Which processes set it up: tests/test_startup.py."""

import os

import apache_beam as beam
from apache_beam.io import tfrecordio
from apache_beam.testing import util as beam_testing
import crcmod.predefined
import google_crc32c
import pytest
import tensorflow as tf

from pipeline import tfrecord_crc

RECORDS = [os.urandom(n) for n in (0, 1, 7, 900, 5000)]


@pytest.fixture(autouse=True)
def beam_crc_restored(monkeypatch):
  """Each test starts with Beam choosing for itself, and leaves it so."""
  monkeypatch.setattr(tfrecordio._default_crc32c_fn, 'fn', None)  # pylint: disable=protected-access


def _write(path, compression):
  with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression)) as f:
    for record in RECORDS:
      f.write(record)


def _read_with_beam(pattern):
  with beam.Pipeline() as p:
    read = p | beam.io.ReadFromTFRecord(pattern, coder=beam.coders.BytesCoder())
    beam_testing.assert_that(read, beam_testing.equal_to(RECORDS))


def test_beam_uses_google_crc32c_and_computes_crcmods_values():
  tfrecord_crc.use_google_crc32c()
  beams = tfrecordio._default_crc32c_fn  # pylint: disable=protected-access
  assert beams.fn is google_crc32c.value
  crcmods = crcmod.predefined.mkPredefinedCrcFun('crc-32c')
  for record in RECORDS:
    assert beams(record) == crcmods(record)


@pytest.mark.parametrize('compression', ['GZIP', ''])
def test_records_tensorflow_wrote_read_back_whole(tmp_path, compression):
  # Beam tells gzipped files by their name, as the project names its shards.
  path = str(tmp_path / ('records.gz' if compression else 'records'))
  _write(path, compression)
  tfrecord_crc.use_google_crc32c()
  _read_with_beam(path)


def test_a_damaged_record_is_still_refused(tmp_path):
  path = tmp_path / 'records.tfrecord'
  _write(str(path), '')
  data = bytearray(path.read_bytes())
  data[-10] ^= 0x01  # In the last record's payload.
  path.write_bytes(bytes(data))
  tfrecord_crc.use_google_crc32c()
  with pytest.raises(Exception, match='Mismatch of data mask'):
    _read_with_beam(str(path))
