"""How big an ImageExampleGen input is, before anything reads it (local paths
only; with spans, every span counts)."""

import dataclasses
import glob
import os
import re

from tfx.proto import example_gen_pb2

from components.image_example_gen import folder_layout
from components.image_example_gen import idx
from components.image_example_gen import image_folder


@dataclasses.dataclass(frozen=True)
class InputSize:
  """The records and bytes of an input."""
  records: int  # Over all splits.
  bytes: int
  train_records: int  # In the splits named 'train'.


def _glob_pattern(input_base: str, split_pattern: str) -> str:
  # {SPAN}, {SPAN:4}, {VERSION}, {YYYY}...: any span, version or date.
  return os.path.join(input_base, re.sub(r'\{[A-Z]+(:\d+)?\}', '*',
                                         split_pattern))


def measure(input_base: str, input_config: example_gen_pb2.Input,
            input_format: str) -> InputSize:
  """Measures the input of `input_config` under `input_base`, unread."""
  records = size = train = 0
  if input_format == 'images':
    input_config = folder_layout.fit(input_base, input_config)
  for split in input_config.splits:
    split_records = 0
    for path in sorted(glob.glob(_glob_pattern(input_base, split.pattern))):
      if not os.path.isfile(path):
        continue
      if input_format == 'idx':
        header = idx.read_header(path)
        if len(header.shape) > 1:  # Images, not labels.
          split_records += header.count
          size += header.data_size
      elif not image_folder.is_os_file(path):
        split_records += 1
        size += os.path.getsize(path)
    records += split_records
    if split.name == 'train':
      train += split_records
    elif split.name == folder_layout.ALL_SPLIT:  # Mostly train, once split.
      train += split_records
  return InputSize(records=records, bytes=size, train_records=train)
