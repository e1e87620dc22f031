"""A window of spans: the newest N spans present, read into one Examples.

Why and how: docs/input-data.md#a-window-of-spans.
"""

import dataclasses
import json
import os
import re
from typing import Any, Dict, List, Optional

import tensorflow as tf
from tfx.components.example_gen import utils as example_gen_utils
from tfx.proto import example_gen_pb2
from tfx.types import standard_component_specs
from tfx.utils import proto_utils

from components.image_example_gen import folder_layout
from components.image_example_gen.options import ImageExampleGenOptions
from records import features

SPANS_PROPERTY = 'spans'


@dataclasses.dataclass(frozen=True)
class Span:
  """One span of the window: its number, folder and input splits."""
  number: int
  folder: str  # Its folder's name under the input base, e.g. 'span-7'.
  input_config: example_gen_pb2.Input  # Patterns under the input base.

  def output_split(self, split: str, newest: bool) -> str:
    """The split of the Examples that this span's `split` goes to."""
    return (features.EARLIER_EVAL_SPLIT
            if split == features.EVAL_SPLIT and not newest else split)


def span_folder(input_config: example_gen_pb2.Input) -> Optional[str]:
  """The folder every split pattern starts with (the span's), or None."""
  folders = {split.pattern.strip('/').split('/')[0]
             for split in input_config.splits if '/' in split.pattern}
  if len(folders) != 1 or len(input_config.splits) == 0:
    return None
  return folders.pop()


def _siblings(input_base: str, folder: str, span: int) -> Dict[int, str]:
  """{span: folder name} of the folders named like span `span`'s `folder`."""
  runs = [m for m in re.finditer(r'\d+', folder) if int(m.group()) == span]
  if not folder or '/' in folder or not runs:
    return {}
  sibling = re.compile(re.escape(folder[:runs[-1].start()]) + r'(\d+)' +
                       re.escape(folder[runs[-1].end():]))
  found = {}
  for name in sorted(tf.io.gfile.listdir(input_base)):
    match = sibling.fullmatch(name.rstrip('/'))
    if match:
      found.setdefault(int(match.group(1)), name.rstrip('/'))
  return found


def _fit(input_base: str, name: str, config: example_gen_pb2.Input,
         input_format: str) -> Optional[example_gen_pb2.Input]:
  """The input config of an earlier span's folder `name`; None: no data."""
  if input_format == 'idx':  # The newest span's patterns, if any match.
    return config if any(tf.io.gfile.glob(os.path.join(
        input_base, split.pattern)) for split in config.splits) else None
  layout = folder_layout.layout_of(os.path.join(input_base, name))
  if layout is None:
    return None
  config = folder_layout.input_config(layout)
  for split in config.splits:
    split.pattern = f'{name}/{split.pattern}'
  return config


def resolve(input_base: str, input_config: example_gen_pb2.Input,
            newest: int, size: int, input_format: str) -> List[Span]:
  """The window's spans, oldest first: span `newest` and earlier spans on disk.

  Args:
    input_base: the folder of the span folders.
    input_config: span `newest`'s, as TFX's driver resolved it.
    newest: the span TFX's driver resolved, the window's last.
    size: the most spans in the window.
    input_format: 'idx' or 'images': how an earlier span folder is told to
      hold data.

  Raises:
    ValueError: a window of more than one span, and the split patterns do not
      all start with one span folder holding the span number.
  """
  folder = span_folder(input_config)
  if size == 1:
    return [Span(newest, (folder or '') if newest else '', input_config)]
  siblings = _siblings(input_base, folder or '', newest)
  if not siblings:
    patterns = [split.pattern for split in input_config.splits]
    raise ValueError(
        f'a span window needs every split pattern in one span folder, e.g. '
        f'span-{{SPAN}}/...; got {patterns} for span {newest}')
  window = [Span(newest, folder, input_config)]
  for number in sorted((n for n in siblings if n < newest), reverse=True):
    if len(window) == size:
      break
    config = example_gen_pb2.Input()
    config.CopyFrom(input_config)
    for split in config.splits:
      split.pattern = (f'{siblings[number]}/'
                       f'{split.pattern.strip("/").split("/", 1)[1]}')
    config = _fit(input_base, siblings[number], config, input_format)
    if config is not None:
      window.append(Span(number, siblings[number], config))
  return window[::-1]


def of_execution(exec_properties: Dict[str, Any]) -> List[Span]:
  """The span window of an execution whose span the driver resolved.

  Raises:
    ValueError: a window of more than one span and a {VERSION} in the
      patterns.
  """
  options = ImageExampleGenOptions.from_exec_properties(exec_properties)
  if (options.span_window > 1 and exec_properties.get(
      example_gen_utils.VERSION_PROPERTY_NAME) is not None):
    raise ValueError('a span window reads span folders without versions; '
                     'the split patterns have a {VERSION}')
  return resolve(
      exec_properties[standard_component_specs.INPUT_BASE_KEY],
      proto_utils.json_to_proto(
          exec_properties[standard_component_specs.INPUT_CONFIG_KEY],
          example_gen_pb2.Input()),
      exec_properties[example_gen_utils.SPAN_PROPERTY_NAME],
      options.span_window, options.input_format)


def encode_spans(window: List[Span]) -> str:
  """SPANS_PROPERTY's value: '[5, 6, 7]'."""
  return json.dumps([span.number for span in window])


def decode_spans(value: str) -> List[int]:
  """The span numbers of SPANS_PROPERTY's value."""
  return [int(span) for span in json.loads(value)] if value else []


def shortfall(window: List[Span], size: int) -> Optional[str]:
  """The console line when fewer spans than the window were found."""
  if len(window) >= size:
    return None
  found = ', '.join(span.folder for span in window)
  return (f'span window {size}: only {len(window)} '
          f'span{"s" if len(window) != 1 else ""} found ({found}); '
          'training on what there is')
