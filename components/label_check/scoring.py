"""A split scored by a model, and the rows of its suspects and mistakes.

The rows name each record by its source and its place in the split's
shards. What a row holds: docs/label-check.md#acting-on-the-list.
"""

import functools
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import numpy as np
import tensorflow as tf

from components.label_check import suspects
from records import eval_predictions
from records import features
from records import shards

# The model's mistakes listed, at most; the property counts them all.
MISTAKES_LISTED = 10_000


# Records per call of the model.
BATCH_SIZE = shards.SAMPLE_BATCH
# What a split is read for besides its images: each record's label and
# source (records written before records named their source read as '').
_LABEL_AND_SOURCE = {
    features.LABEL_KEY: tf.io.FixedLenFeature([], tf.int64),
    features.SOURCE_KEY: tf.io.FixedLenFeature([], tf.string, b'')}


def read_records(files: List[str], checked_buckets: int = shards.BUCKETS,
                 batch_size: int = BATCH_SIZE) -> tf.data.Dataset:
  """Returns batches of (positions, shard numbers, indices in the shards,
  serialized records) of a hash sample.

  Batches come in file order, then record order; positions count records
  over the whole of `files`.

  Args:
    files: the split's record files (split_files).
    checked_buckets: a record is read if its bucket (records/shards.py) is
      below this; every one by default.
    batch_size: records per batch.
  """
  return shards.sampled_batches(files, checked_buckets,
                                batch_size).prefetch(1)


def sources_at(split_uri: str, positions: np.ndarray
               ) -> Dict[int, Tuple[str, str]]:
  """Returns (source, place) of the records at `positions` of the split.

  The place, 'shard file:index', is where a reader finds the record without
  reading the split (records/data_check_results.py names records so too). Shards
  are read in order, up to the last record wanted.

  Args:
    split_uri: the split's folder.
    positions: places of records in the split, counted over its shards in
      name order; repeats are read once.

  Returns:
    {position: (source, place)} of each position the split holds.
  """
  wanted = np.unique(positions)
  found: Dict[int, Tuple[str, str]] = {}
  if not len(wanted):
    return found
  files = shards.split_files(split_uri)
  spec = {features.SOURCE_KEY: tf.io.FixedLenFeature([], tf.string)}
  start = 0  # The position of the batch's first record.
  shard, offset = -1, 0  # Its shard, and its first record's index there.
  # Only the few batches holding a wanted record are parsed.
  for number, batch in shards.numbered_batches(files, BATCH_SIZE).prefetch(1):
    size, number = int(tf.size(batch)), int(number)
    if number != shard:
      shard, offset = number, 0
    here = wanted[(wanted >= start) & (wanted < start + size)]
    if len(here):
      names = tf.io.parse_example(tf.gather(batch, here - start),
                                  spec)[features.SOURCE_KEY].numpy()
      for position, name in zip(here.tolist(), names):
        found[position] = (name.decode(), shards.place(
            files[shard], offset + position - start))
    start, offset = start + size, offset + size
    if start > wanted[-1]:
      break
  return found


def load_signature(model_dir: str, signature: str) -> Callable[..., Any]:
  """Loads the SavedModel's `signature`.

  The function returned holds the loaded model, whose variables a traced
  call (in a tf.data map) needs alive.

  Raises:
    ValueError: the model has no such signature.
  """
  loaded = tf.saved_model.load(model_dir)
  if signature not in loaded.signatures:
    raise ValueError(f'the model at {model_dir} has no signature '
                     f'{signature!r} (it has {sorted(loaded.signatures)})')

  def serve(serialized: tf.Tensor) -> Dict[str, tf.Tensor]:
    return loaded.signatures[signature](serialized)
  return serve


class Scored(NamedTuple):
  """A model's probabilities of the records checked, and the names of those
  it puts in another class than their label."""
  positions: np.ndarray  # [N], counted over the split's shards in order.
  labels: np.ndarray  # [N]
  probabilities: np.ndarray  # [N, classes]
  # {position: (source, place)} of each record whose most probable class
  # is not its label: every suspect and mistake, as sources_at names them.
  named: Dict[int, Tuple[str, str]]


class _Collected:
  """A split's scored batches as they pass, and the names of the records
  whose most probable class is not their label: the split is not read
  again for them."""

  def __init__(self, files: List[str]):
    self._files = files
    self._parts: List[Tuple[np.ndarray, ...]] = []
    self.named: Dict[int, Tuple[str, str]] = {}
    self.count = 0

  def add(self, positions: np.ndarray, shard: np.ndarray, index: np.ndarray,
          sources: np.ndarray, labels: np.ndarray,
          probabilities: np.ndarray) -> None:
    """Keeps a batch: its records' positions, places, sources, labels and
    probabilities."""
    self._parts.append((positions, labels, probabilities))
    self.named.update(shards.names_of_mistakes(
        self._files, probabilities, labels, positions, shard, index, sources))
    self.count += len(labels)

  def scored(self) -> Scored:
    """The batches kept, as one Scored."""
    if not self._parts:
      return Scored(np.zeros(0, np.int64), np.zeros(0, np.int64),
                    np.zeros((0, 0), np.float32), {})
    positions, labels, probabilities = (np.concatenate(part)
                                        for part in zip(*self._parts))
    return Scored(positions, labels, probabilities, self.named)


def model_probabilities(serve: Callable[..., Any], files: List[str],
                        probabilities_key: str,
                        checked_buckets: int = shards.BUCKETS) -> Scored:
  """Streams the records of `files` a hash sample keeps through `serve`.

  Args:
    serve: a signature taking serialized Examples.
    files: the record files, in order.
    probabilities_key: the signature's output of class probabilities.
    checked_buckets: the sample's buckets (records/shards.py); all of them
      by default, every record.
  """

  @tf.autograph.experimental.do_not_convert
  def score(batch_positions, shard, index, batch):
    parsed = tf.io.parse_example(batch, _LABEL_AND_SOURCE)
    return (batch_positions, shard, index, parsed[features.LABEL_KEY],
            parsed[features.SOURCE_KEY],
            tf.cast(serve(batch)[probabilities_key], tf.float32))

  # The model runs in the input pipeline, so the next batch is read while
  # it scores this one.
  collected = _Collected(files)
  for (batch_positions, shard, index, batch_labels, sources,
       batch_probabilities) in read_records(files, checked_buckets).map(
           score).prefetch(1).as_numpy_iterator():
    collected.add(batch_positions, shard, index, sources, batch_labels,
                  batch_probabilities)
  return collected.scored()


def evaluators_probabilities(files: List[str],
                             given: eval_predictions.Predictions
                             ) -> Tuple[Optional[Scored], str]:
  """The Evaluator's rows of the split's records, in the split's order.

  Rows are matched to records by their source feature; the split is read
  for its sources and labels only.

  Args:
    files: the split's record files, in order.
    given: the rows the Evaluator wrote (records/eval_predictions.py).

  Returns:
    (the scores, '') or, where the rows are not the split's records one to
    one with the same labels, (None, why).
  """
  ordered = np.argsort(given.sources, kind='stable')
  sources = given.sources[ordered]
  if not len(sources) or sources[0] == b'':
    return None, 'its rows name no source'
  if (sources[1:] == sources[:-1]).any():
    return None, 'two of its rows name the same source'
  collected = _Collected(files)
  for batch_positions, shard, index, parsed in read_records(files).map(
      tf.autograph.experimental.do_not_convert(
          lambda positions, shard, index, batch: (
              positions, shard, index,
              tf.io.parse_example(batch, _LABEL_AND_SOURCE)))
  ).prefetch(1).as_numpy_iterator():
    batch_sources = parsed[features.SOURCE_KEY]
    wanted = batch_sources.astype(np.bytes_)
    rows = np.minimum(np.searchsorted(sources, wanted), len(sources) - 1)
    if (sources[rows] != wanted).any():
      return None, 'a record of the split is not among its rows'
    rows = ordered[rows]
    if (given.labels[rows] != parsed[features.LABEL_KEY]).any():
      return None, 'a record\'s label is not the one its row gives'
    collected.add(batch_positions, shard, index, batch_sources,
                  parsed[features.LABEL_KEY], given.probabilities[rows])
  if collected.count != len(sources):
    return None, (f'it has {len(sources):,} rows for {collected.count:,} '
                  'records')
  return collected.scored(), ''


def _names(split_uri: str, positions: np.ndarray,
           named: Optional[Dict[int, Tuple[str, str]]]
           ) -> Dict[int, Tuple[str, str]]:
  """sources_at's names of `positions`, read only where `named` lacks them."""
  known = named or {}
  missing = np.array([p for p in positions.tolist() if p not in known],
                     np.int64)
  return {**known, **sources_at(split_uri, missing)}


def _class_name(class_names: List[str], label: int) -> str:
  """The label's class name, or the label itself past the names."""
  return class_names[label] if 0 <= label < len(class_names) else str(label)


def suspects_rows(split: str, split_uri: str, positions: np.ndarray,
                  labels: np.ndarray, probabilities: np.ndarray,
                  class_names: List[str], method: str,
                  averaged_over_run: bool = False,
                  named: Optional[Dict[int, Tuple[str, str]]] = None
                  ) -> Tuple[List[Dict[str, Any]], suspects.Suspects]:
  """Returns one row per suspect of the split, most doubtful first.

  Args:
    split: the split's name.
    split_uri: the split's folder.
    positions: of the records checked, counted over the split's shards in
      name order.
    labels: the given classes of the records checked.
    probabilities: their class probabilities.
    class_names: the classes' names.
    method: how the probabilities were made.
    averaged_over_run: the probabilities are averaged over a training run
      (suspects.find_suspects says what changes).
    named: sources_at's (source, place) of some positions, found already
      (the mistakes'); the split is read for the suspects' others only.

  Returns:
    The rows, and the suspects they were made from.
  """
  found = suspects.find_suspects(labels, probabilities,
                                 averaged_over_run=averaged_over_run)
  ranked, suggested = found.indices, found.suggested
  probabilities = found.probabilities
  named = _names(split_uri, positions[ranked], named)

  name = functools.partial(_class_name, class_names)
  rows = []
  for rank, (i, guess) in enumerate(zip(ranked.tolist(), suggested.tolist())):
    given = int(labels[i])
    rows.append({
        'split': split, 'rank': rank + 1,
        'source': named[int(positions[i])][0],
        'given': given, 'given_name': name(given),
        'suggested': guess, 'suggested_name': name(guess),
        'score': round(1.0 - float(probabilities[i, given]), 6),
        'given_probability': round(float(probabilities[i, given]), 6),
        'suggested_probability': round(float(probabilities[i, guess]), 6),
        'method': method,
        # Where the record is, 'shard file:index' in the split's folder.
        'record': named[int(positions[i])][1]})
  return rows, found


def _mistakes(labels: np.ndarray, probabilities: np.ndarray
              ) -> Tuple[np.ndarray, np.ndarray, int]:
  """The indices of the mistakes listed (mistakes_rows), every record's
  predicted class, and how many records the model gets wrong."""
  predicted = np.argmax(probabilities, axis=1) if len(labels) else labels
  wrong = np.flatnonzero(predicted != labels)
  confidence = probabilities[wrong, predicted[wrong]]
  listed = wrong[np.argsort(-confidence, kind='stable')][:MISTAKES_LISTED]
  return listed, predicted, len(wrong)


def mistakes_rows(split: str, split_uri: str, positions: np.ndarray,
                  labels: np.ndarray, probabilities: np.ndarray,
                  class_names: List[str], suspects: List[Dict[str, Any]],
                  named: Optional[Dict[int, Tuple[str, str]]] = None
                  ) -> Tuple[List[Dict[str, Any]], int]:
  """Returns the records the model predicts wrong, most confident first.

  Args:
    split: the split's name.
    split_uri: the split's folder.
    positions, labels, probabilities: of the records scored, as
      `model_probabilities` returns them; the model's own probabilities.
    class_names: the classes' names.
    suspects: the split's suspects rows; a mistake among them is marked
      `suspect` (a likely label error rather than a model error).
    named: sources_at's (source, place) of some positions, found already;
      the split is read for the mistakes' others only.

  Returns:
    At most MISTAKES_LISTED rows, and how many records the model gets wrong.
  """
  listed, predicted, wrong = _mistakes(labels, probabilities)
  named = _names(split_uri, positions[listed], named)
  doubted = {row['record'] for row in suspects}

  name = functools.partial(_class_name, class_names)
  rows = []
  for rank, i in enumerate(listed.tolist()):
    given, guess = int(labels[i]), int(predicted[i])
    source, record = named[int(positions[i])]
    rows.append({
        'split': split, 'rank': rank + 1, 'source': source,
        'given': given, 'given_name': name(given),
        'predicted': guess, 'predicted_name': name(guess),
        'predicted_probability': round(float(probabilities[i, guess]), 6),
        'given_probability': round(float(probabilities[i, given]), 6),
        'suspect': record in doubted, 'record': record})
  return rows, wrong
