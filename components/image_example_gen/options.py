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
    if self.input_format not in INPUT_FORMATS:
      raise ValueError(f'input_format must be one of {INPUT_FORMATS}, '
                       f'got {self.input_format!r}')
    if self.num_shards < 1:
      raise ValueError(f'num_shards must be at least 1, got {self.num_shards}')
    encodings = (features.AUTO_ENCODING, *features.IMAGE_ENCODINGS)
    if self.image_encoding not in encodings:
      raise ValueError(f'image_encoding must be one of {encodings}, got '
                       f'{self.image_encoding!r}')
    if (self.image_encoding == features.AUTO_ENCODING and
        (self.png_min_pixels is None or self.png_min_pixels < 1)):
      raise ValueError(f'image_encoding {features.AUTO_ENCODING!r} needs '
                       f'png_min_pixels of at least 1, got '
                       f'{self.png_min_pixels!r}')
    if self.skip_bad_images and self.input_format != 'images':
      raise ValueError('skip_bad_images applies to image folders only '
                       "(input_format 'images')")
    if self.eval_percent is not None and not 0 < self.eval_percent < 100:
      raise ValueError(f'eval_percent must be between 1 and 99, got '
                       f'{self.eval_percent}')
    if (self.validation_percent is not None and
        not 0 <= self.validation_percent < 100):
      raise ValueError(f'validation_percent must be between 0 and 99, got '
                       f'{self.validation_percent}')
    if self.span_window < 1:
      raise ValueError(f'span_window must be at least 1, got '
                       f'{self.span_window}')
    if self.max_image_pixels is not None and self.max_image_pixels < 1:
      raise ValueError(f'max_image_pixels must be at least 1, got '
                       f'{self.max_image_pixels}')
    if self.class_names is not None:
      names = list(self.class_names)
      if not names or len(set(names)) != len(names):
        raise ValueError(f'class_names must be unique and non-empty: {names}')

  def to_dict(self) -> Dict[str, Any]:
    """The options as JSON values, the geometry as three numbers."""
    values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
              if f.name != 'geometry'}
    values['class_names'] = (list(self.class_names) if self.class_names
                             else None)
    return {**values, **self.geometry.to_dict()}

  @classmethod
  def from_dict(cls, d: Dict[str, Any]) -> 'ImageExampleGenOptions':
    """The options of `to_dict`'s values (numbers may come back as floats)."""
    values = {key: int(value) if isinstance(value, float) else value
              for key, value in d.items() if value not in (None, [])}
    geometry = features.ImageGeometry.from_dict(values)
    for key in features.GEOMETRY_PROPERTIES:
      del values[key]
    return cls(geometry=geometry, **values)

  def to_custom_config(self) -> example_gen_pb2.CustomConfig:
    """The options as ExampleGen's custom_config: a Struct, packed."""
    struct = struct_pb2.Struct()
    struct.update(self.to_dict())
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
    return cls.from_dict(json_format.MessageToDict(struct))
