"""The layouts of image folders, and the split of the one without splits.

Why and how: docs/input-data.md#image-folders---input-format-images.
"""

import bisect
import hashlib
import itertools
import os
import re
from typing import Dict, List, Optional, Sequence, Tuple

import tensorflow as tf
from tfx.proto import example_gen_pb2

from components.image_example_gen import image_folder
from components.image_example_gen.span_pattern import check_span_dir_pattern
from records import features

SPLITS = 'splits'
SPLITS_WITH_VALIDATION = 'splits_with_validation'
CLASSES = 'classes'
# Each a folder, and validation optionally beside them.
SPLIT_NAMES = (features.TRAIN_SPLIT, features.EVAL_SPLIT)
ALL_SPLIT = 'all'  # The one input split of the classes layout.


def span_prefix(span_dir_pattern: Optional[str]) -> str:
  """'span-{SPAN}/' of a checked span_dir_pattern; '' for None."""
  if span_dir_pattern is None:
    return ''
  return check_span_dir_pattern(span_dir_pattern).strip('/') + '/'


def input_config(layout: str, span_dir_pattern: Optional[str] = None
                 ) -> example_gen_pb2.Input:
  """The input splits of `layout`, in each span's folder if there are spans."""
  prefix = span_prefix(span_dir_pattern)
  names = {SPLITS: SPLIT_NAMES,
           SPLITS_WITH_VALIDATION: (features.TRAIN_SPLIT,
                                    features.VALIDATION_SPLIT,
                                    features.EVAL_SPLIT)}.get(layout)
  patterns = ({name: f'{prefix}{name}/*/*' for name in names}
              if names else {ALL_SPLIT: f'{prefix}*/*'})
  return example_gen_pb2.Input(splits=[
      example_gen_pb2.Input.Split(name=name, pattern=pattern)
      for name, pattern in patterns.items()])


def output_config(layout: str, eval_percent: int) -> example_gen_pb2.Output:
  """None for the splits layouts; train and eval hash buckets for classes."""
  if layout != CLASSES:
    return example_gen_pb2.Output()
  split = example_gen_pb2.SplitConfig.Split
  return example_gen_pb2.Output(split_config=example_gen_pb2.SplitConfig(
      splits=[split(name=features.TRAIN_SPLIT, hash_buckets=100 - eval_percent),
              split(name=features.EVAL_SPLIT, hash_buckets=eval_percent)]))


def _has_images(folder: str) -> bool:
  try:
    return any(not image_folder.is_os_file(os.path.join(folder, name)) and
               not tf.io.gfile.isdir(os.path.join(folder, name))
               for name in tf.io.gfile.listdir(folder))
  except tf.errors.OpError:
    return True  # Unreadable: check_split says so, naming it.


def layout_of(data_dir: str) -> Optional[str]:
  """The layout `data_dir` holds, or None if neither."""
  if not tf.io.gfile.isdir(data_dir):
    return None
  if any(tf.io.gfile.isdir(os.path.join(data_dir, name))
         for name in SPLIT_NAMES):
    return (SPLITS_WITH_VALIDATION
            if tf.io.gfile.isdir(
                os.path.join(data_dir, features.VALIDATION_SPLIT))
            else SPLITS)
  folders = [d for d in tf.io.gfile.glob(os.path.join(data_dir, '*'))
             if tf.io.gfile.isdir(d) and not image_folder.is_os_file(d)]
  return CLASSES if any(_has_images(d) for d in folders) else None


def layouts_expected(data_dir: str) -> str:
  """The error's text: the two layouts accepted, under `data_dir`."""
  return (f'neither layout of image folders found: expected '
          f'{data_dir}/train/<class>/<image> and {data_dir}/eval/<class>/'
          f'<image> (and optionally {data_dir}/validation/<class>/<image>), '
          f'or {data_dir}/<class>/<image> (split into train and eval by a '
          f'hash of each path)')


def _detect(input_base: str, span_dir_pattern: Optional[str]) -> Optional[str]:
  """The layout of `input_base` or its span folders; None if none is clear."""
  if span_dir_pattern is None:
    return layout_of(input_base)
  spans = sorted(tf.io.gfile.glob(os.path.join(
      input_base, span_dir_pattern.replace('{SPAN}', '*'))),
                 key=lambda d: [int(n) for n in re.findall(
                     r'\d+', os.path.basename(d))])
  found = [layout for layout in map(layout_of, spans) if layout]
  if set(found) == {SPLITS, SPLITS_WITH_VALIDATION}:
    return found[-1]  # A validation folder is the newest span's to give.
  return found[0] if len(set(found)) == 1 else None


def fit(input_base: str, configured: example_gen_pb2.Input,
        output: example_gen_pb2.Output, eval_percent: Optional[int]
        ) -> Tuple[example_gen_pb2.Input, example_gen_pb2.Output]:
  """The input and output configs of the layout on disk.

  Only the splits layout's input config (input_config(SPLITS)) is fitted:
  the component's default, or what a pipeline built without seeing the data
  configured; an output_config with splits is kept.

  Args:
    input_base: the folder of the data, or of its span folders.
    configured: the input config given; other ones are returned as they
      are.
    output: the output config given.
    eval_percent: the share of images, in percent, that class folders
      give eval; None where none was set.

  Raises:
    ValueError: class folders without train/eval folders, no output_config
      splits and no eval_percent to split them.
  """
  patterns = {split.name: split.pattern for split in configured.splits}
  if sorted(patterns) != sorted(SPLIT_NAMES):
    return configured, output
  train = patterns[features.TRAIN_SPLIT]
  span_dir_pattern = (train[:-len(f'{features.TRAIN_SPLIT}/*/*')].strip('/')
                      or None)
  try:
    if input_config(SPLITS, span_dir_pattern) != configured:
      return configured, output
    layout = _detect(input_base, span_dir_pattern)
  except ValueError:  # A span folder TFX's driver has already resolved.
    return configured, output
  except (tf.errors.OpError, OSError):
    return configured, output
  if layout not in (CLASSES, SPLITS_WITH_VALIDATION):
    return configured, output
  if layout == CLASSES and not output.split_config.splits:
    if eval_percent is None:
      raise ValueError(f'{input_base} holds class folders and no train/'
                       'eval folders: splitting them needs eval_percent')
    output = output_config(layout, eval_percent)
  return input_config(layout, span_dir_pattern), output


def partition(files: Sequence[str], data_dir: str,
              split_config: example_gen_pb2.SplitConfig
              ) -> Dict[str, List[str]]:
  """{output split: its files} by TFX's hash buckets of paths under `data_dir`.

  Args:
    files: the image files.
    data_dir: the folder the paths hashed are relative to.
    split_config: the output splits, each with its hash buckets.

  Raises:
    ValueError: a split_config without hash buckets, or a partition feature.
  """
  if split_config.HasField('partition_feature_name'):
    raise ValueError('image folders are split by path; '
                     'partition_feature_name is not supported')
  buckets = list(itertools.accumulate(
      split.hash_buckets for split in split_config.splits))
  if not buckets or min(s.hash_buckets for s in split_config.splits) < 1:
    raise ValueError(f'every output split needs hash_buckets: {split_config}')
  names = [split.name for split in split_config.splits]
  parts = {name: [] for name in names}
  for path in files:
    key = os.path.relpath(path, data_dir).replace(os.sep, '/').encode()
    bucket = int(hashlib.sha256(key).hexdigest(), 16) % buckets[-1]
    parts[names[bisect.bisect(buckets, bucket)]].append(path)
  return parts
