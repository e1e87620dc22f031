"""ImageExampleGen's settings, as a Struct in ExampleGen's `custom_config`."""

import dataclasses
import json
from typing import Any, Dict, Optional, Sequence

from google.protobuf import json_format
from google.protobuf import struct_pb2
from tfx.proto import example_gen_pb2
from tfx.types import standard_component_specs

from records import features

INPUT_FORMATS = ('idx', 'images')


@dataclasses.dataclass(frozen=True)
class ImageExampleGenOptions:
  """What to read and how to write it (pipeline/knobs.py has the defaults).

  Attributes:
    num_shards: output files per split.
    input_format: 'idx' (MNIST-style files) or 'images' (class folders).
    class_names: the names of labels 0..n-1; by default the IDX label values
      or the sorted class folder names.
    geometry: what images are converted to ('images' only).
    skip_bad_images: list unreadable images instead of failing ('images').
    image_encoding: 'raw', 'png', 'jpeg' or 'auto' (png from png_min_pixels
      pixels up, raw below).
    infer_size, infer_channels: choose them from the images' headers.
    eval_percent: the share of images hashed into eval, for class folders
      without train/eval folders.
    max_image_pixels: images claiming more are refused before decoding;
      None: Pillow's limit.
    validation_percent: the share of train hashed into validation, unless a
      validation/ folder gives it; 0: none; None: the folder's, if any.
    span_window: the newest this many spans are read into one Examples.
  """
  num_shards: int  # First: the one field without a default.
  input_format: str = 'idx'
  class_names: Optional[Sequence[str]] = None
  geometry: features.ImageGeometry = features.MNIST_GEOMETRY
  skip_bad_images: bool = False
  image_encoding: str = 'raw'
  png_min_pixels: Optional[int] = None
  infer_size: bool = False
  infer_channels: bool = False
  eval_percent: Optional[int] = None
  max_image_pixels: Optional[int] = None
  validation_percent: Optional[int] = None
  span_window: int = 1

  def __post_init__(self):
    encodings = (features.AUTO_ENCODING, *features.IMAGE_ENCODINGS)
    names = None if self.class_names is None else list(self.class_names)
    checks = (
        (self.input_format in INPUT_FORMATS, f'input_format must be one of '
         f'{INPUT_FORMATS}, got {self.input_format!r}'),
        (self.num_shards >= 1,
         f'num_shards must be at least 1, got {self.num_shards}'),
        (self.image_encoding in encodings, f'image_encoding must be one of '
         f'{encodings}, got {self.image_encoding!r}'),
        (self.image_encoding != features.AUTO_ENCODING or
         (self.png_min_pixels or 0) >= 1,
         f'image_encoding {features.AUTO_ENCODING!r} needs png_min_pixels of '
         f'at least 1, got {self.png_min_pixels!r}'),
        (not self.skip_bad_images or self.input_format == 'images',
         "skip_bad_images applies to image folders only (input_format "
         "'images')"),
        (self.eval_percent is None or 0 < self.eval_percent < 100,
         f'eval_percent must be between 1 and 99, got {self.eval_percent}'),
        (self.validation_percent is None or
         0 <= self.validation_percent < 100, f'validation_percent must be '
         f'between 0 and 99, got {self.validation_percent}'),
        (self.span_window >= 1,
         f'span_window must be at least 1, got {self.span_window}'),
        (self.max_image_pixels is None or self.max_image_pixels >= 1,
         f'max_image_pixels must be at least 1, got {self.max_image_pixels}'),
        (names is None or (names and len(set(names)) == len(names)),
         f'class_names must be unique and non-empty: {names}'))
    for ok, problem in checks:
      if not ok:
        raise ValueError(problem)

  def to_custom_config(self) -> example_gen_pb2.CustomConfig:
    """The options as ExampleGen's custom_config: a Struct, packed."""
    struct = struct_pb2.Struct()
    struct.update({
        **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)
           if f.name != 'geometry'},
        'class_names': list(self.class_names) if self.class_names else None,
        **self.geometry.to_dict()})
    config = example_gen_pb2.CustomConfig()
    config.custom_config.Pack(struct)
    return config

  @classmethod
  def from_exec_properties(
      cls, exec_properties: Dict[str, Any]) -> 'ImageExampleGenOptions':
    """The options of an execution's custom_config.

    Raises:
      ValueError: the execution has no custom_config.
    """
    raw = exec_properties.get(standard_component_specs.CUSTOM_CONFIG_KEY)
    if not raw:
      raise ValueError('ImageExampleGen needs its custom_config '
                       '(ImageExampleGenOptions.to_custom_config()), '
                       'which carries num_shards; the execution has none')
    config = example_gen_pb2.CustomConfig()
    json_format.Parse(raw if isinstance(raw, str) else json.dumps(raw), config)
    struct = struct_pb2.Struct()
    config.custom_config.Unpack(struct)
    # Struct numbers come back as floats.
    values = {key: int(value) if isinstance(value, float) else value
              for key, value in json_format.MessageToDict(struct).items()
              if value not in (None, [])}
    geometry = features.ImageGeometry.from_dict(values)
    for key in features.GEOMETRY_PROPERTIES:
      del values[key]
    return cls(geometry=geometry, **values)
