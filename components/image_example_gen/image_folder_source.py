"""Image-folder splits into Beam: <split>/<class_name>/<image> to Examples.

The executor lists and checks the files before any worker starts
(folder_plan.py). `WriteFolderSplit` converts a split as
idx_source.WriteIdxSplit does: one element per output shard, its image
paths, and each worker decodes its shard's images and writes the shard
itself. Memory per worker stays bounded whatever the split's size. An
unreadable image fails the run, naming the file, or with `skip_bad_images`
is listed in a file that left_out.py gathers.

The shards mix the classes: the sorted paths are dealt in a fixed-seed random
order, so the Trainer's interleaved reads see every class. The same files give
the same shards, byte for byte.
"""

import json
import os
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

import apache_beam as beam
import numpy as np
import tensorflow as tf

from components.image_example_gen import idx_source
from components.image_example_gen import image_folder
from components.image_example_gen import progress
from components.image_example_gen import tfrecord_sink
from components.image_example_gen.errors import InputDataError
from records import features

_SKIPPED = 'skipped'
# Seeds the order the images are dealt into shards in: fixed, so that the
# same files give the same shards in every run.
_ORDER_SEED = 0


def shard_paths(files: Sequence[str], num_shards: int) -> List[List[str]]:
  """Deals `files` into `num_shards` even groups, in a fixed-seed random order.

  Returns:
    Each shard's images, in the order they are written.
  """
  paths = sorted(files)
  order = np.random.default_rng(_ORDER_SEED).permutation(len(paths))
  return [[paths[i] for i in group]
          for group in np.array_split(order, num_shards)]


def records_per_write(geometry: features.ImageGeometry) -> int:
  """The most records a worker decodes and writes at once.

  Returns:
    At most idx_source.CHUNK_BYTES of pixels, and RECORDS_PER_WRITE.
  """
  return max(1, min(tfrecord_sink.RECORDS_PER_WRITE,
                    idx_source.CHUNK_BYTES // geometry.num_bytes))


def source_of(path: str, input_base: str) -> str:
  """An image's `source` feature: its path relative to the input base.

  It is the path as the user laid it out, '/'-separated, e.g.
  <split>/<class>/<image>, with the span folder in front with spans.
  """
  return os.path.relpath(path, input_base).replace(os.sep, '/')


class _Decoder:
  """Image files to serialized Examples, counted for progress.

  Strict by default: an unreadable image raises its InputDataError. With
  `skip_bad`, it is returned as {'path', 'reason'} instead. Plain values
  only: Beam pickles it with its DoFn.
  """

  def __init__(self, label: str, count: int, class_names: Sequence[str],
               geometry: features.ImageGeometry, skip_bad: bool,
               encoding: str, input_base: str, max_pixels: Optional[int]):
    self._class_names = list(class_names)
    self._geometry = geometry
    self._skip_bad = skip_bad
    self._encoding = encoding
    self._input_base = input_base
    self._max_pixels = max_pixels
    self._progress = progress.SplitProgress(label, count)

  def _example(self, path: str) -> bytes:
    try:
      with tf.io.gfile.GFile(path, 'rb') as f:
        data = f.read()
    except (IOError, tf.errors.OpError) as e:
      raise InputDataError(path, f'cannot read file: {e}') from e
    return features.make_example(
        image_folder.decode_image(path, data, self._geometry,
                                  self._max_pixels),
        self._geometry, image_folder.label_of(path, self._class_names),
        self._encoding, source=source_of(path, self._input_base))

  def decode(self, path: str) -> Tuple[Optional[bytes], Optional[dict]]:
    """(the Example, None), or (None, what was skipped)."""
    try:
      return self._example(path), None
    except InputDataError as e:
      if not self._skip_bad:
        raise
      return None, {'path': e.path, 'reason': e.problem}
    finally:
      self._progress.add(1)


class _WriteShard(beam.DoFn):
  """(shard, its paths) -> writes that shard's file; yields its path (and,
  to 'skipped', the images it skipped)."""

  def __init__(self, decoder: _Decoder, per_write: int, split_uri: str,
               num_shards: int):
    self._decoder = decoder
    self._per_write = per_write
    self._split_uri = split_uri
    self._num_shards = num_shards

  def _batches(self, paths: Iterable[str],
               skipped: List[dict]) -> Iterator[List[bytes]]:
    batch = []
    for path in paths:
      example, bad = self._decoder.decode(path)
      if bad is not None:
        skipped.append(bad)
        continue
      batch.append(example)
      if len(batch) == self._per_write:
        yield batch
        batch = []
    if batch:
      yield batch

  def process(self, element: Tuple[int, List[str]]):
    shard, paths = element
    path = tfrecord_sink.shard_path(self._split_uri, shard, self._num_shards)
    skipped = []
    # A bad image (strict) fails the shard: write_shard leaves no file.
    tfrecord_sink.write_shard(path, self._batches(paths, skipped))
    yield path
    for bad in skipped:
      yield beam.pvalue.TaggedOutput(_SKIPPED, bad)


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(str)
def WriteFolderSplit(  # pylint: disable=invalid-name
    pipeline: beam.Pipeline, split_name: str, files: Sequence[str],
    class_names: Sequence[str], geometry: features.ImageGeometry,
    num_shards: int, encoding: str, split_uri: str, input_base: str,
    skipped_file: Optional[str] = None,
    max_pixels: Optional[int] = None) -> beam.pvalue.PCollection:
  """Converts the image `files` of a split into num_shards shards.

  Args:
    split_name: names the split's progress lines.
    files: the split's images, listed and checked by folder_plan.py.
    split_uri: the folder of the gzipped TFRecord files.
    input_base: each record's source is relative to it.
    skipped_file: skip unreadable images and list them there, one JSON
      object per line; None: an unreadable image fails the run.

  Returns:
    The paths written.
  """
  decoder = _Decoder(split_name, len(files), class_names, geometry,
                     bool(skipped_file), encoding, input_base, max_pixels)
  written = (pipeline
             | 'Shards' >> beam.Create(
                 list(enumerate(shard_paths(files, num_shards))),
                 reshuffle=False)
             # So that the workers take different shards.
             | 'Distribute' >> beam.Reshuffle()
             | 'Write' >> beam.ParDo(_WriteShard(
                 decoder, records_per_write(geometry), split_uri,
                 num_shards)).with_outputs(_SKIPPED, main='paths'))
  if skipped_file:
    _ = (written[_SKIPPED]
         | 'SkippedToJson' >> beam.Map(json.dumps, sort_keys=True)
         | 'WriteSkipped' >> beam.io.WriteToText(
             skipped_file, num_shards=1, shard_name_template=''))
  return written.paths


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(bytes)
def ImageFolderToExample(  # pylint: disable=invalid-name
    pipeline: beam.Pipeline, split_pattern: str, class_names: Sequence[str],
    geometry: features.ImageGeometry, input_base: str, encoding: str = 'raw',
    max_pixels: Optional[int] = None) -> beam.pvalue.PCollection:
  """Reads a split of class folders into serialized Examples.

  One Example per element, as TFX's GenerateExamplesByBeam reads a split;
  each record's source is relative to `input_base`. An unreadable image
  fails the run.
  """
  files = image_folder.check_split(split_pattern, class_names)
  # Progress is named by the split's folder/*/*, short of the input base.
  label = '/'.join(split_pattern.rstrip('/').split('/')[-3:])
  decoder = _Decoder(label, len(files), class_names, geometry, False,
                     encoding, input_base, max_pixels)
  return (pipeline
          | 'Files' >> beam.Create(files, reshuffle=False)
          | 'Distribute' >> beam.Reshuffle()
          | 'Decode' >> beam.Map(lambda path: decoder.decode(path)[0]))
