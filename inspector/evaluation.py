"""A model's evaluation: TFMA's metrics and validation, the Evaluator's blessing.

With a baseline (the last blessed model, from the resolver), TFMA names the
two models 'candidate' and 'baseline' and adds diff metrics (candidate minus
baseline); the validation result lists every threshold a metric failed.
"""

import json
from typing import Any, Dict, List, Optional, Tuple

from inspector import queries
from inspector.errors import InspectError

_BASELINE = 'baseline'


def metric_value(value) -> Optional[float]:
  kind = value.WhichOneof('type')
  if kind == 'double_value':
    return value.double_value.value
  if kind == 'bounded_value':
    return value.bounded_value.value.value
  return None


def _slice_name(slice_key) -> str:
  parts = []
  for single in slice_key.single_slice_keys:
    kind = single.WhichOneof('kind')
    parts.append(f'{single.column}={getattr(single, kind) if kind else ""}')
  return ', '.join(parts) or 'Overall'


def failed_checks(evaluation_uri: str
                  ) -> Tuple[bool, List[Tuple[str, Any]]]:
  """TFMA's validation of an Evaluator output: whether every threshold was
  met, and (slice name, MetricValidationFailure) of each that was not."""
  import tensorflow_model_analysis as tfma  # pylint: disable=g-import-not-at-top
  result = tfma.load_validation_result(evaluation_uri)
  return result.validation_ok, [
      (_slice_name(per_slice.slice_key), failure)
      for per_slice in result.metric_validations_per_slice
      for failure in per_slice.failures]


def failure_reasons(evaluation_uri: str) -> List[str]:
  """Why the Evaluator did not bless a model, one line per failed check."""
  reasons = []
  for _, failure in failed_checks(evaluation_uri)[1]:
    name = failure.metric_key.name
    value = metric_value(failure.metric_value)
    if failure.metric_key.is_diff:
      reasons.append(f'{name} {value:+.4f} against the last blessed model '
                     '(worse)')
    else:
      bound = failure.metric_threshold.value_threshold.lower_bound.value
      reasons.append(f'{name} {value:.4f} below the threshold {bound:g}')
  return reasons


def thresholds(execution: queries.Execution) -> List[Dict[str, Any]]:
  """The thresholds in an Evaluator's eval_config: metric (TFMA's metric
  name, e.g. sparse_categorical_accuracy), lower bound and whether it may
  not be worse than the baseline."""
  try:
    config = json.loads(execution.properties.get('eval_config') or '{}')
  except ValueError:
    return []
  found = []
  for spec in config.get('metrics_specs', []):
    for metric in spec.get('metrics', []):
      threshold = metric.get('threshold')
      if not threshold:
        continue
      lower = threshold.get('value_threshold', {}).get('lower_bound')
      found.append({
          'metric': _snake_case(metric.get('class_name', '')),
          'lower_bound': float(lower) if lower is not None else None,
          'no_worse_than_baseline': 'change_threshold' in threshold,
      })
  return found


def _snake_case(class_name: str) -> str:
  """Keras' metric name for its class: SparseCategoricalAccuracy ->
  sparse_categorical_accuracy (what TFMA names the metric)."""
  return ''.join('_' + c.lower() if c.isupper() and i else c.lower()
                 for i, c in enumerate(class_name))


def newest_evaluated_model(md: queries.Metadata) -> queries.Artifact:
  evaluated = [a for a in md.of_type('Model') if md.evaluations(a)]
  if not evaluated:
    raise InspectError(f'{md.where}: no model has been evaluated yet')
  return evaluated[-1]


def metrics(md: queries.Metadata, model: queries.Artifact) -> Dict[str, Any]:
  """Metrics, blessing and baseline comparison of the newest evaluation."""
  evaluations = md.evaluations(model)
  if not evaluations:
    raise InspectError(f'model {model.id} has no evaluation (the run stopped '
                       'before the Evaluator, or it failed)')
  result = evaluation_metrics(md, evaluations[-1], model)
  result['evaluations_of_this_model'] = len(evaluations)
  return result


def evaluation_metrics(md: queries.Metadata, execution: queries.Execution,
                       model: queries.Artifact) -> Dict[str, Any]:
  """Metrics, blessing and baseline comparison of one Evaluator execution
  (a cached one's are those of the execution it reused)."""
  import tensorflow_model_analysis as tfma  # pylint: disable=g-import-not-at-top
  evaluation = md.output(execution, 'evaluation')
  if evaluation is None:
    raise InspectError(f'{execution.node} execution {execution.id} '
                       f'({execution.state}) recorded no evaluation')
  blessing = md.output(execution, 'blessing')
  baselines = [a for k, a in md.inputs(execution.id) if k == 'baseline_model']

  slices: List[Dict[str, Any]] = []
  for record in tfma.load_metrics(evaluation.uri):
    values: Dict[str, Dict[str, Any]] = {}
    for item in record.metric_keys_and_values:
      key, value = item.key, metric_value(item.value)
      row = values.setdefault(key.name, {'metric': key.name})
      if key.is_diff:
        row['diff'] = value
      elif key.model_name == _BASELINE:
        row['baseline'] = value
      else:
        row['value'] = value
    slices.append({'slice': _slice_name(record.slice_key),
                   'metrics': sorted(values.values(),
                                     key=lambda r: r['metric'])})

  validation_ok, failed = failed_checks(evaluation.uri)
  failures = [{
      'slice': slice_name,
      'metric': failure.metric_key.name + (
          ' (diff)' if failure.metric_key.is_diff else ''),
      'value': metric_value(failure.metric_value),
      'message': failure.message,
  } for slice_name, failure in failed]
  return {
      'model': {'id': model.id, 'uri': model.uri},
      'evaluation': {'id': evaluation.id, 'uri': evaluation.uri,
                     'execution': execution.id, 'run': execution.run,
                     'state': execution.state},
      'evaluations_of_this_model': 1,
      'baseline': ({'id': baselines[0].id, 'uri': baselines[0].uri}
                   if baselines else None),
      'blessed': (bool(blessing.properties.get('blessed'))
                  if blessing is not None else None),
      'validation_ok': validation_ok,
      'validation_failures': failures,
      'slices': slices,
  }
