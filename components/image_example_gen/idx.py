"""IDX files (MNIST's format) and their splits as a source of Examples.

A split's files are paired and checked before Beam starts; each shard reads
a contiguous share of them. Why and how: docs/input-data.md.
"""

import contextlib
import dataclasses
import gzip
import os
import struct
from typing import BinaryIO, Iterable, Iterator, List, Optional, Sequence
from typing import Tuple
import zlib

from absl import logging
from isal import igzip
from isal import isal_zlib
import numpy as np
import tensorflow as tf

from components.image_example_gen import console_lines
from components.image_example_gen import validation_split
from components.image_example_gen.errors import InputDataError
from records import features

_GZIP_MAGIC = b'\x1f\x8b'
# What a damaged gzip stream raises while it is read.
_GZIP_ERRORS = (EOFError, OSError, zlib.error, isal_zlib.error)
# Type codes of the IDX format and the numpy dtype they store (big-endian).
_DTYPES = {
    0x08: np.dtype('u1'),
    0x09: np.dtype('i1'),
    0x0B: np.dtype('>i2'),
    0x0C: np.dtype('>i4'),
    0x0D: np.dtype('>f4'),
    0x0E: np.dtype('>f8'),
}
_READ_BLOCK = 1 << 20
# The most bytes of pixels a worker reads, turns into Examples and writes
# at once; its Examples, their framing and gzip take a few times that again.
CHUNK_BYTES = 8 << 20


@dataclasses.dataclass(frozen=True)
class IdxHeader:
  """What an IDX file's header declares, and the sizes that follow from it."""
  path: str
  dtype: np.dtype
  shape: Tuple[int, ...]  # (count, *the shape of one item)
  gzipped: bool

  @property
  def count(self) -> int:
    """The number of items."""
    return self.shape[0]

  @property
  def item_size(self) -> int:
    """The bytes of one item."""
    return int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize

  @property
  def data_size(self) -> int:
    """The bytes of all items."""
    return self.count * self.item_size


def _open(path: str) -> Tuple[BinaryIO, bool]:
  """Opens `path` for reading, transparently un-gzipping it."""
  try:
    raw = tf.io.gfile.GFile(path, 'rb')
    magic = raw.read(2)
    raw.seek(0)
  except tf.errors.OpError as e:
    raise InputDataError(path, f'cannot read file: {e.message}') from e
  if magic == _GZIP_MAGIC:
    if '://' not in path:
      # ISA-L's gzip reader: the same stream, decompressed faster than
      # zlib's. It needs a real file object (readinto), which GFile is not.
      raw.close()
      return igzip.IGzipFile(path, mode='rb'), True
    return gzip.GzipFile(fileobj=raw, mode='rb'), True
  return raw, False


@contextlib.contextmanager
def _gzip_errors(path: str):
  """Turns what a damaged gzip stream raises into an InputDataError."""
  try:
    yield
  except _GZIP_ERRORS as e:
    raise InputDataError(path, f'corrupt or truncated gzip data: {e}') from e


def _read_exactly(stream: BinaryIO, n: int, path: str, what: str) -> bytes:
  with _gzip_errors(path):
    data = stream.read(n)
  if len(data) != n:
    raise InputDataError(
        path, f'file ends after {len(data)} of the {n} bytes of {what}')
  return data


def _check_end(stream: BinaryIO, header: IdxHeader) -> None:
  with _gzip_errors(header.path):
    extra = stream.read(1)
  if extra:
    raise InputDataError(
        header.path, f'file has data beyond the {header.data_size} bytes its '
        f'header declares for shape {header.shape}')


def _parse_header(stream: BinaryIO, path: str, gzipped: bool) -> IdxHeader:
  magic = _read_exactly(stream, 4, path, 'the IDX magic number')
  zero, type_code, ndim = struct.unpack('>HBB', magic)
  if zero != 0 or type_code not in _DTYPES or ndim == 0:
    if not gzipped and path.endswith('.gz'):
      # Most likely a download that went wrong: an HTML page, or garbage.
      raise InputDataError(
          path, 'not gzip data despite its .gz name, and not an IDX file '
          f'either (first bytes 0x{magic.hex()})')
    raise InputDataError(
        path, f'not an IDX file: bad magic number 0x{magic.hex()} '
        '(expected 0x0000 + a type code + the number of dimensions, '
        'e.g. 0x00000803 for images, 0x00000801 for labels)')
  dims = struct.unpack(f'>{ndim}I',
                       _read_exactly(stream, 4 * ndim, path, 'the IDX dimensions'))
  return IdxHeader(path=path, dtype=_DTYPES[type_code], shape=tuple(dims),
                   gzipped=gzipped)


def read_header(path: str) -> IdxHeader:
  """Reads the header of the IDX file at `path`.

  Raises:
    InputDataError: the file cannot be read, or is not IDX.
  """
  stream, gzipped = _open(path)
  with stream:
    return _parse_header(stream, path, gzipped)


def validate(path: str) -> IdxHeader:
  """Reads the whole file once: the header, then that the data is all there.

  Raises:
    InputDataError: the file cannot be read, is not IDX, or holds fewer or
      more bytes than its header declares.
  """
  stream, gzipped = _open(path)
  with stream:
    header = _parse_header(stream, path, gzipped)
    remaining = header.data_size
    while remaining:
      with _gzip_errors(path):
        block = stream.read(min(remaining, _READ_BLOCK))
      if not block:
        raise InputDataError(
            path, f'file ends {remaining} bytes early: the header declares '
            f'shape {header.shape} ({header.data_size} bytes of data)')
      remaining -= len(block)
    _check_end(stream, header)
  return header


class ItemReader:
  """Reads ranges of items of one validated file, front to back.

  A read forward continues the open stream, so a gzipped file read in
  consecutive chunks is decompressed once; a read backwards reopens it.
  """

  def __init__(self, header: IdxHeader):
    self.header = header
    self._stream = None
    self._next = 0  # The item the stream is positioned at.

  def read(self, start: int, stop: int) -> np.ndarray:
    """Returns items [start, stop) as an array."""
    header = self.header
    if self._stream is None or start < self._next:
      self.close()
      self._stream, _ = _open(header.path)
      self._stream.seek(4 + 4 * len(header.shape))  # Past the header.
      self._next = 0
    with _gzip_errors(header.path):
      self._stream.seek((start - self._next) * header.item_size, 1)
    data = _read_exactly(self._stream, (stop - start) * header.item_size,
                         header.path, f'items {start}..{stop}')
    self._next = stop
    return np.frombuffer(data, dtype=header.dtype).reshape(
        (stop - start,) + header.shape[1:])

  def check_end(self) -> None:
    """After reading the last item: raises if the file holds more.

    Raises:
      ValueError: the last item was not the one read last.
      InputDataError: the file holds more than its header declares.
    """
    if self._stream is None or self._next != self.header.count:
      raise ValueError('check_end follows a read of the last item')
    _check_end(self._stream, self.header)

  def close(self) -> None:
    """Closes the open stream, if any."""
    if self._stream is not None:
      self._stream.close()
      self._stream = None


def read_all(header: IdxHeader) -> np.ndarray:
  """Returns every item of a validated file as an array."""
  reader = ItemReader(header)
  try:
    return reader.read(0, header.count)
  finally:
    reader.close()


def write(path: str, array: np.ndarray, compress: bool = True) -> None:
  """Writes `array` as an IDX file (used by tests and the benchmarks).

  Args:
    path: the file to write.
    array: of a dtype IDX holds (uint8, int8, int16, int32, float32 or
      float64); its shape is the header's.
    compress: whether the file is gzipped.
  """
  codes = {dtype: code for code, dtype in _DTYPES.items()}
  dtype = array.dtype.newbyteorder('>') if array.dtype.itemsize > 1 else array.dtype
  code = codes[np.dtype(dtype)]
  payload = (struct.pack('>HBB', 0, code, array.ndim) +
             struct.pack(f'>{array.ndim}I', *array.shape) +
             np.ascontiguousarray(array, dtype=dtype).tobytes())
  if compress:
    payload = gzip.compress(payload, compresslevel=6)
  with tf.io.gfile.GFile(path, 'wb') as f:
    f.write(payload)


# A split's files: (images, labels).
SplitFiles = Tuple[IdxHeader, IdxHeader]


def split_files(split_pattern: str) -> SplitFiles:
  """Finds, validates and pairs the images and labels files of a split.

  Args:
    split_pattern: a glob matching the split's two files.

  Returns:
    The headers of (images, labels); only the labels file is read whole.

  Raises:
    InputDataError: a file cannot be read, or the split is not one uint8
      images file and one integer labels file of as many items, at least
      one.
  """
  paths = sorted(tf.io.gfile.glob(split_pattern))
  if not paths:
    raise InputDataError(split_pattern, 'no files match this split pattern')
  images, labels = [], []
  for path in paths:
    # Images are checked as the workers read them; labels here, whole.
    header = read_header(path)
    if len(header.shape) == 1:
      labels.append(validate(path))
    elif len(header.shape) in (3, 4):
      images.append(header)
    else:
      raise InputDataError(
          path, f'IDX data of shape {header.shape} is neither images '
          '(count x height x width [x channels]) nor labels (count)')
  if len(images) != 1 or len(labels) != 1:
    raise InputDataError(
        split_pattern, 'expected one IDX images file and one IDX labels file, '
        f'found images {[h.path for h in images]} and labels '
        f'{[h.path for h in labels]}')
  [image_header], [label_header] = images, labels
  if image_header.dtype != 'u1':
    raise InputDataError(image_header.path,
                         f'images must be uint8, not {image_header.dtype}')
  if label_header.dtype.kind not in 'iu':
    raise InputDataError(label_header.path,
                         f'labels must be integers, not {label_header.dtype}')
  if image_header.count != label_header.count:
    raise InputDataError(
        image_header.path, f'holds {image_header.count} images but '
        f'{label_header.path} holds {label_header.count} labels')
  if image_header.count == 0:
    raise InputDataError(image_header.path, 'the split holds no images')
  geometry(image_header)  # Fails here on an unsupported channel count.
  return image_header, label_header


def geometry(header: IdxHeader) -> features.ImageGeometry:
  """The image geometry an images file's header declares.

  Raises:
    InputDataError: the geometry is not one records hold (e.g. 2 channels).
  """
  channels = header.shape[3] if len(header.shape) == 4 else 1
  try:
    return features.ImageGeometry(header.shape[1], header.shape[2], channels)
  except ValueError as e:
    raise InputDataError(header.path, str(e)) from e


def dataset_geometry(splits: Iterable[SplitFiles]) -> features.ImageGeometry:
  """The one geometry of every split's images.

  Raises:
    InputDataError: the splits' geometries differ, or one is unsupported.
  """
  found = {}
  for images, _ in splits:
    found.setdefault(geometry(images), images.path)
  if len(found) > 1:
    raise InputDataError(
        ', '.join(found.values()), 'the splits hold images of different '
        f'geometries ({", ".join(str(g) for g in found)}, height x width x '
        'channels); a model takes one')
  return next(iter(found))


def class_names_from_labels(splits: Iterable[SplitFiles]) -> List[str]:
  """'0'..'n-1' where n-1 is the largest label over all splits."""
  # Labels are read whole: a few bytes a record, where an image has hundreds.
  largest = max(int(read_all(labels).max()) for _, labels in splits)
  return [str(i) for i in range(largest + 1)]


def log_split(files: SplitFiles, class_names: Sequence[str]) -> None:
  """Checks a split's labels against the class names and logs its size.

  Raises:
    InputDataError: a label is not an index into `class_names`.
  """
  images, labels = files
  values = read_all(labels)  # Whole, as class_names_from_labels reads them.
  bad = np.flatnonzero((values < 0) | (values >= len(class_names)))
  if len(bad):
    raise InputDataError(
        labels.path, f'{len(bad)} labels outside the class range '
        f'0..{len(class_names) - 1} (first: label {int(values[bad[0]])} of '
        f'record {bad[0]})')
  logging.info('IDX split: %d images of %s from %s', images.count,
               geometry(images), images.path)


def shard_ranges(count: int, num_shards: int) -> List[Tuple[int, int]]:
  """[start, stop) of each shard, in file order, as even as can be."""
  bounds = np.linspace(0, count, num_shards + 1).astype(int)
  return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


class Reader:
  """tfrecord_sink.WriteShards' source of a split; a shard's work is its
  (start, stop); with validation_percent, it yields (train, validation)."""

  def __init__(self, files: SplitFiles, encoding: str,
               input_base: Optional[str] = None,
               validation_percent: int = 0):
    """Makes the source of one input split.

    Args:
      files: the split's images and labels files, validated.
      encoding: the records' image encoding (features.IMAGE_ENCODINGS).
      input_base: sources are paths relative to it; None: file names.
      validation_percent: the share of records hashed into validation.
    """
    self._images, self._labels = files
    self._encoding = encoding
    # A record's source: its place in the images file, as MNIST's
    # label-error lists cite it, after the file's path under the input base.
    name = (os.path.relpath(self._images.path, input_base).replace(
        os.sep, '/') if input_base else os.path.basename(self._images.path))
    self._source_prefix = (name + ':').encode()
    self._geometry = geometry(self._images)
    self._per_chunk = max(1, CHUNK_BYTES // self._images.item_size)
    self._validation_percent = validation_percent
    self._readers = None  # Opened when first used: Beam pickles the Reader.
    # Named as the sources are: the spans of a window have the same names.
    self._progress = console_lines.SplitProgress(name, self._images.count)

  def _examples(self, images: np.ndarray, labels: np.ndarray,
                indices: np.ndarray) -> List[bytes]:
    if not len(images):
      return []
    return features.make_examples(
        images, labels, self._geometry, self._encoding,
        sources=[b'%d' % i for i in indices.tolist()],
        source_prefix=self._source_prefix)

  def batches(self, work: Tuple[int, int], skipped: List[dict]
              ) -> Iterator[Tuple[List[bytes], ...]]:
    """Yields the Examples of records [start, stop), a chunk at a time.

    Args:
      work: (start, stop), a shard's range of records (shard_ranges).
      skipped: where unreadable inputs are noted; unused: a damaged IDX
        file fails the run.

    Yields:
      (train Examples, validation Examples) of a chunk with a
      validation_percent, else (Examples,).
    """
    del skipped  # A damaged IDX file fails the run.
    start, stop = work
    if self._readers is None:
      self._readers = (ItemReader(self._images), ItemReader(self._labels))
    images_reader, labels_reader = self._readers
    for a in range(start, stop, self._per_chunk):
      b = min(stop, a + self._per_chunk)
      images, labels = images_reader.read(a, b), labels_reader.read(a, b)
      indices = np.arange(a, b)
      if self._validation_percent:
        chosen = validation_split.mask([image.tobytes() for image in images],
                                       self._validation_percent)
        yield (self._examples(images[~chosen], labels[~chosen],
                              indices[~chosen]),
               self._examples(images[chosen], labels[chosen], indices[chosen]))
      else:
        yield (self._examples(images, labels, indices),)
      self._progress.add(b - a)
    if stop == self._images.count and stop > start:
      images_reader.check_end()

  def close(self) -> None:
    """Closes the open streams."""
    for reader in self._readers or ():
      reader.close()
    self._readers = None
