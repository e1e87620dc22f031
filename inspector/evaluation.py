"""A model's evaluation, as the Evaluator recorded it with TFMA: metrics,
the confusion matrix, validation and blessing.

With a baseline (the last blessed model), TFMA names the two models
'candidate' and 'baseline' and adds diff metrics (candidate minus baseline).
"""

import json
import logging
import os
from typing import Any, Dict, List, Optional

import numpy as np

from metadata import queries
from metadata.store import InspectError
from records import artifact_files
from records import model_blessing

_BASELINE = 'baseline'


def metric_name(class_name: str) -> str:
  """Keras' name of a metric class: SparseCategoricalAccuracy ->
  sparse_categorical_accuracy (the name TFMA records its values under)."""
  return ''.join('_' + c.lower() if c.isupper() and i else c.lower()
                 for i, c in enumerate(class_name))


ACCURACY_METRIC_NAME = metric_name(model_blessing.ACCURACY_METRIC)


def _tfma():
  import tensorflow_model_analysis as tfma  # pylint: disable=g-import-not-at-top
  # TFMA's loaders use deprecated TF readers; TF warns through its logger.
  logging.getLogger('tensorflow').setLevel(logging.ERROR)
  return tfma


def _value(value) -> Optional[float]:
  kind = value.WhichOneof('type')
  if kind == 'double_value':
    return value.double_value.value
  if kind == 'bounded_value':
    return value.bounded_value.value.value
  return None


def _slice_name(slice_key) -> str:
  parts = [f'{s.column}={getattr(s, s.WhichOneof("kind") or "", "")}'
           for s in slice_key.single_slice_keys]
  return ', '.join(parts) or 'Overall'


def _validation(evaluation_uri: str):
  """validation_ok, and each check that failed."""
  result = _tfma().load_validation_result(evaluation_uri)
  failures = []
  for per_slice in result.metric_validations_per_slice:
    for failure in per_slice.failures:
      key, value = failure.metric_key, _value(failure.metric_value)
      bound = failure.metric_threshold.value_threshold.lower_bound.value
      failures.append({
          'slice': _slice_name(per_slice.slice_key),
          'metric': key.name + (' (diff)' if key.is_diff else ''),
          'value': value, 'message': failure.message,
          'reason': (f'{key.name} {value:+.4f} against the last blessed '
                     'model (worse)' if key.is_diff else
                     f'{key.name} {value:.4f} below the threshold {bound:g}')})
  return result.validation_ok, failures


def failure_reasons(evaluation_uri: str) -> List[str]:
  """Why the Evaluator did not bless a model, one line per failed check."""
  return [f['reason'] for f in _validation(evaluation_uri)[1]]


def thresholds(md: queries.Metadata,
               execution: queries.Execution) -> List[Dict[str, Any]]:
  """The thresholds of an Evaluator's eval_config: TFMA's metric name,
  lower bound, and whether it may not be worse than the baseline. The
  accuracy's lower bound and its rule are those the Evaluator recorded on
  its blessing (components/evaluator/blessing_rule.py), set from the data or
  not."""
  config = json.loads(execution.properties.get('eval_config') or '{}')
  rule = _rule(md, execution)
  found = []
  for spec in config.get('metrics_specs', []):
    for metric in spec.get('metrics', []):
      threshold = metric.get('threshold')
      if threshold:
        name = metric.get('class_name', '')
        lower = threshold.get('value_threshold', {}).get('lower_bound')
        if name == model_blessing.ACCURACY_METRIC and rule:
          lower = rule.get(model_blessing.ACCURACY_THRESHOLD_PROPERTY, lower)
        found.append({
            'metric': metric_name(name),
            'lower_bound': float(lower) if lower is not None else None,
            'no_worse_than_baseline': 'change_threshold' in threshold,
            'reason': (rule.get(model_blessing.THRESHOLD_REASON_PROPERTY)
                       if name == model_blessing.ACCURACY_METRIC else None)})
  return found


def _rule(md: queries.Metadata, execution: queries.Execution
          ) -> Dict[str, Any]:
  """The blessing rule's properties on the execution's ModelBlessing; {}
  before the Evaluator recorded them."""
  blessing = md.output(execution, 'blessing')
  return {key: blessing.properties[key]
          for key in (model_blessing.ACCURACY_THRESHOLD_PROPERTY,
                      model_blessing.THRESHOLD_REASON_PROPERTY)
          if blessing is not None and key in blessing.properties}


def newest_evaluated_model(md: queries.Metadata) -> queries.Artifact:
  evaluated = [a for a in md.of_type('Model') if md.evaluations(a)]
  if not evaluated:
    raise InspectError(f'{md.where}: no model has been evaluated yet')
  return evaluated[-1]


def _evaluation(md: queries.Metadata, model: queries.Artifact
                ) -> queries.Execution:
  evaluations = md.evaluations(model)
  if not evaluations:
    raise InspectError(f'model {model.id} has no evaluation (the run stopped '
                       'before the Evaluator, or it failed)')
  return evaluations[-1]


def metrics(md: queries.Metadata, model: queries.Artifact) -> Dict[str, Any]:
  """evaluation_metrics of the newest evaluation."""
  result = evaluation_metrics(md, _evaluation(md, model), model)
  result['evaluations_of_this_model'] = len(md.evaluations(model))
  return result


def _output(md: queries.Metadata, execution: queries.Execution
            ) -> queries.Artifact:
  evaluation = md.output(execution, 'evaluation')
  if evaluation is None:
    raise InspectError(f'{execution.node} execution {execution.id} '
                       f'({execution.state}) recorded no evaluation')
  return evaluation


def evaluation_metrics(md: queries.Metadata, execution: queries.Execution,
                       model: queries.Artifact) -> Dict[str, Any]:
  """Metrics, blessing and baseline comparison of one Evaluator execution
  (a cached one's are those of the execution it reused).

  Args:
    md: the store.
    execution: the Evaluator's execution.
    model: the candidate model it evaluated.
  """
  tfma = _tfma()
  evaluation = _output(md, execution)
  blessing = md.output(execution, 'blessing')
  baselines = [a for k, a in md.inputs(execution.id) if k == 'baseline_model']
  slices = []
  for record in tfma.load_metrics(evaluation.uri):
    values: Dict[str, Dict[str, Any]] = {}
    for item in record.metric_keys_and_values:
      key = item.key
      row = values.setdefault(key.name, {'metric': key.name})
      row['diff' if key.is_diff else 'baseline' if key.model_name ==
          _BASELINE else 'value'] = _value(item.value)
    slices.append({'slice': _slice_name(record.slice_key),
                   'metrics': sorted(values.values(),
                                     key=lambda r: r['metric'])})
  validation_ok, failures = _validation(evaluation.uri)
  rule = _rule(md, execution)
  # The baseline was the model itself, evaluated alone.
  itself = bool(blessing is not None and blessing.properties.get(
      model_blessing.BASELINE_IS_CANDIDATE_PROPERTY))
  return {
      'model': {'id': model.id, 'uri': model.uri},
      'evaluation': {'id': evaluation.id, 'uri': evaluation.uri,
                     'execution': execution.id, 'run': execution.run,
                     'state': execution.state},
      'baseline': ({'id': baselines[0].id, 'uri': baselines[0].uri,
                    'is_this_model': itself} if baselines else None),
      'blessed': (bool(blessing.properties.get('blessed'))
                  if blessing is not None else None),
      'validation_ok': validation_ok, 'validation_failures': failures,
      # components/evaluator/blessing_rule.py's words.
      'blessing_rule': (
          f'accuracy >= {rule[model_blessing.ACCURACY_THRESHOLD_PROPERTY]:g}, '
          f'{rule[model_blessing.THRESHOLD_REASON_PROPERTY]}'
          if len(rule) == 2 else None),
      'slices': slices,
  }


def confusion_matrix(md: queries.Metadata, model: queries.Artifact,
                     split: Optional[str] = None,
                     execution: Optional[queries.Execution] = None
                     ) -> Dict[str, Any]:
  """The candidate's multi-class confusion matrix on the whole split.

  Args:
    md: the store.
    model: the candidate model.
    split: the evaluated split; None: the first the Evaluator evaluated.
    execution: the Evaluator's execution whose TFMA plots hold the matrix;
      None: the model's newest evaluation.

  Returns:
    'matrix' as counts[true][predicted], 'class_names', the accuracy and
    each class's precision and recall, and where they came from.

  Raises:
    InspectError: the Evaluator did not evaluate `split`.
  """
  from inspector import images  # pylint: disable=g-import-not-at-top
  execution = execution or _evaluation(md, model)
  evaluation = _output(md, execution)
  [examples] = [a for k, a in md.inputs(execution.id) if k == 'examples']
  evaluated = json.loads(execution.properties.get('example_splits') or
                         '["eval"]')
  split = split or evaluated[0]
  if split not in evaluated:
    raise InspectError(f'the Evaluator of model {model.id} evaluated split(s) '
                       f'{", ".join(evaluated)}, not {split!r}')
  names = images.class_names(examples)
  counts = np.zeros((len(names), len(names)), np.int64)
  found = False
  for plots in _tfma().load_plots(evaluation.uri):
    if plots.slice_key.single_slice_keys:
      continue
    for item in plots.plot_keys_and_values:
      if (item.key.model_name == _BASELINE or not item.value.HasField(
          'multi_class_confusion_matrix_at_thresholds')):
        continue
      found = True
      [matrix] = item.value.multi_class_confusion_matrix_at_thresholds.matrices
      for entry in matrix.entries:
        if entry.predicted_class_id >= 0:  # -1: below the threshold.
          counts[entry.actual_class_id, entry.predicted_class_id] += round(
              entry.num_weighted_examples)
  if not found:
    raise InspectError(f'evaluation {evaluation.id} ({evaluation.uri}) holds '
                       'no multi-class confusion matrix (an eval_config '
                       'without MultiClassConfusionMatrixPlot)')
  total = int(counts.sum())
  diagonal = np.diag(counts)
  with np.errstate(invalid='ignore', divide='ignore'):
    precision = diagonal / counts.sum(axis=0)
    recall = diagonal / counts.sum(axis=1)
  return {
      'model': {'id': model.id, 'uri': model.uri},
      'evaluation': {'id': evaluation.id, 'run': execution.run},
      'examples': {'id': examples.id, 'uri': examples.uri, 'split': split},
      'class_names': names,
      'matrix': counts.tolist(),
      'examples_count': total,
      'accuracy': float(diagonal.sum()) / total if total else None,
      'per_class': [{'class': name, 'precision': _number(p),
                     'recall': _number(r), 'examples': int(n)}
                    for name, p, r, n in zip(names, precision, recall,
                                             counts.sum(axis=1))],
  }


def on_device(model: queries.Artifact) -> Dict[str, Any]:
  """The TensorFlow Lite files the Trainer wrote into `model`
  (modules/training/export.py): each one's size and eval-split accuracy
  beside the SavedModel's, as the Trainer measured them."""
  from records import serving_model  # pylint: disable=g-import-not-at-top
  from tfx.utils import path_utils  # pylint: disable=g-import-not-at-top
  model.check_on_disk()
  path = os.path.join(path_utils.serving_model_path(model.uri),
                      serving_model.TFLITE_DIR,
                      serving_model.TFLITE_RESULTS_FILE)
  if not artifact_files.exists(path):
    raise InspectError(f'{path}: missing (a model exported without '
                       'TensorFlow Lite files)')
  return json.loads(artifact_files.read_bytes(path))


def _number(value: float) -> Optional[float]:
  return None if np.isnan(value) else float(value)
