"""Image-folder splits into Beam: <split>/<class_name>/<image> to Examples.

image_folder.py decodes one image; this module reads a whole split through
Beam, strictly (an unreadable image fails the run) or, with a skipped-images
file, writing what it could not read there (skipped_images.py gathers those
files onto the Examples artifact).
"""

import json
from typing import Optional, Sequence

import apache_beam as beam
from apache_beam.io import fileio
import tensorflow as tf

from components.image_example_gen import image_folder
from components.image_example_gen import progress
from components.image_example_gen.errors import InputDataError
from records import features

_SKIPPED = 'skipped'


def _image_file_to_example(readable: fileio.ReadableFile,
                           class_names: Sequence[str],
                           geometry: features.ImageGeometry,
                           encoding: str) -> bytes:
  path = readable.metadata.path
  label = image_folder.label_of(path, class_names)
  try:
    data = readable.read()
  except (IOError, tf.errors.OpError) as e:
    raise InputDataError(path, f'cannot read file: {e}') from e
  return features.make_example(
      image_folder.decode_image(path, data, geometry), geometry, label,
      encoding)


class _DecodeImages(beam.DoFn):
  """Image files to serialized Examples.

  Strict by default: an unreadable image fails the run. With `skip_bad`, it
  goes to the 'skipped' output instead, as {'path', 'reason'}.
  """

  def __init__(self, class_names: Sequence[str],
               geometry: features.ImageGeometry, skip_bad: bool,
               encoding: str, split_progress: progress.SplitProgress):
    super().__init__()
    self._progress = split_progress
    self._encoding = encoding
    self._class_names = class_names
    self._geometry = geometry
    self._skip_bad = skip_bad

  def process(self, readable: fileio.ReadableFile):
    try:
      yield _image_file_to_example(readable, self._class_names, self._geometry,
                                   self._encoding)
    except InputDataError as e:
      if not self._skip_bad:
        raise
      yield beam.pvalue.TaggedOutput(_SKIPPED,
                                     {'path': e.path, 'reason': e.problem})
    self._progress.add(1)


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(bytes)
def ImageFolderToExample(  # pylint: disable=invalid-name
    pipeline: beam.Pipeline, split_pattern: str, class_names: Sequence[str],
    geometry: features.ImageGeometry, skipped_file: Optional[str] = None,
    encoding: str = 'raw') -> beam.pvalue.PCollection:
  """Reads a split of class folders into serialized Examples; with
  `skipped_file`, skips unreadable images and writes them there, one JSON
  object per line."""
  files = image_folder.check_split(split_pattern, class_names)
  # Named by the split's folder/*/*, short of the input base.
  label = '/'.join(split_pattern.rstrip('/').split('/')[-3:])
  decoded = (pipeline
             | 'Match' >> fileio.MatchFiles(split_pattern)
             # Listed by the executor (os_files.py), not decoded.
             | 'LeaveOutOsFiles' >> beam.Filter(
                 lambda match: not image_folder.is_os_file(match.path))
             | 'Distribute' >> beam.Reshuffle()
             | 'Read' >> fileio.ReadMatches()
             | 'Decode' >> beam.ParDo(_DecodeImages(
                 class_names, geometry, skip_bad=bool(skipped_file),
                 encoding=encoding,
                 split_progress=progress.SplitProgress(label, files))
                                     ).with_outputs(_SKIPPED, main='examples'))
  if skipped_file:
    _ = (decoded[_SKIPPED]
         | 'SkippedToJson' >> beam.Map(json.dumps, sort_keys=True)
         | 'WriteSkipped' >> beam.io.WriteToText(
             skipped_file, num_shards=1, shard_name_template=''))
  return decoded.examples
