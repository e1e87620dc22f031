"""The EXIF orientation of a JPEG or PNG file, read and applied in TensorFlow.

Read with string ops (TF Serving runs them too) by the rules of Pillow's
`ImageOps.exif_transpose`. Which tags are read: docs/serving.md.
"""

from typing import NamedTuple

import tensorflow as tf

# Walks are bounded: JPEG markers (and junk bytes) before the scan, PNG
# chunks. Real files need tens; past this, the rest of a file is not read.
MAX_STEPS = 4096
_JPEG_EXIF = b'Exif\x00\x00'
_JPEG_XMP = b'http://ns.adobe.com/xap/1.0/\x00'
_XMP_KEY = b'XML:com.adobe.xmp'
_ORIENTATION_TAG = 0x0112
# TIFF headers Pillow reads EXIF with, the first byte saying the byte
# order (on a BigTIFF one, Pillow's getexif raises).
_TIFF_PREFIXES = (b'MM\x00\x2a', b'II\x2a\x00', b'MM\x2a\x00', b'II\x00\x2a')
# Bytes per value of each TIFF type Pillow reads (0: a type it skips).
_TYPE_SIZES = (0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4, 0, 0, 8)
_PNG_CHUNK_TYPE = '[A-Za-z0-9_]{4}'  # Pillow's is_cid.
_PNG_METADATA = (b'eXIf', b'tEXt', b'zTXt', b'iTXt')
_XMP_ORIENTATION = r'tiff:Orientation(?:="|>)([0-9])'


class Metadata(NamedTuple):
  """What a file says about its orientation (string and bool tensors)."""
  exif: tf.Tensor  # The EXIF data, empty without.
  has_exif: tf.Tensor
  xmp: tf.Tensor  # The XMP packet, empty without.
  has_xmp: tf.Tensor
  broken: tf.Tensor  # Pillow fails to open the file: no orientation.

  @classmethod
  def none(cls) -> 'Metadata':
    """No metadata: for files of other formats."""
    empty, false = tf.constant(b''), tf.constant(False)
    return cls(empty, false, empty, false, false)


def _int(value) -> tf.Tensor:
  return tf.cast(value, tf.int64)


def _bytes(data: tf.Tensor, pos: tf.Tensor, n: int) -> tf.Tensor:
  """int64 [n]: the bytes of `data` from `pos`, zeros past its end."""
  pos = tf.clip_by_value(pos, _int(0), _int(tf.strings.length(data)))
  return _int(tf.io.decode_raw(tf.strings.substr(data, pos, _int(n)),
                               tf.uint8, fixed_length=n))


def _unsigned(data: tf.Tensor, pos: tf.Tensor, n: int,
              big_endian: tf.Tensor) -> tf.Tensor:
  values = _bytes(data, pos, n)
  shifts = tf.where(big_endian, tf.range(n - 1, -1, -1, tf.int64) * 8,
                    tf.range(n, dtype=tf.int64) * 8)
  return tf.reduce_sum(tf.bitwise.left_shift(values, shifts))


def _signed(value: tf.Tensor, bits: int) -> tf.Tensor:
  return tf.where(value >= 2**(bits - 1), value - 2**bits, value)


def _substr(data: tf.Tensor, start, length=None) -> tf.Tensor:
  size = _int(tf.strings.length(data))
  start = tf.clip_by_value(_int(start), _int(0), size)
  return tf.strings.substr(data, start,
                           size if length is None else _int(length))


def _value(data, pos, type_, big_endian) -> tf.Tensor:
  """The first value of a TIFF entry as float64 (NaN if not a number)."""
  u = lambda n: _unsigned(data, pos, n, big_endian)  # pylint: disable=unnecessary-lambda-assignment
  f64 = lambda x: tf.cast(x, tf.float64)  # pylint: disable=unnecessary-lambda-assignment
  nan = tf.constant(float('nan'), tf.float64)

  def ratio(num, den):
    # Pillow's IFDRational: num/den, NaN for a zero denominator; whole
    # numbers only matter, so test divisibility exactly.
    safe = tf.where(tf.equal(den, 0), _int(1), den)
    whole = tf.logical_and(tf.not_equal(den, 0),
                           tf.equal(tf.math.floormod(num, safe), 0))
    return tf.where(whole, f64(tf.math.floordiv(num, safe)), nan)

  def u32_at(offset):
    return _unsigned(data, pos + offset, 4, big_endian)

  # Every type's reading of the bytes, then the entry's type picks one: a
  # few more ops than a switch, but no branch functions, each of which
  # costs every load of the SavedModel.
  values = {
      3: f64(u(2)),                                            # SHORT
      4: f64(u(4)),                                            # LONG
      6: f64(_signed(u(1), 8)),                                # SBYTE
      8: f64(_signed(u(2), 16)),                               # SSHORT
      9: f64(_signed(u(4), 32)),                               # SLONG
      13: f64(u(4)),                                           # IFD
      16: f64(u(8)),                                           # LONG8
      5: ratio(u32_at(0), u32_at(4)),                          # RATIONAL
      10: ratio(_signed(u32_at(0), 32), _signed(u32_at(4), 32)),  # SRATIONAL
      11: f64(tf.bitcast(tf.cast(u(4), tf.uint32), tf.float32)),  # FLOAT
      12: tf.bitcast(u(8), tf.float64),                        # DOUBLE
  }
  types = list(values)
  index = tf.constant([types.index(t) if t in types else len(types)
                       for t in range(len(_TYPE_SIZES))], tf.int32)
  type_ = tf.where(tf.logical_and(type_ >= 0, type_ < len(_TYPE_SIZES)),
                   type_, 0)
  return tf.gather(tf.stack([*values.values(), nan]),
                   tf.gather(index, type_))


def _find_nul(data: tf.Tensor) -> tf.Tensor:
  """int32: the index of the first NUL byte of `data`, its length if none."""
  nul = tf.where(tf.equal(tf.io.decode_raw(data, tf.uint8), 0))
  return tf.cast(tf.reduce_min(tf.concat(
      [nul[:, 0], _int([tf.strings.length(data)])], 0)), tf.int32)


def _starts_with(data: tf.Tensor, prefixes) -> tf.Tensor:
  return tf.reduce_any([tf.equal(tf.strings.substr(data, 0, len(p)), p)
                        for p in prefixes])


def tiff_orientation(exif: tf.Tensor):
  """Reads EXIF data's orientation as Pillow's Exif.load reads it.

  Returns:
    (orientation, tagged, readable). The orientation is 0 unless a whole
    number. `tagged` says whether IFD0 has an Orientation entry Pillow
    kept; then XMP is not consulted. `readable` is False where Pillow
    raises.
  """
  for _ in range(2):  # Pillow strips ^(Exif\0\0){1,2}.
    exif = tf.where(tf.equal(tf.strings.substr(exif, 0, 6), _JPEG_EXIF),
                    _substr(exif, 6), exif)
  size = _int(tf.strings.length(exif))
  big_endian = tf.equal(tf.strings.substr(exif, 0, 1), b'M')
  readable = tf.logical_or(tf.equal(size, 0), tf.logical_and(
      _starts_with(exif, _TIFF_PREFIXES), size >= 8))
  ifd = _unsigned(exif, _int(4), 4, big_endian)
  count = tf.where(tf.logical_and(size > 0, ifd + 2 <= size),
                   _unsigned(exif, ifd, 2, big_endian), _int(0))
  sizes = tf.constant(_TYPE_SIZES, tf.int64)

  def step(i, seen, total, found, stop):
    entry = ifd + 2 + 12 * i
    tag = _unsigned(exif, entry, 2, big_endian)
    type_ = _unsigned(exif, entry + 2, 2, big_endian)
    unit = tf.where(type_ < len(_TYPE_SIZES),
                    tf.gather(sizes, tf.minimum(type_, len(_TYPE_SIZES) - 1)),
                    _int(0))
    length = _unsigned(exif, entry + 4, 4, big_endian) * unit
    offset = _unsigned(exif, entry + 8, 4, big_endian)
    truncated = entry + 12 > size  # Pillow stops reading the IFD.
    known = tf.reduce_any(tf.equal(seen, tag))
    outside = length > 4
    new_total = tf.where(outside, total + length, total)
    too_much = tf.logical_and(outside, new_total > size)
    # Out-of-line data past the end: Pillow's read raises, ending the IFD.
    cut = tf.logical_and(outside, tf.logical_and(
        tf.logical_not(too_much), offset + length > size))
    considered = tf.logical_not(tf.logical_or(truncated, known))
    total = tf.where(tf.logical_and(considered, unit > 0), new_total, total)
    stop = tf.logical_or(truncated, tf.logical_and(
        considered, tf.logical_and(unit > 0, cut)))
    keep = tf.logical_and(tf.logical_and(considered, tf.logical_not(stop)),
                          tf.logical_and(unit > 0, tf.logical_and(
                              length > 0, tf.logical_not(too_much))))
    seen = tf.concat([seen, tf.boolean_mask([tag], [keep])], 0)
    position = tf.where(outside, offset, entry + 8)
    found = tf.where(tf.logical_and(keep, tf.equal(tag, _ORIENTATION_TAG)),
                     tf.stack([type_, position]), found)
    return i + 1, seen, total, found, stop

  _, _, _, found, _ = tf.while_loop(
      lambda i, seen, total, found, stop: tf.logical_and(
          i < count, tf.logical_and(tf.logical_not(stop), found[0] < 0)),
      step,
      (_int(0), tf.zeros([0], tf.int64), _int(0), tf.constant([-1, 0],
                                                              tf.int64),
       tf.constant(False)),
      shape_invariants=(tf.TensorShape([]), tf.TensorShape([None]),
                        tf.TensorShape([]), tf.TensorShape([2]),
                        tf.TensorShape([])),
      maximum_iterations=65536)
  tagged = tf.logical_and(readable, found[0] >= 0)
  value = tf.where(tagged, _value(exif, found[1], found[0], big_endian),
                   tf.constant(float('nan'), tf.float64))
  return _whole(value), tagged, readable


def _whole(value: tf.Tensor) -> tf.Tensor:
  """int32: `value` if a whole number 1-8, else 0."""
  ok = tf.logical_and(tf.equal(value, tf.round(value)),
                      tf.logical_and(value >= 1, value <= 8))
  return tf.where(ok, tf.cast(tf.where(ok, value, 0.0), tf.int32), 0)


def _xmp_orientation(xmp: tf.Tensor) -> tf.Tensor:
  """int32: the digit of XMP's first tiff:Orientation, 0 if none."""
  # TensorFlow's regular expressions match valid UTF-8 only.
  xmp = tf.strings.unicode_transcode(xmp, 'UTF-8', 'UTF-8', errors='replace')
  has = tf.strings.regex_full_match(xmp, f'(?s).*?{_XMP_ORIENTATION}.*')
  digit = tf.strings.regex_replace(
      xmp, f'(?s)^.*?{_XMP_ORIENTATION}.*$', r'\1', replace_global=False)
  return tf.where(has, tf.cast(_bytes(digit, _int(0), 1)[0] - ord('0'),
                               tf.int32), 0)


def orientation_of(metadata: Metadata) -> tf.Tensor:
  """Pillow's getexif: EXIF's orientation, else XMP's if EXIF has none.

  Returns:
    int32: the orientation, 0 if none.
  """
  # Read whether or not there is EXIF (`exif` is then empty), since a
  # tf.cond costs every load of the SavedModel more than the reading.
  orientation, tagged, readable = tiff_orientation(metadata.exif)
  orientation = tf.where(metadata.has_exif, orientation, 0)
  tagged = tf.logical_and(metadata.has_exif, tagged)
  readable = tf.logical_or(tf.logical_not(metadata.has_exif), readable)
  from_xmp = tf.logical_and(metadata.has_xmp, tf.logical_not(tagged))
  orientation = tf.where(from_xmp, _xmp_orientation(metadata.xmp),
                         orientation)
  return tf.where(tf.logical_or(metadata.broken, tf.logical_not(readable)),
                  0, orientation)


def jpeg_metadata(data: tf.Tensor) -> Metadata:
  """The EXIF and XMP data Pillow reads in a JPEG file."""
  size = _int(tf.strings.length(data))

  def read_app1(payload, exif, has_exif, xmp, has_xmp):
    """The state after an APP1 segment's `payload`."""
    is_exif = tf.equal(tf.strings.substr(payload, 0, len(_JPEG_EXIF)),
                       _JPEG_EXIF)
    is_xmp = tf.equal(tf.strings.substr(payload, 0, len(_JPEG_XMP)),
                      _JPEG_XMP)
    exif = tf.where(is_exif, tf.where(
        has_exif, tf.strings.join([exif, _substr(payload, 6)]), payload),
                    exif)
    xmp = tf.where(is_xmp, _substr(payload, len(_JPEG_XMP)), xmp)
    return (exif, tf.logical_or(has_exif, is_exif), xmp,
            tf.logical_or(has_xmp, is_xmp))

  def step(pos, exif, has_exif, xmp, has_xmp, broken, done):
    del done  # The loop's condition.
    first, marker, high, low = tf.unstack(_bytes(data, pos, 4))
    at_end = pos + 1 >= size
    is_ff = tf.equal(first, 0xFF)
    segment = tf.logical_and(is_ff, tf.logical_and(
        marker >= 0xC0, tf.logical_and(marker <= 0xFE, tf.logical_not(
            tf.logical_or(tf.equal(marker, 0xC8), tf.logical_or(
                tf.logical_and(marker >= 0xD0, marker <= 0xD9),
                tf.logical_and(marker >= 0xF0, marker <= 0xFD)))))))
    payload_size = tf.maximum(high * 256 + low - 2, 0)
    cut = pos + 4 + payload_size > size
    exif, has_exif, xmp, has_xmp = tf.cond(
        tf.logical_and(tf.logical_and(segment, tf.equal(marker, 0xE1)),
                       tf.logical_not(cut)),
        lambda: read_app1(_substr(data, pos + 4, payload_size), exif,
                          has_exif, xmp, has_xmp),
        lambda: (exif, has_exif, xmp, has_xmp))
    # Pillow: a junk byte or FF FF moves on by one; FF 00 and markers
    # without a length by two; other markers by their segment.
    advance = tf.where(
        tf.logical_or(tf.logical_not(is_ff), tf.equal(marker, 0xFF)),
        _int(1), tf.where(segment, 4 + payload_size, _int(2)))
    # A segment cut short or an unknown marker: Pillow's open fails.
    failed = tf.logical_or(segment & cut, is_ff & (marker < 0xC0) &
                           tf.not_equal(marker, 0) & ~at_end)
    done = tf.reduce_any([at_end, failed, tf.equal(marker, 0xDA) & is_ff])
    return (pos + advance, exif, has_exif, xmp, has_xmp,
            tf.logical_or(broken, failed), done)

  empty = tf.constant(b'')
  false = tf.constant(False)
  _, exif, has_exif, xmp, has_xmp, broken, _ = tf.while_loop(
      lambda *state: tf.logical_not(state[-1]), step,
      (_int(2), empty, false, empty, false, false, false),
      maximum_iterations=MAX_STEPS)
  return Metadata(exif, has_exif, xmp, has_xmp, broken)


def _same_chunks(data: tf.Tensor, pos: tf.Tensor,
                 stride: tf.Tensor) -> tf.Tensor:
  """Counts the whole chunks from `pos` with the header of the one at `pos`.

  Image data is written in chunks of one size. One vectorised look replaces
  a walk step per chunk.
  """
  count = tf.minimum((_int(tf.strings.length(data)) - pos) // stride,
                     MAX_STEPS)
  starts = pos + stride * tf.range(count)
  heads = tf.strings.substr(data, starts, tf.fill(tf.shape(starts), _int(8)))
  differ = tf.where(tf.not_equal(heads, tf.strings.substr(data, pos, 8)))
  # At least the one at `pos`, even without its checksum.
  return tf.maximum(tf.reduce_min(tf.concat([differ[:, 0], [count]], 0)), 1)


def png_metadata(data: tf.Tensor) -> Metadata:
  """The EXIF and XMP data Pillow reads in a PNG file."""
  size = _int(tf.strings.length(data))

  def read_metadata(kind, payload, exif, has_exif, xmp, has_xmp):
    """The state after a metadata chunk (kind, payload)."""
    key_end = _find_nul(payload)
    key = tf.strings.substr(payload, 0, key_end)
    text = _substr(payload, key_end + 1)
    is_text = tf.equal(kind, b'tEXt')
    is_exif = tf.logical_or(tf.equal(kind, b'eXIf'), tf.logical_and(
        is_text, tf.equal(key, b'exif')))
    exif = tf.where(is_exif, tf.where(is_text, text, payload), exif)
    # iTXt after its key: compressed flag, method, language\0, translated
    # key\0, text.
    language = _substr(text, 2)
    translated = _substr(language, _find_nul(language) + 1)
    itxt = _substr(translated, _find_nul(translated) + 1)
    itxt_read = tf.logical_and(tf.equal(kind, b'iTXt'), tf.reduce_all([
        tf.equal(tf.strings.substr(text, 0, 1), b'\x00'),
        tf.strings.length(text) >= 2,
        _find_nul(language) < tf.strings.length(language),
        _find_nul(translated) < tf.strings.length(translated)]))
    is_xmp_key = tf.equal(key, _XMP_KEY)
    is_xmp = tf.logical_and(is_xmp_key, tf.logical_or(is_text, itxt_read))
    # A compressed XMP packet is not read, and hides any packet before it.
    hidden = tf.logical_and(is_xmp_key, tf.logical_and(
        tf.logical_not(is_xmp), tf.logical_or(tf.equal(kind, b'zTXt'),
                                              tf.equal(kind, b'iTXt'))))
    xmp = tf.where(is_xmp, tf.where(is_text, text, itxt),
                   tf.where(hidden, b'', xmp))
    return (exif, tf.logical_or(has_exif, is_exif), xmp,
            tf.logical_or(has_xmp, is_xmp))

  def step(pos, idat, exif, has_exif, xmp, has_xmp, broken, done):
    del done  # The loop's condition.
    length = _unsigned(data, pos, 4, tf.constant(True))
    kind = tf.strings.substr(data, tf.minimum(pos + 4, size), _int(4))
    # A bad chunk name: before the image data, Pillow's open fails; after
    # it, Pillow stops reading. A chunk cut short: Pillow fails, but for
    # image data (its decoder reads what there is).
    bad = tf.logical_not(tf.strings.regex_full_match(kind, _PNG_CHUNK_TYPE))
    cut = tf.logical_and(tf.logical_not(bad), pos + 8 + length > size)
    failed = tf.logical_or(
        tf.logical_and(bad, tf.logical_not(idat)),
        tf.logical_and(cut, tf.not_equal(kind, b'IDAT')))
    metadata = tf.logical_and(tf.logical_not(tf.logical_or(bad, cut)),
                              tf.reduce_any([tf.equal(kind, k)
                                             for k in _PNG_METADATA]))
    # Most chunks are image data: only metadata is read.
    exif, has_exif, xmp, has_xmp = tf.cond(
        metadata,
        lambda: read_metadata(kind, _substr(data, pos + 8, length), exif,
                              has_exif, xmp, has_xmp),
        lambda: (exif, has_exif, xmp, has_xmp))
    done = tf.reduce_any([bad, cut, tf.equal(kind, b'IEND')])
    # Image data: past the run of chunks of its size at once.
    is_idat = tf.logical_and(tf.equal(kind, b'IDAT'), tf.logical_not(cut))
    chunks = tf.cond(is_idat, lambda: _same_chunks(data, pos, 12 + length),
                     lambda: _int(1))
    return (pos + (12 + length) * chunks, tf.logical_or(idat, is_idat),
            exif, has_exif, xmp, has_xmp, tf.logical_or(broken, failed),
            done)

  empty = tf.constant(b'')
  false = tf.constant(False)
  _, _, exif, has_exif, xmp, has_xmp, broken, _ = tf.while_loop(
      lambda *state: tf.logical_not(state[-1]),
      step, (_int(8), false, empty, false, empty, false, false, false),
      maximum_iterations=MAX_STEPS)
  return Metadata(exif, has_exif, xmp, has_xmp, broken)


def transpose(image: tf.Tensor, orientation: tf.Tensor) -> tf.Tensor:
  """Turns `image` [H, W, C] upright as Pillow's exif_transpose does.

  An `orientation` other than 2-8 leaves it unchanged.
  """
  # Each orientation as flips (of rows, of columns), then a transposition
  # or not: no branch functions, which would cost every load of the
  # SavedModel (8 branches, and 4 more inside each tf.image.rot90).
  flips = tf.constant([[False, False], [False, False], [False, True],
                       [True, True], [True, False], [False, False],
                       [True, False], [True, True], [False, True]])
  transposed = tf.constant([False] * 5 + [True] * 4)
  index = tf.where(tf.logical_and(orientation >= 2, orientation <= 8),
                   orientation, 0)
  image = tf.reverse(image, tf.boolean_mask([0, 1], flips[index]))
  return tf.transpose(image, tf.where(transposed[index], [1, 0, 2],
                                      [0, 1, 2]))
