"""A run's tuning (`--tune`): TFX's Tuner's trials and the winner.

Read from the Tuner's HyperParameters and TunerResults artifacts.
See docs/training.md, "Tuning".
"""

import json
import os
from typing import Any, Dict

from metadata import queries
from metadata.store import InspectError
from modules.training import config as config_lib
from records import artifact_files
from records import features

TUNER = 'Tuner'
# TFX's Tuner executor's file names (tfx/components/tuner/executor.py).
BEST_FILE = 'best_hyperparameters.txt'
RESULTS_FILE = 'tuner_results.json'


def _json(artifact: queries.Artifact, name: str) -> Any:
  path = os.path.join(artifact.uri, name)
  if not artifact_files.exists(path):
    raise InspectError(f'{artifact.type} {artifact.id}: {path} is missing')
  try:
    return json.loads(artifact_files.read_bytes(path))
  except ValueError as e:
    raise InspectError(f'{path}: not JSON ({e})') from e


def best_values(best: queries.Artifact) -> Dict[str, Any]:
  """The winner's values, from a HyperParameters artifact."""
  return _json(best, BEST_FILE).get('values', {})


def ran_tuner(run: queries.Run) -> bool:
  return run.execution(TUNER) is not None


def trials(md: queries.Metadata, run: queries.Run) -> Dict[str, Any]:
  """The Tuner's trials, best first, numbered as its log numbers them, and
  the winner the Trainer trained with."""
  if not ran_tuner(run):
    raise InspectError(f'run {run.name} ran no {TUNER} (a run tunes with '
                       '--tune TRIALS)')
  execution = run.execution(TUNER)
  best = md.run_output(run, TUNER, 'best_hyperparameters')
  results = md.run_output(run, TUNER, 'tuner_results')
  winner = best_values(best)
  rows = []
  for rank, result in enumerate(_json(results, RESULTS_FILE)):
    values = {k: v for k, v in result.items()
              if k not in ('trial_id', 'score')}
    rows.append({'trial': int(result['trial_id']) + 1,
                 'score': result['score'], 'hyperparameters': values,
                 'winner': rank == 0 and values == winner})
  producer = md.producer(best.id) or execution
  try:
    eval_args = json.loads(producer.properties.get('eval_args') or '{}')
  except ValueError as e:
    raise InspectError(f'{TUNER} execution {producer.id}: eval_args is not '
                       f'JSON ({e})') from e
  return {
      'status': 'ok', 'cached': execution.cached,
      'seconds': producer.seconds, 'tuned_in_run': producer.run,
      'objective': config_lib.TUNING_OBJECTIVE,
      # TFX's default where the args name none.
      'scored_on': (eval_args.get('splits') or [features.EVAL_SPLIT])[0],
      'best_hyperparameters': {'id': best.id, 'uri': best.uri,
                               'values': winner},
      'tuner_results': {'id': results.id, 'uri': results.uri},
      'trials': rows,
  }
