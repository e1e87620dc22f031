"""A run as a whole: what ran, the data, the training, the evaluation and
push, the lineage, and what became of it; written as one HTML page.

`gather` collects the facts as plain values; a part that cannot be built
becomes {'error': reason}. See docs/metadata.md, "The run report".
"""

import contextlib
import datetime
import functools
import itertools
import logging
import os
from typing import Any, Callable, Dict, List, Optional

from inspector import artifacts as artifacts_lib
from inspector import render
from metadata import queries
from metadata.store import InspectError
from records import csv_cells
from records import data_check_results as data_checks_results
from records import features
from records import serving_model

SAMPLES_PER_CLASS = 8
SAMPLES_SPLIT = features.TRAIN_SPLIT
NOT_RUN = 'NOT RUN'  # The state of a component of the DAG the run never got to.
# The list of every input file, beside the page (the page names a few).
FILES_LIST_SUFFIX = '-files.csv'
FILES_LIST_COLUMNS = ('execution', 'split', 'path', 'bytes', 'modified')
# The history drawn in a run's report: at most this many runs, up to it.
HISTORY_RUNS = 30
# The model's mistakes beside the confusion matrix: the most frequent
# (true, predicted) pairs, and the most confident images of each.
MISTAKE_PAIRS = 10
MISTAKES_PER_PAIR = 8


def _attempt(what: str, build: Callable[..., Dict[str, Any]], *args
             ) -> Dict[str, Any]:
  try:
    return build(*args)
  except Exception as e:  # pylint: disable=broad-except
    logging.exception('run report: %s could not be built', what)
    lines = str(e).strip().splitlines()
    reason = str(e) if isinstance(e, InspectError) else (
        f'{type(e).__name__}: {lines[0] if lines else "(no message)"}')
    return {'error': f'{what}: {reason}'}


def _copies_over_share(md: queries.Metadata, run: queries.Run
                       ) -> Dict[str, Dict[str, float]]:
  """{split: held-out copies} of the splits over the ValidationGate's
  share, when the gate was to stop for them and ExampleValidator blessed
  every split (the gate looks at the anomalies first); else {}."""
  gate = run.execution('ValidationGate')
  share = gate.properties.get('max_eval_copy_share') if gate else None
  if share is None or gate.properties.get('eval_copies') != 'stop':
    return {}
  try:
    anomalies = md.run_output(run, 'ExampleValidator', 'anomalies')
    data_checks = md.run_output(run, 'DataChecks',
                                data_checks_results.OUTPUT_KEY)
  except InspectError:
    return {}
  blessed = anomalies.properties.get('blessed') or {}
  if not blessed or any(value != 1 for value in blessed.values()):
    return {}
  held_out = data_checks.json_property(data_checks_results.HELD_OUT_PROPERTY)
  return {split: info for split, info in held_out.items()
          if info['share'] > share}


def _why_not_run(run: queries.Run, md: Optional[queries.Metadata] = None
                 ) -> str:
  failed = [e for e in run.executions if e.state == 'FAILED']
  if any(e.node == 'ValidationGate' for e in failed):
    over = _copies_over_share(md, run) if md is not None else {}
    if over:
      return ('the ValidationGate stopped the run: ' + '; '.join(
          data_checks_results.held_out_lines(over)))
    return ('the ValidationGate stopped the run: ExampleValidator found '
            'anomalies in the data')
  if failed:
    return f'the run failed in {failed[0].node}'
  if run.state in ('RUNNING', 'NEW'):
    return 'the run has not got there yet'
  if run.state == 'CANCELED':
    return 'the run was interrupted'
  return 'the run ended before it (a partial run, e.g. --to-node)'


def pipeline_dag(run: queries.Run) -> Dict[str, List[str]]:
  """Node id -> upstream node ids, in the order the DAG runs, of the
  pipeline definition that ran `run`.

  LocalDagRunner records in ML Metadata only the nodes that ran, so the DAG
  comes from pipeline/pipeline.py, built with each choice of the flags that
  shape it (--schema, the baseline): the first whose nodes include every
  node that ran, the default flags first.
  """
  from pipeline import constants  # pylint: disable=g-import-not-at-top
  from pipeline import knobs  # pylint: disable=g-import-not-at-top
  from pipeline import pipeline  # pylint: disable=g-import-not-at-top
  ran = {e.node for e in run.executions}
  shapes = []
  for schema, baseline, trials, label_check in itertools.product(
      (None, constants.MNIST_SCHEMA),
      dict.fromkeys((knobs.EvaluationConfig().baseline, knobs.LAST_BLESSED,
                     knobs.SERVED)),
      (0, 1),  # Without and with --tune.
      (True, False)):  # With and without --no-label-check.
    built = pipeline.create_pipeline(
        run.pipeline or constants.PIPELINE_NAME, 'root', 'data', 'serving',
        data=knobs.DataConfig(schema=schema),
        evaluation=knobs.EvaluationConfig(baseline=baseline,
                                          label_check=label_check),
        tuning=knobs.TuningConfig(trials=trials))
    shapes.append({c.id: sorted(u.id for u in c.upstream_nodes)
                   for c in built.components})
  # A finished run without LabelCheck ran with it off (--no-label-check).
  label_check_off = (run.state == 'COMPLETE' and 'Pusher' in ran
                     and 'LabelCheck' not in ran)
  return max(shapes, key=lambda shape: (
      len(ran & set(shape)), not (label_check_off and 'LabelCheck' in shape)))


def dag(md: queries.Metadata, run: queries.Run) -> Dict[str, Any]:
  """Every node of the DAG in run order: state, wall time, cache hit,
  outputs (for a cached one: which run made them), upstream."""
  shape = pipeline_dag(run)
  for execution in run.executions:  # A node the definition does not know.
    if execution.node not in shape:
      shape[execution.node] = sorted({
          p.node for p in (md.producer(a.id) for _, a in
                           md.inputs(execution.id))
          if p and p.node in shape and p.node != execution.node})
  nodes = []
  for name, upstream in shape.items():
    execution = run.execution(name) or queries.Execution(
        None, name, '', NOT_RUN, 0, 0, None, None, {})
    nodes.append({
        'node': name, 'upstream': upstream, 'state': execution.state,
        'seconds': execution.seconds if execution.id else None,
        'cached': execution.cached, 'execution_id': execution.id,
        'outputs': [{'key': key, 'type': artifact.type, 'id': artifact.id,
                     'uri': artifact.uri,
                     # A cached execution's outputs were made before.
                     'made_by_run': producer.run if producer else None,
                     'reused': bool(producer and producer.id != execution.id)}
                    for key, artifact in md.outputs(execution.id or -1)
                    for producer in [md.producer(artifact.id)]]})
  return {'nodes': nodes, 'why_not_run': (
      _why_not_run(run, md) if any(n['state'] == NOT_RUN for n in nodes)
      else None)}


def _not_run(run: queries.Run, node: str,
             md: Optional[queries.Metadata] = None
             ) -> Optional[Dict[str, Any]]:
  """{'status': 'not_run', 'reason'} when `node` did not complete; `md`
  lets the reason tell the ValidationGate's two causes apart."""
  execution = run.execution(node)
  if execution is None:
    return {'status': 'not_run',
            'reason': f'{node} did not run: {_why_not_run(run, md)}'}
  if execution.state != 'COMPLETE' and not execution.cached:
    return {'status': 'not_run',
            'reason': f'{node} did not complete ({execution.state})'}
  return None


def data_section(md: queries.Metadata, run: queries.Run) -> Dict[str, Any]:
  from inspector import data  # pylint: disable=g-import-not-at-top
  from inspector import images  # pylint: disable=g-import-not-at-top
  not_run = _not_run(run, 'ImageExampleGen')
  if not_run:
    return not_run
  examples = md.run_output(run, 'ImageExampleGen', 'examples')

  def summary(build, key):
    found = build(md, run)
    return {'id': found[key]['id'], 'cached': found['cached_in_this_run'],
            'splits': found['splits']}

  return {
      'status': 'ok',
      'examples': {'id': examples.id, 'uri': examples.uri,
                   'cached': run.execution('ImageExampleGen').cached,
                   'properties': artifacts_lib.key_properties(md, examples)},
      'class_names': _attempt('the class names', lambda: {
          'names': images.class_names(examples)}),
      'class_balance': _attempt('the class balance', _class_balance, md,
                                examples),
      'samples': _attempt('the sample grid', _samples, examples),
      'statistics': _not_run(run, 'StatisticsGen') or _attempt(
          'the statistics summary', summary, data.statistics_summary,
          'statistics'),
      'anomalies': _not_run(run, 'ExampleValidator') or _attempt(
          'the anomalies', summary, data.anomalies_summary, 'anomalies'),
      'copies': _not_run(run, 'DataChecks') or _attempt(
          'the copies', _copies, md, run, examples),
  }


def _copies(md: queries.Metadata, run: queries.Run,
            examples: queries.Artifact) -> Dict[str, Any]:
  from inspector import duplicates  # pylint: disable=g-import-not-at-top
  return duplicates.report_facts(md, run, examples)


def _class_balance(md: queries.Metadata, examples: queries.Artifact
                   ) -> Dict[str, Any]:
  from inspector import data  # pylint: disable=g-import-not-at-top
  from inspector import images  # pylint: disable=g-import-not-at-top
  names = images.class_names(examples)
  # DataChecks counted them as it read every record; runs from before it
  # did are counted here, reading every label (their report's figures
  # stay the same, at the old cost).
  recorded = data.label_counts(md, examples)
  splits = {}
  for split in examples.split_names():
    counts = (recorded[split] if split in recorded
              else images.label_counts(examples, split))
    splits[split] = [counts.get(label, 0) for label in range(len(names))]
    unnamed = sorted(set(counts) - set(range(len(names))))
    if unnamed:  # An ExampleGen bug: say so.
      raise InspectError(f'split {split} has labels without class names: '
                         f'{unnamed}')
  return {'classes': names, 'splits': splits}


def _samples(examples: queries.Artifact) -> Dict[str, Any]:
  from inspector import images  # pylint: disable=g-import-not-at-top
  canvas, _, classes = images.sample_grid(examples, SAMPLES_SPLIT,
                                          SAMPLES_PER_CLASS)
  return {'split': SAMPLES_SPLIT, 'per_class': SAMPLES_PER_CLASS,
          'counts': {c['name'] or str(c['label']): c['count']
                     for c in classes},
          **images.inline_png(canvas)}


def training_section(md: queries.Metadata, run: queries.Run
                     ) -> Dict[str, Any]:
  from inspector import trainer_run  # pylint: disable=g-import-not-at-top
  from inspector import trials  # pylint: disable=g-import-not-at-top
  not_run = _not_run(run, 'Trainer', md)
  if not_run:
    return not_run
  trainer = run.execution('Trainer')
  model = md.run_output(run, 'Trainer', 'model')
  model_run = md.run_output(run, 'Trainer', 'model_run')
  producer = md.producer(model.id) or trainer
  return {
      'status': 'ok', 'cached': trainer.cached,
      # A cached Trainer's wall time is the lookup's: show the training's.
      'seconds': producer.seconds, 'trained_in_run': producer.run,
      'model': {'id': model.id, 'uri': model.uri},
      'model_run': {'id': model_run.id, 'uri': model_run.uri},
      'curves': _attempt('the training curves', trainer_run.epoch_curves,
                         model_run),
      'settings': _attempt('the training settings', trainer_run.settings,
                           producer),
      'device_plan': _attempt('the device plan', trainer_run.device_plan,
                              model_run),
      'splits': _attempt('the splits', trainer_run.splits, model),
      'tuning': (_attempt('the tuning trials', trials.trials, md, run)
                 if trials.ran_tuner(run) else None),
  }


def evaluation_section(md: queries.Metadata, run: queries.Run
                       ) -> Dict[str, Any]:
  from inspector import evaluation  # pylint: disable=g-import-not-at-top
  not_run = _not_run(run, 'Evaluator', md)
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
      'confusion': _attempt('the confusion matrix',
                            evaluation.confusion_matrix, md, model, None,
                            evaluator),
      'on_device': _attempt('the TensorFlow Lite files', evaluation.on_device,
                            model),
      'mistakes': _label_check_not_run(run) or _attempt(
          'the images the model gets wrong', mistakes_part, md, run),
      'push': _not_run(run, 'Pusher', md) or _attempt('the push', _push, md, run),
  }


def _verdict(md: queries.Metadata, evaluator: queries.Execution,
             model: queries.Artifact) -> Dict[str, Any]:
  from inspector import evaluation  # pylint: disable=g-import-not-at-top
  result = evaluation.evaluation_metrics(md, evaluator, model)
  metrics = {row['metric']: row for s in result['slices']
             if s['slice'] == 'Overall' for row in s['metrics']}
  itself = bool(result['baseline'] and result['baseline']['is_this_model'])
  checks = [{**t, **{k: metrics.get(t['metric'], {}).get(k)
                     for k in ('value', 'baseline', 'diff')},
             'baseline_is_this_model': itself}
            for t in evaluation.thresholds(md, evaluator)]
  return {
      'blessed': result['blessed'], 'validation_ok': result['validation_ok'],
      'reasons': [f['reason'] for f in result['validation_failures']],
      'checks': checks,
      'examples': (metrics.get('example_count') or {}).get('value'),
      'baseline': result['baseline'], 'evaluation': result['evaluation'],
      'slices': result['slices'],
  }


def _push(md: queries.Metadata, run: queries.Run) -> Dict[str, Any]:
  pushed = md.run_output(run, 'Pusher', 'pushed_model')
  props = pushed.properties
  return {'status': 'ok', 'id': pushed.id, 'uri': pushed.uri,
          'pushed': bool(props.get(serving_model.PUSHED_PROPERTY)),
          'destination': props.get(
              serving_model.PUSHED_DESTINATION_PROPERTY) or None,
          # The push-once Pusher found the model already served.
          'already_served': bool(props.get(
              serving_model.ALREADY_SERVED_PROPERTY)),
          'cached': run.execution('Pusher').cached}


def _label_check_not_run(run: queries.Run) -> Optional[Dict[str, Any]]:
  """{'status': 'not_run', 'reason'} when the run has no LabelCheck output:
  turned off, or not got to."""
  from inspector import labels  # pylint: disable=g-import-not-at-top
  if run.execution(labels.NODE) is None and run.state == 'COMPLETE' and (
      run.execution('Pusher')):
    return {'status': 'not_run',
            'reason': 'LabelCheck was turned off (--no-label-check)'}
  return _not_run(run, labels.NODE)


def labels_section(md: queries.Metadata, run: queries.Run
                   ) -> Dict[str, Any]:
  """LabelCheck's suspects: per split the method, the counts, and
  thumbnails of the most doubtful."""
  from inspector import labels  # pylint: disable=g-import-not-at-top
  not_run = _label_check_not_run(run)
  if not_run:
    return not_run
  found = labels.suspects(md, run)
  examples = md.run_output(run, 'ImageExampleGen', 'examples')
  top = {split: [r for r in found['rows']
                 if r['split'] == split][:labels.THUMBNAILS_PER_SPLIT]
         for split in found['methods']}
  # Every split's pictures in one pass over their shards.
  pictures = _attempt('the thumbnails', lambda: {
      'by_split': labels.images_in(
          examples, [r for rows in top.values() for r in rows])})
  splits = {}
  for split, method in found['methods'].items():
    splits[split] = {
        'method': method, 'suspects': found['counts'].get(split),
        'checked': found['checked'].get(split),
        'records': found['records'].get(split),
        'seconds': found['seconds'].get(split),
        'top': top[split],
        'thumbnails': (_attempt(f'the {split} thumbnails', _thumbnails,
                                top[split], pictures, split)
                       if top[split] else None)}
  return {'status': 'ok', 'cached': run.execution(labels.NODE).cached,
          'suspects': found['suspects'], 'splits': splits}


def _thumbnails(rows: List[Dict[str, Any]], pictures: Dict[str, Any],
                split: str) -> Dict[str, Any]:
  from inspector import images  # pylint: disable=g-import-not-at-top
  from inspector import labels  # pylint: disable=g-import-not-at-top
  if 'error' in pictures:
    return pictures
  return images.inline_png(labels.draw_suspects(
      rows, pictures['by_split'].get(split, {})))


def mistakes_part(md: queries.Metadata, run: queries.Run) -> Dict[str, Any]:
  """The eval images the model gets wrong, as LabelCheck listed them: the
  MISTAKE_PAIRS most frequent (true, predicted) pairs, each with its
  MISTAKES_PER_PAIR most confident mistakes as thumbnails; a one-line
  reason instead for a run whose LabelCheck listed none."""
  from inspector import images  # pylint: disable=g-import-not-at-top
  from inspector import labels  # pylint: disable=g-import-not-at-top
  try:
    found = labels.mistakes(md, run)
  except labels.NoMistakesListed as e:
    return {'status': 'not_recorded', 'reason': str(e)}
  pairs = labels.confusions(found['rows'])
  shown = [dict(p, rows=p['rows'][:MISTAKES_PER_PAIR], more=max(
      0, p['count'] - MISTAKES_PER_PAIR)) for p in pairs[:MISTAKE_PAIRS]]
  rows = [r for p in shown for r in p['rows']]
  pictures = {}
  if rows:
    pictures = labels.images_at(
        md.run_output(run, 'ImageExampleGen', 'examples'), rows[0]['split'],
        rows)
  scale = images.scale_for(pictures.values()) if pictures else 1
  for p in shown:
    p['rows'] = [dict(r, **(images.inline_png(images.as_rgb(
        pictures[r['source']], scale)) if r['source'] in pictures else {}))
                 for r in p['rows']]
  # One split: LabelCheck lists the mistakes of the split it evaluates.
  split, count = next(iter(found['counts'].items()),
                      (features.EVAL_SPLIT, found['listed']))
  return {'status': 'ok', 'run': run.name, 'suspects': found['suspects'],
          'split': split, 'count': count, 'listed': found['listed'],
          'pairs': shown, 'more_pairs': len(pairs) - len(shown),
          'more_images': sum(p['count'] for p in pairs[MISTAKE_PAIRS:])}


def history_section(md: queries.Metadata, run: queries.Run
                    ) -> Optional[Dict[str, Any]]:
  """The runs of the pipeline up to this one (inspector.history's rows,
  newest first); None when this is the first."""
  from inspector import history  # pylint: disable=g-import-not-at-top
  runs = history.history(md, run, HISTORY_RUNS)['runs']
  return {'status': 'ok', 'runs': runs} if len(runs) > 1 else None


def lineage_section(md: queries.Metadata, run: queries.Run,
                    on_file: Optional[Callable[..., None]] = None
                    ) -> Dict[str, Any]:
  """The tree from the run's last artifact back to the input files, each
  split's first few named; `on_file` sees every file (lineage.OnFile)."""
  from inspector import lineage  # pylint: disable=g-import-not-at-top
  for node, key in (('Pusher', 'pushed_model'), ('Trainer', 'model'),
                    ('ExampleValidator', 'anomalies'),
                    ('StatisticsGen', 'statistics'),
                    ('ImageExampleGen', 'examples')):
    execution = run.execution(node)
    root = md.output(execution, key) if execution else None
    if root is not None:
      return {'status': 'ok', 'root': {'id': root.id, 'type': root.type},
              'named_files': lineage.NAMED_FILES,
              'tree': lineage.lineage(md, root, on_file=on_file)}
  return {'status': 'not_run',
          'reason': 'the run recorded no artifact to trace back'}


def outcome(run: queries.Run, facts: Dict[str, Any]) -> Dict[str, Any]:
  """{kind, headline, details}: what became of the run and why. The kind
  names the page's colour: pushed and served green, stopped and failed
  red, the rest amber."""
  def said(kind, headline, details):
    return {'kind': kind, 'headline': headline, 'details': details}
  failed = [e.node for e in run.executions if e.state == 'FAILED']
  if 'ValidationGate' in failed:
    data = facts['data']
    anomalies = data.get('anomalies', {}) if data.get('status') == 'ok' else {}
    held_out = (data.get('copies', {}).get('held_out_copies', {})
                if data.get('status') == 'ok' else {})
    if (any(info['images'] for info in held_out.values()) and
        'error' not in anomalies and
        not any(anomalies.get('splits', {}).values())):
      return said('stopped', 'Stopped at the ValidationGate: held-out '
                  'images are copies of training images, so nothing was '
                  'trained or pushed.', data_checks_results.held_out_lines(
                      held_out))
    return said('stopped', 'Stopped at the ValidationGate: ExampleValidator '
                'found anomalies in the data, so nothing was trained or '
                'pushed.', [anomalies['error']] if 'error' in anomalies else [
                    f'{split}: {row["feature"]}: {row["short_description"]}'
                    + (f' ({row["description"]})' if row['description']
                       else '')
                    for split, rows in anomalies.get('splits', {}).items()
                    for row in rows])
  if failed:
    return said('failed', f'The run failed in {failed[0]}.',
                ['The full log of the run has the error.'])
  if run.state in ('RUNNING', 'NEW'):
    return said('running', 'The run is still running.', [])
  evaluation = facts['evaluation']
  if evaluation.get('status') == 'error':
    return said('unknown', 'The evaluation could not be read.',
                [evaluation['error']])
  if evaluation.get('status') != 'ok':
    why = facts['dag'].get('why_not_run')
    return said('partial', 'Nothing was evaluated or pushed' +
                (f': {why}.' if why else '.'), [])
  verdict, push = evaluation['verdict'], evaluation['push']
  model = evaluation['model']['id']
  if 'error' in verdict:
    return said('unknown', f'Model {model}: its evaluation could not be '
                'read.', [verdict['error']])
  if not verdict['blessed']:
    return said('not_blessed', f'Model {model} was not blessed, so it was '
                'not pushed.', verdict['reasons'] or
                ['See the evaluation below.'])
  checks = [check_text(c) for c in verdict['checks']]
  if push.get('status') != 'ok':
    return said('unknown', f'Model {model} was blessed; what became of its '
                'push is unknown.', [push.get('error') or
                                     push.get('reason', '')])
  if push['already_served']:
    return said('served', f'Model {model} was blessed and is already served '
                f'from {push["destination"]}: not pushed again.', checks)
  if push['pushed']:
    return said('pushed', f'Model {model} was blessed and pushed to '
                f'{push["destination"]}.', checks)
  return said('not_blessed', f'Model {model} was blessed but not pushed.',
              checks)


def check_text(check: Dict[str, Any]) -> str:
  """'sparse_categorical_accuracy 0.9512: at least the threshold 0.9, a
  fixed threshold (...), and no worse than the baseline's 0.9490'."""
  if check.get('value') is None:
    return f'{check["metric"]}: no value recorded'
  conditions = []
  if check.get('lower_bound') is not None:
    conditions.append(f'at least the threshold {check["lower_bound"]:g}' + (
        f', {check["reason"]}' if check.get('reason') else ''))
  if check.get('no_worse_than_baseline'):
    if check.get('baseline') is not None:
      conditions.append(
          f'no worse than the baseline\'s {check["baseline"]:.4f}')
    elif check.get('baseline_is_this_model'):
      conditions.append('the baseline is this model itself, blessed before')
    else:
      conditions.append(
          'no baseline to compare with (no model was blessed before)')
  return f'{check["metric"]} {check["value"]:.4f}' + (
      ': ' + ', and '.join(conditions) if conditions else '')


def gather(md: queries.Metadata, run: queries.Run,
           on_file: Optional[Callable[..., None]] = None) -> Dict[str, Any]:
  """Every fact of the report, JSON-ready (pictures as data: URIs);
  `on_file` sees each input file of the lineage."""
  summary = render.run_json(run)
  facts = {'run': {'id': summary.pop('run'), **summary, 'store': md.where}}
  for key, what, build in (
      ('dag', 'the DAG', dag), ('data', 'the data section', data_section),
      ('training', 'the training section', training_section),
      ('evaluation', 'the evaluation section', evaluation_section),
      ('labels', 'the label check', labels_section),
      ('lineage', 'the lineage',
       functools.partial(lineage_section, on_file=on_file))):
    facts[key] = _attempt(what, build, md, run)
    if 'error' in facts[key]:
      facts[key]['status'] = 'error'
  # Shown from the second run on.
  facts['history'] = _attempt('the history', history_section, md, run)
  if facts['history'] and 'error' in facts['history']:
    facts['history']['status'] = 'error'
  facts['outcome'] = outcome(run, facts)
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


def files_list_path(page_path: str) -> str:
  """The CSV of every input file beside the page: report.html ->
  report-files.csv."""
  return os.path.splitext(page_path)[0] + FILES_LIST_SUFFIX


@contextlib.contextmanager
def _replaced_whole(path: str):
  """A text file to write that replaces `path` once closed without an
  error (a temporary file beside it, renamed): a reader never sees half."""
  temporary = os.path.join(os.path.dirname(os.path.abspath(path)),
                           f'.{os.path.basename(path)}.{os.getpid()}.tmp')
  try:
    # O_EXCL: never write through a stale link; 0o666 & umask, as open() does.
    with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                           0o666), 'w', encoding='utf-8', newline='') as f:
      yield f
      f.flush()
      os.fsync(f.fileno())
    os.replace(temporary, path)
  finally:
    if os.path.exists(temporary):
      os.remove(temporary)


def write(md: queries.Metadata, run: queries.Run, path: str
          ) -> Dict[str, Any]:
  """Gathers the run's facts and writes the page to `path`, and every input
  file of its lineage to the CSV beside it (files_list_path), each whole."""
  from inspector import report_page  # pylint: disable=g-import-not-at-top
  render.check_directory(path)
  listing = files_list_path(path)
  with _replaced_whole(listing) as f:
    rows = csv_cells.writer(f)
    rows.writerow(FILES_LIST_COLUMNS)
    facts = gather(md, run, on_file=lambda execution, split, info: (
        rows.writerow([execution, split, info.path, info.size,
                       _utc(info.mtime)])))
  if facts['lineage'].get('status') == 'ok':
    facts['lineage']['files_csv'] = os.path.basename(listing)
  else:  # Not a list the page vouches for, nor an earlier run's.
    os.remove(listing)
  page = report_page.page(facts)
  with _replaced_whole(path) as f:
    f.write(page)
  return facts


def _utc(seconds: float) -> str:
  return datetime.datetime.fromtimestamp(
      seconds, datetime.timezone.utc).isoformat(timespec='seconds')
