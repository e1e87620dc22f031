"""Reading IDX files, the format of MNIST, Fashion-MNIST and their kin.

An IDX file is a 4-byte magic number (two zero bytes, a type code, the number
of dimensions), a big-endian uint32 per dimension, then the values in
row-major order, maybe gzipped.
"""

import dataclasses
import gzip
import struct
import zlib

from isal import igzip
from isal import isal_zlib
from typing import BinaryIO, Iterator, Tuple

import numpy as np
import tensorflow as tf

from components.image_example_gen.errors import InputDataError

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


@dataclasses.dataclass(frozen=True)
class IdxHeader:
  """What an IDX file's header declares, and the sizes that follow from it."""
  path: str
  dtype: np.dtype
  shape: Tuple[int, ...]  # (count, *item_shape)
  gzipped: bool

  @property
  def header_size(self) -> int:
    """The bytes before the data."""
    return 4 + 4 * len(self.shape)

  @property
  def count(self) -> int:
    """The number of items."""
    return self.shape[0]

  @property
  def item_shape(self) -> Tuple[int, ...]:
    """The shape of one item."""
    return self.shape[1:]

  @property
  def item_size(self) -> int:
    """The bytes of one item."""
    return int(np.prod(self.item_shape, dtype=np.int64)) * self.dtype.itemsize

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


def _read_exactly(stream: BinaryIO, n: int, path: str, what: str) -> bytes:
  try:
    data = stream.read(n)
  except _GZIP_ERRORS as e:
    raise InputDataError(path, f'corrupt or truncated gzip data: {e}') from e
  if len(data) != n:
    raise InputDataError(
        path, f'file ends after {len(data)} of the {n} bytes of {what}')
  return data


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
  """Reads the header of the IDX file at `path`."""
  stream, gzipped = _open(path)
  with stream:
    return _parse_header(stream, path, gzipped)


def validate(path: str) -> IdxHeader:
  """Reads the whole file once: the header, then that the data is all there."""
  stream, gzipped = _open(path)
  with stream:
    header = _parse_header(stream, path, gzipped)
    remaining = header.data_size
    try:
      while remaining:
        block = stream.read(min(remaining, _READ_BLOCK))
        if not block:
          raise InputDataError(
              path, f'file ends {remaining} bytes early: the header declares '
              f'shape {header.shape} ({header.data_size} bytes of data)')
        remaining -= len(block)
      extra = stream.read(1)
    except _GZIP_ERRORS as e:
      raise InputDataError(path, f'corrupt or truncated gzip data: {e}') from e
    if extra:
      raise InputDataError(
          path, f'file has data beyond the {header.data_size} bytes its header '
          f'declares for shape {header.shape}')
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
      self._stream.seek(header.header_size)
      self._next = 0
    try:
      self._stream.seek((start - self._next) * header.item_size, 1)
    except _GZIP_ERRORS as e:
      raise InputDataError(header.path,
                           f'corrupt or truncated gzip data: {e}') from e
    n = stop - start
    data = _read_exactly(self._stream, n * header.item_size, header.path,
                         f'items {start}..{stop}')
    self._next = stop
    return np.frombuffer(data, dtype=header.dtype).reshape(
        (n,) + header.item_shape)

  def check_end(self) -> None:
    """After reading the last item: raises if the file holds more."""
    header = self.header
    if self._stream is None or self._next != header.count:
      raise ValueError('check_end follows a read of the last item')
    try:
      extra = self._stream.read(1)
    except _GZIP_ERRORS as e:
      raise InputDataError(header.path,
                           f'corrupt or truncated gzip data: {e}') from e
    if extra:
      raise InputDataError(
          header.path, f'file has data beyond the {header.data_size} bytes '
          f'its header declares for shape {header.shape}')

  def close(self) -> None:
    """Closes the open stream, if any."""
    if self._stream is not None:
      self._stream.close()
      self._stream = None


def iter_items(header: IdxHeader,
               max_bytes: int = _READ_BLOCK) -> Iterator[Tuple[int, np.ndarray]]:
  """Yields (start, items) of the whole file, `max_bytes` of items at a time."""
  step = max(1, max_bytes // max(header.item_size, 1))
  reader = ItemReader(header)
  try:
    for start in range(0, header.count, step):
      yield start, reader.read(start, min(start + step, header.count))
    if header.count:
      reader.check_end()
  finally:
    reader.close()


def read_items(header: IdxHeader, start: int, stop: int) -> np.ndarray:
  """Returns items [start, stop) of a validated file as an array."""
  reader = ItemReader(header)
  try:
    return reader.read(start, stop)
  finally:
    reader.close()


def read_all(header: IdxHeader) -> np.ndarray:
  """Returns every item of a validated file as an array."""
  return read_items(header, 0, header.count)


def write(path: str, array: np.ndarray, compress: bool = True) -> None:
  """Writes `array` as an IDX file (used by tests and the benchmarks)."""
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

