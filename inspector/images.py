"""Images and labels out of an Examples artifact, and the sample grid.

Records are the project's format (records/features.py). The grid is drawn
with Pillow at whole scale factors, so every pixel stays exact.
"""

import base64
import io
import math
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from metadata import queries
from metadata.store import InspectError
from records import artifact_files
from records import features
from records import shards

# Records per batch where every record of a shard is read.
SCAN_BATCH = 4096
# Shards read at once: each open reader holds its buffers.
OPEN_SHARDS = 16


def class_names(examples: queries.Artifact) -> List[str]:
  if features.CLASS_NAMES_PROPERTY in examples.properties:
    return features.decode_class_names(
        examples.properties[features.CLASS_NAMES_PROPERTY])
  examples.check_on_disk()
  path = os.path.join(examples.uri, features.CLASS_NAMES_FILE)
  if not artifact_files.exists(path):
    raise InspectError(f'Examples {examples.id}: no class names (neither the '
                       f'{features.CLASS_NAMES_PROPERTY} property nor {path})')
  return features.read_class_names(path)


def _split_files(examples: queries.Artifact, split: str
                 ) -> Tuple[List[str], str]:
  """The split's record files, sorted, and their compression type."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if examples.type != 'Examples':
    raise InspectError(f'artifact {examples.id} is a {examples.type}, not '
                       'Examples')
  if split not in examples.split_names():
    raise InspectError(f'Examples {examples.id} has no split {split!r} '
                       f'(splits: {", ".join(examples.split_names())})')
  examples.check_on_disk()
  paths = tf.io.gfile.glob(os.path.join(examples.uri, f'Split-{split}', '*'))
  if not paths:
    raise InspectError(f'{examples.uri}/Split-{split}: no record files')
  gzipped = examples.properties.get('file_format', '').endswith('gzip')
  return sorted(paths), shards.GZIP if gzipped else ''


def _records(examples: queries.Artifact, split: str):
  paths, compression = _split_files(examples, split)
  return shards.records(paths, compression)


def _parse(serialized):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  spec = {key: tf.io.FixedLenFeature([], tf.int64)
          for key in (features.HEIGHT_KEY, features.WIDTH_KEY,
                      features.CHANNELS_KEY, features.LABEL_KEY)}
  spec[features.IMAGE_KEY] = tf.io.FixedLenFeature([], tf.string)
  return tf.io.parse_example(serialized, spec)


def _image(parsed, i: int, encoded: bool) -> np.ndarray:
  """Record `i` of a parsed batch as HxWxC uint8."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  shape = [int(parsed[k][i]) for k in (features.HEIGHT_KEY,
                                       features.WIDTH_KEY,
                                       features.CHANNELS_KEY)]
  image = parsed[features.IMAGE_KEY][i]
  return (tf.io.decode_image(image, channels=shape[2]).numpy() if encoded
          else np.frombuffer(image.numpy(), np.uint8).reshape(shape))


def _encoded(examples: queries.Artifact) -> bool:
  """Whether ExampleGen wrote PNG or JPEG files (--image-encoding)."""
  return examples.properties.get(features.IMAGE_ENCODING_PROPERTY,
                                 'raw') != 'raw'


def _picked(paths: List[str], pick, limits: Optional[List[int]] = None):
  """Yields (shard number, keys, serialized records) of the records `pick`
  keeps out of each batch of each shard, the shards read in parallel.

  `pick(shard number, positions in the shard, serialized records)` returns
  the kept records' keys and a mask; it runs in TensorFlow, so no Python
  step runs per record read. Shard i is read up to `limits[i]` records.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def read(number, path, compression, limit):
    return (shards.records(path, compression).take(limit)
            .batch(SCAN_BATCH).enumerate()
            .map(lambda batch, records: _keep(number, batch, records, pick))
            .filter(lambda number, keys, records: tf.size(records) > 0))

  numbered = tf.data.Dataset.from_tensor_slices((
      tf.range(len(paths), dtype=tf.int64), paths,
      [shards.compression_of(path) for path in paths],
      tf.constant(limits if limits is not None else [-1] * len(paths),
                  tf.int64)))
  found = numbered.interleave(read,
                              cycle_length=min(len(paths), OPEN_SHARDS),
                              num_parallel_calls=tf.data.AUTOTUNE,
                              deterministic=False)
  for number, keys, records in found:
    yield int(number), keys.numpy(), records


def _keep(number, batch, records, pick):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  positions = batch * SCAN_BATCH + tf.range(tf.size(records, tf.int64))
  keys, mask = pick(number, positions, records)
  return number, tf.boolean_mask(keys, mask), tf.boolean_mask(records, mask)


def records_in(examples: queries.Artifact,
               names: Dict[str, Iterable[str]]
               ) -> Dict[str, Dict[str, np.ndarray]]:
  """{split: {name: HxWxC uint8}} of the records named 'shard file:index'
  in each split, as DataChecks and LabelCheck name them.

  Only the shards that hold one are read, those of every split in one pass,
  each up to its last wanted record.

  Raises:
    InspectError: a named shard is missing.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  wanted: Dict[Tuple[str, str], set] = {}
  for split, split_names in names.items():
    for name in split_names:
      shard, index = shards.parse_place(name)
      wanted.setdefault((split, shard), set()).add(index)
  if not wanted:
    return {}
  for split in {split for split, _ in wanted}:
    _split_files(examples, split)  # The split's checks.
  keys = sorted(wanted)
  paths = [os.path.join(examples.uri, f'Split-{split}', shard)
           for split, shard in keys]
  for path in paths:
    if not artifact_files.exists(path):
      raise InspectError(f'Examples {examples.id}: {path} is missing')
  # Shard i's wanted indices, row i, padded with -1 (never a position).
  width = max(len(indices) for indices in wanted.values())
  table = np.full((len(keys), width), -1, np.int64)
  for row, key in enumerate(keys):
    table[row, :len(wanted[key])] = sorted(wanted[key])
  table = tf.constant(table)

  def pick(number, positions, records):
    del records
    hits = tf.equal(positions[:, None], table[number][None, :])
    return positions, tf.reduce_any(hits, axis=1)

  found: Dict[str, Dict[str, np.ndarray]] = {}
  encoded = _encoded(examples)
  for number, positions, records in _picked(
      paths, pick, [max(wanted[key]) + 1 for key in keys]):
    parsed = _parse(records)
    split, shard = keys[number]
    for i, position in enumerate(positions.tolist()):
      found.setdefault(split, {})[shards.place(shard, position)] = (
          _image(parsed, i, encoded))
  return found


def records_with_sources(examples: queries.Artifact, split: str,
                         sources: Iterable[str]) -> Dict[str, np.ndarray]:
  """{source: HxWxC uint8} of the split's records whose source
  (records/features.py) is one of `sources`.

  For names without the record's place: every shard is read, until all
  are found.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  wanted = sorted(set(sources))
  if not wanted:
    return {}
  paths, _ = _split_files(examples, split)
  table = tf.constant(wanted)
  spec = {features.SOURCE_KEY: tf.io.FixedLenFeature([], tf.string, b'')}

  def pick(number, positions, records):
    del number, positions
    names = tf.io.parse_example(records, spec)[features.SOURCE_KEY]
    hits = tf.equal(names[:, None], table[None, :])
    return names, tf.reduce_any(hits, axis=1)

  found, encoded = {}, _encoded(examples)
  for _, names, records in _picked(paths, pick):
    parsed = _parse(records)
    for i, name in enumerate(names.tolist()):
      found[name.decode()] = _image(parsed, i, encoded)
    if len(found) == len(wanted):
      break
  return found


def samples(examples: queries.Artifact, split: str, per_class: int
            ) -> Dict[int, List[np.ndarray]]:
  """Up to `per_class` images (HxWxC uint8) per label, in file order.

  Reading stops as soon as every class has its images.
  """
  names = class_names(examples)
  found: Dict[int, List[np.ndarray]] = {label: [] for label in range(len(names))}
  encoded = _encoded(examples)
  for batch in _records(examples, split).batch(256):
    parsed = _parse(batch)
    for i, label in enumerate(parsed[features.LABEL_KEY].numpy()):
      bucket = found.setdefault(int(label), [])
      if len(bucket) < per_class:
        bucket.append(_image(parsed, i, encoded))
    if all(len(b) >= per_class for b in found.values()):
      break
  return found


def label_counts(examples: queries.Artifact, split: str) -> Dict[int, int]:
  """Label -> number of records of the split (every record is read, labels
  only: the statistics' label histogram has equal-width buckets, not one
  per class). For runs whose DataChecks did not count them
  (inspector/data.py label_counts)."""
  paths, compression = _split_files(examples, split)
  counts = shards.label_counts(paths, features.LABEL_KEY, compression,
                               OPEN_SHARDS, SCAN_BATCH)
  return {label: int(count) for label, count in enumerate(counts) if count}


_FONT_SIZE = 14
_PAD = 8
_BACKGROUND = (255, 255, 255)
_TEXT = (20, 20, 20)
_GRID = (200, 200, 200)
_CELL_MIN = 56  # Pixels: small images are scaled up by whole factors to this.


def _text_size(text: str, font) -> tuple:
  left, top, right, bottom = font.getbbox(text)
  return right - left, bottom - top


def scale_for(pictures: Iterable[np.ndarray]) -> int:
  """The whole factor that brings the largest of `pictures` to at least
  _CELL_MIN pixels (1 if it is that large)."""
  side = max(max(p.shape[:2]) for p in pictures)
  return max(1, math.ceil(_CELL_MIN / side))


def as_rgb(pixels: np.ndarray, scale: int) -> Image.Image:
  """HxWxC uint8 pixels as an RGB picture, `scale` times larger with every
  pixel kept exact."""
  image = Image.fromarray(pixels[..., 0] if pixels.shape[-1] == 1 else pixels,
                          'L' if pixels.shape[-1] == 1 else 'RGB')
  image = image.convert('RGB')
  return image.resize((image.width * scale, image.height * scale),
                      Image.NEAREST)


def inline_png(picture: Image.Image) -> Dict[str, Any]:
  """{png: a data: URI of `picture` as PNG, width, height}, for a page
  that holds its pictures."""
  png = io.BytesIO()
  picture.save(png, format='PNG')
  return {'png': 'data:image/png;base64,' + base64.b64encode(
      png.getvalue()).decode('ascii'),
          'width': picture.width, 'height': picture.height}


def sample_grid(examples: queries.Artifact, split: str, per_class: int
                ) -> Tuple[Image.Image, Dict[str, int], List[Dict[str, Any]]]:
  """Up to `per_class` images per class of the split, one row per class:
  the picture, the grid's geometry, and each class's label, name and count
  of images drawn."""
  names = class_names(examples)
  found = samples(examples, split, per_class)
  canvas, geometry = draw_samples_grid(
      found, names, f'Examples {examples.id}, split {split}: up to '
      f'{per_class} per class')
  return canvas, geometry, [
      {'label': label, 'name': names[label] if label < len(names) else None,
       'count': len(found[label])} for label in sorted(found)]


def draw_samples_grid(images: Dict[int, List[np.ndarray]],
                      names: Sequence[str], title: str
                      ) -> Tuple[Image.Image, Dict[str, int]]:
  """One row per class: 'label: name', then its images; the picture and
  the grid's geometry."""
  font = ImageFont.load_default(size=_FONT_SIZE)
  shapes = [i.shape for row in images.values() for i in row]
  if not shapes:
    raise InspectError(f'no images to draw for {title}')
  height = max(s[0] for s in shapes)
  width = max(s[1] for s in shapes)
  scale = scale_for(i for row in images.values() for i in row)
  cell_w, cell_h = width * scale, height * scale
  labels = sorted(images)
  captions = [f'{label}: {names[label]}' if label < len(names)
              else f'{label}: (no name)' for label in labels]
  caption_w = max(_text_size(c, font)[0] for c in captions) + 2 * _PAD
  columns = max(1, max(len(images[label]) for label in labels))
  title_h = _text_size(title, font)[1] + 2 * _PAD
  canvas = Image.new(
      'RGB', (caption_w + columns * (cell_w + _PAD) + _PAD,
              title_h + len(labels) * (cell_h + _PAD) + _PAD), _BACKGROUND)
  draw = ImageDraw.Draw(canvas)
  draw.text((_PAD, _PAD), title, fill=_TEXT, font=font)
  for row, (label, caption) in enumerate(zip(labels, captions)):
    top = title_h + row * (cell_h + _PAD)
    draw.text((_PAD, top + cell_h // 2), caption, fill=_TEXT, font=font,
              anchor='lm')
    if not images[label]:
      draw.text((caption_w, top + cell_h // 2), '(none in this split)',
                fill=_GRID, font=font, anchor='lm')
    for column, pixels in enumerate(images[label]):
      canvas.paste(as_rgb(pixels, scale),
                   (caption_w + column * (cell_w + _PAD), top))
  # Where image (row r, column c) is: left + c * step_x, top + r * step_y,
  # scaled `scale` times.
  return canvas, {'left': caption_w, 'top': title_h, 'step_x': cell_w + _PAD,
                  'step_y': cell_h + _PAD, 'scale': scale}
