"""LabelCheck's executor: per split, the probabilities that judge its records.

Held-out splits are scored by the Trainer's model (validation in the
Trainer where it kept them, eval in the Evaluator's pass where it wrote
them), the training split by cross-fitting or from the Trainer's run. Why
and how: docs/label-check.md.
"""

import dataclasses
import functools
import json
import os
import time
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from absl import logging
import numpy as np
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils
from tfx.utils import import_utils
from tfx.utils import json_utils
from tfx.utils import path_utils

from components.label_check import scoring
from components.label_check import suspects
from records import epoch_probabilities
from records import eval_predictions
from records import features
from records import label_check_results as results
from records import shards

EXAMPLES_KEY = 'examples'
MODEL_KEY = 'model'
MODEL_RUN_KEY = 'model_run'
EVALUATION_KEY = 'evaluation'
TRANSFORM_GRAPH_KEY = 'transform_graph'
TRAIN_SPLIT_KEY = 'train_split'
FOLDS_KEY = 'folds'
FOLD_EXAMPLES_KEY = 'fold_examples'
CHECKED_RECORDS_KEY = 'checked_records'
EVAL_SPLIT_KEY = 'eval_split'
CROSS_FIT_FN_KEY = 'cross_fit_fn'
CUSTOM_CONFIG_KEY = 'custom_config'
SIGNATURE_KEY = 'signature_name'
PROBABILITIES_KEY = 'probabilities_key'

OUT_OF_SAMPLE = 'out_of_sample'  # The Trainer's model, never trained on it.
CROSS_FIT = 'cross_fit'  # K folds, each predicted by a model of the others.
# The Trainer's run: probabilities averaged over its epochs.
TRAINING_RUN = 'training_run'
# Folds of a training split small enough to cross-fit when none are given.
AUTO_FOLDS = 2


def split_files(examples: types.Artifact, split: str) -> List[str]:
  """Returns the split's record files, in the order positions count them."""
  return shards.split_files(artifact_utils.get_split_uri([examples], split))


def class_names_of(examples: types.Artifact) -> List[str]:
  """Returns the class names of an Examples artifact."""
  if examples.has_custom_property(features.CLASS_NAMES_PROPERTY):
    return features.decode_class_names(examples.get_string_custom_property(
        features.CLASS_NAMES_PROPERTY))
  return features.read_class_names(
      os.path.join(examples.uri, features.CLASS_NAMES_FILE))


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
  # Names found while scoring (scoring.Scored.named); the split is read for
  # others.
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
  too weak to doubt labels (suspects.folds_too_weak against `trainer`,
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
      suspects.folds_too_weak(early, trainer)):
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
    scores = _evaluators_scores(input_dict, files)
    if scores is not None:
      return _Scores(*scores[:3], records=len(scores.labels),
                     method=_method(OUT_OF_SAMPLE, len(scores.labels),
                                    len(scores.labels), 'by the Evaluator'),
                     named=scores.named)
    scores = scoring.model_probabilities(serve(), files,
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
    scores = scoring.model_probabilities(
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
                    suspects.weak_folds_above(validation_disagreement)))
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


def _evaluators_scores(input_dict: Dict[str, List[types.Artifact]],
                       files: List[str]) -> Optional[scoring.Scored]:
  """The eval split's probabilities as the Evaluator's run of the same
  model wrote them, or None where it wrote none that match the split."""
  if not input_dict.get(EVALUATION_KEY):
    return None
  given = eval_predictions.read(artifact_utils.get_single_uri(
      input_dict[EVALUATION_KEY]))
  if given is None:
    return None
  scores, why = scoring.evaluators_probabilities(files, given)
  if scores is None:
    logging.info('LabelCheck: the Evaluator\'s probabilities of eval are '
                 'not used (%s): the model scores it again.', why)
  return scores


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
  return suspects.disagreement(held_out[0].labels,
                               held_out[0].probabilities)


def _folds_too_weak(labels: np.ndarray, probabilities: np.ndarray,
                    trainer: Optional[float]) -> str:
  """Says why, where cross-fitted scores of the training split come from
  fold models that disagree with far more labels than the Trainer's model
  does on validation (suspects.folds_too_weak): their doubts are their
  own errors, not the labels'; '' where they are not."""
  if trainer is None:
    return ''
  folds = suspects.disagreement(labels, probabilities)
  if not suspects.folds_too_weak(folds, trainer):
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
    output = artifact_utils.get_single_instance(output_dict[results.OUTPUT_KEY])
    class_names = class_names_of(examples)
    model_dir = path_utils.serving_model_path(
        artifact_utils.get_single_uri(input_dict[MODEL_KEY]))
    serve = functools.cache(lambda: scoring.load_signature(
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
      split_rows, found = scoring.suspects_rows(
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
        split_mistakes, mistakes_count[split] = scoring.mistakes_rows(
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
