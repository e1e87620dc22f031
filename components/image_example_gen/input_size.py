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
from records import features


@dataclasses.dataclass(frozen=True)
class InputSize:
  """The records and bytes of an input."""
  records: int  # Over all splits.
  bytes: int
  train_records: int  # In the splits named 'train'.


def measure(input_base: str, input_config: example_gen_pb2.Input,
            input_format: str) -> InputSize:
  """Measures the input of `input_config` under `input_base`, unread.

  Args:
    input_base: the folder of the data, local.
    input_config: the input splits; a {SPAN}, {VERSION} or date in their
      patterns matches any.
    input_format: 'idx' (images counted from the headers) or 'images' (one
      record a file).
  """
  records = size = train = 0
  if input_format == 'images':
    input_config, _ = folder_layout.fit(  # The input splits only.
        input_base, input_config, example_gen_pb2.Output(), eval_percent=0)
  for split in input_config.splits:
    split_records = 0
    # {SPAN}, {SPAN:4}, {VERSION}, {YYYY}...: any span, version or date.
    pattern = re.sub(r'\{[A-Z]+(:\d+)?\}', '*', split.pattern)
    paths = [path for path in sorted(glob.glob(os.path.join(input_base,
                                                            pattern)))
             if os.path.isfile(path)]
    if input_format == 'idx':
      for header in map(idx.read_header, paths):
        if len(header.shape) > 1:  # Images, not labels.
          split_records += header.count
          size += header.data_size
    else:  # The images ExampleGen reads: not what it leaves out.
      images = image_folder.sort_out(paths)[0]
      split_records += len(images)
      size += sum(map(os.path.getsize, images))
    records += split_records
    # The classes layout's one split is mostly train, once split.
    if split.name in (features.TRAIN_SPLIT, folder_layout.ALL_SPLIT):
      train += split_records
  return InputSize(records=records, bytes=size, train_records=train)
