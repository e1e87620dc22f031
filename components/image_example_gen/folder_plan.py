"""Each output split's image files, listed and checked before Beam starts."""

import collections
import dataclasses
import os
from typing import Dict, List, Optional, Sequence

from tfx.proto import example_gen_pb2

from components.image_example_gen import folder_layout
from components.image_example_gen import image_folder
from components.image_example_gen import span_window
from components.image_example_gen import validation_split
from components.image_example_gen.errors import InputDataError
from records import features

_NAMES_SHOWN = 10


@dataclasses.dataclass(frozen=True)
class FolderPlan:
  """The image files of each output split, and how they were found."""
  files: Dict[str, List[str]]  # {output split: its image files, sorted}
  class_names: List[str]
  hash_split: bool  # Split by folder_layout.partition, not by folders.
  validation_carved: bool = False  # Out of train, by validation_split.py.

  def summary(self) -> str:
    """'3 classes (cat, dog, fish); train: 80 images, eval: 20 images'."""
    names = ', '.join(self.class_names[:_NAMES_SHOWN]) + (
        ', ...' if len(self.class_names) > _NAMES_SHOWN else '')
    counts = ', '.join(f'{split}: {len(files):,} images'
                       for split, files in self.files.items())
    how = ('; no train/eval folders: split by a hash of each image\'s path'
           if self.hash_split else '')
    if self.validation_carved:
      how += '; validation taken out of train by a hash of each path'
    return f'{len(self.class_names)} classes ({names}); {counts}{how}'


def _data_dir(pattern: str) -> str:
  return os.path.dirname(os.path.dirname(pattern))


def _check_layout(patterns: Dict[str, str]) -> None:
  if any(image_folder.class_dirs(p) for p in patterns.values()):
    return
  split_dirs = {_data_dir(p) for p in patterns.values()}
  parents = {os.path.dirname(d) for d in split_dirs}
  for data_dir in (parents if set(patterns) - {features.VALIDATION_SPLIT} ==
                   set(folder_layout.SPLIT_NAMES) else split_dirs):
    if folder_layout.layout_of(data_dir) is None:
      raise InputDataError(data_dir, folder_layout.layouts_expected(data_dir))


def _check_classes(files: Dict[str, List[str]], patterns: Dict[str, str],
                   hash_split: bool) -> None:
  train = (features.TRAIN_SPLIT if features.TRAIN_SPLIT in files
           else next(iter(files)))
  present = {split: collections.Counter(
      image_folder.class_name(os.path.dirname(p)) for p in split_files)
             for split, split_files in files.items()}
  train_dir = (_data_dir(next(iter(patterns.values()))) if hash_split
               else _data_dir(patterns[train]))
  if len(present[train]) < 2:
    found = sorted(present[train]) or ['none']
    raise InputDataError(
        train_dir, f'split {train!r} holds images of {len(present[train])} '
        f'class ({", ".join(found)}): a classifier needs at least two class '
        'folders')
  for split, counts in present.items():
    for name in sorted(set(counts) - set(present[train])):
      if hash_split or split not in patterns:  # Carved by a hash.
        raise InputDataError(
            os.path.join(train_dir, name),
            f'class {name!r}: all its {counts[name]} images fell into split '
            f'{split!r} by the hash split, none into {train!r}: the model '
            'could not learn it; add images to the class')
      raise InputDataError(
          os.path.join(_data_dir(patterns[split]), name),
          f'class {name!r} has images in split {split!r} but none in split '
          f'{train!r}: the model could not learn it')


def check_span_classes(input_base: str, input_config: example_gen_pb2.Input,
                       span: int, class_names: Sequence[str]) -> None:
  """Checks span `span`'s class folders against the newest earlier span's.

  Labels are indices in the sorted class names, so a class added or dropped
  shifts the labels after it.

  Args:
    input_base: the folder of the span folders.
    input_config: the input splits, in span folders; without a span folder
      nothing is checked.
    span: the span's number; 0 or below checks nothing.
    class_names: the classes found in span `span`.

  Raises:
    InputDataError: the classes differ from the earlier span's.
  """
  folder = span_window.span_folder(input_config)
  if span <= 0 or folder is None:
    return
  try:
    window = span_window.resolve(input_base, input_config, span, 2, 'images')
  except ValueError:  # Not one span folder with the span's number.
    return
  if len(window) < 2:
    return
  earlier = image_folder.discover_class_names(
      os.path.join(input_base, split.pattern)
      for split in window[0].input_config.splits)
  added = sorted(set(class_names) - set(earlier))
  missing = sorted(set(earlier) - set(class_names))
  if not added and not missing:
    return
  changes = '; '.join(
      f'{what} {", ".join(repr(n) for n in names)}'
      for what, names in (('added', added), ('missing', missing)) if names)
  raise InputDataError(
      os.path.join(input_base, folder),
      f'class folders differ from {window[0].folder}\'s: '
      f'{changes}; labels are indices in the sorted class names, so they '
      'would no longer mean what they meant to earlier models; to change the '
      'classes on purpose, fix every label with --class-names '
      f'{",".join(earlier + added)}')


def plan(input_base: str, input_config: example_gen_pb2.Input,
         output_config: example_gen_pb2.Output,
         class_names: Optional[Sequence[str]], span: int,
         validation_percent: Optional[int] = None) -> FolderPlan:
  """Lists and checks span `span`'s input splits, cut into output splits.

  Args:
    input_base: the folder of the data, or of its span folders.
    input_config: the input splits; patterns are under `input_base`.
    output_config: its hash-bucket splits, if any, cut the one input split.
    class_names: the classes given; None finds them in the folders (and
      checks them against the earlier span's).
    span: the span's number (TFX's; 0 without spans).
    validation_percent: the share of train, in percent, carved out as
      validation where no validation folder is given; None or 0: none.

  Raises:
    InputDataError: bad or missing folders, classes or splits.
    ValueError: an output_config with splits and more than one input split.
  """
  patterns = {split.name: os.path.join(input_base, split.pattern)
              for split in input_config.splits}
  _check_layout(patterns)
  if features.VALIDATION_SPLIT in patterns and validation_percent == 0:
    raise InputDataError(
        _data_dir(patterns[features.VALIDATION_SPLIT]),
        'a validation folder, but --validation-percent 0 asks for no '
        'validation split: remove the folder or the flag')
  names = [image_folder.class_name(name) for name in class_names or
           image_folder.discover_class_names(patterns.values())]
  if len(names) < 2:
    raise InputDataError(
        input_base,
        f"{len(names)} class folder{'' if len(names) == 1 else 's'} "
        f'found ({", ".join(names) or "none"}): a classifier needs at least '
        'two')
  if not class_names:
    check_span_classes(input_base, input_config, span, names)
  files = {name: image_folder.check_split(pattern, names)
           for name, pattern in patterns.items()}
  hash_split = bool(output_config.split_config.splits)
  train_dir = _data_dir(patterns.get(features.TRAIN_SPLIT, ''))
  if hash_split:
    if len(files) != 1:
      raise ValueError('an output_config split_config needs exactly one '
                       f'input split, got {sorted(files)}')
    [(name, split_files)] = files.items()
    train_dir = _data_dir(patterns[name])
    files = folder_layout.partition(split_files, train_dir,
                                    output_config.split_config)
  carved = bool(validation_percent and features.TRAIN_SPLIT in files and
                features.VALIDATION_SPLIT not in files)
  if carved:
    keys = {path: os.path.relpath(path, train_dir).replace(os.sep,
                                                           '/').encode()
            for path in files[features.TRAIN_SPLIT]}
    files = validation_split.carve(files, keys, validation_percent)
    if not files[features.VALIDATION_SPLIT]:
      raise InputDataError(
          train_dir, f'--validation-percent {validation_percent} put none of '
          f'its {len(keys)} training images into the validation split: '
          'add images, raise the percentage, or give a validation/ folder')
  _check_classes(files, patterns, hash_split)
  return FolderPlan(files=files, class_names=names, hash_split=hash_split,
                    validation_carved=carved)


def plan_window(input_base: str, window: List[span_window.Span],
                output_config: example_gen_pb2.Output,
                class_names: Optional[Sequence[str]],
                eval_percent: Optional[int],
                validation_percent: Optional[int]) -> FolderPlan:
  """Plans each span of `window` as if read alone, and joins them by split.

  Args:
    input_base: the folder of the span folders.
    window: the spans read, oldest first (span_window.resolve).
    output_config: the newest span's output splits.
    class_names: the classes given; None finds them in the folders.
    eval_percent: the share of images, in percent, that an earlier span of
      class folders gives eval; None where none was set.
    validation_percent: as `plan`'s, for each span.

  Raises:
    InputDataError: an earlier span of class folders and no eval_percent, or
      spans of different classes.
  """
  newest = window[-1]
  files: Dict[str, List[str]] = {}
  plans = []
  for span in window:
    span_output = output_config
    if span is not newest and len(span.input_config.splits) != 1:
      span_output = example_gen_pb2.Output()  # Train and eval folders.
    elif span is not newest and not output_config.split_config.splits:
      if eval_percent is None:
        raise InputDataError(
            os.path.join(input_base, span.folder),
            'holds class folders without train/eval folders: splitting them '
            'needs eval_percent')
      span_output = folder_layout.output_config(folder_layout.CLASSES,
                                                eval_percent)
    plans.append(plan(input_base, span.input_config, span_output, class_names,
                      span.number, validation_percent))
    for split, split_files in plans[-1].files.items():
      files.setdefault(span.output_split(split, span is newest),
                       []).extend(split_files)
  last = plans[-1]
  for span, span_plan in zip(window, plans):
    # Catches a pair check_span_classes could not tell apart as spans.
    if span_plan.class_names != last.class_names:
      raise InputDataError(
          os.path.join(input_base, span.folder),
          f'classes {span_plan.class_names} differ from {newest.folder}\'s '
          f'{last.class_names}; give them all with --class-names')
  # The newest span's splits in their order, then any other.
  order = [*last.files, *(split for split in files if split not in last.files
                          and split != features.EARLIER_EVAL_SPLIT),
           features.EARLIER_EVAL_SPLIT]
  return FolderPlan(
      files={split: files[split] for split in order if split in files},
      class_names=last.class_names, hash_split=last.hash_split,
      validation_carved=any(p.validation_carved for p in plans))
