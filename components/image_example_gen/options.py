"""The ImageExampleGen's own settings, carried in ExampleGen's `custom_config`.

They travel as a `google.protobuf.Struct` packed into TFX's `CustomConfig`, so
they show up as readable JSON in the execution's properties in ML Metadata and
in a compiled Kubeflow spec.
"""

import dataclasses
import json
from typing import Any, Dict, Optional, Sequence

from google.protobuf import json_format
from google.protobuf import struct_pb2
from tfx.proto import example_gen_pb2
from tfx.types import standard_component_specs

from records import features

INPUT_FORMATS = ('idx', 'images')
# The keys of to_dict: the fields, the geometry as its three properties.
_KEYS = ('input_format', 'class_names', 'image_height', 'image_width',
         'image_channels', 'num_shards', 'skip_bad_images', 'image_encoding',
         'png_min_pixels', 'infer_size', 'infer_channels', 'eval_percent',
         'max_image_pixels', 'validation_percent', 'span_window')
_INT_KEYS = ('num_shards', 'png_min_pixels', 'eval_percent', 'max_image_pixels',
             'validation_percent', 'span_window')


@dataclasses.dataclass(frozen=True)
class ImageExampleGenOptions:
  """What to read and how to write it.

  num_shards: output files per split, required (pipeline/knobs.py has the
    pipeline's). Beam's DirectRunner writes one file per worker (two on a
    laptop), too few for the Trainer to interleave reads.
  input_format: 'idx' (MNIST-style files) or 'images' (class folders).
  class_names: names of the labels 0..n-1. Default: 'idx' uses the label
    values ('0'..'9' for MNIST), 'images' the sorted class folder names.
  geometry: size and channels images are converted to ('images' only: IDX
    files carry their own geometry).
  skip_bad_images: 'images' only: skip files that cannot be read as images
    (corrupt, empty, not an image) instead of failing, and record which on
    the Examples artifact. Off by default: bad data stops the run.
  image_encoding: how records hold the pixels: 'raw', or a 'png' or 'jpeg'
    file (features.IMAGE_ENCODINGS); the Transform decodes them. Or 'auto'
    (features.AUTO_ENCODING): png for images of at least `png_min_pixels`
    pixels (height x width), raw below, decided once the geometry is known
    (an IDX file's is in its header).
  png_min_pixels: 'auto' only (pipeline/knobs.py has the pipeline's).
  infer_size, infer_channels: 'images' only: choose the size, the channels
    of `geometry` from a sample of the images' headers instead
    (geometry_choice.py); `geometry` holds the rest.
  eval_percent: 'images' without train/eval folders: the share of images
    hashed into eval (folder_layout.py; pipeline/knobs.py has the
    pipeline's); needed only there.
  max_image_pixels: 'images' only: an image whose header claims more pixels
    is refused before it is decoded; None: Pillow's own limit.
  validation_percent: the share of the training records hashed into the
    validation split (validation_split.py; pipeline/knobs.py has the
    pipeline's), unless the data gives one (a validation/ folder). 0: no
    validation split, and a validation/ folder is an error. None: none
    carved, a validation/ folder taken.
  span_window: with a span pattern, the newest this many spans are read
    into one Examples (span_window.py); 1: the newest span alone.
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
    values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
    values['class_names'] = (list(self.class_names) if self.class_names
                             else None)
    values.update(self.geometry.to_dict())
    return {key: values[key] for key in _KEYS}

  @classmethod
  def from_dict(cls, d: Dict[str, Any]) -> 'ImageExampleGenOptions':
    """The options of `to_dict`'s values (numbers may come back as floats)."""
    values = {key: d.get(key) for key in _KEYS}
    geometry = features.ImageGeometry.from_dict(values)
    for key in features.GEOMETRY_PROPERTIES:
      del values[key]
    for key in _INT_KEYS:
      if values[key] is not None:
        values[key] = int(values[key])
    values['class_names'] = values['class_names'] or None
    return cls(geometry=geometry, **{key: value for key, value in
                                     values.items() if value is not None})

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
      # Not everything has a default (num_shards): no guessing.
      raise ValueError('ImageExampleGen needs its custom_config '
                       '(ImageExampleGenOptions.to_custom_config()), '
                       'which carries num_shards; the execution has none')
    config = example_gen_pb2.CustomConfig()
    json_format.Parse(raw if isinstance(raw, str) else json.dumps(raw), config)
    struct = struct_pb2.Struct()
    config.custom_config.Unpack(struct)
    return cls.from_dict(json_format.MessageToDict(struct))
