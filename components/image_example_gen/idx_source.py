"""IDX splits into Beam: the files of a split, its class names, its records.

Before any worker starts, the images and labels files of a split are paired
by their headers and the labels are checked; the workers read the images
(`Reader`) and find a damaged file as they reach it. Shard s holds an even,
contiguous share of the records in file order (`shard_ranges`).
"""

import os
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

from absl import logging
import numpy as np
import tensorflow as tf

from components.image_example_gen import idx
from components.image_example_gen import progress
from components.image_example_gen import validation_split
from components.image_example_gen.errors import InputDataError
from records import features

# The most bytes of pixels a worker reads, turns into Examples and writes
# at once (a chunk); its Examples, their framing and gzip take a few times
# that again.
CHUNK_BYTES = 8 << 20

# A split's files: (images, labels).
SplitFiles = Tuple[idx.IdxHeader, idx.IdxHeader]


def split_files(split_pattern: str) -> SplitFiles:
  """Finds, validates and pairs the images and labels files of a split."""
  paths = sorted(tf.io.gfile.glob(split_pattern))
  if not paths:
    raise InputDataError(split_pattern, 'no files match this split pattern')
  images, labels = [], []
  for path in paths:
    # Images are checked as the workers read them; labels here, whole.
    header = idx.read_header(path)
    if len(header.shape) == 1:
      labels.append(idx.validate(path))
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
  image_header, label_header = images[0], labels[0]
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


def geometry(header: idx.IdxHeader) -> features.ImageGeometry:
  """The image geometry an images file's header declares."""
  channels = header.shape[3] if len(header.shape) == 4 else 1
  try:
    return features.ImageGeometry(header.shape[1], header.shape[2], channels)
  except ValueError as e:
    raise InputDataError(header.path, str(e)) from e


def dataset_geometry(splits: Iterable[SplitFiles]) -> features.ImageGeometry:
  """The one geometry of every split's images."""
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
  largest = max(max(int(values.max()) for _, values in idx.iter_items(labels))
                for _, labels in splits)
  return [str(i) for i in range(largest + 1)]


def _check_labels(labels: idx.IdxHeader, class_names: Sequence[str]) -> None:
  bad_count, first = 0, None
  for start, values in idx.iter_items(labels):
    bad = (values < 0) | (values >= len(class_names))
    if bad.any():
      bad_count += int(bad.sum())
      if first is None:
        at = int(bad.argmax())
        first = (int(values[at]), start + at)
  if bad_count:
    raise InputDataError(
        labels.path, f'{bad_count} labels outside the class range '
        f'0..{len(class_names) - 1} (first: label {first[0]} of '
        f'record {first[1]})')


def shard_ranges(count: int, num_shards: int) -> List[Tuple[int, int]]:
  """[start, stop) of each shard, in file order, as even as can be."""
  bounds = np.linspace(0, count, num_shards + 1).astype(int)
  return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


class Reader:
  """Reads record ranges of a split into Examples: tfrecord_sink.WriteShards'
  source, a shard's work (start, stop); with validation_percent, it yields
  (train, validation) lists."""

  def __init__(self, files: SplitFiles, encoding: str,
               input_base: Optional[str] = None,
               validation_percent: int = 0):
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
    self._progress = progress.SplitProgress(
        os.path.basename(self._images.path), self._images.count)

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
    """Yields the Examples of records [start, stop), a chunk at a time."""
    del skipped  # A damaged IDX file fails the run.
    start, stop = work
    if self._readers is None:
      self._readers = (idx.ItemReader(self._images),
                       idx.ItemReader(self._labels))
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


def log_split(files: SplitFiles, class_names: Sequence[str]) -> None:
  """Checks a split's labels against the class names and logs its size."""
  images, labels = files
  _check_labels(labels, class_names)
  logging.info('IDX split: %d images of %s from %s', images.count,
               geometry(images), images.path)
