"""Writing a split: gzipped TFRecord shards, a batch of records at a time.

Unlike TFX's sink it never holds a split in memory (BENCHMARKS.md,
"TFRecord sinks"). Why and how: docs/scaling.md#data-bigger-than-memory.
"""

import itertools
import os
import struct
import uuid
import zlib
from typing import Any, Iterable, List, Optional, Sequence

import apache_beam as beam
from apache_beam.io import filebasedsink
from apache_beam.io.filesystem import CompressionTypes
import google_crc32c
from isal import isal_zlib
import numpy as np
import tensorflow as tf
from tfx.components.example_gen import write_split

# The most records framed and gzipped at once.
RECORDS_PER_WRITE = 1000
GZIP_LEVEL = 1
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # A gzip header and trailer, not raw zlib.
_MASK_DELTA = 0xa282ead8


def _masked_crc(data: bytes) -> int:
  """TFRecord's masked CRC-32C of `data`."""
  crc = google_crc32c.value(data)
  return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xffffffff


def frame(records: Sequence[bytes]) -> bytes:
  """Frames records in the TFRecord format: length, its CRC, data, its CRC."""
  # The per-record work runs in C (map, zip, numpy), not in a Python loop.
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

  Args:
    records: serialized Examples, in any order.
    split_uri: the split's folder.
    num_shards: the files written, records dealt among them by Beam.
  """
  return (records
          | 'Batch' >> beam.BatchElements(max_batch_size=RECORDS_PER_WRITE)
          | 'Write' >> beam.io.Write(_TFRecordBatchSink(
              os.path.join(split_uri, write_split.DEFAULT_TF_RECORD_FILE_NAME),
              num_shards)))


def shard_path(split_uri: str, shard: int, num_shards: int) -> str:
  """Shard `shard` of `split_uri`, named as WriteSplit names it.

  Args:
    split_uri: the split's folder.
    shard: the shard's number, from 0.
    num_shards: the split's shards in all.
  """
  return os.path.join(
      split_uri, f'{write_split.DEFAULT_TF_RECORD_FILE_NAME}-'
      f'{shard:05d}-of-{num_shards:05d}.gz')


def write_shards(paths: Sequence[str],
                 batches: Iterable[Sequence[List[bytes]]]) -> None:
  """Writes each batch's lists of records to `paths`, one list per file.

  Each file is written under a temporary name and renamed when complete, so
  it is whole or absent.

  Args:
    paths: the files, one per split.
    batches: each a sequence of lists of serialized records, the i-th list
      for paths[i].
  """
  temps = [f'{path}.temp-{uuid.uuid4().hex}' for path in paths]
  writers = []
  try:
    for path, temp in zip(paths, temps):
      tf.io.gfile.makedirs(os.path.dirname(path))
      writers.append(_GzipWriter(tf.io.gfile.GFile(temp, 'wb')))
    for lists in batches:
      for writer, records in zip(writers, lists):
        if records:
          writer.write(frame(records))
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


class _WriteShard(beam.DoFn):
  """(shard, [its work]) -> that shard of each split; yields the skipped."""

  def __init__(self, source, split_uris: Sequence[str], first_shard: int,
               num_shards: int):
    self._source = source
    self._split_uris = split_uris
    self._first_shard = first_shard
    self._num_shards = num_shards

  def process(self, element):
    shard, (work,) = element
    paths = [shard_path(uri, shard + self._first_shard, self._num_shards)
             for uri in self._split_uris]
    skipped = []
    write_shards(paths, self._source.batches(work, skipped))
    yield from skipped

  def teardown(self):
    self._source.close()


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
def WriteShards(  # pylint: disable=invalid-name
    pipeline: beam.Pipeline, source, work: Sequence[Any],
    split_uris: Sequence[str], first_shard: int = 0,
    total_shards: Optional[int] = None) -> beam.pvalue.PCollection:
  """Writes shard i of each split in `split_uris` from `work[i]`, per worker.

  Args:
    pipeline: the Beam pipeline.
    source: its `batches(work, skipped)` yields one list of records per split
      and lists what it skips in `skipped`.
    work: one item of the source's work per shard.
    split_uris: the output splits' folders, in the order of the source's
      lists.
    first_shard, total_shards: the shards of an output split that several
      inputs share.

  Returns:
    What the source skipped.
  """
  return (pipeline
          | 'Shards' >> beam.Create(list(enumerate(work)), reshuffle=False)
          # Keyed by shard: the workers get the shards in turns, each in
          # increasing order (a gzipped input is read once per worker).
          | 'Deal' >> beam.GroupByKey()
          | 'Write' >> beam.ParDo(_WriteShard(
              source, split_uris, first_shard, total_shards or len(work))))


class _ReadShard(beam.DoFn):
  """A shard's work -> its serialized records, one per element."""

  def __init__(self, source):
    self._source = source

  def process(self, work):
    for records, *_ in self._source.batches(work, []):
      yield from records

  def teardown(self):
    self._source.close()


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(bytes)
def ReadShards(pipeline: beam.Pipeline, source,  # pylint: disable=invalid-name
               work: Sequence[Any]) -> beam.pvalue.PCollection:
  """Reads `source`'s records (as WriteShards does), one per element.

  Args:
    pipeline: the Beam pipeline.
    source: as WriteShards'; the first list of each batch is read, what it
      skips is dropped.
    work: one item of the source's work per shard.
  """
  return (pipeline
          | 'Shards' >> beam.Create(list(work), reshuffle=False)
          | 'Distribute' >> beam.Reshuffle()
          | 'Read' >> beam.ParDo(_ReadShard(source)))
