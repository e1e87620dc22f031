"""The one place that defines the Examples format: features, splits, geometry.

Everyone imports the feature keys from here, so none is spelled twice.
The format: docs/input-data.md#the-examples-format.
"""

import dataclasses
import functools
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

IMAGE_KEY = 'image'
HEIGHT_KEY = 'height'
WIDTH_KEY = 'width'
CHANNELS_KEY = 'channels'
LABEL_KEY = 'label'
PIXEL_MIN_KEY = 'pixel_min'
PIXEL_MAX_KEY = 'pixel_max'
SOURCE_KEY = 'source'
PIXEL_RANGE_KEYS = (PIXEL_MIN_KEY, PIXEL_MAX_KEY)
# For data checks only: neither the model nor a serving request needs them.
DATA_CHECK_KEYS = (*PIXEL_RANGE_KEYS, SOURCE_KEY)
FEATURE_KEYS = (IMAGE_KEY, HEIGHT_KEY, WIDTH_KEY, CHANNELS_KEY, LABEL_KEY,
                *PIXEL_RANGE_KEYS, SOURCE_KEY)

# The splits of the Examples ImageExampleGen writes.
TRAIN_SPLIT = 'train'
# Carved out of train (--validation-percent), or a folder of its own.
VALIDATION_SPLIT = 'validation'
EVAL_SPLIT = 'eval'
# Of a window of spans, the older spans' eval: the newest span's alone is
# judged by default (docs/schedule.md).
EARLIER_EVAL_SPLIT = 'earlier_eval'

# Class names travel with the data twice: as a custom property of the Examples
# artifact (visible in ML Metadata) and as a vocabulary file next to the
# splits (readable by any component that only sees the artifact's URI).
CLASS_NAMES_PROPERTY = 'class_names'
CLASS_NAMES_FILE = 'class_names.txt'

# The geometry of the images, as ExampleGen found it (IDX files: their
# headers; image folders: what it converted them to), as custom properties
# of the Examples artifact: Transform and Trainer take it from there.
GEOMETRY_PROPERTIES = ('image_height', 'image_width', 'image_channels')
# On the Examples artifact of image folders: how the geometry was chosen,
# GEOMETRY_GIVEN (by the options) or what ExampleGen inferred it from.
GEOMETRY_CHOICE_PROPERTY = 'image_geometry_chosen'
GEOMETRY_GIVEN = 'set by the options'

# How the `image` bytes hold the pixels, one encoding per Examples artifact,
# recorded as its custom property: raw uint8 pixels, or a PNG file (lossless)
# or a JPEG file (lossy, at JPEG_QUALITY) of them.
IMAGE_ENCODINGS = ('raw', 'png', 'jpeg')
IMAGE_ENCODING_PROPERTY = 'image_encoding'
JPEG_QUALITY = 95
# Transparent pixels are stored composited on white: transparent images
# (icons, cut-out product shots, line art) are drawn to be shown on a light
# page, and on black their dark strokes would vanish.
TRANSPARENT_BACKGROUND = (255, 255, 255)
# ExampleGen's choice by image size: PNG from `png_min_pixels` (height x
# width) up, raw below (resolve_encoding). The artifact records the result.
AUTO_ENCODING = 'auto'

# Images skipped as unreadable (ExampleGen's skip_bad_images option): their
# number and a JSON list of the first ones ({split, path, reason}) as custom
# properties of the Examples artifact, and the full list in a JSON file next
# to the splits.
SKIPPED_IMAGES_PROPERTY = 'skipped_images'
SKIPPED_IMAGES_LIST_PROPERTY = 'skipped_images_list'
SKIPPED_IMAGES_FILE = 'skipped_images.json'

# Hidden, OS and sidecar files found among an image folder's images
# (.DS_Store, Thumbs.db, ._name AppleDouble files, .xmp, a Live Photo's
# .mov...) and left out: their number, a JSON list of the first ones
# ({split, path}) and, when there are any, the full list in a JSON file next
# to the splits.
OS_FILES_PROPERTY = 'os_files_left_out'
OS_FILES_LIST_PROPERTY = 'os_files_left_out_list'
OS_FILES_FILE = 'os_files_left_out.json'

SUPPORTED_CHANNELS = (1, 3)


@dataclasses.dataclass(frozen=True)
class ImageGeometry:
  """Height, width and channel count of every image in a dataset."""
  height: int
  width: int
  channels: int

  def __post_init__(self):
    if self.height <= 0 or self.width <= 0:
      raise ValueError(f'image size must be positive, got {self.height}x{self.width}')
    if self.channels not in SUPPORTED_CHANNELS:
      raise ValueError(
          f'channels must be one of {SUPPORTED_CHANNELS}, got {self.channels}')

  @property
  def num_bytes(self) -> int:
    """The size in bytes of one image's raw uint8 pixels."""
    return self.height * self.width * self.channels

  @property
  def shape(self):
    """The image's (height, width, channels)."""
    return (self.height, self.width, self.channels)

  def __str__(self):
    return f'{self.height}x{self.width}x{self.channels}'

  def to_dict(self) -> Dict[str, int]:
    """Returns the geometry as {GEOMETRY_PROPERTIES: values}."""
    return dict(zip(GEOMETRY_PROPERTIES, self.shape))

  @classmethod
  def from_dict(cls, d: Dict[str, Any]) -> 'ImageGeometry':
    """The geometry of a dict keyed by GEOMETRY_PROPERTIES (as `to_dict`)."""
    return cls(*(int(d[key]) for key in GEOMETRY_PROPERTIES))


MNIST_GEOMETRY = ImageGeometry(height=28, width=28, channels=1)


def resolve_encoding(encoding: str, geometry: 'ImageGeometry',
                     png_min_pixels: Optional[int]) -> str:
  """Returns the encoding that records of `geometry` get.

  Args:
    encoding: one of IMAGE_ENCODINGS, returned as is, or AUTO_ENCODING.
    geometry: the records' image geometry.
    png_min_pixels: with AUTO_ENCODING, the pixels (height x width) from
      which images are png; smaller ones are raw.

  Raises:
    ValueError: `encoding` is AUTO_ENCODING and `png_min_pixels` is None.
  """
  if encoding != AUTO_ENCODING:
    return encoding
  if png_min_pixels is None:
    raise ValueError(f'image encoding {AUTO_ENCODING!r} needs png_min_pixels')
  return 'png' if geometry.height * geometry.width >= png_min_pixels else 'raw'


def encode_image(pixels: bytes, geometry: ImageGeometry, encoding: str) -> bytes:
  """Raw uint8 pixels of `geometry` as the `image` bytes of `encoding`.

  Args:
    pixels: one image's raw uint8 pixels, height x width x channels.
    geometry: the image's geometry.
    encoding: one of IMAGE_ENCODINGS; 'raw' returns `pixels` as they are.

  Raises:
    ValueError: `encoding` is not one of IMAGE_ENCODINGS.
  """
  if encoding == 'raw':
    return pixels
  if encoding not in IMAGE_ENCODINGS:
    raise ValueError(f'image encoding must be one of {IMAGE_ENCODINGS}, '
                     f'got {encoding!r}')
  import io  # pylint: disable=g-import-not-at-top
  from PIL import Image  # pylint: disable=g-import-not-at-top
  array = np.frombuffer(pixels, np.uint8).reshape(geometry.shape)
  image = Image.fromarray(array[..., 0] if geometry.channels == 1 else array,
                          'L' if geometry.channels == 1 else 'RGB')
  buffer = io.BytesIO()
  if encoding == 'png':
    image.save(buffer, 'PNG', compress_level=1)  # Fast; still lossless.
  else:
    image.save(buffer, 'JPEG', quality=JPEG_QUALITY)
  return buffer.getvalue()


def make_example(image: bytes, geometry: ImageGeometry, label: int,
                 encoding: str = 'raw', *, source: str) -> bytes:
  """Returns one serialized `tf.train.Example` in the format above.

  Args:
    image: the image's raw uint8 pixels.
    geometry: the image's geometry.
    label: its class index.
    encoding: one of IMAGE_ENCODINGS.
    source: the input it came from.

  Raises:
    ValueError: `image` does not hold the bytes of `geometry`.
  """
  return _add_source(_example_without_source(image, geometry, label, encoding),
                     source.encode())


def _example_without_source(image: bytes, geometry: ImageGeometry, label: int,
                            encoding: str) -> bytes:
  """A serialized Example of every feature but `source`."""
  # Imported here so that modules which only need the keys stay light.
  from tensorflow.core.example import example_pb2  # pylint: disable=g-import-not-at-top
  if len(image) != geometry.num_bytes:
    raise ValueError(
        f'image has {len(image)} bytes, geometry {geometry} needs {geometry.num_bytes}')
  example = example_pb2.Example()
  feature = example.features.feature
  feature[IMAGE_KEY].bytes_list.value.append(
      encode_image(image, geometry, encoding))
  feature[HEIGHT_KEY].int64_list.value.append(geometry.height)
  feature[WIDTH_KEY].int64_list.value.append(geometry.width)
  feature[CHANNELS_KEY].int64_list.value.append(geometry.channels)
  feature[LABEL_KEY].int64_list.value.append(int(label))
  pixels = np.frombuffer(image, np.uint8)
  feature[PIXEL_MIN_KEY].int64_list.value.append(int(pixels.min()))
  feature[PIXEL_MAX_KEY].int64_list.value.append(int(pixels.max()))
  return example.SerializeToString()


def make_examples(images: np.ndarray, labels: np.ndarray,
                  geometry: ImageGeometry, encoding: str = 'raw', *,
                  sources: Sequence[bytes],
                  source_prefix: bytes = b'') -> List[bytes]:
  """Returns what `make_example` returns for many images, far faster.

  Args:
    images: uint8 [N, height, width(, channels)] of `geometry`.
    labels: [N] class indices.
    geometry: the images' geometry.
    encoding: one of IMAGE_ENCODINGS.
    sources: [N] UTF-8 sources, each without `source_prefix`. IDX records
      share their file's name as the prefix and differ in their index.
    source_prefix: what every source starts with.

  Returns:
    [N] serialized Examples, byte for byte those of `make_example`.

  Raises:
    ValueError: the images do not match `geometry`, or `sources` has
      another length.
  """
  # Every raw Example of one label and pixel range serializes to the same
  # bytes around its pixels, and `_add_source` writes `source` last. So one
  # `make_example` per (label, pixel_min, pixel_max) gives a template, and
  # each record is joined from its pieces and its own bytes. The features'
  # length depends on the source's length, so pieces are kept per template
  # and source length. PNG and JPEG records are built one by one.
  pixels = np.ascontiguousarray(images, dtype=np.uint8).reshape(len(images), -1)
  if pixels.shape[1] != geometry.num_bytes:
    raise ValueError(f'images have {pixels.shape[1]} bytes each, geometry '
                     f'{geometry} needs {geometry.num_bytes}')
  if len(sources) != len(pixels):
    raise ValueError(f'{len(pixels)} images but {len(sources)} sources')
  if encoding != 'raw':  # Each image encodes to bytes of its own.
    return [make_example(image.tobytes(), geometry, label, encoding,
                         source=(source_prefix + source).decode())
            for image, label, source in zip(pixels, labels.tolist(), sources)]
  # (label, pixel_min, pixel_max, source length after the prefix).
  keys = zip(labels.tolist(), pixels.min(axis=1).tolist(),
             pixels.max(axis=1).tolist(), map(len, sources))
  templates: Dict[Tuple[int, int, int], Tuple[bytes, bytes]] = {}
  pieces: Dict[Tuple[int, int, int, int], Tuple[bytes, bytes]] = {}
  # Each image a view of the pixels, joined with its pieces in one copy.
  size = geometry.num_bytes
  flat = memoryview(pixels.reshape(-1))
  records = []
  for start, key, source in zip(range(0, len(pixels) * size, size), keys,
                                sources):
    image = flat[start:start + size]
    piece = pieces.get(key)
    if piece is None:
      if key[:3] not in templates:
        templates[key[:3]] = _template(_features_body(_example_without_source(
            image.tobytes(), geometry, key[0], 'raw')), image.tobytes())
      piece = pieces[key] = _pieces(*templates[key[:3]], size, source_prefix,
                                    len(source))
    records.append(b''.join((piece[0], image, piece[1], source)))
  return records


def _pieces(body_prefix: bytes, body_suffix: bytes, image_length: int,
            source_prefix: bytes, source_rest: int) -> Tuple[bytes, bytes]:
  """Returns the bytes of a record around its image.

  The first piece comes before the image: the header and the template's
  prefix. The second comes between the image and the rest of its source:
  the template's suffix, the source entry's head and `source_prefix`. The
  pieces fit sources of len(source_prefix) + `source_rest` bytes.
  """
  source_length = len(source_prefix) + source_rest
  head = _source_entry_head(source_length)
  length = (len(body_prefix) + image_length + len(body_suffix) + len(head) +
            source_length)
  return (b'\x0a' + _varint(length) + body_prefix,
          body_suffix + head + source_prefix)


def _varint(value: int) -> bytes:
  """`value` (>= 0) as a protobuf varint."""
  out = b''
  while True:
    byte, value = value & 0x7f, value >> 7
    out += bytes([byte | (0x80 if value else 0)])
    if not value:
      return out


def _features_body(record: bytes) -> bytes:
  """Returns the serialized Features inside serialized Example `record`.

  That is its one field, `features` (tag 0x0a), after the tag and length.
  """
  assert record[:1] == b'\x0a', 'not a serialized Example of features'
  start = 1
  while record[start] & 0x80:  # Past the length's varint.
    start += 1
  return record[start + 1:]


@functools.lru_cache(maxsize=None)
def _source_entry_head(length: int) -> bytes:
  """The bytes of the features map's `source` entry before the source
  itself (which ends the entry), for a source of `length` bytes."""
  from tensorflow.core.example import feature_pb2  # pylint: disable=g-import-not-at-top
  message = feature_pb2.Features()
  message.feature[SOURCE_KEY].bytes_list.value.append(b'\0' * length)
  entry = message.SerializeToString()
  return entry[:len(entry) - length]


def _add_source(record: bytes, source: bytes) -> bytes:
  """Serialized Example `record` with the `source` entry last in its
  features map (its fields may come in any order)."""
  body = _features_body(record)
  head = _source_entry_head(len(source))
  return (b'\x0a' + _varint(len(body) + len(head) + len(source)) + body +
          head + source)


def _template(record: bytes, image: bytes) -> Tuple[bytes, bytes]:
  """The bytes of serialized `record` (an Example's features) around `image`.

  The image is BytesList's field 1 (tag 0x0a) of length len(image). Looking
  for tag, length and pixels rather than the pixels alone, no other part of
  the record can match, whatever the pixels hold.
  """
  marker = b'\x0a' + _varint(len(image))
  start = record.find(marker + image) + len(marker)
  assert start >= len(marker), 'image bytes not found in the record'
  return record[:start], record[start + len(image):]


def write_class_names(path: str, names: Sequence[str]) -> None:
  """Writes the vocabulary file of `names`, where line i names class i."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with tf.io.gfile.GFile(path, 'w') as f:
    f.write(''.join(name + '\n' for name in names))


def read_class_names(path: str) -> List[str]:
  """Reads the class names of the vocabulary file `write_class_names` wrote."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with tf.io.gfile.GFile(path) as f:
    return [line.rstrip('\n') for line in f if line.strip()]


def encode_class_names(names: Sequence[str]) -> str:
  """Returns the class names as the JSON of CLASS_NAMES_PROPERTY."""
  return json.dumps(list(names))


def decode_class_names(value: str) -> List[str]:
  """Returns the class names of a CLASS_NAMES_PROPERTY value."""
  return list(json.loads(value))
