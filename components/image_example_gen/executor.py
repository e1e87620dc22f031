"""ImageExampleGen executor: IDX files or image folders to tf.train.Examples.

Built like TFX's own file-based ExampleGens (avro_executor, parquet_executor):
one `beam.ptransform_fn` reads a split, the base executor supplies splits,
spans and versions. `Do` is ours, for two reasons:
  * TFX lets Beam pick the number of output files, and the DirectRunner
    writes one per worker, too few shards for the Trainer's parallel
    interleaved reads;
  * speed: the records of a split travel through Beam in batches (an IDX
    chunk, serialized with numpy) and are written a batch at a time
    (tfrecord_sink.py), not one Beam element per record. On MNIST that made
    the component several times faster (benchmarks/, BENCHMARKS.md).
    Only an `output_config` that splits one input by hash needs single
    records, and gets them from TFX's own GenerateExamplesByBeam.
"""

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from absl import logging
import apache_beam as beam
from apache_beam.io import fileio
import numpy as np
import tensorflow as tf
from tfx.components.example_gen import base_example_gen_executor
from tfx.components.example_gen import utils as example_gen_utils
from tfx.components.example_gen import write_split
from tfx.components.util import examples_utils
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils
from tfx.types import standard_component_specs
from tfx.utils import proto_utils

from components.image_example_gen import idx
from components.image_example_gen import image_folder
from components.image_example_gen import progress
from components.image_example_gen import tfrecord_sink
from components.image_example_gen.errors import InputDataError
from components.image_example_gen.options import ImageExampleGenOptions
from records import features

# Where Do hands the dataset-wide class names to the per-split transforms.
_CLASS_NAMES_KEY = '_class_names'
# ... and the IDX files it has validated, so that none is read twice.
_IDX_FILES_KEY = '_idx_files'
# IDX files are read in chunks of at most this many records, one chunk per
# work item and a whole number of chunks per output shard.
_IDX_RECORDS_PER_CHUNK = 10_000
# Image-folder records are written in batches of up to this many.
_RECORDS_PER_WRITE = 1000
# Where Do tells each split's transform to write the images it skipped
# ({split pattern: file}); Beam writes them, Do gathers them afterwards.
_SKIPPED_FILES_KEY = '_skipped_files'
_SKIPPED = 'skipped'
# Skipped images listed in ML Metadata; the file next to the splits has all.
_MAX_SKIPPED_LISTED = 100


def _split_patterns(exec_properties: Dict[str, Any]) -> List[str]:
  input_config = example_gen_pb2.Input()
  proto_utils.json_to_proto(
      exec_properties[standard_component_specs.INPUT_CONFIG_KEY], input_config)
  base = exec_properties[standard_component_specs.INPUT_BASE_KEY]
  return [os.path.join(base, split.pattern) for split in input_config.splits]


# --------------------------------------------------------------------- IDX --


def _idx_split_files(split_pattern: str) -> Tuple[idx.IdxHeader, idx.IdxHeader]:
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
  _idx_geometry(image_header)  # Fails here on an unsupported channel count.
  return image_header, label_header


def _idx_geometry(header: idx.IdxHeader) -> features.ImageGeometry:
  channels = header.shape[3] if len(header.shape) == 4 else 1
  try:
    return features.ImageGeometry(header.shape[1], header.shape[2], channels)
  except ValueError as e:
    raise InputDataError(header.path, str(e)) from e


def _idx_class_names(splits: Sequence[Tuple[idx.IdxHeader, idx.IdxHeader]]
                     ) -> List[str]:
  """'0'..'n-1' where n-1 is the largest label over all splits."""
  largest = max(int(idx.read_all(labels).max()) for _, labels in splits)
  return [str(i) for i in range(largest + 1)]


def _idx_chunks(count: int, num_shards: int) -> List[Tuple[int, int]]:
  """[start, stop) ranges: num_shards x k of them, each at most
  _IDX_RECORDS_PER_CHUNK records, so that the shards come out even."""
  per_shard = -(-count // (num_shards * _IDX_RECORDS_PER_CHUNK))
  bounds = np.linspace(0, count, num_shards * per_shard + 1).astype(int)
  return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


class _IdxChunkToExamples(beam.DoFn):
  """(start, stop) -> the list of serialized Examples of those records."""

  def __init__(self, images: idx.IdxHeader, labels: idx.IdxHeader):
    self._images = images
    self._labels = labels
    self._geometry = _idx_geometry(images)
    self._readers = None
    self._progress = progress.SplitProgress(os.path.basename(images.path),
                                            images.count)

  def process(self, chunk: Tuple[int, int]):
    if self._readers is None:  # Kept open: the next chunk continues them.
      self._readers = (idx.ItemReader(self._images),
                       idx.ItemReader(self._labels))
    start, stop = chunk
    images, labels = (reader.read(start, stop) for reader in self._readers)
    yield features.make_examples(images, labels, self._geometry)
    self._progress.add(stop - start)

  def teardown(self):
    for reader in self._readers or ():
      reader.close()


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(List[bytes])
def _IdxToExampleBatches(pipeline: beam.Pipeline,
                         files: Tuple[idx.IdxHeader, idx.IdxHeader],
                         class_names: Sequence[str],
                         num_shards: int) -> beam.pvalue.PCollection:
  images, labels = files
  values = idx.read_all(labels)
  bad = (values < 0) | (values >= len(class_names))
  if bad.any():
    first = int(bad.argmax())
    raise InputDataError(
        labels.path, f'{int(bad.sum())} labels outside the class range '
        f'0..{len(class_names) - 1} (first: label {int(values[first])} of '
        f'record {first})')
  logging.info('IDX split: %d images of %s from %s', images.count,
               _idx_geometry(images), images.path)
  # In file order, not reshuffled: a worker reading consecutive chunks
  # decompresses each file once. The write's grouping by shard spreads the
  # gzip work (most of the work) over the workers.
  return (pipeline
          | 'Chunks' >> beam.Create(_idx_chunks(images.count, num_shards),
                                    reshuffle=False)
          | 'ToExamples' >> beam.ParDo(_IdxChunkToExamples(images, labels)))


# ----------------------------------------------------------- image folders --


def _image_file_to_example(readable: fileio.ReadableFile,
                           class_names: Sequence[str],
                           geometry: features.ImageGeometry) -> bytes:
  path = readable.metadata.path
  label = image_folder.label_of(path, class_names)
  try:
    data = readable.read()
  except (IOError, tf.errors.OpError) as e:
    raise InputDataError(path, f'cannot read file: {e}') from e
  return features.make_example(
      image_folder.decode_image(path, data, geometry), geometry, label)


class _DecodeImages(beam.DoFn):
  """Image files to serialized Examples.

  Strict by default: an unreadable image fails the run. With `skip_bad`, it
  goes to the 'skipped' output instead, as {'path', 'reason'}.
  """

  def __init__(self, class_names: Sequence[str],
               geometry: features.ImageGeometry, skip_bad: bool,
               split_progress: progress.SplitProgress):
    super().__init__()
    self._class_names = class_names
    self._geometry = geometry
    self._skip_bad = skip_bad
    self._progress = split_progress

  def process(self, readable: fileio.ReadableFile):
    try:
      yield _image_file_to_example(readable, self._class_names, self._geometry)
    except InputDataError as e:
      if not self._skip_bad:
        raise
      yield beam.pvalue.TaggedOutput(_SKIPPED,
                                     {'path': e.path, 'reason': e.problem})
    self._progress.add(1)


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(bytes)
def _ImageFolderToExample(pipeline: beam.Pipeline, split_pattern: str,
                          class_names: Sequence[str],
                          geometry: features.ImageGeometry,
                          skipped_file: Optional[str] = None
                          ) -> beam.pvalue.PCollection:
  """Reads a split of class folders; with `skipped_file`, skips unreadable
  images and writes them there, one JSON object per line."""
  files = image_folder.check_split(split_pattern, class_names)
  # Named by the split's folder/*/*, short of the input base.
  label = '/'.join(split_pattern.rstrip('/').split('/')[-3:])
  decoded = (pipeline
             | 'Match' >> fileio.MatchFiles(split_pattern)
             | 'Distribute' >> beam.Reshuffle()
             | 'Read' >> fileio.ReadMatches()
             | 'Decode' >> beam.ParDo(_DecodeImages(
                 class_names, geometry, skip_bad=bool(skipped_file),
                 split_progress=progress.SplitProgress(label, files))
                                     ).with_outputs(_SKIPPED, main='examples'))
  if skipped_file:
    _ = (decoded[_SKIPPED]
         | 'SkippedToJson' >> beam.Map(json.dumps, sort_keys=True)
         | 'WriteSkipped' >> beam.io.WriteToText(
             skipped_file, num_shards=1, shard_name_template=''))
  return decoded.examples


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(List[bytes])
def _ImageToExampleBatches(pipeline: beam.Pipeline,
                           exec_properties: Dict[str, Any],
                           split_pattern: str) -> beam.pvalue.PCollection:
  """Reads one split (IDX files or class folders) into lists of serialized
  Examples."""
  options = ImageExampleGenOptions.from_exec_properties(exec_properties)
  class_names = exec_properties[_CLASS_NAMES_KEY]
  split_pattern = os.path.join(
      exec_properties[standard_component_specs.INPUT_BASE_KEY], split_pattern)
  if options.input_format == 'idx':
    files = (exec_properties.get(_IDX_FILES_KEY, {}).get(split_pattern) or
             _idx_split_files(split_pattern))
    return pipeline | 'Idx' >> _IdxToExampleBatches(  # pylint: disable=no-value-for-parameter
        files, class_names, options.num_shards)
  skipped_file = exec_properties.get(_SKIPPED_FILES_KEY, {}).get(split_pattern)
  return (pipeline
          | 'ImageFolder' >> _ImageFolderToExample(  # pylint: disable=no-value-for-parameter
              split_pattern, class_names, options.geometry, skipped_file)
          | 'Batch' >> beam.BatchElements(max_batch_size=_RECORDS_PER_WRITE))


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(bytes)
def _ImageToExample(pipeline: beam.Pipeline, exec_properties: Dict[str, Any],
                    split_pattern: str) -> beam.pvalue.PCollection:
  """Reads one split into serialized Examples, one per element."""
  return (pipeline
          | 'Batches' >> _ImageToExampleBatches(  # pylint: disable=no-value-for-parameter
              exec_properties, split_pattern)
          | 'Unbatch' >> beam.FlatMap(lambda batch: batch))


@beam.ptransform_fn
@beam.typehints.with_input_types(List[bytes])
def _WriteSplit(batches: beam.pvalue.PCollection, split_uri: str,
                num_shards: int) -> beam.pvalue.PDone:
  """TFX's WriteSplit with a fixed number of shards, a batch at a time.

  No Reshuffle as in TFX's: the write groups its input by shard, which
  shuffles already.
  """
  return batches | 'Write' >> tfrecord_sink.WriteBatchesToTFRecord(
      os.path.join(split_uri, write_split.DEFAULT_TF_RECORD_FILE_NAME),
      num_shards)


class Executor(base_example_gen_executor.BaseExampleGenExecutor):
  """Reads IDX files or labelled image folders through Apache Beam."""

  def GetInputSourceToExamplePTransform(self) -> beam.PTransform:
    return _ImageToExample

  def _example_batches_by_split(
      self, pipeline: beam.Pipeline, exec_properties: Dict[str, Any],
      input_config: example_gen_pb2.Input,
      output_config: example_gen_pb2.Output
  ) -> Dict[str, beam.pvalue.PCollection]:
    """{output split: PCollection of lists of serialized Examples}."""
    if output_config.split_config.splits:
      # One input split hashed into output splits: TFX's own code, record
      # by record, batched again for writing.
      return {
          split: records | f'Batch[{split}]' >> beam.BatchElements(
              max_batch_size=_RECORDS_PER_WRITE)
          for split, records in self.GenerateExamplesByBeam(
              pipeline, exec_properties).items()}
    return {
        split.name: pipeline
        | f'InputToRecord[{split.name}]' >> _ImageToExampleBatches(  # pylint: disable=no-value-for-parameter
            exec_properties, split.pattern)
        for split in input_config.splits}

  def Do(self, input_dict: Dict[str, List[Any]],
         output_dict: Dict[str, List[Any]],
         exec_properties: Dict[str, Any]) -> None:
    self._log_startup(input_dict, output_dict, exec_properties)
    options = ImageExampleGenOptions.from_exec_properties(exec_properties)
    patterns = _split_patterns(exec_properties)
    idx_files = ({p: _idx_split_files(p) for p in patterns}
                 if options.input_format == 'idx' else {})
    class_names = list(options.class_names or (
        _idx_class_names(list(idx_files.values()))
        if options.input_format == 'idx' else
        image_folder.discover_class_names(patterns)))
    if not class_names:
      raise InputDataError(
          exec_properties[standard_component_specs.INPUT_BASE_KEY],
          'no class folders found in any split')
    exec_properties = {**exec_properties, _CLASS_NAMES_KEY: class_names,
                       _IDX_FILES_KEY: idx_files}

    input_config = example_gen_pb2.Input()
    proto_utils.json_to_proto(
        exec_properties[standard_component_specs.INPUT_CONFIG_KEY], input_config)
    output_config = example_gen_pb2.Output()
    proto_utils.json_to_proto(
        exec_properties[standard_component_specs.OUTPUT_CONFIG_KEY],
        output_config)
    examples_channel = output_dict[standard_component_specs.EXAMPLES_KEY]
    examples = artifact_utils.get_single_instance(examples_channel)
    examples.split_names = artifact_utils.encode_split_names(
        example_gen_utils.generate_output_split_names(input_config,
                                                      output_config))

    if options.skip_bad_images:
      # Beam writes each split's skipped images to a file of its own in
      # here; Do gathers them once the pipeline has run.
      skipped_dir = os.path.join(examples.uri, '.skipped')
      skipped_files = {
          pattern: os.path.join(skipped_dir, f'{name}.jsonl')
          for name, pattern in zip(
              [split.name for split in input_config.splits], patterns)}
      exec_properties[_SKIPPED_FILES_KEY] = skipped_files

    logging.info('Generating examples with classes %s.', class_names)
    progress.reset()
    with self._make_beam_pipeline() as pipeline:
      for split, batches in self._example_batches_by_split(
          pipeline, exec_properties, input_config, output_config).items():
        _ = batches | f'WriteSplit[{split}]' >> _WriteSplit(  # pylint: disable=no-value-for-parameter
            artifact_utils.get_split_uri(examples_channel, split),
            options.num_shards)

    if options.skip_bad_images:
      _record_skipped_images(examples, [split.name for split in
                                        input_config.splits],
                             skipped_files, skipped_dir)

    examples_utils.set_payload_format(examples,
                                      example_gen_pb2.FORMAT_TF_EXAMPLE)
    examples_utils.set_file_format(
        examples,
        write_split.to_file_format_str(example_gen_pb2.FORMAT_TFRECORDS_GZIP))
    examples.set_string_custom_property(
        features.CLASS_NAMES_PROPERTY, features.encode_class_names(class_names))
    features.write_class_names(
        os.path.join(examples.uri, features.CLASS_NAMES_FILE), class_names)
    logging.info('Examples generated.')


def _record_skipped_images(examples, split_names: Sequence[str],
                           skipped_files: Dict[str, str],
                           skipped_dir: str) -> None:
  """Gathers what the workers skipped onto the Examples artifact.

  `skipped_files` maps each split's pattern to the file Beam wrote its
  skipped images to, in the order of `split_names`.
  """
  skipped = []
  for name, (pattern, path) in zip(split_names, skipped_files.items()):
    lines = []
    if tf.io.gfile.exists(path):
      with tf.io.gfile.GFile(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    if lines and len(lines) == len(tf.io.gfile.glob(pattern)):
      # Nothing left to learn from: an empty split, whatever the option says.
      raise InputDataError(
          os.path.dirname(os.path.dirname(pattern)),
          f'all {len(lines)} images of split {name!r} are unreadable '
          f'(first: {lines[0]["path"]}: {lines[0]["reason"]})')
    skipped += [{'split': name, **line} for line in lines]
  tf.io.gfile.rmtree(skipped_dir)
  skipped.sort(key=lambda s: (s['split'], s['path']))
  if skipped:
    logging.warning('Skipped %d unreadable images, e.g. %s: %s', len(skipped),
                    skipped[0]['path'], skipped[0]['reason'])
  with tf.io.gfile.GFile(
      os.path.join(examples.uri, features.SKIPPED_IMAGES_FILE), 'w') as f:
    json.dump(skipped, f, indent=1)
  examples.set_int_custom_property(features.SKIPPED_IMAGES_PROPERTY,
                                   len(skipped))
  examples.set_string_custom_property(
      features.SKIPPED_IMAGES_LIST_PROPERTY,
      json.dumps(skipped[:_MAX_SKIPPED_LISTED]))
