"""Images decoded in TensorFlow: the records' `image` bytes, and image files.

Records are checked against the configured geometry, alike for training,
evaluation and serving (docs/input-data.md); image files sent to serving are
turned upright by their EXIF orientation and resized to it (docs/serving.md).
"""

from typing import Dict, List, NamedTuple

import tensorflow as tf

from records import features
from records import serving_model


def _geometry_checks(heights: tf.Tensor, widths: tf.Tensor,
                     channels: tf.Tensor,
                     geometry: features.ImageGeometry) -> List[tf.Operation]:
  # Plain Assert ops with string-only messages. tf.debugging.assert_equal
  # wraps its Assert in a tf.cond when the message holds numbers, and three
  # conds per batch cost much of the graph's CPU time (BENCHMARKS.md,
  # section 2, the transform stage).
  return [
      tf.debugging.Assert(
          tf.reduce_all(tf.equal(values, expected)),
          [f'image {key} differs from the configured geometry {geometry} '
           '(height x width x channels)'])
      for key, values, expected in (
          (features.HEIGHT_KEY, heights, geometry.height),
          (features.WIDTH_KEY, widths, geometry.width),
          (features.CHANNELS_KEY, channels, geometry.channels))]


def decode_images(inputs: Dict[str, tf.Tensor],
                  geometry: features.ImageGeometry,
                  encoding: str = 'raw') -> tf.Tensor:
  """Decodes `image` bytes to uint8 [batch, height, width, channels].

  Args:
    inputs: parsed features of a batch of records (records/features.py).
    geometry: the geometry the model was configured for.
    encoding: one of features.IMAGE_ENCODINGS.

  Returns:
    The images, with ops that fail with a readable message when the records'
    geometry is another.
  """
  checks = _geometry_checks(inputs[features.HEIGHT_KEY],
                            inputs[features.WIDTH_KEY],
                            inputs[features.CHANNELS_KEY], geometry)
  raw = tf.reshape(inputs[features.IMAGE_KEY], [-1])
  if encoding != 'raw':
    return _decode_encoded(raw, checks, geometry)
  checks.append(tf.debugging.Assert(
      tf.reduce_all(tf.equal(tf.strings.length(raw), geometry.num_bytes)),
      [f'image must hold {geometry.num_bytes} bytes: raw uint8 pixels of the '
       f'configured geometry {geometry} (height x width x channels)']))
  with tf.control_dependencies(checks):
    raw = tf.identity(raw)
  pixels = tf.io.decode_raw(raw, tf.uint8)
  return tf.reshape(pixels, [-1, *geometry.shape])


def _decode_encoded(files: tf.Tensor, checks: List[tf.Operation],
                    geometry: features.ImageGeometry) -> tf.Tensor:
  """PNG or JPEG files [batch] to uint8 [batch, height, width, channels]."""
  with tf.control_dependencies(checks):
    files = tf.identity(files)

  def decode(data: tf.Tensor) -> tf.Tensor:
    image = tf.io.decode_image(data, channels=geometry.channels,
                               expand_animations=False)
    shape = tf.shape(image)
    # The file's own size, which the height and width features may belie.
    with tf.control_dependencies(
        _geometry_checks(shape[0], shape[1], shape[2], geometry)):
      return tf.reshape(image, geometry.shape)

  return tf.map_fn(decode, files,
                   fn_output_signature=tf.TensorSpec(geometry.shape, tf.uint8),
                   parallel_iterations=16)  # A batch's decodes side by side.


def check_images(images: tf.Tensor,
                 geometry: features.ImageGeometry) -> tf.Tensor:
  """Checks uint8 [N, H, W] or [N, H, W, C] images against `geometry`.

  Returns:
    The images as [N, H, W, C] of `geometry`, with ops that fail with the
    messages `decode_images` gives for another geometry, or with one naming
    the shapes accepted.
  """
  rank_check = tf.debugging.assert_rank_in(
      images, [3, 4], message='images must be uint8 [N, H, W] or [N, H, W, C]')
  # Checked before anything slices the shape, which would fail less clearly.
  with tf.control_dependencies([rank_check]):
    images = tf.identity(images)
  shape = tf.shape(images)
  images = tf.reshape(images, [shape[0], shape[1], shape[2], -1])
  shape = tf.shape(images)
  with tf.control_dependencies(
      _geometry_checks(shape[1], shape[2], shape[3], geometry)):
    return tf.reshape(images, [-1, *geometry.shape])


# Image files, as serving is sent them.
IMAGE_FORMATS = tuple(serving_model.IMAGE_FILE_MAGIC.values())
_JPEG, _PNG = (next(magic for magic, name in
                    serving_model.IMAGE_FILE_MAGIC.items() if name == format_)
               for format_ in ('JPEG', 'PNG'))
# Pillow's RGB to L: (R*19595 + G*38470 + B*7471 + 0x8000) >> 16.
_LUMA = (19595, 38470, 7471)
# ImageExampleGen's background for transparent pixels: one level, white.
_BACKGROUND = float(features.TRANSPARENT_BACKGROUND[0])


def check_formats(files: tf.Tensor) -> tf.Operation:
  """Returns an op that fails unless every file is a PNG, JPEG, GIF or BMP file.

  Its message names the first offending position in the batch. WebP, TIFF,
  HEIF and AVIF files, which image folders may hold, are refused too, since
  TensorFlow does not decode them. The predict command converts them.
  """
  known = tf.zeros_like(files, tf.bool)
  for magic in serving_model.IMAGE_FILE_MAGIC:
    known |= tf.equal(tf.strings.substr(files, 0, len(magic)), magic)
  first_bad = tf.argmax(tf.cast(tf.logical_not(known), tf.int32),
                        output_type=tf.int32)
  return tf.debugging.Assert(
      tf.reduce_all(known),
      ['image_bytes: the file at batch position', first_bad,
       f'is not a {", ".join(IMAGE_FORMATS)} file (convert WebP, TIFF, HEIF '
       'and AVIF files to PNG first, as image-pipeline-predict does)'])


def _to_rgb(image: tf.Tensor) -> tf.Tensor:
  """uint8 [H, W, 1..4] as decoded to float [H, W, 3], alpha composited."""
  pixels = tf.cast(image, tf.float32)
  channels = tf.shape(image)[-1]

  def composite(colour, alpha):
    alpha = alpha / 255.0
    return colour * alpha + _BACKGROUND * (1.0 - alpha)

  def grey():
    return tf.tile(pixels[..., :1], [1, 1, 3])

  def grey_alpha():
    return tf.tile(composite(pixels[..., :1], pixels[..., 1:2]), [1, 1, 3])

  def rgb():
    return pixels[..., :3]

  def rgba():
    return composite(pixels[..., :3], pixels[..., 3:4])

  return tf.round(tf.switch_case(channels - 1, [grey, grey_alpha, rgb, rgba]))


def _to_channels(rgb: tf.Tensor, channels: int) -> tf.Tensor:
  if channels == 3:
    return rgb
  weighted = tf.cast(rgb, tf.int32) * tf.constant(_LUMA, tf.int32)
  return tf.cast(tf.bitwise.right_shift(
      tf.reduce_sum(weighted, axis=-1, keepdims=True) + 0x8000, 16),
                 tf.float32)


def _resize(image: tf.Tensor, geometry: features.ImageGeometry) -> tf.Tensor:
  size = tf.shape(image)[:2]
  same = tf.reduce_all(tf.equal(size, [geometry.height, geometry.width]))
  return tf.cond(
      same, lambda: image,
      lambda: tf.image.resize(image, [geometry.height, geometry.width],
                              'bilinear', antialias=True))


def decode_file(data: tf.Tensor, geometry: features.ImageGeometry) -> tf.Tensor:
  """Decodes one image file (a scalar string) to uint8 pixels of `geometry`."""
  # JPEG: the accurate integer IDCT, as Pillow's libjpeg uses; TensorFlow's
  # default (the fast one) shifts many pixels by a level or two.
  jpeg = tf.equal(tf.strings.substr(data, 0, len(_JPEG)), _JPEG)
  image = tf.cond(
      jpeg, lambda: tf.io.decode_jpeg(data, dct_method='INTEGER_ACCURATE'),
      lambda: tf.io.decode_image(data, expand_animations=False,
                                 dtype=tf.uint8))
  # The two formats' metadata, then one reading of it.
  metadata = tf.case(
      [(jpeg, lambda: jpeg_metadata(data)),
       (tf.equal(tf.strings.substr(data, 0, len(_PNG)), _PNG),
        lambda: png_metadata(data))],
      default=Metadata.none)
  image = transpose(
      image, orientation_of(metadata))
  image = _resize(_to_channels(_to_rgb(image), geometry.channels), geometry)
  pixels = tf.cast(tf.clip_by_value(tf.round(image), 0, 255), tf.uint8)
  return tf.ensure_shape(pixels, geometry.shape)


def decode_files(files: tf.Tensor,
                 geometry: features.ImageGeometry) -> tf.Tensor:
  """Decodes image files, string [N], to uint8 [N, H, W, C] of `geometry`.

  One file that is not an image fails the whole batch, since a serving graph
  answers a request or rejects it.
  """
  with tf.control_dependencies([check_formats(files)]):
    files = tf.identity(files)
  return tf.map_fn(lambda data: decode_file(data, geometry), files,
                   fn_output_signature=tf.TensorSpec(geometry.shape, tf.uint8),
                   parallel_iterations=16)


# An image file's EXIF orientation, read with string ops (TF Serving runs
# them too) by the rules of Pillow's `ImageOps.exif_transpose`. Which tags
# are read: docs/serving.md.
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
