"""The inspect tool's command line: `python -m inspector COMMAND`.

USAGE below is the --help text. Why and how: docs/metadata.md, "The inspect
tool".
"""

import argparse
import contextlib
import json
import sys
from typing import Any, Optional, Sequence

from pipeline import startup

startup.quiet_tensorflow()  # Before anything imports TensorFlow.

# pylint: disable=g-import-not-at-top
from inspector import artifacts as artifacts_lib
from inspector import lineage as lineage_lib
from inspector import render
from inspector import report
from metadata import queries
from metadata import store as store_lib
from metadata.store import InspectError
# pylint: enable=g-import-not-at-top


def _runs(md: queries.Metadata, args) -> Any:
  runs = md.runs()
  if not runs:
    raise InspectError(f'{md.where}: the store holds no pipeline runs')
  return [{**render.run_json(run), 'components': [{
      'node': e.node, 'state': e.state, 'cached': e.cached,
      'seconds': e.seconds, 'execution_id': e.id,
      'started': render.timestamp(e.started_ms),
      'ended': render.timestamp(e.ended_ms)} for e in run.executions]}
          for run in (runs[:args.limit] if args.limit else runs)]


def _artifacts(md: queries.Metadata, args) -> Any:
  if not md.artifacts:
    raise InspectError(f'{md.where}: the store holds no artifacts')
  return artifacts_lib.listing(md, args.type,
                               md.run(args.run) if args.run else None)


def _lineage(md: queries.Metadata, args) -> Any:
  return lineage_lib.lineage(md, md.resolve(args.artifact),
                             all_files=args.all_files)


def _split_view(summary: str, page: str):
  """A run's split seen through data's `summary`, and through its `page`
  into the --html file when asked."""
  def view(md: queries.Metadata, args) -> Any:
    from inspector import data  # pylint: disable=g-import-not-at-top
    run = md.run(args.run)
    result = getattr(data, summary)(md, run, args.split)
    if args.html:
      render.check_directory(args.html)
      with open(args.html, 'w', encoding='utf-8') as f:
        f.write(getattr(data, page)(md, run, args.split))
      result['html'] = {'path': args.html}
    return result
  return view


def _metrics(md: queries.Metadata, args) -> Any:
  from inspector import evaluation  # pylint: disable=g-import-not-at-top
  return evaluation.metrics(md, md.model(args.model) if args.model else
                            evaluation.newest_evaluated_model(md))


def _samples(md: queries.Metadata, args) -> Any:
  from inspector import images  # pylint: disable=g-import-not-at-top
  examples = md.artifact(args.examples)
  if examples.type != 'Examples':
    raise InspectError(f'artifact {examples.id} is a {examples.type}, not '
                       'Examples')
  if args.per_class < 1:
    raise InspectError(f'--per-class must be at least 1, got {args.per_class}')
  render.check_directory(args.png)
  canvas, grid, classes = images.sample_grid(examples, args.split,
                                             args.per_class)
  canvas.save(args.png, format='PNG')
  return {
      'examples': {'id': examples.id, 'uri': examples.uri,
                   'split': args.split},
      'classes': classes,
      'png': {'path': args.png, 'width': canvas.width,
              'height': canvas.height, 'grid': grid},
  }


def _confusion(md: queries.Metadata, args) -> Any:
  from inspector import charts  # pylint: disable=g-import-not-at-top
  from inspector import evaluation  # pylint: disable=g-import-not-at-top
  model = md.model(args.model)
  result = evaluation.confusion_matrix(md, model, args.split)
  if args.png:
    render.check_directory(args.png)
    examples = result['examples']
    result['png'] = {'path': args.png, **charts.confusion(
        result['matrix'], result['class_names'],
        f'Model {model.id} on Examples {examples["id"]} ({examples["split"]}):'
        f' accuracy {result["accuracy"]:.2%} of {result["examples_count"]:,}',
        'png', args.png)}
  return result


def _tuning(md: queries.Metadata, args) -> Any:
  from inspector import trials  # pylint: disable=g-import-not-at-top
  return trials.trials(md, md.run(args.run))


def _duplicates(md: queries.Metadata, args) -> Any:
  from inspector import duplicates  # pylint: disable=g-import-not-at-top
  run = md.run(args.run)
  result = duplicates.summary(md, run)
  if args.csv:
    result['csv'] = {'path': args.csv,
                     'pairs': duplicates.write_csv(md, run, args.csv)}
  return result


def _duplicates_text(out, result) -> None:
  from inspector import duplicates  # pylint: disable=g-import-not-at-top
  duplicates.text(out, result)


def _report(md: queries.Metadata, args) -> Any:
  facts = report.write(md, md.run(args.run), args.html)
  return {'html': {'path': args.html}, **report.without_pictures(facts)}


def _labels(md: queries.Metadata, args) -> Any:
  from inspector import labels  # pylint: disable=g-import-not-at-top
  result = labels.suspects(md, md.run(args.run), args.split)
  if args.csv:
    labels.write_csv(args.csv, result['rows'])
    result['csv'] = {'path': args.csv, 'rows': len(result['rows'])}
  return result


def _labels_text(out, result) -> None:
  from inspector import labels  # pylint: disable=g-import-not-at-top
  labels.text(out, result)


def _mistakes(md: queries.Metadata, args) -> Any:
  from inspector import labels  # pylint: disable=g-import-not-at-top
  result = labels.mistakes(md, md.run(args.run), args.pair)
  if args.csv:
    labels.write_csv(args.csv, result['rows'], labels.MISTAKES_CSV_COLUMNS)
    result['csv'] = {'path': args.csv, 'rows': len(result['rows'])}
  return result


def _mistakes_text(out, result) -> None:
  from inspector import labels  # pylint: disable=g-import-not-at-top
  labels.mistakes_text(out, result)


def _history(md: queries.Metadata, args) -> Any:
  from inspector import history  # pylint: disable=g-import-not-at-top
  if args.limit is not None and args.limit < 1:
    raise InspectError(f'--limit must be at least 1, got {args.limit}')
  result = history.history(md, md.run(args.run), args.limit)
  if args.csv:
    history.write_csv(args.csv, result['runs'])
    result['csv'] = {'path': args.csv, 'rows': len(result['runs'])}
  return result


def _history_text(out, result) -> None:
  from inspector import history  # pylint: disable=g-import-not-at-top
  history.text(out, result)


def _store_flags(parser: argparse.ArgumentParser, suppress: bool) -> None:
  """Store and output flags, on the main parser and every subcommand.

  Subcommands take them with SUPPRESSed defaults, so that a flag given
  before the subcommand is not reset by the subcommand's default.
  """
  def default(value):
    return argparse.SUPPRESS if suppress else value
  group = parser.add_argument_group('the ML Metadata store')
  group.add_argument(
      '--output-dir', default=default(None), metavar='DIR',
      help='Output directory of local runs; the store is DIR/metadata.db '
      '(default: the project\'s outputs/).')
  group.add_argument('--store', default=default(None), metavar='PATH',
                     help='Path of the SQLite store (overrides --output-dir).')
  store_lib.add_mysql_flags(group, default)
  parser.add_argument('--json', action='store_true', default=default(False),
                      help='Print JSON on stdout instead of text.')


def _run_argument(sub, help_text='default: %(default)s') -> None:
  """The optional RUN positional that most commands take."""
  sub.add_argument('run', nargs='?', default='latest', metavar='RUN',
                   help=help_text)


# The --help text, above the commands.
USAGE = """Inspect a pipeline's ML Metadata: runs, artifacts, lineage, data, models.

  python -m inspector runs                       # newest run first
  python -m inspector artifacts --type Examples --run latest
  python -m inspector lineage latest-model       # back to the input files
  python -m inspector stats latest --html stats.html
  python -m inspector anomalies -2               # the run before the latest
  python -m inspector metrics                    # the newest evaluated model
  python -m inspector samples 1 --png samples.png
  python -m inspector confusion latest-model --png confusion.png
  python -m inspector tuning latest              # --tune's trials, the winner
  python -m inspector duplicates --csv pairs.csv  # copies DataChecks found
  python -m inspector report latest --html report.html   # the run on one page
  python -m inspector labels --csv suspects.csv  # doubtful labels to review
  python -m inspector mistakes --csv wrong.csv   # eval images the model gets wrong
  python -m inspector history --csv runs.csv     # every run, one line each

The store is OUT/metadata.db of --output-dir (default: the project's
outputs/), or --store PATH, or MySQL with --mysql-host. It is opened
read-only. RUN is a run id (a pipeline_run context name, shown by `runs`), a
unique prefix of one, `latest`, or -N (-1 newest, -2 the one before). Every
subcommand takes --json: the same facts as JSON on stdout, nothing else.
Problems (no store, unknown run or id, empty store) are one line on stderr
and exit status 1.
"""

def _csv_argument(sub, help_text: str) -> None:
  """The --csv FILE option."""
  sub.add_argument('--csv', default=None, metavar='FILE', help=help_text)


def make_parser() -> argparse.ArgumentParser:
  """The inspector's command line: the store's flags, then a command."""
  parser = argparse.ArgumentParser(
      prog='python -m inspector', description=USAGE,
      formatter_class=argparse.RawDescriptionHelpFormatter)
  _store_flags(parser, suppress=False)
  commands = parser.add_subparsers(dest='command', required=True,
                                   metavar='COMMAND')

  def command(name, handler, help_text, text=None):
    sub = commands.add_parser(name, help=help_text, description=help_text)
    _store_flags(sub, suppress=True)
    sub.set_defaults(handler=handler, text=text or getattr(render, name, None))
    return sub

  sub = command('runs', _runs, 'Pipeline runs, newest first, with state, '
                'times and per component state, duration and caching.')
  sub.add_argument('--limit', type=int, default=None,
                   help='Only the newest N runs.')

  sub = command('artifacts', _artifacts, 'Artifacts with id, type, producer, '
                'URI, state and key properties.')
  sub.add_argument('--type', default=None, metavar='TYPE',
                   help='Only this artifact type, e.g. Examples, Model.')
  sub.add_argument('--run', default=None, metavar='RUN',
                   help='Only what this run wrote or reused from the cache.')

  sub = command('lineage', _lineage, 'The chain from an artifact back to '
                'the raw input files, as a tree.')
  sub.add_argument(
      'artifact', metavar='ID|latest-model',
      help='An artifact id, or latest-model: the newest PushedModel that was '
      'pushed, or, if none was, the newest Model.')
  sub.add_argument(
      '--all-files', action='store_true',
      help='List every input file of each split, with its size and time '
      '(by default the first %d, and how many there are).'
      % lineage_lib.NAMED_FILES)

  for name, handler, what in (
      ('stats', _split_view('statistics_summary', 'statistics_html'),
       'StatisticsGen\'s statistics of a run\'s examples: '
       'per split records and per feature type, missing, range.'),
      ('anomalies', _split_view('anomalies_summary', 'anomalies_html'),
       'The anomalies ExampleValidator found in a '
       'run\'s examples, per split.')):
    sub = command(name, handler, what)
    sub.add_argument('run', metavar='RUN')
    sub.add_argument('--split', default=None, help='Only this split.')
    sub.add_argument('--html', default=None, metavar='FILE',
                     help='Also write TFDV\'s own visualisation to FILE.')

  sub = command('metrics', _metrics, 'The Evaluator\'s metrics, validation '
                'and blessing for a model, against the baseline if it had one.')
  sub.add_argument(
      'model', nargs='?', default=None, metavar='MODEL',
      help='A Model id (or its PushedModel\'s id, or latest-model); default: '
      'the newest evaluated model.')

  sub = command('samples', _samples, 'A PNG grid of example images per class, '
                'with their label names.')
  sub.add_argument('examples', metavar='EXAMPLES_ID')
  sub.add_argument('--png', required=True, metavar='FILE')
  sub.add_argument('--split', default=report.SAMPLES_SPLIT)
  sub.add_argument('--per-class', type=int, default=report.SAMPLES_PER_CLASS,
                   metavar='N', help='Images per class (default: %(default)s).')

  sub = command('confusion', _confusion, 'The confusion matrix of a model, as '
                'its newest evaluation (TFMA, in the Evaluator) counted it.')
  sub.add_argument(
      'model', nargs='?', default=queries.LATEST_MODEL, metavar='MODEL',
      help='A Model id (or its PushedModel\'s id); default: latest-model.')
  sub.add_argument('--png', default=None, metavar='FILE',
                   help='Also draw the matrix to FILE.')
  sub.add_argument('--split', default=None,
                   help='default: the split the Evaluator evaluated')

  _run_argument(command(
      'tuning', _tuning, 'The Tuner\'s trials of a run tuned with --tune: '
      'each trial\'s hyperparameters and score, and the winner the Trainer '
      'trained with.'))

  sub = command('duplicates', _duplicates, 'The copies DataChecks found '
                'within and across a run\'s splits, and the image issues; '
                'all pairs as CSV with --csv.', text=_duplicates_text)
  _run_argument(sub)
  _csv_argument(sub, 'Write every pair to FILE as CSV.')

  sub = command('report', _report, 'One self-contained HTML page of a run: '
                'the DAG, the data, the training, the evaluation and push, '
                'the lineage.')
  _run_argument(sub)
  sub.add_argument('--html', required=True, metavar='FILE',
                   help='Write the page to FILE (replaced atomically).')

  sub = command('labels', _labels, 'LabelCheck\'s suspects: per split, the '
                'records whose given class a model that never trained on '
                'them doubts, most doubtful first.', text=_labels_text)
  _run_argument(sub)
  sub.add_argument('--split', default=None, help='Only this split.')
  _csv_argument(sub, 'Write every suspect to FILE, for review: split, '
                'rank, source file, given and suggested class, score.')

  sub = command('mistakes', _mistakes, 'The eval records the model gets '
                'wrong, as LabelCheck listed them: most confident first, '
                'counted per (true, predicted) class, each marked when '
                'LabelCheck also doubts its label.', text=_mistakes_text)
  _run_argument(sub)
  sub.add_argument('--pair', default=None, metavar='TRUE,PREDICTED',
                   help='Only the mistakes of this true and predicted '
                   'class, by name or label, e.g. 3,5.')
  _csv_argument(sub, 'Write every mistake listed to FILE: split, rank, '
                'source file, true and predicted class, both probabilities, '
                'whether LabelCheck doubts the label, the record.')

  sub = command('history', _history, 'The runs of a pipeline, newest first, '
                'one line each: spans, records per split, the chosen and the '
                'served model\'s accuracy, blessed, pushed, warm or cold '
                'start, the Trainer\'s time, the label drift from the run '
                'before.', text=_history_text)
  _run_argument(sub, 'The newest run to list, with those before it, of its '
                'pipeline (default: %(default)s).')
  sub.add_argument('--limit', type=int, default=None, metavar='N',
                   help='Only the newest N runs.')
  _csv_argument(sub, 'Write the runs to FILE as CSV, one row each.')
  return parser


def open_metadata(args) -> queries.Metadata:
  mysql = store_lib.mysql_options(args)
  if mysql:
    return queries.Metadata(
        store_lib.open_store(mysql=mysql),
        f'MySQL {mysql.host}:{mysql.port}/{mysql.database}')
  path = store_lib.sqlite_path(args.store, args.output_dir)
  return queries.Metadata(store_lib.open_store(path), path)


def main(argv: Optional[Sequence[str]] = None) -> int:
  args = make_parser().parse_args(argv)
  try:
    # Libraries that print (TFMA, Beam) must not spoil --json on stdout.
    with contextlib.redirect_stdout(sys.stderr):
      result = args.handler(open_metadata(args), args)
  except InspectError as e:
    print(f'error: {e}', file=sys.stderr)
    return 1
  if args.json:
    print(json.dumps(result, indent=2))
  else:
    args.text(render.console(), result)
  return 0


if __name__ == '__main__':
  sys.exit(main())
