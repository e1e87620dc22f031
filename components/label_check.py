"""LabelCheck: per split, the records whose given class a held-out model doubts.

Held-out splits are scored by the Trainer's model (validation in the
Trainer where it kept them), the training split by cross-fitting or from
the Trainer's run. Why and how: docs/label-check.md.
"""

import dataclasses
import functools
import json
import os
import time
from typing import (Any, Callable, Dict, List, NamedTuple, Optional, Tuple,
                    Union)

from absl import logging
import numpy as np
import tensorflow as tf
from tfx import types
from tfx.dsl.components.base import base_component
from tfx.dsl.components.base import base_executor
from tfx.dsl.components.base import executor_spec
from tfx.types import artifact_utils
from tfx.types import component_spec
from tfx.types import standard_artifacts
from tfx.utils import import_utils
from tfx.utils import json_utils
from tfx.utils import path_utils

from components import label_scores
from records import epoch_probabilities
from records import features
from records import label_check_results as results
from records import shards

EXAMPLES_KEY = 'examples'
MODEL_KEY = 'model'
MODEL_RUN_KEY = 'model_run'
TRANSFORM_GRAPH_KEY = 'transform_graph'
SUSPECTS_KEY = 'suspects'
TRAIN_SPLIT_KEY = 'train_split'
FOLDS_KEY = 'folds'
FOLD_EXAMPLES_KEY = 'fold_examples'
CHECKED_RECORDS_KEY = 'checked_records'
EVAL_SPLIT_KEY = 'eval_split'
CROSS_FIT_FN_KEY = 'cross_fit_fn'
CUSTOM_CONFIG_KEY = 'custom_config'
SIGNATURE_KEY = 'signature_name'
PROBABILITIES_KEY = 'probabilities_key'

# The model's mistakes listed, at most; the property counts them all.
MISTAKES_LISTED = 10_000
OUT_OF_SAMPLE = 'out_of_sample'  # The Trainer's model, never trained on it.
CROSS_FIT = 'cross_fit'  # K folds, each predicted by a model of the others.
# The Trainer's run: probabilities averaged over its epochs.
TRAINING_RUN = 'training_run'
# Records per call of the model.
BATCH_SIZE = shards.SAMPLE_BATCH
# Folds of a training split small enough to cross-fit when none are given.
AUTO_FOLDS = 2


class LabelSuspects(types.Artifact):
  """Records whose given label a held-out model doubts, per split."""
  # Kubeflow's form for a custom type, module.Class: the path TFX's
  # container entrypoint imports the class by (components/__init__.py).
  TYPE_NAME = 'components.LabelSuspects'


def split_files(examples: types.Artifact, split: str) -> List[str]:
  """Returns the split's record files, in the order positions count them."""
  return shards.split_files(artifact_utils.get_split_uri([examples], split))


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
  spec = {features.LABEL_KEY: tf.io.FixedLenFeature([], tf.int64),
          features.SOURCE_KEY: tf.io.FixedLenFeature([], tf.string, b'')}

  @tf.autograph.experimental.do_not_convert
  def score(batch_positions, shard, index, batch):
    parsed = tf.io.parse_example(batch, spec)
    return (batch_positions, shard, index, parsed[features.LABEL_KEY],
            parsed[features.SOURCE_KEY],
            tf.cast(serve(batch)[probabilities_key], tf.float32))

  # The model runs in the input pipeline, so the next batch is read while
  # it scores this one. The names of the records it puts in another class
  # are kept as they pass: the split is not read again for them.
  positions, labels, probabilities, named = [], [], [], {}
  for (batch_positions, shard, index, batch_labels, sources,
       batch_probabilities) in read_records(files, checked_buckets).map(
           score).prefetch(1).as_numpy_iterator():
    positions.append(batch_positions)
    labels.append(batch_labels)
    probabilities.append(batch_probabilities)
    named.update(shards.names_of(
        files, np.flatnonzero(
            np.argmax(batch_probabilities, axis=1) != batch_labels),
        batch_positions, shard, index, sources))
  if not labels:
    return Scored(np.zeros(0, np.int64), np.zeros(0, np.int64),
                  np.zeros((0, 0), np.float32), {})
  return Scored(np.concatenate(positions), np.concatenate(labels),
                np.concatenate(probabilities), named)


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
                  ) -> Tuple[List[Dict[str, Any]], label_scores.Suspects]:
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
      (label_scores.find_suspects says what changes).
    named: sources_at's (source, place) of some positions, found already
      (the mistakes'); the split is read for the suspects' others only.

  Returns:
    The rows, and the suspects they were made from.
  """
  found = label_scores.find_suspects(labels, probabilities,
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


def class_names_of(examples: types.Artifact) -> List[str]:
  """Returns the class names of an Examples artifact."""
  if examples.has_custom_property(features.CLASS_NAMES_PROPERTY):
    return features.decode_class_names(examples.get_string_custom_property(
        features.CLASS_NAMES_PROPERTY))
  return features.read_class_names(
      os.path.join(examples.uri, features.CLASS_NAMES_FILE))


class LabelCheckSpec(component_spec.ComponentSpec):
  """LabelCheck's parameters, inputs and output."""
  PARAMETERS = {
      TRAIN_SPLIT_KEY: component_spec.ExecutionParameter(type=str),
      # None: cross-fitted where the split is small (_training_folds).
      FOLDS_KEY: component_spec.ExecutionParameter(type=int, optional=True),
      FOLD_EXAMPLES_KEY: component_spec.ExecutionParameter(type=int),
      CHECKED_RECORDS_KEY: component_spec.ExecutionParameter(type=int),
      EVAL_SPLIT_KEY: component_spec.ExecutionParameter(type=str),
      CROSS_FIT_FN_KEY: component_spec.ExecutionParameter(type=str),
      SIGNATURE_KEY: component_spec.ExecutionParameter(type=str),
      PROBABILITIES_KEY: component_spec.ExecutionParameter(type=str),
      # JSON, as TFX's Trainer passes its custom_config.
      CUSTOM_CONFIG_KEY: component_spec.ExecutionParameter(
          type=str, optional=True),
  }
  INPUTS = {
      EXAMPLES_KEY: component_spec.ChannelParameter(
          type=standard_artifacts.Examples),
      MODEL_KEY: component_spec.ChannelParameter(
          type=standard_artifacts.Model),
      MODEL_RUN_KEY: component_spec.ChannelParameter(
          type=standard_artifacts.ModelRun, optional=True),
      TRANSFORM_GRAPH_KEY: component_spec.ChannelParameter(
          type=standard_artifacts.TransformGraph),
  }
  OUTPUTS = {
      SUSPECTS_KEY: component_spec.ChannelParameter(type=LabelSuspects),
  }


@dataclasses.dataclass(frozen=True)
class _Scores:
  """The probabilities that judge a split's records checked, and how."""
  positions: np.ndarray
  labels: np.ndarray
  probabilities: np.ndarray
  records: int  # In the split.
  method: str
  averaged_over_run: bool = False
  seconds_in_trainer: float = 0.0
  # Names found while scoring (Scored.named); the split is read for others.
  named: Optional[Dict[int, Tuple[str, str]]] = None


def _method(name: str, checked: int, records: int, detail: str = '') -> str:
  """A method's name, with its detail and the sample's size, if sampled."""
  notes = [detail] if detail else []
  if checked != records:
    notes.append(f'a sample of {checked:,} of {records:,} records')
  return f'{name} ({", ".join(notes)})' if notes else name


def auto_cross_fit_records(fold_examples: int) -> int:
  """Training records at most that LabelCheck cross-fits without folds
  given."""
  return AUTO_FOLDS * fold_examples


def _early_disagreement(
    run: Optional[epoch_probabilities.EpochProbabilities],
    examples: int) -> Optional[float]:
  """The share of validation the Trainer's model put in another class once
  it had trained on `examples` examples (or at its end, if fewer), from its
  run; None where the run kept no curve."""
  if run is None or not len(run.validation_curve):
    return None
  curve = run.validation_curve
  reached = np.flatnonzero(curve[:, 0] >= examples)
  return 1.0 - float(curve[reached[0] if len(reached) else -1, 1])


def _training_folds(files: List[str], exec_properties: Dict[str, Any],
                    run: Optional[epoch_probabilities.EpochProbabilities],
                    trainer: Optional[float] = None) -> Tuple[int, str]:
  """Returns the folds that score the training split (0: the Trainer's run).

  Without folds given, a split of at most AUTO_FOLDS x fold_examples records
  is cross-fitted: each fold's model then sees the other folds' records
  within its budget. A larger one is scored from the Trainer's run, `run`,
  whose count of the split's records then saves counting them; so is a
  small one where the run shows that a model of a fold's budget would be
  too weak to doubt labels (label_scores.folds_too_weak against `trainer`,
  the Trainer's model's disagreement on validation).

  Returns:
    The folds, and why where they were chosen here (', auto: ...').
  """
  folds = exec_properties.get(FOLDS_KEY)
  if folds is not None:
    return int(folds), ''
  fold_examples = int(exec_properties[FOLD_EXAMPLES_KEY])
  most = auto_cross_fit_records(fold_examples)
  # A large split is not read through to say so.
  records = (run.records if run is not None else
             shards.count_records(files, at_most=most + 1))
  if records > most:
    return 0, f', auto: over {most:,} records'
  early = _early_disagreement(run, fold_examples)
  if (early is not None and trainer is not None and
      label_scores.folds_too_weak(early, trainer)):
    return 0, (f', auto: {records:,} records, but after {fold_examples:,} '
               f'examples, a fold model\'s budget, the Trainer\'s model '
               f'put {early:.1%} of validation in another class, too many '
               f'to doubt labels ({trainer:.1%} at its end)')
  return AUTO_FOLDS, f', auto: {records:,} records, at most {most:,}'


def _score_split(split: str, input_dict: Dict[str, List[types.Artifact]],
                 exec_properties: Dict[str, Any], num_classes: int,
                 serve: Callable[[], Callable[..., Any]],
                 validation_disagreement: Optional[float] = None
                 ) -> Union[_Scores, str]:
  """Scores `split` the way its place in training allows.

  Args:
    split: the split's name.
    input_dict: the executor's inputs.
    exec_properties: the executor's parameters.
    num_classes: the number of classes.
    serve: returns the Trainer's serving signature, loaded once.
    validation_disagreement: the Trainer's model's on validation, if
      scored: cross-fitting stops at the first fold too weak for it.

  Returns:
    The split's scores, or why it was not checked.
  """
  examples = artifact_utils.get_single_instance(input_dict[EXAMPLES_KEY])
  files = split_files(examples, split)
  checked_records = int(exec_properties[CHECKED_RECORDS_KEY])
  if split == exec_properties[EVAL_SPLIT_KEY]:
    scores = model_probabilities(serve(), files,
                                 exec_properties[PROBABILITIES_KEY])
    return _Scores(*scores[:3], records=len(scores.labels),
                   method=OUT_OF_SAMPLE, named=scores.named)
  if not checked_records:
    logging.info('LabelCheck: split %s not checked: 0 records asked for.',
                 split)
    return 'not checked: 0 records asked for'
  if split != exec_properties[TRAIN_SPLIT_KEY]:
    held_out = _trainers_scores(input_dict, split, checked_records)
    if held_out is not None:
      return _Scores(
          held_out.positions, held_out.labels, held_out.probabilities,
          records=held_out.records, method=_method(
              OUT_OF_SAMPLE, len(held_out.labels), held_out.records,
              'in the Trainer, by its kept weights'),
          seconds_in_trainer=held_out.seconds, named=held_out.named)
    records = shards.count_records(files)
    scores = model_probabilities(
        serve(), files, exec_properties[PROBABILITIES_KEY],
        shards.sample_buckets(records, checked_records))
    return _Scores(*scores[:3], records=records, method=_method(
        OUT_OF_SAMPLE, len(scores.labels), records), named=scores.named)
  run = (epoch_probabilities.read(artifact_utils.get_single_uri(
      input_dict[MODEL_RUN_KEY])) if input_dict.get(MODEL_RUN_KEY) else None)
  folds, why = _training_folds(files, exec_properties, run,
                               validation_disagreement)
  if folds >= 2:
    cross_fit: Callable[..., Tuple[np.ndarray, ...]] = (
        import_utils.import_func_from_module(
            *exec_properties[CROSS_FIT_FN_KEY].rsplit('.', 1)))
    *scores, records = cross_fit(
        files=files, transform_graph_uri=artifact_utils.get_single_uri(
            input_dict[TRANSFORM_GRAPH_KEY]),
        num_classes=num_classes, folds=folds,
        fold_examples=int(exec_properties[FOLD_EXAMPLES_KEY]),
        checked_records=checked_records,
        custom_config=json_utils.loads(
            exec_properties.get(CUSTOM_CONFIG_KEY) or 'null') or {},
        stop_above=(None if validation_disagreement is None else
                    label_scores.weak_folds_above(validation_disagreement)))
    weak = _folds_too_weak(scores[1], scores[2], validation_disagreement)
    if not weak:
      return _Scores(*scores, records=records, method=_method(
          CROSS_FIT, len(scores[1]), records, f'{folds} folds{why}'))
    if run is None:
      unchecked = (f'not checked: {weak}; more training per fold: '
                   '--label-check-train-examples')
      logging.info('LabelCheck: %s: %s.', split, unchecked)
      return unchecked
    why = f', {weak}'
  if run is None:
    logging.info('LabelCheck: split %s not checked: the Trainer\'s model '
                 'trained on it, and its run kept no probabilities of it.',
                 split)
    return 'not checked: the model trained on it'
  return _Scores(
      run.positions, run.labels, run.probabilities, records=run.records,
      method=_method(TRAINING_RUN, len(run.labels), run.records,
                     f'averaged over {run.epochs} epochs{why}'),
      averaged_over_run=True, seconds_in_trainer=run.seconds,
      named=run.named)


def _trainers_scores(input_dict: Dict[str, List[types.Artifact]],
                     split: str, checked_records: int
                     ) -> Optional[epoch_probabilities.EpochProbabilities]:
  """The Trainer's probabilities of held-out split `split`, or None where
  it kept none of it or another sample than `checked_records` takes."""
  if not input_dict.get(MODEL_RUN_KEY):
    return None
  scores = epoch_probabilities.read(
      artifact_utils.get_single_uri(input_dict[MODEL_RUN_KEY]),
      epoch_probabilities.HELD_OUT_FILE)
  if scores is None or scores.split != split:
    return None
  wanted = shards.sample_buckets(scores.records, checked_records)
  return scores if scores.checked_buckets == wanted else None


def _validation_disagreement(scored: Dict[str, Union[_Scores, str]],
                             splits: List[str],
                             exec_properties: Dict[str, Any]
                             ) -> Optional[float]:
  """The share of validation's records scored so far whose most probable
  class is not their label (the first split but train and eval), or None."""
  held_out = [scored[split] for split in splits
              if split not in (exec_properties[TRAIN_SPLIT_KEY],
                               exec_properties[EVAL_SPLIT_KEY])
              and isinstance(scored.get(split), _Scores)]
  if not held_out:
    return None
  return label_scores.disagreement(held_out[0].labels,
                                   held_out[0].probabilities)


def _folds_too_weak(labels: np.ndarray, probabilities: np.ndarray,
                    trainer: Optional[float]) -> str:
  """Says why, where cross-fitted scores of the training split come from
  fold models that disagree with far more labels than the Trainer's model
  does on validation (label_scores.folds_too_weak): their doubts are their
  own errors, not the labels'; '' where they are not."""
  if trainer is None:
    return ''
  folds = label_scores.disagreement(labels, probabilities)
  if not label_scores.folds_too_weak(folds, trainer):
    return ''
  return (f'the fold models were too weak to doubt its labels ({folds:.1%} '
          f'of the records classified as another class, the Trainer\'s model '
          f'{trainer:.1%} of validation\'s)')


class Executor(base_executor.BaseExecutor):
  """Scores every split out of sample and writes the ranked suspects."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    """Scores each split and writes its suspects and their counts."""
    examples = artifact_utils.get_single_instance(input_dict[EXAMPLES_KEY])
    output = artifact_utils.get_single_instance(output_dict[SUSPECTS_KEY])
    class_names = class_names_of(examples)
    model_dir = path_utils.serving_model_path(
        artifact_utils.get_single_uri(input_dict[MODEL_KEY]))
    serve = functools.cache(lambda: load_signature(
        model_dir, exec_properties[SIGNATURE_KEY]))
    rows, counts, checked, totals, methods, seconds = [], {}, {}, {}, {}, {}
    mistakes, mistakes_count, estimates, temperatures = [], {}, {}, {}
    splits = artifact_utils.decode_split_names(examples.split_names)
    train = exec_properties[TRAIN_SPLIT_KEY]
    scored, scoring_s = {}, {}
    # Train last: cross-fitting stops once its folds are too weak for the
    # Trainer's model's disagreement on validation.
    for split in sorted(splits, key=lambda s: s == train):
      started = time.monotonic()
      scored[split] = _score_split(split, input_dict, exec_properties,
                                   len(class_names), serve,
                                   _validation_disagreement(scored, splits,
                                                            exec_properties))
      scoring_s[split] = time.monotonic() - started
    for split in splits:
      scores = scored[split]
      started = time.monotonic() - scoring_s[split]
      if isinstance(scores, str):
        methods[split] = scores
        continue
      split_uri = artifact_utils.get_split_uri([examples], split)
      named = scores.named
      split_rows, found = suspects_rows(
          split, split_uri, scores.positions, scores.labels,
          scores.probabilities, class_names, scores.method,
          averaged_over_run=scores.averaged_over_run, named=named)
      if found.estimate >= 0:
        estimates[split] = found.estimate
        temperatures[split] = round(found.temperature, 4)
      seconds[split] = round(
          time.monotonic() - started + scores.seconds_in_trainer, 2)
      logging.info('LabelCheck: %s: %d suspects of %d records (%s; %d '
                   'classified as another class, %s wrong labels estimated) '
                   'in %.1f s.', split, len(split_rows), len(scores.labels),
                   scores.method, found.disagreements,
                   found.estimate if found.estimate >= 0 else 'no',
                   seconds[split])
      rows += split_rows
      if split == exec_properties[EVAL_SPLIT_KEY]:
        split_mistakes, mistakes_count[split] = mistakes_rows(
            split, split_uri, scores.positions, scores.labels,
            scores.probabilities, class_names, split_rows, named=named)
        mistakes += split_mistakes
      counts[split], checked[split], totals[split], methods[split] = (
          len(split_rows), len(scores.labels), scores.records, scores.method)
    results.write_suspects(output.uri, rows)
    results.write_mistakes(output.uri, mistakes)
    for key, value in ((results.SUSPECTS_PROPERTY, counts),
                       (results.MISTAKES_PROPERTY, mistakes_count),
                       (results.ESTIMATES_PROPERTY, estimates),
                       (results.TEMPERATURES_PROPERTY, temperatures),
                       (results.CHECKED_PROPERTY, checked),
                       (results.RECORDS_PROPERTY, totals),
                       (results.METHODS_PROPERTY, methods),
                       (results.SECONDS_PROPERTY, seconds)):
      output.set_string_custom_property(key, json.dumps(value))
    output.set_int_custom_property('suspects_total', len(rows))


class LabelCheck(base_component.BaseComponent):
  """Lists the records of each split whose label the model doubts.

  Args:
    examples: the Examples the Trainer read.
    model: the Trainer's Model (its serving signature scores every split
      but the training one, and validation where `model_run` holds it).
    model_run: the Trainer's ModelRun. With folds 0 it holds the training
      split's probabilities averaged over the Trainer's epochs, and
      validation's by the kept weights, where it kept them.
    transform_graph: the Transform graph, for the cross-fitted models.
    cross_fit_fn: module path of the function that cross-fits the training
      split (modules/cross_fit.py's `cross_fit`).
    folds: folds of the training split for cross-fitting; 0 scores it from
      `model_run` instead; None cross-fits AUTO_FOLDS folds where the split
      holds at most AUTO_FOLDS x `fold_examples` records, and reads
      `model_run` otherwise.
    fold_examples: examples each fold's model trains on (its budget).
    checked_records: training and validation records checked at most,
      each split a sample chosen by a hash of their bytes (all of a smaller
      split); 0: only the eval split is checked.
    signature_name, probabilities_key: the model's signature that takes
      serialized Examples, and its output of class probabilities.
    custom_config: handed to `cross_fit_fn` (the Trainer's settings).
    train_split: the split the Trainer trained on.
    eval_split: the split always checked whole: its labels judge the model
      that is pushed.
  """

  SPEC_CLASS = LabelCheckSpec
  EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(Executor)

  def __init__(self, examples: types.BaseChannel, model: types.BaseChannel,
               model_run: Optional[types.BaseChannel],
               transform_graph: types.BaseChannel, cross_fit_fn: str,
               folds: Optional[int], fold_examples: int,
               checked_records: int,
               signature_name: str,
               probabilities_key: str,
               custom_config: Optional[Dict[str, Any]] = None,
               train_split: str = 'train', eval_split: str = 'eval'):
    if folds is not None and (folds < 0 or folds == 1):
      raise ValueError(f'LabelCheck: folds must be 0 (the training split '
                       f'scored from the Trainer\'s run) or at least 2, got '
                       f'{folds}')
    super().__init__(spec=LabelCheckSpec(
        examples=examples, model=model, model_run=model_run,
        transform_graph=transform_graph,
        cross_fit_fn=cross_fit_fn, folds=folds, fold_examples=fold_examples,
        checked_records=checked_records,
        signature_name=signature_name, probabilities_key=probabilities_key,
        custom_config=json_utils.dumps(custom_config or {}),
        train_split=train_split, eval_split=eval_split,
        suspects=types.Channel(type=LabelSuspects)))
