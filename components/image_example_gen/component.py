"""ImageExampleGen: TFX's FileBasedExampleGen with an image-reading executor."""

from typing import Optional, Sequence

from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec
from tfx.proto import example_gen_pb2
from tfx.proto import range_config_pb2

from components.image_example_gen import executor
from components.image_example_gen import folder_layout
from components.image_example_gen import driver
from components.image_example_gen.options import ImageExampleGenOptions
from components.image_example_gen.span_pattern import check_span_dir_pattern
from records import features


def default_input_config(input_format: str,
                         span_dir_pattern: Optional[str] = None,
                         layout: str = folder_layout.SPLITS
                         ) -> example_gen_pb2.Input:
  """The splits of a dataset laid out the usual way.

  idx:    train from train-* files, eval from t10k-* (MNIST's official test
          set, so the Evaluator reports the number papers quote).
  images: train from train/<class>/<image>, eval from eval/<class>/<image>
          (and validation from validation/<class>/<image>, `layout`
          folder_layout.SPLITS_WITH_VALIDATION);
          or, `layout` folder_layout.CLASSES, one split of <class>/<image>
          (folder_layout.output_config cuts it into train and eval).
  The executor carves the validation split out of train where the data
  gives none (validation_split.py).

  span_dir_pattern: data arrives in drops, one folder per span, each laid
  out as above, e.g. 'span-{SPAN}' for span-1/, span-2/, ... TFX's driver
  picks the newest span and records its number on the Examples artifact.
  """
  if input_format != 'idx':
    return folder_layout.input_config(layout, span_dir_pattern)
  patterns = {'train': 'train-*', 'eval': 't10k-*'}
  if span_dir_pattern is not None:
    check_span_dir_pattern(span_dir_pattern)
    patterns = {name: f'{span_dir_pattern.strip("/")}/{pattern}'
                for name, pattern in patterns.items()}
  return example_gen_pb2.Input(splits=[
      example_gen_pb2.Input.Split(name=name, pattern=pattern)
      for name, pattern in patterns.items()
  ])


class ImageExampleGen(FileBasedExampleGen):
  """Turns IDX files or labelled image folders into sharded, gzipped Examples.

  Spans, versions, `input_config`/`output_config` splits and `range_config`
  work exactly as for any FileBasedExampleGen; see records/features.py for
  the record format. `num_shards`, the output files per split, has no
  default: the pipeline's is pipeline/knobs.py's DataConfig.num_shards.

  Image folders without train/eval folders (DATA/<class>/<image>) are
  split by a hash of each path into eval (`eval_percent`) and train, with
  no input_config given: the layout is looked at here, where `input_base`
  can be read (so that TFX's driver fingerprints the right files), and
  again by the executor where no driver ran (folder_layout.py).

  `validation_percent` (ImageExampleGenOptions says what 0 and None mean)
  carves a validation split out of train by a stable hash of each record
  (validation_split.py), unless a validation/ folder gives it (IDX files
  hashed into splits by an `output_config` get none carved).

  `span_window` N (with `span_dir_pattern`) reads the newest N spans on
  disk into the one Examples artifact, the earlier spans' eval as its own
  split (span_window.py); the driver fingerprints them all
  (driver.py).
  """

  EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)
  DRIVER_CLASS = driver.Driver

  def __init__(
      self,
      input_base: str,
      input_format: str = 'idx',
      class_names: Optional[Sequence[str]] = None,
      image_geometry: features.ImageGeometry = features.MNIST_GEOMETRY,
      *,
      num_shards: int,
      skip_bad_images: bool = False,
      image_encoding: str = 'raw',
      png_min_pixels: Optional[int] = None,
      infer_size: bool = False,
      infer_channels: bool = False,
      eval_percent: Optional[int] = None,
      max_image_pixels: Optional[int] = None,
      validation_percent: Optional[int] = None,
      span_dir_pattern: Optional[str] = None,
      span_window: int = 1,
      input_config: Optional[example_gen_pb2.Input] = None,
      output_config: Optional[example_gen_pb2.Output] = None,
      range_config: Optional[range_config_pb2.RangeConfig] = None):
    options = ImageExampleGenOptions(
        input_format=input_format, class_names=class_names,
        geometry=image_geometry, num_shards=num_shards,
        skip_bad_images=skip_bad_images, image_encoding=image_encoding,
        png_min_pixels=png_min_pixels, infer_size=infer_size,
        infer_channels=infer_channels, eval_percent=eval_percent,
        max_image_pixels=max_image_pixels,
        validation_percent=validation_percent, span_window=span_window)
    if span_window > 1 and span_dir_pattern is None and input_config is None:
      raise ValueError(f'span_window {span_window} needs a span_dir_pattern '
                       '(data in span folders)')
    if input_config is None:
      layout = (folder_layout.detect(input_base, span_dir_pattern)
                if input_format == 'images' and isinstance(input_base, str)
                else None) or folder_layout.SPLITS
      if layout == folder_layout.CLASSES and output_config is None:
        if eval_percent is None:
          raise ValueError(f'{input_base} holds class folders and no train/'
                           'eval folders: splitting them needs eval_percent')
        output_config = folder_layout.output_config(layout, eval_percent)
      input_config = default_input_config(input_format, span_dir_pattern,
                                          layout)
    super().__init__(
        input_base=input_base,
        input_config=input_config,
        output_config=output_config,
        custom_config=options.to_custom_config(),
        range_config=range_config)
