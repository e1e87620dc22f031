"""DataChecks' executor: signatures in Beam, then matching over them.

It joins the shards' signatures (memory and a memmap), matches, judges the
image issues and writes the results. Why and how: docs/data-checks.md.
"""

import json
import os
import shutil
import tempfile
from typing import Any, Dict, List, Sequence, Tuple

import apache_beam as beam
from apache_beam.options.pipeline_options import (DirectOptions,  # pylint: disable=g-multiple-import
                                                  PipelineOptions,
                                                  StandardOptions)
import numpy as np
import tensorflow as tf
import threadpoolctl
from absl import logging
from tfx import types
from tfx.dsl.components.base import base_beam_executor
from tfx.types import artifact_utils

from components.data_checks import alignment
from components.data_checks import drop_copies
from components.data_checks import issues as issues_lib
from components.data_checks import matching
from components.data_checks import shard_signatures
from components.image_transform import image_encoding
from records import csv_cells
from records import data_check_results as results
from records import features
from records import shards

EXAMPLES_KEY = 'examples'
WITHOUT_COPIES_KEY = 'examples_without_copies'
WORK_FOLDER = '.signatures'
# The Examples' custom properties the held-out splits without copies keep.
CARRIED_PROPERTIES = frozenset((
    *features.GEOMETRY_PROPERTIES, features.IMAGE_ENCODING_PROPERTY,
    features.CLASS_NAMES_PROPERTY, features.GEOMETRY_CHOICE_PROPERTY,
    'payload_format', 'file_format', 'span', 'version', 'tfx_version',
    'spans'))
# The runner names that mean Beam's DirectRunner (None: the default).
_DIRECT_RUNNERS = (None, 'DirectRunner', 'SwitchingDirectRunner')
# Pairs the console names (those across splits first).
SHOWN_PAIRS = 3


def notice(text: str) -> None:
  """Logs `text` as a line the local run shows on its console."""
  logging.info(results.NOTICE_LINE, text)


class Shards:
  """Where each image of the joined signatures comes from."""

  def __init__(self, entries: Sequence[Tuple[str, str]], counts: Sequence[int]):
    self.entries = list(entries)  # (split, shard file path)
    self.starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

  @property
  def total(self) -> int:
    """The number of images in all shards."""
    return int(self.starts[-1])

  def locate(self, index: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Returns (shard number, index within the shard) of each global index."""
    shard = np.searchsorted(self.starts, index, side='right') - 1
    return shard, index - self.starts[shard]

  def split_of(self, index: np.ndarray, split_names: List[str]) -> np.ndarray:
    """Returns the number (into split_names) of each image's split."""
    shard_split = np.array([split_names.index(split)
                            for split, _ in self.entries], np.int64)
    return shard_split[self.locate(index)[0]]

  def record_names(self, index: np.ndarray) -> List[str]:
    """Returns 'shard file:index' of each global index."""
    shard, offset = self.locate(index)
    return [shards.place(self.entries[s][1], o)
            for s, o in zip(shard.tolist(), offset.tolist())]

  def sources(self, work_dir: str, index: np.ndarray) -> List[str]:
    """Returns the source (records/features.py) of each global index.

    Memory holds the sources of one shard at a time.

    Args:
      work_dir: where shard_signatures wrote each shard's work files.
      index: global indices of images.
    """
    shard, offset = self.locate(index)
    found = np.empty(len(index), object)
    for number in np.unique(shard).tolist():
      here = shard == number
      found[here] = shard_signatures.read_sources(work_dir, number)[
          offset[here]]
    return [source.decode('utf-8', 'replace') for source in found.tolist()]


def _geometry(examples: types.Artifact) -> features.ImageGeometry:
  if not all(examples.has_custom_property(key)
             for key in features.GEOMETRY_PROPERTIES):
    raise ValueError(
        f'the Examples at {examples.uri} do not say their image geometry '
        f'(custom properties {", ".join(features.GEOMETRY_PROPERTIES)})')
  return features.ImageGeometry.from_dict(
      {key: examples.get_int_custom_property(key)
       for key in features.GEOMETRY_PROPERTIES})


def _shard_files(examples: types.Artifact, split: str) -> List[str]:
  return shards.split_files(artifact_utils.get_split_uri([examples], split))


class Executor(base_beam_executor.BaseBeamExecutor):
  """Finds copies and image issues in every split of an Examples artifact."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    """Writes the copies and image issues of every split.

    Raises:
      ValueError: the Examples do not say their geometry, or a record is
        not an image of it.
    """
    examples = artifact_utils.get_single_instance(input_dict[EXAMPLES_KEY])
    output = artifact_utils.get_single_instance(output_dict[results.OUTPUT_KEY])
    geometry, encoding = _geometry(examples), image_encoding(examples)
    split_names = artifact_utils.decode_split_names(examples.split_names)
    entries = [(split, path) for split in split_names
               for path in _shard_files(examples, split)]
    # Beam's workers write each shard's signatures beside the results: a
    # place every worker can reach (the pipeline root), removed at the end.
    work_dir = os.path.join(output.uri, WORK_FOLDER)
    tf.io.gfile.makedirs(work_dir)
    local_dir = tempfile.mkdtemp(prefix='data_checks-')
    try:
      counts = self._signatures(entries, work_dir, geometry, encoding)
      shards = Shards(entries, counts)
      held_out = self._check(shards, split_names, work_dir, local_dir, output,
                             geometry)
    finally:
      shutil.rmtree(local_dir, ignore_errors=True)
      tf.io.gfile.rmtree(work_dir)
    if WITHOUT_COPIES_KEY in output_dict:  # DataChecksDroppingCopies
      self._drop(examples, shards, held_out, artifact_utils.
                 get_single_instance(output_dict[WITHOUT_COPIES_KEY]))

  def _drop(self, examples: types.Artifact, shards: Shards,
            held_out: Dict[str, np.ndarray], target: types.Artifact) -> None:
    """Writes the held-out splits into `target` without their copies of train.

    `target` gets the Examples' properties too.
    """
    target.split_names = artifact_utils.encode_split_names(list(held_out))
    jobs = []
    for split, index in held_out.items():
      split_uri = artifact_utils.get_split_uri([target], split)
      tf.io.gfile.makedirs(split_uri)
      shard, position = shards.locate(index)
      for number, (name, path) in enumerate(shards.entries):
        if name == split:
          jobs.append((path, os.path.join(split_uri, os.path.basename(path)),
                       position[shard == number].tolist()))
    with self._make_beam_pipeline() as pipeline:
      _ = (pipeline
           | 'HeldOutShards' >> beam.Create(jobs)
           | 'Spread' >> beam.Reshuffle()
           | 'WithoutCopies' >> beam.MapTuple(drop_copies.write_without))
    # What readers of Examples look for, and no more: the rest (counts,
    # fingerprints, lists of the input's files) describe ImageExampleGen's
    # records, not these.
    for name, value in examples.mlmd_artifact.custom_properties.items():
      if name in CARRIED_PROPERTIES:
        target.mlmd_artifact.custom_properties[name].CopyFrom(value)
    for name in ('span', 'version'):
      if examples.has_property(name) and target.has_property(name):
        setattr(target, name, getattr(examples, name))
    class_names = os.path.join(examples.uri, features.CLASS_NAMES_FILE)
    if tf.io.gfile.exists(class_names):
      tf.io.gfile.copy(class_names, os.path.join(
          target.uri, features.CLASS_NAMES_FILE), overwrite=True)

  def _signatures(self, entries, work_dir: str,
                  geometry: features.ImageGeometry, encoding: str
                  ) -> List[int]:
    """Writes each shard's signatures into work_dir, in Beam; returns counts."""
    with self._make_beam_pipeline() as pipeline:
      _ = (pipeline
           | 'Shards' >> beam.Create(shard_signatures.groups(
               [path for _, path in entries],
               at_least=beam_workers(pipeline.options)))
           | 'Spread' >> beam.Reshuffle()
           | 'Signatures' >> beam.Map(shard_signatures.write_shards,
                                      work_dir, geometry, encoding))
    return [len(shard_signatures.read_small(work_dir, number, ['label'])[
        'label']) for number in range(len(entries))]

  def _check(self, shards: Shards, split_names: List[str], work_dir: str,
             local_dir: str, output: types.Artifact,
             geometry: features.ImageGeometry) -> Dict[str, np.ndarray]:
    """Matches, judges and records; returns `held_out_copies`."""
    small = _join_small(shards, work_dir)
    split = shards.split_of(np.arange(shards.total), split_names)
    per_image = {suffix: _join(shards, work_dir, local_dir, suffix, *layout)
                 for suffix, layout in
                 shard_signatures.per_image_arrays(geometry).items()}
    thumbs = per_image[shard_signatures.THUMBNAILS]
    framed = matching.Framed(
        small['framed_phash'], small['framed_order_key'],
        per_image[shard_signatures.FRAMED], per_image[shard_signatures.DETAILS],
        (*alignment.detail_shape(geometry.height, geometry.width),
         geometry.channels),
        small['framed'], split, small['label'],
        reduced=max(geometry.height, geometry.width) > alignment.DETAIL)
    flags = issues_lib.flags(
        small['scores'], float(np.median(small['scores']['sharpness']))
        if shards.total else 0.0)
    # numpy's BLAS on one thread, as in shard_signatures.write_shards.
    with threadpoolctl.threadpool_limits(1, user_api='blas'):
      pairs = matching.find_copies(small['digest'], small['phash'],
                                   small['order_key'], thumbs,
                                   ~flags['near_blank'], framed)
    _write_pairs(output.uri, pairs, shards, split, split_names, small,
                 work_dir)
    _write_issues(output.uri, flags, small['scores'], shards, split,
                  split_names, small['label'], work_dir)
    held_out = held_out_copies(pairs, split, split_names)
    _record(output, pairs, split, split_names, flags, held_out,
            small['label'])
    return held_out


def beam_workers(options: PipelineOptions) -> int:
  """The workers a pipeline of `options` runs on: one for the DirectRunner
  in memory, its workers otherwise; a core each for other runners.

  Each group of shards costs a tf.data trace and a reader: no more groups
  than workers to run them.
  """
  cores = os.cpu_count() or 1
  if options.view_as(StandardOptions).runner not in _DIRECT_RUNNERS:
    return cores
  direct = options.view_as(DirectOptions)
  if direct.direct_running_mode == 'in_memory':
    return 1
  return direct.direct_num_workers or cores


def _join_small(shards: Shards, work_dir: str) -> Dict[str, np.ndarray]:
  parts: Dict[str, list] = {}
  for number in range(len(shards.entries)):
    for name, array in shard_signatures.read_small(work_dir, number).items():
      parts.setdefault(name, []).append(array)
  return {name: np.concatenate(arrays) for name, arrays in parts.items()}


def _join(shards: Shards, work_dir: str, local_dir: str, suffix: str,
          dtype, size: int) -> np.ndarray:
  """One memmap, in `local_dir`, of every shard's per-image arrays of one
  kind (a suffix of shard_signatures.per_image_arrays), `size` a row."""
  path = os.path.join(local_dir, suffix.lstrip('.'))
  with open(path, 'wb') as joined:
    for number in range(len(shards.entries)):
      if shards.starts[number + 1] == shards.starts[number]:
        continue  # An empty shard: GFile may not have made its file.
      with tf.io.gfile.GFile(
          shard_signatures.work_path(work_dir, number, suffix), 'rb') as f:
        shutil.copyfileobj(f, joined, 1 << 24)
  if not shards.total:
    return np.zeros((0, size), dtype)
  return np.memmap(path, dtype, 'r', shape=(shards.total, size))


def _write_pairs(uri: str, pairs: matching.Pairs, shards: Shards,
                 split: np.ndarray, split_names: List[str],
                 small: Dict[str, np.ndarray], work_dir: str) -> None:
  """Writes copies.csv, pairs between splits first, then in record order."""
  first_split, second_split = split[pairs.first], split[pairs.second]
  order = np.lexsort((pairs.second, pairs.first,
                      first_split == second_split))
  with tf.io.gfile.GFile(os.path.join(uri, results.COPIES_FILE), 'w') as f:
    writer = csv_cells.writer(f, lineterminator='\n')
    writer.writerow(results.PAIR_COLUMNS)
    for start in range(0, len(order), 100_000):
      block = order[start:start + 100_000]
      a, b = pairs.first[block], pairs.second[block]
      for row in zip(
          (split_names[s] for s in first_split[block]),
          shards.sources(work_dir, a), small['label'][a].tolist(),
          (split_names[s] for s in second_split[block]),
          shards.sources(work_dir, b), small['label'][b].tolist(),
          np.where(pairs.exact[block], 'exact',
                   np.where(pairs.rescaled[block], 'rescaled', 'near')),
          np.round(pairs.difference[block].astype(float), 3).tolist(),
          np.round(pairs.correlation[block].astype(float), 4).tolist(),
          shards.record_names(a), shards.record_names(b)):
        writer.writerow(row)


def _write_issues(uri: str, flags: Dict[str, np.ndarray], scores: np.ndarray,
                  shards: Shards, split: np.ndarray, split_names: List[str],
                  labels: np.ndarray, work_dir: str) -> None:
  """Writes image_issues.csv, a line per image and issue, with its score."""
  score_of = {'near_blank': 'spread', 'dark': 'high', 'bright': 'low',
              'blurry': 'sharpness'}
  with tf.io.gfile.GFile(os.path.join(uri, results.ISSUES_FILE), 'w') as f:
    writer = csv_cells.writer(f, lineterminator='\n')
    writer.writerow(results.ISSUE_COLUMNS)
    for issue in issues_lib.ISSUES:
      index = np.flatnonzero(flags[issue])
      for row in zip((split_names[s] for s in split[index]),
                     shards.sources(work_dir, index), labels[index].tolist(),
                     [issue] * len(index),
                     np.round(scores[score_of[issue]][index].astype(float),
                              3).tolist(),
                     shards.record_names(index)):
        writer.writerow(row)


def held_out_copies(pairs: matching.Pairs, split: np.ndarray,
                    split_names: List[str]) -> Dict[str, np.ndarray]:
  """Returns {split: indices of its images with a copy in train}.

  Every split but train is there. Without a train split the dict is empty.

  Args:
    pairs: the copies found, by global index.
    split: each image's split, a number into `split_names`.
    split_names: the splits' names.
  """
  if features.TRAIN_SPLIT not in split_names:
    return {}
  train = split_names.index(features.TRAIN_SPLIT)
  first_split, second_split = split[pairs.first], split[pairs.second]
  return {name: np.unique(np.concatenate([
      pairs.second[(first_split == train) & (second_split == number)],
      pairs.first[(second_split == train) & (first_split == number)]]))
          for number, name in enumerate(split_names) if number != train}


def _record(output: types.Artifact, pairs: matching.Pairs, split: np.ndarray,
            split_names: List[str], flags: Dict[str, np.ndarray],
            held_out_index: Dict[str, np.ndarray], labels: np.ndarray
            ) -> None:
  """Records the counts as custom properties and logs what was found."""
  images = {name: int((split == number).sum())
            for number, name in enumerate(split_names)}
  # The class balance: read here, where every label already is, it costs
  # the report nothing.
  label_counts = {
      name: {str(label): int(count) for label, count in zip(
          *np.unique(labels[split == number], return_counts=True))}
      for number, name in enumerate(split_names)}
  first_split, second_split = split[pairs.first], split[pairs.second]
  copies = {}
  for a, name_a in enumerate(split_names):
    for b in range(a, len(split_names)):
      count = int(((first_split == a) & (second_split == b)).sum())
      copies[results.split_pair(name_a, split_names[b])] = count
      output.set_int_custom_property(
          results.count_property(name_a, split_names[b]), count)
  held_out = {name: {'images': len(index),
                     'share': len(index) / max(images[name], 1)}
              for name, index in held_out_index.items()}
  issue_counts = {name: {issue: int((flags[issue] & (split == number)).sum())
                         for issue in issues_lib.ISSUES}
                  for number, name in enumerate(split_names)}
  for name, value in ((results.IMAGES_PROPERTY, images),
                      (results.COPIES_PROPERTY, copies),
                      (results.HELD_OUT_PROPERTY, held_out),
                      (results.ISSUES_PROPERTY, issue_counts),
                      (results.LABELS_PROPERTY, label_counts)):
    output.set_string_custom_property(name, json.dumps(value))
  found = ', '.join(f'{pair} {count:,}' for pair, count in copies.items())
  notice(f'copies: {found} (list: {output.uri}/{results.COPIES_FILE})')
  for row in results.read_pairs(output.uri, SHOWN_PAIRS):
    notice(f'  {results.describe_pair(row)}')
  for line in results.held_out_lines(held_out):
    notice(line)
  totals = {issue: sum(c[issue] for c in issue_counts.values())
            for issue in issues_lib.ISSUES}
  notice('image issues: ' + ', '.join(f'{issue.replace("_", "-")} {count:,}'
                                      for issue, count in totals.items()))
