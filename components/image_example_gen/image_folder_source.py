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
  """`files` in a fixed-seed random order (of their sorted paths), cut into
  `num_shards` groups as even as can be: each group is a shard's images,
  in the order they are written."""
  paths = sorted(files)
  order = np.random.default_rng(_ORDER_SEED).permutation(len(paths))
  return [[paths[i] for i in group]
          for group in np.array_split(order, num_shards)]


def records_per_write(geometry: features.ImageGeometry) -> int:
  """The most records a worker decodes and writes at once: at most
  idx_source.CHUNK_BYTES of pixels, and RECORDS_PER_WRITE."""
  return max(1, min(tfrecord_sink.RECORDS_PER_WRITE,
                    idx_source.CHUNK_BYTES // geometry.num_bytes))


def source_of(path: str, input_base: str) -> str:
  """An image's `source` feature: its path relative to the input base, as
  the user laid it out (<split>/<class>/<image>, <class>/<image>, the span
  folder in front with spans), '/'-separated."""
  return os.path.relpath(path, input_base).replace(os.sep, '/')


def _image_file_to_example(path: str, class_names: Sequence[str],
                           geometry: features.ImageGeometry,
                           encoding: str, max_pixels: Optional[int],
                           input_base: str) -> bytes:
  label = image_folder.label_of(path, class_names)
  try:
    with tf.io.gfile.GFile(path, 'rb') as f:
      data = f.read()
  except (IOError, tf.errors.OpError) as e:
    raise InputDataError(path, f'cannot read file: {e}') from e
  return features.make_example(
      image_folder.decode_image(path, data, geometry, max_pixels), geometry,
      label, encoding, source=source_of(path, input_base))


class _Decoder:
  """Image files to serialized Examples, counted for progress.

  Strict by default: an unreadable image raises its InputDataError. With
  `skip_bad`, it is returned as {'path', 'reason'} instead. Plain values
  only: Beam pickles it with its DoFn.
  """

  def __init__(self, class_names: Sequence[str],
               geometry: features.ImageGeometry, skip_bad: bool,
               encoding: str, split_progress: progress.SplitProgress,
               input_base: str, max_pixels: Optional[int] = None):
    self._class_names = list(class_names)
    self._input_base = input_base
    self._max_pixels = max_pixels
    self._geometry = geometry
    self._skip_bad = skip_bad
    self._encoding = encoding
    self._progress = split_progress

  def decode(self, path: str) -> Tuple[Optional[bytes], Optional[dict]]:
    """(the Example, None), or (None, what was skipped)."""
    try:
      example = _image_file_to_example(path, self._class_names,
                                       self._geometry, self._encoding,
                                       self._max_pixels, self._input_base)
    except InputDataError as e:
      if not self._skip_bad:
        raise
      return None, {'path': e.path, 'reason': e.problem}
    finally:
      self._progress.add(1)
    return example, None


class _DecodeImages(beam.DoFn):
  """Image path -> its serialized Example (or, skipped, to 'skipped')."""

  def __init__(self, decoder: _Decoder):
    self._decoder = decoder

  def process(self, path: str):
    example, skipped = self._decoder.decode(path)
    if skipped is None:
      yield example
    else:
      yield beam.pvalue.TaggedOutput(_SKIPPED, skipped)


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


def _decoder(label: str, files: Sequence[str], class_names: Sequence[str],
             geometry: features.ImageGeometry, skipped_file: Optional[str],
             encoding: str, input_base: str,
             max_pixels: Optional[int]) -> _Decoder:
  """The decoder of a split's `files`, its progress named `label`."""
  return _Decoder(class_names, geometry, bool(skipped_file), encoding,
                  progress.SplitProgress(label, len(files)), input_base,
                  max_pixels)


def _write_skipped(skipped: beam.pvalue.PCollection,
                   skipped_file: Optional[str]) -> None:
  """What was skipped, one JSON object per line, to `skipped_file`."""
  if skipped_file:
    _ = (skipped
         | 'SkippedToJson' >> beam.Map(json.dumps, sort_keys=True)
         | 'WriteSkipped' >> beam.io.WriteToText(
             skipped_file, num_shards=1, shard_name_template=''))


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(str)
def WriteFolderSplit(  # pylint: disable=invalid-name
    pipeline: beam.Pipeline, split_name: str, files: Sequence[str],
    class_names: Sequence[str], geometry: features.ImageGeometry,
    num_shards: int, encoding: str, split_uri: str, input_base: str,
    skipped_file: Optional[str] = None,
    max_pixels: Optional[int] = None) -> beam.pvalue.PCollection:
  """Converts the image `files` of a split (listed and checked by
  folder_plan.py) into num_shards gzipped TFRecord files in `split_uri`
  (see the module docstring), each record's source relative to
  `input_base`; with `skipped_file`, skips unreadable images and writes
  them there, one JSON object per line. Returns the paths written."""
  decoder = _decoder(split_name, files, class_names, geometry, skipped_file,
                     encoding, input_base, max_pixels)
  written = (pipeline
             | 'Shards' >> beam.Create(
                 list(enumerate(shard_paths(files, num_shards))),
                 reshuffle=False)
             # So that the workers take different shards.
             | 'Distribute' >> beam.Reshuffle()
             | 'Write' >> beam.ParDo(_WriteShard(
                 decoder, records_per_write(geometry), split_uri,
                 num_shards)).with_outputs(_SKIPPED, main='paths'))
  _write_skipped(written[_SKIPPED], skipped_file)
  return written.paths


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(bytes)
def ImageFolderToExample(  # pylint: disable=invalid-name
    pipeline: beam.Pipeline, split_pattern: str, class_names: Sequence[str],
    geometry: features.ImageGeometry, input_base: str,
    skipped_file: Optional[str] = None, encoding: str = 'raw',
    max_pixels: Optional[int] = None) -> beam.pvalue.PCollection:
  """Reads a split of class folders into serialized Examples, one per
  element, each record's source relative to `input_base`; with
  `skipped_file`, skips unreadable images and writes them there, one JSON
  object per line."""
  files = image_folder.check_split(split_pattern, class_names)
  # Progress is named by the split's folder/*/*, short of the input base.
  label = '/'.join(split_pattern.rstrip('/').split('/')[-3:])
  decoder = _decoder(label, files, class_names, geometry, skipped_file,
                     encoding, input_base, max_pixels)
  decoded = (pipeline
             | 'Files' >> beam.Create(files, reshuffle=False)
             | 'Distribute' >> beam.Reshuffle()
             | 'Decode' >> beam.ParDo(_DecodeImages(decoder)).with_outputs(
                 _SKIPPED, main='examples'))
  _write_skipped(decoded[_SKIPPED], skipped_file)
  return decoded.examples
