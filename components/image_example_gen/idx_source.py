"""IDX splits into Beam: the files of a split, its class names, its records.

Before any worker starts, the images and labels files of a split are paired by
their headers and the labels (a byte per image) are checked. The workers read
the images and find a damaged file as they reach it.

`WriteIdxSplit` converts a split with one element per output shard: each
worker reads its shard's records, turns them into Examples and writes the
shard itself, CHUNK_BYTES of pixels at a time. Only those small elements pass
between workers, so no shuffle holds the split in memory. Shard s holds an
even, contiguous share of the records in file order: the same input gives the
same files. The shards go to the workers in turns, and each reads its shards
front to back on one open stream, so a gzipped file is decompressed once per
worker. With a validation percentage, the train split's workers write each
shard twice over: the records validation_split.py hashes into validation, and
the rest.

`IdxToExample` reads a split one Example per element, for TFX's hash split.
"""

import os
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

from absl import logging
import apache_beam as beam
import numpy as np
import tensorflow as tf

from components.image_example_gen import idx
from components.image_example_gen import progress
from components.image_example_gen import tfrecord_sink
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
    # The header only: the data of an images file is checked as the workers
    # read it (a labels file, a byte per image, is read whole below).
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
  """The one geometry of every split's images.

  Raises:
    InputDataError: splits of different geometries (a model takes one).
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
  largest = max(max(int(values.max()) for _, values in idx.iter_items(labels))
                for _, labels in splits)
  return [str(i) for i in range(largest + 1)]


def _check_labels(labels: idx.IdxHeader, class_names: Sequence[str]) -> None:
  """Every label in 0..len(class_names)-1; read a block at a time."""
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


def records_per_chunk(images: idx.IdxHeader) -> int:
  """The records of at most CHUNK_BYTES of pixels (at least one)."""
  return max(1, CHUNK_BYTES // images.item_size)


def shard_ranges(count: int, num_shards: int) -> List[Tuple[int, int]]:
  """[start, stop) of each shard, in file order, as even as can be."""
  bounds = np.linspace(0, count, num_shards + 1).astype(int)
  return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


class _Reader:
  """Reads record ranges of one split's files into serialized Examples.

  Keeps its streams open from one range to the next (reading forward
  continues them), and checks that the images file ends where its header
  says once its last record is read. Plain values only until first used:
  Beam pickles it with its DoFn.
  """

  def __init__(self, files: SplitFiles, encoding: str,
               input_base: Optional[str] = None):
    self._images, self._labels = files
    self._encoding = encoding
    # A record's source: its place in the images file, as MNIST's
    # label-error lists cite it; the file relative to the input base (its
    # span folder in front, with spans), as image folders' sources are.
    name = (os.path.relpath(self._images.path, input_base).replace(
        os.sep, '/') if input_base else os.path.basename(self._images.path))
    self._source_prefix = (name + ':').encode()
    self._geometry = geometry(self._images)
    self._per_chunk = records_per_chunk(self._images)
    self._readers = None
    self._progress = progress.SplitProgress(
        os.path.basename(self._images.path), self._images.count)

  def _chunks(self, start: int, stop: int
              ) -> Iterator[Tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(images, labels, indices in the file) of records [start, stop), a
    chunk at a time."""
    if self._readers is None:
      self._readers = (idx.ItemReader(self._images),
                       idx.ItemReader(self._labels))
    images_reader, labels_reader = self._readers
    for a in range(start, stop, self._per_chunk):
      b = min(stop, a + self._per_chunk)
      yield (images_reader.read(a, b), labels_reader.read(a, b),
             np.arange(a, b))
      self._progress.add(b - a)
    if stop == self._images.count and stop > start:
      images_reader.check_end()

  def _examples(self, images: np.ndarray, labels: np.ndarray,
                indices: np.ndarray) -> List[bytes]:
    if not len(images):
      return []
    return features.make_examples(
        images, labels, self._geometry, self._encoding,
        sources=[b'%d' % i for i in indices.tolist()],
        source_prefix=self._source_prefix)

  def examples(self, start: int, stop: int) -> Iterator[List[bytes]]:
    """Yields lists of serialized Examples of records [start, stop)."""
    for chunk in self._chunks(start, stop):
      yield self._examples(*chunk)

  def split_examples(self, start: int, stop: int, validation_percent: int
                     ) -> Iterator[Tuple[List[bytes], List[bytes]]]:
    """Yields (train, validation) lists of Examples of records [start, stop).

    The records are split by a hash of each image's pixels.
    """
    for images, labels, indices in self._chunks(start, stop):
      chosen = validation_split.mask(
          [image.tobytes() for image in images], validation_percent)
      yield (self._examples(images[~chosen], labels[~chosen],
                            indices[~chosen]),
             self._examples(images[chosen], labels[chosen], indices[chosen]))

  def close(self) -> None:
    for reader in self._readers or ():
      reader.close()
    self._readers = None


class _ShardToExamples(beam.DoFn):
  """(start, stop) -> the serialized Examples of those records, one by one."""

  def __init__(self, files: SplitFiles, encoding: str,
               input_base: Optional[str] = None):
    self._reader = _Reader(files, encoding, input_base)

  def process(self, shard: Tuple[int, int]):
    for examples in self._reader.examples(*shard):
      yield from examples

  def teardown(self):
    self._reader.close()


class _WriteShard(beam.DoFn):
  """(shard, [(start, stop)]) -> writes that shard's file (and, with a
  validation split, that shard of validation too); yields their paths."""

  def __init__(self, files: SplitFiles, encoding: str, split_uri: str,
               num_shards: int, validation_uri: Optional[str] = None,
               validation_percent: int = 0, first_shard: int = 0,
               total_shards: Optional[int] = None,
               input_base: Optional[str] = None):
    self._reader = _Reader(files, encoding, input_base)
    self._split_uri = split_uri
    self._first_shard = first_shard
    self._num_shards = total_shards or num_shards
    self._validation_uri = validation_uri
    self._validation_percent = validation_percent

  def process(self, element: Tuple[int, Iterable[Tuple[int, int]]]):
    shard, ranges = element
    (start, stop), = ranges  # One range per shard key.
    shard += self._first_shard
    path = tfrecord_sink.shard_path(self._split_uri, shard, self._num_shards)
    if not self._validation_uri:
      tfrecord_sink.write_shard(path, self._reader.examples(start, stop))
      yield path
      return
    validation_path = tfrecord_sink.shard_path(
        self._validation_uri, shard, self._num_shards)
    tfrecord_sink.write_shards(
        [path, validation_path],
        self._reader.split_examples(start, stop, self._validation_percent))
    yield path
    yield validation_path

  def teardown(self):
    self._reader.close()


def _log_split(files: SplitFiles, class_names: Sequence[str]) -> None:
  images, labels = files
  _check_labels(labels, class_names)
  logging.info('IDX split: %d images of %s from %s', images.count,
               geometry(images), images.path)


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(bytes)
def IdxToExample(  # pylint: disable=invalid-name
    pipeline: beam.Pipeline, files: SplitFiles, class_names: Sequence[str],
    num_shards: int, encoding: str = 'raw',
    input_base: Optional[str] = None) -> beam.pvalue.PCollection:
  """Reads one split's files (from `split_files`) into serialized Examples.

  One Example per element, as TFX's GenerateExamplesByBeam reads a split;
  records' sources are relative to `input_base` if given.
  """
  _log_split(files, class_names)
  images, _ = files
  return (pipeline
          | 'Shards' >> beam.Create(shard_ranges(images.count, num_shards),
                                    reshuffle=False)
          | 'Distribute' >> beam.Reshuffle()
          | 'ToExamples' >> beam.ParDo(_ShardToExamples(files, encoding,
                                                        input_base)))


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(str)
def WriteIdxSplit(  # pylint: disable=invalid-name
    pipeline: beam.Pipeline, files: SplitFiles, class_names: Sequence[str],
    num_shards: int, encoding: str, split_uri: str,
    validation_uri: Optional[str] = None,
    validation_percent: int = 0, first_shard: int = 0,
    total_shards: Optional[int] = None,
    input_base: Optional[str] = None) -> beam.pvalue.PCollection:
  """Converts one split's files into num_shards gzipped TFRecord files.

  Args:
    files: the split's files, from `split_files`.
    split_uri: the folder of the files.
    validation_uri: if given, the records validation_split.py hashes into the
      validation split (validation_percent of them) go to num_shards files
      there instead.
    first_shard, total_shards: with a window of spans several inputs share an
      output split; these are its shards first_shard... of total_shards.
    input_base: records' sources are relative to it, if given.

  Returns:
    The paths written.
  """
  _log_split(files, class_names)
  images, _ = files
  return (pipeline
          | 'Shards' >> beam.Create(
              list(enumerate(shard_ranges(images.count, num_shards))),
              reshuffle=False)
          # Keyed by shard: the workers get the shards in turns, each in
          # increasing order (see the module docstring).
          | 'Deal' >> beam.GroupByKey()
          | 'Write' >> beam.ParDo(_WriteShard(
              files, encoding, split_uri, num_shards, validation_uri,
              validation_percent, first_shard, total_shards, input_base)))
