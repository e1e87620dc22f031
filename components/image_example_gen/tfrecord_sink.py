"""Writing a split: gzipped TFRecord shards, a batch of records at a time.

TFX's ExampleGen writes with `beam.io.WriteToTFRecord`: a record per element,
zlib at its default level, and with a fixed shard count a grouping by shard
that Beam's DirectRunner holds in memory whole. BENCHMARKS.md ("TFRecord
sinks") compares the two. Here a worker writes whole shards (`write_shard`),
or Beam's FileBasedSink writes lists of records (`WriteSplit`, for TFX's hash
split). Both frame a list of records in one go and gzip it with ISA-L at
level 1; the files are ordinary gzipped TFRecord files.
"""

import itertools
import os
import struct
import uuid
import zlib
from typing import Iterable, List, Sequence

import apache_beam as beam
from apache_beam.io import filebasedsink
from apache_beam.io.filesystem import CompressionTypes
import google_crc32c
from isal import isal_zlib
import numpy as np
import tensorflow as tf
from tfx.components.example_gen import write_split

# The most records in one list for the writer: records that come one per
# element (hash-split outputs) are batched into lists of up to this many,
# and image-folder workers write at most this many at a time.
RECORDS_PER_WRITE = 1000
GZIP_LEVEL = 1
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # A gzip header and trailer, not raw zlib.
_MASK_DELTA = 0xa282ead8


def _masked_crc(data: bytes) -> int:
  """TFRecord's masked CRC-32C of `data`."""
  crc = google_crc32c.value(data)
  return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xffffffff


def frame(records: Sequence[bytes]) -> bytes:
  """Frames records in the TFRecord format: length, its CRC, data, its CRC.

  The per-record work runs in C (map, zip, numpy on the CRCs), not in a
  Python loop.
  """
  count = len(records)
  crcs = np.fromiter(map(google_crc32c.value, records), np.uint64, count)
  masked = ((((crcs >> 15) | (crcs << 17)) + _MASK_DELTA) &
            0xffffffff).astype('<u4').tobytes()
  headers = {}  # Records mostly share one length: its header is made once.
  for length in set(map(len, records)):
    packed = struct.pack('<Q', length)
    headers[length] = packed + struct.pack('<I', _masked_crc(packed))
  parts = zip(map(headers.__getitem__, map(len, records)), records,
              [masked[i:i + 4] for i in range(0, 4 * count, 4)])
  return b''.join(itertools.chain.from_iterable(parts))


class _GzipWriter:
  """A file handle that gzips what is written to it at GZIP_LEVEL."""

  def __init__(self, raw):
    self._raw = raw
    self._compressor = isal_zlib.compressobj(GZIP_LEVEL, isal_zlib.DEFLATED,
                                             _GZIP_WBITS)

  def write(self, data: bytes) -> None:
    self._raw.write(self._compressor.compress(data))

  def close(self) -> None:
    self._raw.write(self._compressor.flush())
    self._raw.close()


class _TFRecordBatchSink(filebasedsink.FileBasedSink):
  """Writes each element, a list of serialized records, as TFRecords."""

  def __init__(self, file_path_prefix: str, num_shards: int):
    super().__init__(
        file_path_prefix, coder=None, file_name_suffix='.gz',
        num_shards=num_shards, shard_name_template=None,
        mime_type='application/octet-stream',
        compression_type=CompressionTypes.UNCOMPRESSED)  # We gzip ourselves.

  def open(self, temp_path):
    return _GzipWriter(super().open(temp_path))

  def write_record(self, file_handle, value):
    file_handle.write(frame(value))


@beam.ptransform_fn
@beam.typehints.with_input_types(bytes)
def WriteSplit(records: beam.pvalue.PCollection, split_uri: str,  # pylint: disable=invalid-name
               num_shards: int) -> beam.pvalue.PDone:
  """Serialized records -> num_shards gzipped TFRecord files in `split_uri`.

  The files are named as TFX's WriteSplit names them. No Reshuffle as in
  TFX's: the write groups its input by shard, which shuffles already.
  """
  return (records
          | 'Batch' >> beam.BatchElements(max_batch_size=RECORDS_PER_WRITE)
          | 'Write' >> beam.io.Write(_TFRecordBatchSink(
              os.path.join(split_uri, write_split.DEFAULT_TF_RECORD_FILE_NAME),
              num_shards)))


def shard_path(split_uri: str, shard: int, num_shards: int) -> str:
  """Shard `shard` of `split_uri`, named as WriteSplit names it."""
  return os.path.join(
      split_uri, f'{write_split.DEFAULT_TF_RECORD_FILE_NAME}-'
      f'{shard:05d}-of-{num_shards:05d}.gz')


def write_shard(path: str, batches: Iterable[List[bytes]]) -> int:
  """Writes lists of serialized records as one gzipped TFRecord file.

  Memory holds one list at a time. The file is written under a temporary name
  and renamed when complete, so it is whole or absent, and a retried worker
  replaces it with the same bytes.

  Returns:
    The number of records.
  """
  [count] = write_shards([path], ([records] for records in batches))
  return count


def write_shards(paths: Sequence[str],
                 batches: Iterable[Sequence[List[bytes]]]) -> List[int]:
  """Writes several shard files at once, as `write_shard` writes one.

  Args:
    paths: the files.
    batches: each element holds one list of records per path (a shard of train
      and the same shard of validation, cut from the same input).

  Returns:
    The number of records of each file.
  """
  temps = [f'{path}.temp-{uuid.uuid4().hex}' for path in paths]
  writers = []
  counts = [0] * len(paths)
  try:
    for path, temp in zip(paths, temps):
      tf.io.gfile.makedirs(os.path.dirname(path))
      writers.append(_GzipWriter(tf.io.gfile.GFile(temp, 'wb')))
    for lists in batches:
      for i, (writer, records) in enumerate(zip(writers, lists)):
        if records:
          writer.write(frame(records))
          counts[i] += len(records)
    while writers:
      writers.pop(0).close()
  except BaseException:
    for writer in writers:
      writer.close()
    for temp in temps:
      if tf.io.gfile.exists(temp):
        tf.io.gfile.remove(temp)
    raise
  for temp, path in zip(temps, paths):
    tf.io.gfile.rename(temp, path, overwrite=True)
  return counts
