"""A run as a whole, as plain values: what ran, the data, the training, the
evaluation and push, and the lineage; written as one HTML page.

`gather` collects the facts (report_html.py renders them). Every part is
built on its own: a part that cannot be built becomes {'error': reason} on
the page and a traceback in the log, and the rest of the report still comes.
Sections of components that did not run are {'status': 'not_run'} with the
reason (the ValidationGate stopped the run, a component failed, ...).
Cached components are reported with the artifacts they reused, like the
other subcommands do.
"""

import base64
import logging
import os
from typing import Any, Callable, Dict, List, Optional

from inspector import artifacts as artifacts_lib
from inspector import queries
from inspector import render
from inspector import report_outcome
from inspector.errors import InspectError

SAMPLES_PER_CLASS = 8
SAMPLES_SPLIT = 'train'
EVAL_SPLIT = 'eval'
NOT_RUN = 'NOT RUN'  # The state of a component of the DAG the run never got to.

# The DAG of pipeline/pipeline.py: each component and the components it
# waits for, in the order the pipeline lists them (tests/test_report.py
# checks this against create_pipeline). It lets the report show the
# components a run never got to; what did run is read from ML Metadata.
PIPELINE_DAG = (
    ('ImageExampleGen', ()),
    ('StatisticsGen', ('ImageExampleGen',)),
    ('SchemaGen', ('StatisticsGen',)),
    ('ImportSchemaGen', ()),  # Instead of SchemaGen, with --schema.
    ('ExampleValidator', ('StatisticsGen', 'SchemaGen', 'ImportSchemaGen')),
    ('ValidationGate', ('ExampleValidator',)),
    ('Transform', ('ImageExampleGen', 'SchemaGen', 'ImportSchemaGen',
                   'ValidationGate')),
    ('Trainer', ('ImageExampleGen', 'Transform', 'SchemaGen',
                 'ImportSchemaGen')),
    ('latest_blessed_model_resolver', ()),
    ('Evaluator', ('ImageExampleGen', 'Trainer',
                   'latest_blessed_model_resolver')),
    ('Pusher', ('Trainer', 'Evaluator')),
)
# Components that stand in for another one: shown only when they ran.
_ALTERNATIVES = {'ImportSchemaGen': 'SchemaGen'}


def _reason(error: BaseException) -> str:
  if isinstance(error, InspectError):
    return str(error)
  text = str(error).strip().splitlines()
  return f'{type(error).__name__}: {text[0] if text else "(no message)"}'


def _attempt(what: str, build: Callable[..., Dict[str, Any]], *args
             ) -> Dict[str, Any]:
  """build(*args), or {'error': reason} (logged with its traceback)."""
  try:
    return build(*args)
  except Exception as e:  # pylint: disable=broad-except
    # The page says what failed; the log keeps the traceback for a fix.
    logging.exception('run report: %s could not be built', what)
    return {'error': f'{what}: {_reason(e)}'}


def data_uri(png: bytes) -> str:
  return 'data:image/png;base64,' + base64.b64encode(png).decode('ascii')


# ------------------------------------------------------------------- run --


def _why_not_run(run: queries.Run) -> str:
  """Why components of the DAG are missing from `run`."""
  failed = [e for e in run.executions if e.state == 'FAILED']
  if any(e.node == 'ValidationGate' for e in failed):
    return ('the ValidationGate stopped the run: ExampleValidator found '
            'anomalies in the data')
  if failed:
    return f'the run failed in {failed[0].node}'
  if run.state in ('RUNNING', 'NEW'):
    return 'the run has not got there yet'
  if run.state == 'CANCELED':
    return 'the run was interrupted'
  return 'the run ended before it (a partial run, e.g. --to-node)'


def run_facts(md: queries.Metadata, run: queries.Run) -> Dict[str, Any]:
  ended = run.ended_ms
  return {
      'id': run.name, 'pipeline': run.pipeline, 'state': run.state,
      'started': render.timestamp(run.started_ms),
      'ended': render.timestamp(ended),
      'seconds': (ended - run.started_ms) / 1000 if ended else None,
      'states': queries.state_counts(run), 'store': md.where,
  }


def dag(md: queries.Metadata, run: queries.Run) -> Dict[str, Any]:
  """Every component of the DAG in pipeline order: state, wall time, cache
  hit, outputs (for a cached one: which run made them), upstream."""
  ran = {e.node: e for e in run.executions}
  static = dict(PIPELINE_DAG)
  replaced = {_ALTERNATIVES[n] for n in ran if n in _ALTERNATIVES}
  names = [n for n, _ in PIPELINE_DAG
           if n in ran or (n not in _ALTERNATIVES and n not in replaced)]
  names += [e.node for e in run.executions if e.node not in static]
  present = set(names)
  nodes = []
  for name in names:
    execution = ran.get(name)
    if name in static:
      upstream = [u for u in static[name] if u in present]
    else:  # A component PIPELINE_DAG does not know: what its inputs say.
      upstream = _producers_of_inputs(md, execution, present)
    node = {'node': name, 'upstream': upstream}
    if execution is None:
      node.update(state=NOT_RUN, seconds=None, cached=False,
                  execution_id=None, outputs=[])
    else:
      node.update(state=execution.state, seconds=execution.seconds,
                  cached=execution.cached, execution_id=execution.id,
                  outputs=_outputs(md, execution))
    nodes.append(node)
  return {'nodes': nodes, 'why_not_run': (
      _why_not_run(run) if any(n['state'] == NOT_RUN for n in nodes)
      else None)}


def _producers_of_inputs(md: queries.Metadata, execution: queries.Execution,
                         present) -> List[str]:
  producers = (md.producer(a.id) for _, a in md.inputs(execution.id))
  return sorted({p.node for p in producers if p and p.node in present}
                - {execution.node})


def _outputs(md: queries.Metadata, execution: queries.Execution
             ) -> List[Dict[str, Any]]:
  outputs = []
  for key, artifact in md.outputs(execution.id):
    producer = md.producer(artifact.id)
    outputs.append({
        'key': key, 'type': artifact.type, 'id': artifact.id,
        'uri': artifact.uri,
        # A cached execution's outputs were made by an earlier run.
        'made_by_run': producer.run if producer else None,
        'reused': bool(producer and producer.id != execution.id),
    })
  return outputs


# ------------------------------------------------------------------ data --


def _not_run(run: queries.Run, node: str) -> Optional[Dict[str, Any]]:
  execution = run.execution(node)
  if execution is None:
    return {'status': 'not_run',
            'reason': f'{node} did not run: {_why_not_run(run)}'}
  if execution.state != 'COMPLETE' and not execution.cached:
    return {'status': 'not_run',
            'reason': f'{node} did not complete ({execution.state})'}
  return None


def data_section(md: queries.Metadata, run: queries.Run) -> Dict[str, Any]:
  """Split counts, class balance, samples, statistics and anomalies."""
  not_run = _not_run(run, 'ImageExampleGen')
  if not_run:
    return not_run
  examples = md.run_output(run, 'ImageExampleGen', 'examples')
  section: Dict[str, Any] = {
      'status': 'ok',
      'examples': {'id': examples.id, 'uri': examples.uri,
                   'cached': run.execution('ImageExampleGen').cached,
                   'properties': artifacts_lib.key_properties(md, examples)},
  }
  section['class_names'] = _attempt('the class names', _class_names, examples)
  section['class_balance'] = _attempt('the class balance', _class_balance,
                                      examples)
  section['samples'] = _attempt('the sample grid', _samples, examples)
  section['statistics'] = (
      _not_run(run, 'StatisticsGen') or
      _attempt('the statistics summary', _statistics, md, run))
  section['anomalies'] = (
      _not_run(run, 'ExampleValidator') or
      _attempt('the anomalies', _anomalies, md, run))
  return section


def _class_names(examples: queries.Artifact) -> Dict[str, Any]:
  from inspector import images  # pylint: disable=g-import-not-at-top
  return {'names': images.class_names(examples)}


def _class_balance(examples: queries.Artifact) -> Dict[str, Any]:
  from inspector import images  # pylint: disable=g-import-not-at-top
  names = images.class_names(examples)
  splits = {}
  for split in examples.split_names():
    counts = images.label_counts(examples, split)
    splits[split] = [counts.get(label, 0) for label in range(len(names))]
    # Labels outside the class names would be an ExampleGen bug: say so.
    unnamed = sorted(set(counts) - set(range(len(names))))
    if unnamed:
      raise InspectError(f'split {split} has labels without class names: '
                         f'{unnamed}')
  return {'classes': names, 'splits': splits}


def _samples(examples: queries.Artifact) -> Dict[str, Any]:
  from inspector import images  # pylint: disable=g-import-not-at-top
  from inspector import pictures  # pylint: disable=g-import-not-at-top
  names = images.class_names(examples)
  found = images.samples(examples, SAMPLES_SPLIT, SAMPLES_PER_CLASS)
  canvas, _ = pictures.draw_samples_grid(
      found, names, f'Examples {examples.id}, split {SAMPLES_SPLIT}: up to '
      f'{SAMPLES_PER_CLASS} per class')
  return {'split': SAMPLES_SPLIT, 'per_class': SAMPLES_PER_CLASS,
          'counts': {names[label] if label < len(names) else str(label):
                     len(found[label]) for label in sorted(found)},
          'png': data_uri(pictures.png_bytes(canvas)),
          'width': canvas.width, 'height': canvas.height}


def _statistics(md: queries.Metadata, run: queries.Run) -> Dict[str, Any]:
  from inspector import data  # pylint: disable=g-import-not-at-top
  summary = data.statistics_summary(md, run)
  return {'id': summary['statistics']['id'],
          'cached': summary['cached_in_this_run'],
          'splits': summary['splits']}


def _anomalies(md: queries.Metadata, run: queries.Run) -> Dict[str, Any]:
  from inspector import data  # pylint: disable=g-import-not-at-top
  summary = data.anomalies_summary(md, run)
  return {'id': summary['anomalies']['id'],
          'cached': summary['cached_in_this_run'],
          'splits': summary['splits']}


# -------------------------------------------------------------- training --


def training_section(md: queries.Metadata, run: queries.Run
                     ) -> Dict[str, Any]:
  """Loss and accuracy per epoch, the settings and the device plan."""
  not_run = _not_run(run, 'Trainer')
  if not_run:
    return not_run
  from inspector import training  # pylint: disable=g-import-not-at-top
  trainer = run.execution('Trainer')
  model = md.run_output(run, 'Trainer', 'model')
  model_run = md.run_output(run, 'Trainer', 'model_run')
  producer = md.producer(model.id)
  return {
      'status': 'ok', 'cached': trainer.cached,
      # A cached Trainer's wall time is the lookup's: show the training's.
      'seconds': producer.seconds if producer else trainer.seconds,
      'trained_in_run': producer.run if producer else None,
      'model': {'id': model.id, 'uri': model.uri},
      'model_run': {'id': model_run.id, 'uri': model_run.uri},
      'curves': _attempt('the training curves', training.epoch_curves,
                         model_run),
      'settings': _attempt('the training settings', training.settings,
                           producer or trainer),
      'device_plan': _attempt('the device plan', training.device_plan,
                              model_run),
  }


# ------------------------------------------------------------ evaluation --


def evaluation_section(md: queries.Metadata, run: queries.Run
                       ) -> Dict[str, Any]:
  """Accuracy against the threshold and the baseline, the blessing and why,
  the confusion matrix, and the push."""
  not_run = _not_run(run, 'Evaluator')
  if not_run:
    return not_run
  evaluator = run.execution('Evaluator')
  model = next((a for k, a in md.inputs(evaluator.id) if k == 'model'), None)
  if model is None:
    raise InspectError(f'Evaluator execution {evaluator.id} recorded no '
                       'model input')
  return {
      'status': 'ok', 'cached': evaluator.cached,
      'model': {'id': model.id, 'uri': model.uri},
      'verdict': _attempt('the evaluation', _verdict, md, evaluator, model),
      'confusion': _attempt('the confusion matrix', _confusion, md, model),
      'push': _not_run(run, 'Pusher') or _attempt('the push', _push, md, run),
  }


def _verdict(md: queries.Metadata, evaluator: queries.Execution,
             model: queries.Artifact) -> Dict[str, Any]:
  from inspector import evaluation  # pylint: disable=g-import-not-at-top
  result = evaluation.evaluation_metrics(md, evaluator, model)
  thresholds = evaluation.thresholds(evaluator)
  metrics = {row['metric']: row for s in result['slices']
             if s['slice'] == 'Overall' for row in s['metrics']}
  checks = []
  for threshold in thresholds:
    row = metrics.get(threshold['metric'], {})
    checks.append({**threshold, 'value': row.get('value'),
                   'baseline': row.get('baseline'), 'diff': row.get('diff')})
  return {
      'blessed': result['blessed'],
      'validation_ok': result['validation_ok'],
      'reasons': evaluation.failure_reasons(result['evaluation']['uri']),
      'checks': checks,
      'examples': (metrics.get('example_count') or {}).get('value'),
      'baseline': result['baseline'],
      'evaluation': result['evaluation'],
      'slices': result['slices'],
  }


def _confusion(md: queries.Metadata, model: queries.Artifact
               ) -> Dict[str, Any]:
  from inspector import images  # pylint: disable=g-import-not-at-top
  from inspector import pictures  # pylint: disable=g-import-not-at-top
  examples = md.training_examples(model)
  result = images.confusion_matrix(model, examples, EVAL_SPLIT)
  canvas = pictures.draw_confusion_matrix(
      result['matrix'], result['class_names'],
      f'Model {model.id} on split {EVAL_SPLIT}: accuracy '
      f'{result["accuracy"]:.2%} of {result["examples_count"]:,}')
  return {**result, 'png': data_uri(pictures.png_bytes(canvas)),
          'width': canvas.width, 'height': canvas.height}


def _push(md: queries.Metadata, run: queries.Run) -> Dict[str, Any]:
  pushed = md.run_output(run, 'Pusher', 'pushed_model')
  props = pushed.properties
  return {'status': 'ok', 'id': pushed.id, 'uri': pushed.uri,
          'pushed': bool(props.get('pushed')),
          'destination': props.get('pushed_destination') or None,
          # components/push_once.py: the model was already being served.
          'already_served': bool(props.get('already_served')),
          'cached': run.execution('Pusher').cached}


# --------------------------------------------------------------- lineage --


def lineage_section(md: queries.Metadata, run: queries.Run
                    ) -> Dict[str, Any]:
  """The tree from the run's last artifact back to the input files."""
  from inspector import lineage  # pylint: disable=g-import-not-at-top
  root = None
  for node, key in (('Pusher', 'pushed_model'), ('Trainer', 'model'),
                    ('ExampleValidator', 'anomalies'),
                    ('StatisticsGen', 'statistics'),
                    ('ImageExampleGen', 'examples')):
    execution = run.execution(node)
    root = md.output(execution, key) if execution else None
    if root is not None:
      break
  if root is None:
    return {'status': 'not_run',
            'reason': 'the run recorded no artifact to trace back'}
  return {'status': 'ok', 'root': {'id': root.id, 'type': root.type},
          'tree': lineage.lineage(md, root)}


# ----------------------------------------------------------------- facts --


def _section(what: str, build, md, run) -> Dict[str, Any]:
  result = _attempt(what, build, md, run)
  if 'error' in result:
    result['status'] = 'error'
  return result


def gather(md: queries.Metadata, run: queries.Run) -> Dict[str, Any]:
  """Every fact of the report, JSON-ready (pictures as data: URIs)."""
  facts = {
      'run': run_facts(md, run),
      'dag': _section('the DAG', dag, md, run),
      'data': _section('the data section', data_section, md, run),
      'training': _section('the training section', training_section, md,
                           run),
      'evaluation': _section('the evaluation section', evaluation_section,
                             md, run),
      'lineage': _section('the lineage', lineage_section, md, run),
  }
  facts['outcome'] = report_outcome.outcome(run, facts)
  return facts


def without_pictures(facts: Any) -> Any:
  """The facts with each picture's data: URI replaced by its length (for
  --json, which is about the facts)."""
  if isinstance(facts, dict):
    return {k: (f'<{len(v):,} characters>' if k == 'png' and isinstance(
        v, str) else without_pictures(v)) for k, v in facts.items()}
  if isinstance(facts, list):
    return [without_pictures(v) for v in facts]
  return facts


# ----------------------------------------------------------------- write --


def write(md: queries.Metadata, run: queries.Run, path: str
          ) -> Dict[str, Any]:
  """Gathers the run's facts and writes the page to `path` atomically (a
  temporary file beside it, renamed): a reader never sees half a report."""
  from inspector import report_html  # pylint: disable=g-import-not-at-top
  directory = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(directory):
    raise InspectError(f'{path}: directory {directory} does not exist')
  facts = gather(md, run)
  page = report_html.page(facts)
  temporary = os.path.join(directory,
                           f'.{os.path.basename(path)}.{os.getpid()}.tmp')
  try:
    # O_EXCL: never write through a stale link; 0o666 & umask, as open() does.
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                         0o666)
    with os.fdopen(descriptor, 'w', encoding='utf-8') as f:
      f.write(page)
      f.flush()
      os.fsync(f.fileno())
    os.replace(temporary, path)
  finally:
    if os.path.exists(temporary):
      os.remove(temporary)
  return facts
