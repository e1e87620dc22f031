"""ImageExampleGen's executor: IDX files or image folders to tf.train.Examples.

Each input is planned into parts before Beam starts, and every part is
written the same way (tfrecord_sink.py). Why and how: docs/input-data.md.
"""

import dataclasses
import functools
import json
import os
from typing import Any, Dict, List, Optional, Tuple

from absl import logging
import apache_beam as beam
import tensorflow as tf
from tfx.components.example_gen import base_example_gen_executor
from tfx.components.example_gen import utils as example_gen_utils
from tfx.components.example_gen import write_split
from tfx.components.util import examples_utils
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils
from tfx.types import standard_component_specs as specs
from tfx.utils import proto_utils

from components.image_example_gen import driver
from components.image_example_gen import errors
from components.image_example_gen import folder_layout
from components.image_example_gen import folder_plan
from components.image_example_gen import geometry_choice
from components.image_example_gen import idx
from components.image_example_gen import image_folder
from components.image_example_gen import console_lines
from components.image_example_gen import span_window
from components.image_example_gen import tfrecord_sink
from components.image_example_gen.options import ImageExampleGenOptions
from records import features
from records import shards

@dataclasses.dataclass(frozen=True)
class _Part:
  """One input written by WriteShards: shard i of each output from work[i]."""
  label: str  # Its Beam step's.
  source: Any  # idx.Reader or image_folder.Decoder.
  work: List[Any]
  outputs: List[str]  # Output splits.
  first_shard: int = 0
  total_shards: Optional[int] = None
  skipped_file: Optional[str] = None  # Where the workers list skips.


@dataclasses.dataclass(frozen=True)
class _Plan:
  """What Do finds before Beam starts: the data's facts and the parts."""
  options: ImageExampleGenOptions
  input_base: str
  window: List[span_window.Span]
  output_config: example_gen_pb2.Output
  class_names: List[str]
  geometry: features.ImageGeometry
  encoding: str  # Never 'auto'.
  split_names: List[str]
  parts: List[_Part]
  geometry_chosen: Optional[str] = None  # None for IDX: files declare it.
  folder_files: Dict[str, List[str]] = dataclasses.field(
      default_factory=dict)  # {output split: its image files}
  carve_idx: bool = False  # The IDX workers carve validation out of train.

  def patterns(self):
    """(output split, input pattern) of every span's input splits."""
    return [(span.output_split(split.name, span is self.window[-1]),
             os.path.join(self.input_base, split.pattern))
            for span in self.window for split in span.input_config.splits]


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(bytes)
def _IdxToExample(pipeline: beam.Pipeline, exec_properties: Dict[str, Any],
                  split_pattern: str) -> beam.pvalue.PCollection:
  """Reads one IDX split into serialized Examples, one per element.

  TFX's GenerateExamplesByBeam reads with it where output_config hashes an
  input split into splits. Image folders never take this way: folder_plan.py
  hashes them into splits by path, where TFX hashes records.
  """
  options = ImageExampleGenOptions.from_exec_properties(exec_properties)
  input_base = exec_properties[specs.INPUT_BASE_KEY]
  files = idx.split_files(os.path.join(input_base, split_pattern))
  encoding = features.resolve_encoding(
      options.image_encoding, idx.geometry(files[0]), options.png_min_pixels)
  return pipeline | 'Read' >> tfrecord_sink.ReadShards(  # pylint: disable=no-value-for-parameter
      idx.Reader(files, encoding, input_base),
      idx.shard_ranges(files[0].count, options.num_shards))


def _plan_idx(options: ImageExampleGenOptions, input_base: str,
              window: List[span_window.Span],
              input_config: example_gen_pb2.Input,
              output_config: example_gen_pb2.Output) -> Dict[str, Any]:
  """_Plan's fields for IDX files: their headers and labels read up front."""
  hash_split = bool(output_config.split_config.splits)
  if len(window) > 1 and hash_split:
    raise ValueError('a span window of IDX files takes the splits the files '
                     'give; an output_config hash split is not supported '
                     'with it')
  inputs = [(span, split, span.output_split(split.name, span is window[-1]),
             os.path.join(input_base, split.pattern))
            for span in window for split in span.input_config.splits]
  files = {pattern: idx.split_files(pattern) for *_, pattern in inputs}
  class_names = list(options.class_names or
                     idx.class_names_from_labels(files.values()))
  geometry = idx.dataset_geometry(files.values())
  encoding = features.resolve_encoding(options.image_encoding, geometry,
                                       options.png_min_pixels)
  names = [split.name for split in input_config.splits]
  carve_idx = bool(options.validation_percent and not hash_split and
                   features.TRAIN_SPLIT in names and
                   features.VALIDATION_SPLIT not in names)
  split_names = example_gen_utils.generate_output_split_names(
      input_config, output_config)
  if carve_idx:
    split_names.insert(split_names.index(features.TRAIN_SPLIT) + 1,
                       features.VALIDATION_SPLIT)
  if len(window) > 1 and features.EVAL_SPLIT in split_names:
    split_names.append(features.EARLIER_EVAL_SPLIT)
  _log_start(geometry, encoding, class_names)
  outputs = [output for _, _, output, _ in inputs]
  parts = []
  for i, (span, split, output, pattern) in enumerate(inputs):
    carve = carve_idx and split.name == features.TRAIN_SPLIT
    idx.log_split(files[pattern], class_names)
    name = f'{span.folder}/{split.name}' if span.folder else split.name
    parts.append(_Part(
        label=f'IdxToShards[{name}]',
        source=idx.Reader(files[pattern], encoding, input_base,
                          options.validation_percent if carve else 0),
        work=idx.shard_ranges(files[pattern][0].count, options.num_shards),
        outputs=[output] + ([features.VALIDATION_SPLIT] if carve else []),
        first_shard=outputs[:i].count(output) * options.num_shards,
        total_shards=outputs.count(output) * options.num_shards))
  return dict(class_names=class_names, geometry=geometry, encoding=encoding,
              split_names=split_names, parts=parts, carve_idx=carve_idx)


def _plan_folders(options: ImageExampleGenOptions, input_base: str,
                  window: List[span_window.Span],
                  output_config: example_gen_pb2.Output,
                  examples_uri: str) -> Dict[str, Any]:
  """_Plan's fields for image folders: listed, checked, geometry chosen."""
  folders = folder_plan.plan_window(
      input_base, window, output_config, options.class_names,
      options.eval_percent, options.validation_percent)
  spans = (f'{", ".join(span.folder for span in window)}: '
           if len(window) > 1 else '')
  console_lines.notice(spans + folders.summary())
  geometry, chosen = geometry_choice.choose(
      folders.files, options.geometry, options.infer_size,
      options.infer_channels, options.max_image_pixels,
      options.skip_bad_images)
  if chosen != geometry_choice.GIVEN:
    console_lines.notice(
        f'images converted to {geometry.height}x{geometry.width}'
        f'x{geometry.channels}: {chosen}; --image-size and --channels set '
        'them')
  encoding = features.resolve_encoding(options.image_encoding, geometry,
                                       options.png_min_pixels)
  _log_start(geometry, encoding, folders.class_names)
  skipped = (image_folder.skipped_files(examples_uri, folders.files)
             if options.skip_bad_images else {})
  parts = [_Part(
      label=f'FolderToShards[{split}]',
      source=image_folder.Decoder(
          split, len(files), folders.class_names, geometry,
          split in skipped, encoding, input_base, options.max_image_pixels),
      work=image_folder.shard_paths(files, options.num_shards),
      outputs=[split], skipped_file=skipped.get(split))
           for split, files in folders.files.items()]
  return dict(class_names=folders.class_names, geometry=geometry,
              geometry_chosen=chosen, split_names=list(folders.files),
              folder_files=folders.files, encoding=encoding, parts=parts)


def _log_start(geometry: features.ImageGeometry, encoding: str,
               class_names: List[str]) -> None:
  logging.info('Generating examples of %s images (%s) with classes %s.',
               geometry, encoding, class_names)


def _configs(exec_properties: Dict[str, Any]
             ) -> Tuple[example_gen_pb2.Input, example_gen_pb2.Output]:
  """The execution's input and output configs."""
  def config(key, proto):
    return proto_utils.json_to_proto(exec_properties.get(key) or '{}', proto)
  return (config(specs.INPUT_CONFIG_KEY, example_gen_pb2.Input()),
          config(specs.OUTPUT_CONFIG_KEY, example_gen_pb2.Output()))


def _plan(exec_properties: Dict[str, Any], examples_uri: str) -> _Plan:
  """Checks the input and plans every part, before Beam starts.

  Raises:
    InputDataError: bad input data, naming the file or folder.
    ValueError: a configuration ImageExampleGen does not support.
  """
  options = ImageExampleGenOptions.from_exec_properties(exec_properties)
  input_config, output_config = _configs(exec_properties)
  input_base = exec_properties[specs.INPUT_BASE_KEY]
  window = span_window.of_execution(exec_properties)
  shortfall = span_window.shortfall(window, options.span_window)
  if shortfall:
    console_lines.notice(shortfall)
  if options.input_format == 'idx':
    fields = _plan_idx(options, input_base, window, input_config,
                       output_config)
  else:
    fields = _plan_folders(options, input_base, window, output_config,
                           examples_uri)
  return _Plan(options=options, input_base=input_base, window=window,
               output_config=output_config, **fields)


def _check_validation_written(examples_channel: List[Any], plan: _Plan) -> None:
  """Refuses a carved IDX validation split that came out empty."""
  uri = artifact_utils.get_split_uri(examples_channel,
                                     features.VALIDATION_SPLIT)
  files = sorted(tf.io.gfile.glob(os.path.join(uri, '*.gz')))
  if not files or not list(shards.records(files).take(1)):
    train_pattern = next(split.pattern
                         for split in plan.window[-1].input_config.splits
                         if split.name == features.TRAIN_SPLIT)
    raise errors.InputDataError(
        os.path.join(plan.input_base, train_pattern),
        f'--validation-percent {plan.options.validation_percent} put none of '
        'its records into the validation split: add records or raise the '
        'percentage')


def _record(examples, plan: _Plan) -> None:
  """Puts the format, classes, geometry and spans on the Examples artifact."""
  if plan.window[-1].number:  # Data in spans.
    examples.set_string_custom_property(span_window.SPANS_PROPERTY,
                                        span_window.encode_spans(plan.window))
  examples_utils.set_payload_format(examples,
                                    example_gen_pb2.FORMAT_TF_EXAMPLE)
  examples_utils.set_file_format(
      examples,
      write_split.to_file_format_str(example_gen_pb2.FORMAT_TFRECORDS_GZIP))
  examples.set_string_custom_property(
      features.CLASS_NAMES_PROPERTY,
      features.encode_class_names(plan.class_names))
  features.write_class_names(
      os.path.join(examples.uri, features.CLASS_NAMES_FILE), plan.class_names)
  for key, value in plan.geometry.to_dict().items():
    examples.set_int_custom_property(key, value)
  if plan.geometry_chosen is not None:
    examples.set_string_custom_property(geometry_choice.CHOICE_PROPERTY,
                                        plan.geometry_chosen)
  examples.set_string_custom_property(features.IMAGE_ENCODING_PROPERTY,
                                      plan.encoding)


class Executor(base_example_gen_executor.BaseExampleGenExecutor):
  """Reads IDX files or labelled image folders through Apache Beam."""

  def GetInputSourceToExamplePTransform(self) -> beam.PTransform:
    """The transform TFX's GenerateExamplesByBeam reads a split with."""
    return _IdxToExample

  def _write_splits(self, pipeline: beam.Pipeline,
                    exec_properties: Dict[str, Any], plan: _Plan,
                    examples_channel: List[Any]) -> None:
    """Writes every output split's shards."""
    split_uri = functools.partial(artifact_utils.get_split_uri,
                                  examples_channel)
    if (plan.options.input_format == 'idx' and
        plan.output_config.split_config.splits):
      # One input split hashed into output splits: TFX's own code.
      for split, records in self.GenerateExamplesByBeam(
          pipeline, exec_properties).items():
        _ = records | f'WriteSplit[{split}]' >> tfrecord_sink.WriteSplit(  # pylint: disable=no-value-for-parameter
            split_uri(split), plan.options.num_shards)
      return
    for part in plan.parts:
      skipped = pipeline | part.label >> (
          tfrecord_sink.WriteShards(  # pylint: disable=no-value-for-parameter
              part.source, part.work, [split_uri(o) for o in part.outputs],
              part.first_shard, part.total_shards))
      if part.skipped_file:
        split = part.outputs[0]
        _ = (skipped
             | f'SkippedToJson[{split}]' >> beam.Map(json.dumps,
                                                     sort_keys=True)
             | f'WriteSkipped[{split}]' >> beam.io.WriteToText(
                 part.skipped_file, num_shards=1, shard_name_template=''))

  def Do(self, input_dict: Dict[str, List[Any]],
         output_dict: Dict[str, List[Any]],
         exec_properties: Dict[str, Any]) -> None:
    """Checks and plans the input, writes every split, records what it found."""
    examples_channel = output_dict[specs.EXAMPLES_KEY]
    examples = artifact_utils.get_single_instance(examples_channel)
    options = ImageExampleGenOptions.from_exec_properties(exec_properties)
    if options.input_format == 'images' and options.eval_percent is not None:
      # Where the pipeline was built without seeing the data.
      input_config, output_config = folder_layout.fit(
          exec_properties[specs.INPUT_BASE_KEY], *_configs(exec_properties),
          options.eval_percent)
      exec_properties = {
          **exec_properties,
          specs.INPUT_CONFIG_KEY: proto_utils.proto_to_json(input_config),
          specs.OUTPUT_CONFIG_KEY: proto_utils.proto_to_json(output_config)}
    if not driver.driver_ran(exec_properties):  # Kubeflow Pipelines.
      exec_properties = driver.resolve(exec_properties, examples)
    plan = _plan(exec_properties, examples.uri)
    examples.split_names = artifact_utils.encode_split_names(plan.split_names)
    console_lines.reset()
    try:
      with self._make_beam_pipeline() as pipeline:
        self._write_splits(pipeline, exec_properties, plan, examples_channel)
    except Exception as e:  # pylint: disable=broad-except
      # Bad data a worker found: the same error as when found before Beam
      # started, whatever the runner made of it on the way.
      bad_data = errors.find_input_data_error(e)
      if bad_data is None or bad_data is e:
        raise
      raise bad_data from e
    if plan.carve_idx:
      _check_validation_written(examples_channel, plan)
    if options.skip_bad_images:
      image_folder.record_skipped(
          examples, plan.folder_files,
          {part.outputs[0]: part.skipped_file for part in plan.parts})
    if options.input_format == 'images':
      image_folder.record_os_files(examples, plan.patterns())
    _record(examples, plan)
    logging.info('Examples generated.')
