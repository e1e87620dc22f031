"""ImageExampleGen executor: IDX files or image folders to tf.train.Examples.

Built like TFX's file-based ExampleGens (avro_executor, parquet_executor):
a `beam.ptransform_fn` per input format reads a split (idx_source.py,
image_folder_source.py); TFX supplies splits, spans, versions and the hash
split of `output_config` (GenerateExamplesByBeam). `Do` is ours for what
TFX's does not do: the driver's work when no driver ran (driver.py),
class names found over all splits before any is read
(IDX headers and labels read up front, images checked by the workers as
they read them) and put on the artifact, with the
images' geometry (read by Transform and Trainer); a fixed
number of shards, written a batch of records at a time (tfrecord_sink.py
says why), each shard by the worker that converts it
(idx_source.py and image_folder_source.py say why; the hash split of an
`output_config` goes through TFX's record-by-record partition and Beam's
file sink instead); skipped images and the OS files left out of image
folders gathered (left_out.py). Image folders are
listed and checked once, before Beam starts (folder_plan.py): either
layout (folder_layout.py, which also splits the one without train/eval
folders), the classes, and, unless options set it, the geometry chosen from
the images' headers (geometry_choice.py). The validation split is carved
out of train where the data gives none (validation_split.py): by
folder_plan.py for image folders, by the workers converting the train
files for IDX (idx_source.py). With a span window, each span of the
window is planned as that span alone would be, and its records go into the
same output splits (span_window.py), the eval of the earlier spans apart.
"""

import collections
import os
from typing import Any, Dict, List

from absl import logging
import apache_beam as beam
import tensorflow as tf
from tfx.components.example_gen import base_example_gen_executor
from tfx.components.example_gen import utils as example_gen_utils
from tfx.components.example_gen import write_split
from tfx.components.util import examples_utils
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils
from tfx.types import standard_component_specs
from tfx.utils import proto_utils

from components.image_example_gen import driver
from components.image_example_gen import errors
from components.image_example_gen import folder_layout
from components.image_example_gen import folder_plan
from components.image_example_gen import geometry_choice
from components.image_example_gen import idx_source
from components.image_example_gen import image_folder_source
from components.image_example_gen import left_out
from components.image_example_gen import progress
from components.image_example_gen import span_window
from components.image_example_gen import tfrecord_sink
from components.image_example_gen import validation_split
from components.image_example_gen.options import ImageExampleGenOptions
from records import features

# What Do hands the per-split transforms: the class names, the IDX files it
# validated (none is read twice), the image files of each output split,
# where to write skipped images, the geometry of image folders.
_CLASS_NAMES_KEY = '_class_names'
_IDX_FILES_KEY = '_idx_files'
_FOLDER_FILES_KEY = '_folder_files'
_SKIPPED_FILES_KEY = '_skipped_files'
_IMAGE_ENCODING_KEY = '_image_encoding'  # Resolved: never 'auto'.
_GEOMETRY_KEY = '_geometry'


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(bytes)
def _ImageToExample(pipeline: beam.Pipeline, exec_properties: Dict[str, Any],
                    split_pattern: str) -> beam.pvalue.PCollection:
  """Reads one split into serialized Examples, one per element (for the
  hash split of an output_config, through GenerateExamplesByBeam)."""
  options = ImageExampleGenOptions.from_exec_properties(exec_properties)
  class_names = exec_properties[_CLASS_NAMES_KEY]
  split_pattern = os.path.join(
      exec_properties[standard_component_specs.INPUT_BASE_KEY], split_pattern)
  if options.input_format == 'idx':
    return (pipeline
            | 'Idx' >> idx_source.IdxToExampleBatches(  # pylint: disable=no-value-for-parameter
                exec_properties[_IDX_FILES_KEY][split_pattern], class_names,
                options.num_shards, exec_properties[_IMAGE_ENCODING_KEY],
                exec_properties[standard_component_specs.INPUT_BASE_KEY])
            | 'Unbatch' >> beam.FlatMap(lambda batch: batch))
  return pipeline | 'ImageFolder' >> image_folder_source.ImageFolderToExample(  # pylint: disable=no-value-for-parameter
      split_pattern, class_names, exec_properties[_GEOMETRY_KEY],
      exec_properties[standard_component_specs.INPUT_BASE_KEY], None,
      exec_properties[_IMAGE_ENCODING_KEY], options.max_image_pixels)


def _carves_validation(options: ImageExampleGenOptions,
                       input_config: example_gen_pb2.Input,
                       output_config: example_gen_pb2.Output) -> bool:
  """Whether the IDX workers carve the validation split out of train."""
  names = [split.name for split in input_config.splits]
  return bool(options.validation_percent and
              validation_split.TRAIN in names and
              validation_split.SPLIT not in names and
              not output_config.split_config.splits)


def _check_validation_written(examples_channel: List[Any],
                              train_pattern: str, percent: int) -> None:
  """Refuses a carved IDX validation split that came out empty (reads up
  to its first record)."""
  uri = artifact_utils.get_split_uri(examples_channel, validation_split.SPLIT)
  files = sorted(tf.io.gfile.glob(os.path.join(uri, '*.gz')))
  records = tf.data.TFRecordDataset(files, compression_type='GZIP')
  if not files or not list(records.take(1)):
    raise errors.InputDataError(
        train_pattern, f'--validation-percent {percent} put none of its '
        'records into the validation split: add records or raise the '
        'percentage')


def _plan_folders(input_base: str, window: List[span_window.Span],
                  output_config: example_gen_pb2.Output,
                  options: ImageExampleGenOptions) -> folder_plan.FolderPlan:
  """Each span's plan (its checks, its class names against the span before
  it, its layout, its validation split) as if it were read alone; their
  files joined split by split, the earlier spans' eval apart."""
  newest = window[-1]
  files: Dict[str, List[str]] = {}
  plans = []
  for span in window:
    span_output = output_config
    if span is not newest:
      span_output = _span_output_config(input_base, span, output_config,
                                        options.eval_percent)
    plan = folder_plan.plan(input_base, span.input_config, span_output,
                            options.class_names, span.number,
                            options.validation_percent)
    plans.append(plan)
    for split, split_files in plan.files.items():
      files.setdefault(span.output_split(split, span is newest),
                       []).extend(split_files)
  last = plans[-1]
  for span, plan in zip(window, plans):
    # Each span's classes were checked against the span before it; this
    # catches a pair that check could not tell apart as spans.
    if plan.class_names != last.class_names:
      raise errors.InputDataError(
          os.path.join(input_base, span.folder),
          f'classes {plan.class_names} differ from {newest.folder}\'s '
          f'{last.class_names}; give them all with --class-names')
  # The newest span's splits in their order, then any other.
  order = [*last.files, *(split for split in files if split not in last.files
                          and split != span_window.EARLIER_EVAL_SPLIT),
           span_window.EARLIER_EVAL_SPLIT]
  return folder_plan.FolderPlan(
      files={split: files[split] for split in order if split in files},
      class_names=last.class_names, hash_split=last.hash_split,
      validation_carved=any(plan.validation_carved for plan in plans))


def _span_output_config(input_base: str, span: span_window.Span,
                        output_config: example_gen_pb2.Output,
                        eval_percent) -> example_gen_pb2.Output:
  """An earlier span's output config: its own layout's."""
  if len(span.input_config.splits) != 1:  # Train and eval folders.
    return example_gen_pb2.Output()
  if output_config.split_config.splits:  # The newest's is the same layout.
    return output_config
  if eval_percent is None:
    raise errors.InputDataError(
        os.path.join(input_base, span.folder),
        'holds class folders without train/eval folders: splitting them '
        'needs eval_percent')
  return folder_layout.output_config(folder_layout.CLASSES, eval_percent)


class Executor(base_example_gen_executor.BaseExampleGenExecutor):
  """Reads IDX files or labelled image folders through Apache Beam."""

  def GetInputSourceToExamplePTransform(self) -> beam.PTransform:
    return _ImageToExample

  def _write_splits(
      self, pipeline: beam.Pipeline, exec_properties: Dict[str, Any],
      window: List[span_window.Span],
      output_config: example_gen_pb2.Output,
      examples_channel: List[Any]) -> None:
    """Writes every output split's shards."""
    options = ImageExampleGenOptions.from_exec_properties(exec_properties)

    def split_uri(split):
      return artifact_utils.get_split_uri(examples_channel, split)

    input_base = exec_properties[standard_component_specs.INPUT_BASE_KEY]
    if options.input_format == 'images':
      # Each worker writes its own shards (image_folder_source.py says
      # why), of the files folder_plan.py listed for each output split.
      for split, files in exec_properties[_FOLDER_FILES_KEY].items():
        _ = (pipeline
             | f'FolderToShards[{split}]' >> image_folder_source.WriteFolderSplit(  # pylint: disable=no-value-for-parameter
                 split, files, exec_properties[_CLASS_NAMES_KEY],
                 exec_properties[_GEOMETRY_KEY], options.num_shards,
                 exec_properties[_IMAGE_ENCODING_KEY], split_uri(split),
                 input_base, exec_properties[_SKIPPED_FILES_KEY].get(split),
                 options.max_image_pixels))
      return
    if output_config.split_config.splits:
      # One input split hashed into output splits: TFX's own code, record
      # by record, batched again for writing.
      for split, records in self.GenerateExamplesByBeam(
          pipeline, exec_properties).items():
        _ = (records
             | f'Batch[{split}]' >> beam.BatchElements(
                 max_batch_size=tfrecord_sink.RECORDS_PER_WRITE)
             | f'WriteSplit[{split}]' >> tfrecord_sink.WriteSplit(  # pylint: disable=no-value-for-parameter
                 split_uri(split), options.num_shards))
      return
    # Each worker writes its own shards (idx_source.py says why), and
    # those of train, the validation split's too; each span's files are
    # num_shards of their output split's shards.
    carve = _carves_validation(options, window[-1].input_config,
                               output_config)
    inputs = [(span, split, span.output_split(split.name, span is window[-1]))
              for span in window for split in span.input_config.splits]
    parts = collections.Counter(output for _, _, output in inputs)
    written = collections.Counter()
    for span, split, output in inputs:
      pattern = os.path.join(input_base, split.pattern)
      validation = carve and split.name == validation_split.TRAIN
      label = f'{span.folder}/{split.name}' if span.folder else split.name
      _ = pipeline | f'IdxToShards[{label}]' >> idx_source.WriteIdxSplit(  # pylint: disable=no-value-for-parameter
          exec_properties[_IDX_FILES_KEY][pattern],
          exec_properties[_CLASS_NAMES_KEY], options.num_shards,
          exec_properties[_IMAGE_ENCODING_KEY], split_uri(output),
          split_uri(validation_split.SPLIT) if validation else None,
          options.validation_percent if validation else 0,
          first_shard=written[output] * options.num_shards,
          total_shards=parts[output] * options.num_shards,
          input_base=input_base)
      written[output] += 1

  def Do(self, input_dict: Dict[str, List[Any]],
         output_dict: Dict[str, List[Any]],
         exec_properties: Dict[str, Any]) -> None:
    examples_channel = output_dict[standard_component_specs.EXAMPLES_KEY]
    examples = artifact_utils.get_single_instance(examples_channel)
    options = ImageExampleGenOptions.from_exec_properties(exec_properties)
    is_idx = options.input_format == 'idx'
    if not is_idx and options.eval_percent is not None:
      # Where the pipeline was built without seeing the data.
      exec_properties = folder_layout.resolve(exec_properties,
                                              options.eval_percent)
    if not driver.driver_ran(exec_properties):  # Kubeflow Pipelines.
      exec_properties = driver.resolve(exec_properties, examples)
    input_config = proto_utils.json_to_proto(
        exec_properties[standard_component_specs.INPUT_CONFIG_KEY],
        example_gen_pb2.Input())
    output_config = proto_utils.json_to_proto(
        exec_properties[standard_component_specs.OUTPUT_CONFIG_KEY],
        example_gen_pb2.Output())
    input_base = exec_properties[standard_component_specs.INPUT_BASE_KEY]
    window = span_window.of_execution(exec_properties)
    shortfall = span_window.shortfall(window, options.span_window)
    if shortfall:
      progress.notice(shortfall)
    if len(window) > 1 and is_idx and output_config.split_config.splits:
      raise ValueError('a span window of IDX files takes the splits the '
                       'files give; an output_config hash split is not '
                       'supported with it')
    # (output split, input pattern) of every span's splits.
    patterns = [(span.output_split(split.name, span is window[-1]),
                 os.path.join(input_base, split.pattern))
                for span in window for split in span.input_config.splits]
    folder_files = {}
    geometry_chosen = None
    if is_idx:
      idx_files = {p: idx_source.split_files(p) for _, p in patterns}
      class_names = list(options.class_names or
                         idx_source.class_names_from_labels(idx_files.values()))
      # IDX files declare their geometry.
      geometry = idx_source.dataset_geometry(idx_files.values())
    else:
      idx_files = {}
      plan = _plan_folders(input_base, window, output_config, options)
      class_names, folder_files = plan.class_names, plan.files
      spans = (f'{", ".join(span.folder for span in window)}: '
               if len(window) > 1 else '')
      progress.notice(spans + plan.summary())
      geometry, geometry_chosen = geometry_choice.choose(
          folder_files, options.geometry, options.infer_size,
          options.infer_channels, options.max_image_pixels,
          options.skip_bad_images)
      if geometry_chosen != geometry_choice.GIVEN:
        progress.notice(f'images converted to {geometry.height}x'
                        f'{geometry.width}x{geometry.channels}: '
                        f'{geometry_chosen}; --image-size and --channels '
                        'set them')

    split_names = (list(folder_files) if folder_files else
                   example_gen_utils.generate_output_split_names(
                       input_config, output_config))
    carve_idx = is_idx and _carves_validation(options, input_config,
                                              output_config)
    if carve_idx:
      split_names.insert(split_names.index(validation_split.TRAIN) + 1,
                         validation_split.SPLIT)
    if is_idx and len(window) > 1 and span_window.EVAL_SPLIT in split_names:
      split_names.append(span_window.EARLIER_EVAL_SPLIT)
    examples.split_names = artifact_utils.encode_split_names(split_names)
    skipped_files = (left_out.skipped_files(examples.uri, folder_files)
                     if options.skip_bad_images else {})
    encoding = features.resolve_encoding(options.image_encoding, geometry,
                                         options.png_min_pixels)
    exec_properties = {**exec_properties, _CLASS_NAMES_KEY: class_names,
                       _IDX_FILES_KEY: idx_files,
                       _FOLDER_FILES_KEY: folder_files,
                       _SKIPPED_FILES_KEY: skipped_files,
                       _IMAGE_ENCODING_KEY: encoding,
                       _GEOMETRY_KEY: geometry}

    logging.info('Generating examples of %s images (%s) with classes %s.',
                 geometry, encoding, class_names)
    progress.reset()
    try:
      with self._make_beam_pipeline() as pipeline:
        self._write_splits(pipeline, exec_properties, window,
                           output_config, examples_channel)
    except Exception as e:  # pylint: disable=broad-except
      # Bad data a worker found (a truncated IDX file, a corrupt image):
      # the same error as when found before Beam started, whatever the
      # runner made of it on the way.
      bad_data = errors.find_input_data_error(e)
      if bad_data is None or bad_data is e:
        raise
      raise bad_data from e
    if carve_idx:
      _check_validation_written(
          examples_channel, os.path.join(input_base, next(
              split.pattern for split in input_config.splits
              if split.name == validation_split.TRAIN)),
          options.validation_percent)
    if options.skip_bad_images:
      left_out.record_skipped(examples, folder_files, skipped_files)
    if not is_idx:
      left_out.record_os_files(examples, patterns)

    if window[-1].number:  # Data in spans.
      examples.set_string_custom_property(span_window.SPANS_PROPERTY,
                                          span_window.encode_spans(window))
    examples_utils.set_payload_format(examples,
                                      example_gen_pb2.FORMAT_TF_EXAMPLE)
    examples_utils.set_file_format(
        examples,
        write_split.to_file_format_str(example_gen_pb2.FORMAT_TFRECORDS_GZIP))
    examples.set_string_custom_property(
        features.CLASS_NAMES_PROPERTY, features.encode_class_names(class_names))
    features.write_class_names(
        os.path.join(examples.uri, features.CLASS_NAMES_FILE), class_names)
    for key, value in geometry.to_dict().items():
      examples.set_int_custom_property(key, value)
    if geometry_chosen is not None:
      examples.set_string_custom_property(geometry_choice.CHOICE_PROPERTY,
                                          geometry_chosen)
    examples.set_string_custom_property(features.IMAGE_ENCODING_PROPERTY,
                                        encoding)
    logging.info('Examples generated.')
