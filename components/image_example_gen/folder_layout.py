"""The layouts of image folders, and the split of the one without splits.

  splits:  DATA/train/<class>/<image> and DATA/eval/<class>/<image>
  splits_with_validation: the same and DATA/validation/<class>/<image>
  classes: DATA/<class>/<image>, one input split (ALL_SPLIT) cut into train
           and eval by `output_config`'s hash buckets

With spans, DATA is each span's folder. `partition` hashes each image's path,
not its record as TFX does, so the split is the same with any geometry.
"""

import bisect
import hashlib
import itertools
import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

import tensorflow as tf
from tfx.proto import example_gen_pb2
from tfx.types import standard_component_specs
from tfx.utils import proto_utils

from components.image_example_gen import image_folder
from components.image_example_gen.span_pattern import check_span_dir_pattern

SPLITS = 'splits'
SPLITS_WITH_VALIDATION = 'splits_with_validation'
CLASSES = 'classes'
SPLIT_NAMES = ('train', 'eval')
VALIDATION = 'validation'  # An optional folder beside SPLIT_NAMES'.
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
           SPLITS_WITH_VALIDATION: ('train', VALIDATION, 'eval')}.get(layout)
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
      splits=[split(name='train', hash_buckets=100 - eval_percent),
              split(name='eval', hash_buckets=eval_percent)]))


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
            if tf.io.gfile.isdir(os.path.join(data_dir, VALIDATION))
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


def detect(input_base: str, span_dir_pattern: Optional[str] = None
           ) -> Optional[str]:
  """The layout of `input_base` or its span folders; None if none is clear."""
  try:
    if span_dir_pattern is None:
      return layout_of(input_base)
    spans = sorted(tf.io.gfile.glob(os.path.join(
        input_base, span_prefix(span_dir_pattern).rstrip('/').replace(
            '{SPAN}', '*'))), key=_span_order)
    found = [layout for layout in map(layout_of, spans) if layout]
    layouts = set(found)
    if layouts == {SPLITS, SPLITS_WITH_VALIDATION}:
      # A validation folder is the newest span's to give or not.
      return found[-1]
    return layouts.pop() if len(layouts) == 1 else None
  except (tf.errors.OpError, OSError):
    return None


def _span_order(folder: str) -> Tuple[int, ...]:
  return tuple(int(n) for n in re.findall(r'\d+', os.path.basename(folder)))


def fit(input_base: str, configured: example_gen_pb2.Input
        ) -> example_gen_pb2.Input:
  """The input config of the layout on disk, if the splits one's was set."""
  patterns = {split.name: split.pattern for split in configured.splits}
  if sorted(patterns) != sorted(SPLIT_NAMES):
    return configured
  span_dir_pattern = patterns['train'][:-len('train/*/*')].strip('/') or None
  try:
    if input_config(SPLITS, span_dir_pattern) != configured:
      return configured
  except ValueError:  # A span folder TFX's driver has already resolved.
    return configured
  layout = detect(input_base, span_dir_pattern)
  if layout not in (CLASSES, SPLITS_WITH_VALIDATION):
    return configured
  return input_config(layout, span_dir_pattern)


def resolve(exec_properties: Dict[str, Any],
            eval_percent: int) -> Dict[str, Any]:
  """Execution properties whose input and output configs fit the data."""
  configured = proto_utils.json_to_proto(
      exec_properties[standard_component_specs.INPUT_CONFIG_KEY],
      example_gen_pb2.Input())
  if proto_utils.json_to_proto(
      exec_properties.get(standard_component_specs.OUTPUT_CONFIG_KEY)
      or '{}',
      example_gen_pb2.Output()).split_config.splits:
    return exec_properties
  fitted = fit(exec_properties[standard_component_specs.INPUT_BASE_KEY],
               configured)
  if fitted == configured:
    return exec_properties
  fitted_properties = {
      **exec_properties,
      standard_component_specs.INPUT_CONFIG_KEY: proto_utils.proto_to_json(
          fitted)}
  if len(fitted.splits) == 1:  # The classes layout.
    fitted_properties[standard_component_specs.OUTPUT_CONFIG_KEY] = (
        proto_utils.proto_to_json(output_config(CLASSES, eval_percent)))
  return fitted_properties


def span_siblings(input_base: str, folder: str, span: int) -> Dict[int, str]:
  """{span: folder} of the folders named like span `span`'s `folder`.

  E.g. span-6 and span-12 beside span-7; empty if `folder` is not one folder
  name holding the number `span`.
  """
  runs = [m for m in re.finditer(r'\d+', folder) if int(m.group()) == span]
  if not folder or '/' in folder or not runs:
    return {}
  number = runs[-1]
  sibling = re.compile(re.escape(folder[:number.start()]) + r'(\d+)' +
                       re.escape(folder[number.end():]))
  found = {}
  for name in sorted(tf.io.gfile.listdir(input_base)):
    match = sibling.fullmatch(name.rstrip('/'))
    if match:
      found.setdefault(int(match.group(1)),
                       os.path.join(input_base, name.rstrip('/')))
  return found


def partition(files: Sequence[str], data_dir: str,
              split_config: example_gen_pb2.SplitConfig
              ) -> Dict[str, List[str]]:
  """{output split: its files} by TFX's hash buckets of paths under `data_dir`.

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
