"""What became of a run, in a headline and its reasons: pushed (and the
checks it passed), already served, not blessed (the checks it failed),
stopped at the ValidationGate (the anomalies), failed. The top of the run
report, from report.gather's facts."""

from typing import Any, Dict, List

from inspector import queries


def _outcome(kind: str, headline: str, details: List[str]) -> Dict[str, Any]:
  # kind names the page's colour: pushed and served green, stopped and
  # failed red, the rest amber.
  return {'kind': kind, 'headline': headline, 'details': details}


def outcome(run: queries.Run, facts: Dict[str, Any]) -> Dict[str, Any]:
  """{kind, headline, details} of `run`, whose sections `facts` holds."""
  failed = [e.node for e in run.executions if e.state == 'FAILED']
  if 'ValidationGate' in failed:
    return _outcome(
        'stopped', 'Stopped at the ValidationGate: ExampleValidator found '
        'anomalies in the data, so nothing was trained or pushed.',
        _anomaly_lines(facts['data']))
  if failed:
    return _outcome('failed', f'The run failed in {failed[0]}.',
                    ['The full log of the run has the error.'])
  if run.state in ('RUNNING', 'NEW'):
    return _outcome('running', 'The run is still running.', [])
  evaluation = facts['evaluation']
  if evaluation.get('status') == 'error':
    return _outcome('unknown', 'The evaluation could not be read.',
                    [evaluation['error']])
  if evaluation.get('status') != 'ok':
    why = facts['dag'].get('why_not_run')
    return _outcome('partial', 'Nothing was evaluated or pushed' +
                    (f': {why}.' if why else '.'), [])
  verdict, push = evaluation['verdict'], evaluation['push']
  model = evaluation['model']['id']
  if 'error' in verdict:
    return _outcome('unknown', f'Model {model}: its evaluation could not be '
                    'read.', [verdict['error']])
  if not verdict['blessed']:
    return _outcome('not_blessed', f'Model {model} was not blessed, so it was '
                    'not pushed.',
                    verdict['reasons'] or ['See the evaluation below.'])
  checks = [check_text(c) for c in verdict['checks']]
  if push.get('status') != 'ok':
    return _outcome('unknown', f'Model {model} was blessed; what became of '
                    'its push is unknown.',
                    [push.get('error') or push.get('reason', '')])
  if push['already_served']:
    return _outcome('served', f'Model {model} was blessed and is already '
                    f'served from {push["destination"]}: not pushed again.',
                    checks)
  if push['pushed']:
    return _outcome('pushed', f'Model {model} was blessed and pushed to '
                    f'{push["destination"]}.', checks)
  return _outcome('not_blessed', f'Model {model} was blessed but not pushed.',
                  checks)


def _anomaly_lines(data: Dict[str, Any]) -> List[str]:
  """'train: height: Out-of-range values (Unexpectedly large value: 32.)'
  per anomaly, or why they could not be read."""
  anomalies = data.get('anomalies', {}) if data.get('status') == 'ok' else {}
  if 'error' in anomalies:
    return [anomalies['error']]
  return [f'{split}: {row["feature"]}: {row["short_description"]}'
          + (f' ({row["description"]})' if row['description'] else '')
          for split, rows in anomalies.get('splits', {}).items()
          for row in rows]


def check_text(check: Dict[str, Any]) -> str:
  """'sparse_categorical_accuracy 0.9512: at least the threshold 0.9, and no
  worse than the baseline's 0.9490'."""
  value = check.get('value')
  if value is None:
    return f'{check["metric"]}: no value recorded'
  conditions = []
  if check.get('lower_bound') is not None:
    conditions.append(f'at least the threshold {check["lower_bound"]:g}')
  if check.get('no_worse_than_baseline'):
    conditions.append(
        f'no worse than the baseline\'s {check["baseline"]:.4f}'
        if check.get('baseline') is not None
        else 'no baseline to compare with (no model was blessed before)')
  return f'{check["metric"]} {value:.4f}' + (
      ': ' + ', and '.join(conditions) if conditions else '')
