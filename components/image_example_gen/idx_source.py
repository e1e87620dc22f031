"""IDX splits into Beam: the files of a split, its class names, its records.

idx.py reads IDX files; this module plans and runs the reading of a whole
split through Beam: it pairs and checks the images and labels files before
any worker starts, checks the labels against the class names, and cuts the
split into chunks that workers turn into lists of serialized Examples.
"""

import os
from typing import Iterable, List, Sequence, Tuple

from absl import logging
import apache_beam as beam
import numpy as np
import tensorflow as tf

from components.image_example_gen import idx
from components.image_example_gen import progress
from components.image_example_gen.errors import InputDataError
from records import features

# IDX files are read in chunks of at most this many records, one chunk per
# work item and a whole number of chunks per output shard.
_RECORDS_PER_CHUNK = 10_000

# A split's files: (images, labels).
SplitFiles = Tuple[idx.IdxHeader, idx.IdxHeader]


def split_files(split_pattern: str) -> SplitFiles:
  """Finds, validates and pairs the images and labels files of a split."""
  paths = sorted(tf.io.gfile.glob(split_pattern))
  if not paths:
    raise InputDataError(split_pattern, 'no files match this split pattern')
  images, labels = [], []
  for path in paths:
    header = idx.validate(path)
    if len(header.shape) == 1:
      labels.append(header)
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
  largest = max(int(idx.read_all(labels).max()) for _, labels in splits)
  return [str(i) for i in range(largest + 1)]


def _check_labels(labels: idx.IdxHeader, class_names: Sequence[str]) -> None:
  values = idx.read_all(labels)
  bad = (values < 0) | (values >= len(class_names))
  if bad.any():
    first = int(bad.argmax())
    raise InputDataError(
        labels.path, f'{int(bad.sum())} labels outside the class range '
        f'0..{len(class_names) - 1} (first: label {int(values[first])} of '
        f'record {first})')


def _chunks(count: int, num_shards: int) -> List[Tuple[int, int]]:
  """[start, stop) ranges: num_shards x k of them, each at most
  _RECORDS_PER_CHUNK records, so that the shards come out even."""
  per_shard = -(-count // (num_shards * _RECORDS_PER_CHUNK))
  bounds = np.linspace(0, count, num_shards * per_shard + 1).astype(int)
  return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


class _ChunkToExamples(beam.DoFn):
  """(start, stop) -> the list of serialized Examples of those records."""

  def __init__(self, files: SplitFiles, encoding: str):
    self._images, self._labels = files
    self._encoding = encoding
    self._geometry = geometry(self._images)
    self._readers = None
    self._progress = progress.SplitProgress(
        os.path.basename(self._images.path), self._images.count)

  def process(self, chunk: Tuple[int, int]):
    if self._readers is None:  # Kept open: the next chunk continues them.
      self._readers = (idx.ItemReader(self._images),
                       idx.ItemReader(self._labels))
    start, stop = chunk
    images, labels = (reader.read(start, stop) for reader in self._readers)
    yield features.make_examples(images, labels, self._geometry,
                                 self._encoding)
    self._progress.add(stop - start)

  def teardown(self):
    for reader in self._readers or ():
      reader.close()


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(List[bytes])
def IdxToExampleBatches(  # pylint: disable=invalid-name
    pipeline: beam.Pipeline, files: SplitFiles, class_names: Sequence[str],
    num_shards: int, encoding: str = 'raw') -> beam.pvalue.PCollection:
  """Reads one split's files (from `split_files`) into lists of serialized
  Examples, in num_shards x k chunks."""
  images, labels = files
  _check_labels(labels, class_names)
  logging.info('IDX split: %d images of %s from %s', images.count,
               geometry(images), images.path)
  # In file order, not reshuffled: a worker reading consecutive chunks
  # decompresses each file once. The write's grouping by shard spreads the
  # gzip work (most of the work) over the workers.
  return (pipeline
          | 'Chunks' >> beam.Create(_chunks(images.count, num_shards),
                                    reshuffle=False)
          | 'ToExamples' >> beam.ParDo(_ChunkToExamples(files, encoding)))
