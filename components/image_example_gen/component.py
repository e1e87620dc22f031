"""ImageExampleGen: TFX's FileBasedExampleGen with an image-reading executor."""

from typing import Optional

from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec
from tfx.proto import example_gen_pb2
from tfx.proto import range_config_pb2

from components.image_example_gen import driver
from components.image_example_gen import executor
from components.image_example_gen import folder_layout
from components.image_example_gen.options import ImageExampleGenOptions
from records import features


def default_input_config(input_format: str,
                         span_dir_pattern: Optional[str] = None,
                         layout: str = folder_layout.SPLITS
                         ) -> example_gen_pb2.Input:
  """The input splits of a dataset laid out the usual way.

  IDX: train from train-* files, eval from t10k-* (MNIST's test set). Image
  folders: the splits of `layout`.

  Args:
    input_format: one of options.INPUT_FORMATS, 'idx' or 'images'.
    span_dir_pattern: each span's folder (e.g. 'span-{SPAN}'), holding the
      splits; None: no spans.
    layout: the image folders' layout (folder_layout.SPLITS,
      SPLITS_WITH_VALIDATION or CLASSES); ignored for IDX files.
  """
  if input_format != 'idx':
    return folder_layout.input_config(layout, span_dir_pattern)
  prefix = folder_layout.span_prefix(span_dir_pattern)
  return example_gen_pb2.Input(splits=[
      example_gen_pb2.Input.Split(name=features.TRAIN_SPLIT,
                                  pattern=prefix + 'train-*'),
      example_gen_pb2.Input.Split(name=features.EVAL_SPLIT,
                                  pattern=prefix + 't10k-*')])


class ImageExampleGen(FileBasedExampleGen):
  """Turns IDX files or labelled image folders into sharded, gzipped Examples.

  Spans, versions, splits and `range_config` work as for any
  FileBasedExampleGen; records/features.py has the record format.
  """

  EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)
  DRIVER_CLASS = driver.Driver

  def __init__(
      self,
      input_base: str,
      options: ImageExampleGenOptions,
      span_dir_pattern: Optional[str] = None,
      input_config: Optional[example_gen_pb2.Input] = None,
      output_config: Optional[example_gen_pb2.Output] = None,
      range_config: Optional[range_config_pb2.RangeConfig] = None):
    """Builds the component; input_config is default_input_config's by default.

    The layout of image folders is looked at here, so that TFX's driver
    fingerprints the right files.

    Args:
      input_base: the folder of the input files (or of their span folders).
      options: what to read and how to write it.
      span_dir_pattern: each span's folder under input_base, e.g.
        'span-{SPAN}'; None: no spans.
      input_config: the input splits, as for any FileBasedExampleGen.
      output_config: the output splits and their hash buckets.
      range_config: which spans to read, as for any FileBasedExampleGen.

    Raises:
      ValueError: a span window without span folders, or class folders
        without train/eval folders and no eval_percent to split them.
    """
    if (options.span_window > 1 and span_dir_pattern is None and
        input_config is None):
      raise ValueError(f'span_window {options.span_window} needs a '
                       'span_dir_pattern (data in span folders)')
    if input_config is None:
      input_config = default_input_config(options.input_format,
                                          span_dir_pattern)
      if options.input_format == 'images' and isinstance(input_base, str):
        input_config, output_config = folder_layout.fit(
            input_base, input_config,
            output_config or example_gen_pb2.Output(), options.eval_percent)
    super().__init__(
        input_base=input_base,
        input_config=input_config,
        output_config=output_config,
        custom_config=options.to_custom_config(),
        range_config=range_config)
