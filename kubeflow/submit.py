"""Uploads, runs and schedules a compiled pipeline (kubeflow_runner.py output).

USAGE below is the --help text. Why and how: docs/kubeflow.md.
"""

import argparse
import json
import os
import re
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence

import yaml

# The --help text, above the subcommands.
USAGE = """Uploads, runs and schedules a compiled pipeline (kubeflow_runner.py output).

Kubeflow Pipelines (kfp.Client):
  python kubeflow/submit.py kfp upload   --host URL --spec pipeline.yaml [--version V]
  python kubeflow/submit.py kfp run      --host URL --spec pipeline.yaml \\
      [--experiment E] [--param data_root=gs://BUCKET/data/2024-06]
  python kubeflow/submit.py kfp schedule --host URL --spec pipeline.yaml \\
      --cron "0 0 3 * * *" [--max-concurrency 1]
Vertex AI Pipelines (google-cloud-aiplatform):
  python kubeflow/submit.py vertex run      --project P --region R --spec pipeline.json
  python kubeflow/submit.py vertex schedule --project P --region R \\
      --spec pipeline.json --cron "0 3 * * *"

--dry-run prints, as JSON, exactly what would be sent (and connects to
nothing). Parameters are checked against the ones the spec declares and
converted to their declared types. Cron: Kubeflow takes 6 fields (seconds
first: "0 0 3 * * *" is 03:00 daily) or @daily-style descriptors; Vertex AI
takes 5 (unix cron: "0 3 * * *"), optionally after "TZ=Area/City ".
"""

# Allowed values of each cron field, and the names some fields accept.
_SECONDS, _MINUTES, _HOURS = (0, 59), (0, 59), (0, 23)
_DAY_OF_MONTH, _MONTH, _DAY_OF_WEEK = (1, 31), (1, 12), (0, 7)
_MONTH_NAMES = ('JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC').split()
_DAY_NAMES = 'SUN MON TUE WED THU FRI SAT'.split()
KFP_CRON_FIELDS = (_SECONDS, _MINUTES, _HOURS, _DAY_OF_MONTH, _MONTH,
                   _DAY_OF_WEEK)
VERTEX_CRON_FIELDS = KFP_CRON_FIELDS[1:]
KFP_CRON_DESCRIPTORS = ('@yearly', '@annually', '@monthly', '@weekly',
                        '@daily', '@midnight', '@hourly')
_CRON_PART = re.compile(r'^(\*|\?|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?$')


class UsageError(ValueError):
  """Bad arguments; the message says which and why."""


def _cron_value(token: str, bounds, field: int) -> int:
  names = _MONTH_NAMES if bounds is _MONTH else (
      _DAY_NAMES if bounds is _DAY_OF_WEEK else ())
  if token.upper() in names:
    return names.index(token.upper()) + (1 if bounds is _MONTH else 0)
  if not token.isdigit():
    raise UsageError(f'field {field}: {token!r} is not a number')
  value = int(token)
  if not bounds[0] <= value <= bounds[1]:
    raise UsageError(f'field {field}: {value} is outside {bounds[0]}-'
                     f'{bounds[1]}')
  return value


def check_cron(expression: str, fields, descriptors=()) -> str:
  """`expression` if it is a cron of len(fields) fields, else UsageError.

  Args:
    expression: --cron's text.
    fields: the (lowest, highest) value of each field, in order:
      KFP_CRON_FIELDS or VERTEX_CRON_FIELDS (which may start with TZ=).
    descriptors: the '@daily'-like words taken as they are.

  Returns:
    `expression`, stripped.

  Raises:
    UsageError: the wrong number of fields, or a field that cannot be read
      or is out of its bounds; the message gives an example.
  """
  text = expression.strip()
  if text in descriptors:
    return text
  schedule = re.sub(r'^(CRON_)?TZ=\S+\s+', '', text) if (
      fields is VERTEX_CRON_FIELDS) else text
  parts = schedule.split()
  try:
    if len(parts) != len(fields):
      raise UsageError(f'{len(parts)} fields, expected {len(fields)}')
    for number, (part, bounds) in enumerate(zip(parts, fields), 1):
      for item in part.split(','):
        match = _CRON_PART.match(item)
        if not match:
          raise UsageError(f'field {number}: cannot read {item!r}')
        if match.group(3) and int(match.group(3)[1:]) == 0:
          raise UsageError(f'field {number}: step 0 in {item!r}')
        if match.group(1) not in ('*', '?'):
          for token in match.group(1).split('-'):
            _cron_value(token, bounds, number)
  except UsageError as e:
    example = ('"0 0 3 * * *" (seconds first)' if len(fields) == 6
               else '"0 3 * * *"')
    raise UsageError(f'--cron {expression!r}: {e}; e.g. {example} for '
                     '03:00 daily') from None
  return text


def load_spec(path: str) -> Dict[str, Any]:
  """The PipelineSpec dict of a .yaml (PipelineSpec) or .json (PipelineJob).

  Args:
    path: --spec, the compiled pipeline's file.

  Raises:
    UsageError: no such file, or not a compiled pipeline.
  """
  if not os.path.isfile(path):
    raise UsageError(f'--spec {path}: no such file (compile one with '
                     'kubeflow/kubeflow_runner.py)')
  try:
    with open(path) as f:
      # A .yaml may carry a PlatformSpec as a second document.
      doc = json.load(f) if path.endswith('.json') else next(
          yaml.safe_load_all(f))
    spec = doc.get('pipelineSpec', doc)
    from google.protobuf import json_format  # pylint: disable=g-import-not-at-top
    from kfp.pipeline_spec import pipeline_spec_pb2  # pylint: disable=g-import-not-at-top
    json_format.ParseDict(spec, pipeline_spec_pb2.PipelineSpec())
  except Exception as e:  # pylint: disable=broad-except
    raise UsageError(f'--spec {path}: not a compiled pipeline: '
                     f'{type(e).__name__}: {e}') from e
  return spec


def _typed(name: str, value: str, parameter_type: str) -> Any:
  try:
    if parameter_type == 'NUMBER_INTEGER':
      return int(value)
    if parameter_type == 'NUMBER_DOUBLE':
      return float(value)
    if parameter_type == 'BOOLEAN':
      if value.lower() not in ('true', 'false'):
        raise ValueError('expected true or false')
      return value.lower() == 'true'
    if parameter_type in ('LIST', 'STRUCT'):
      return json.loads(value)
  except ValueError as e:
    raise UsageError(f'--param {name}={value}: not a {parameter_type}: {e}'
                     ) from None
  return value


def pipeline_parameters(spec: Dict[str, Any], params: List[str]
                        ) -> Dict[str, Any]:
  """--param NAME=VALUE flags, checked and typed against the spec.

  Args:
    spec: the PipelineSpec, as a dict, declaring the parameters.
    params: the --param flags' values, each NAME=VALUE.

  Returns:
    Each parameter's value by name, of its declared type.

  Raises:
    UsageError: no '=', a parameter the pipeline does not declare, or a
      value not of its type.
  """
  declared = spec.get('root', {}).get('inputDefinitions', {}).get(
      'parameters', {})
  values = {}
  for param in params:
    name, sep, value = param.partition('=')
    if not sep or not name:
      raise UsageError(f'--param {param}: expected NAME=VALUE')
    if name not in declared:
      raise UsageError(f'--param {name}: the pipeline has no such parameter '
                       f'(it takes: {", ".join(sorted(declared)) or "none"})')
    values[name] = _typed(name, value, declared[name].get('parameterType'))
  return values


def _common(args, spec) -> Dict[str, Any]:
  return dict(target=args.target, action=args.action,
              pipeline_name=spec['pipelineInfo']['name'],
              spec=os.path.abspath(args.spec))


def kfp_request(args) -> Dict[str, Any]:
  spec = load_spec(args.spec)
  request = _common(args, spec)
  # kfp.Client reads PipelineSpec YAML; a PipelineJob JSON is sent as its
  # pipelineSpec, written to YAML.
  request.update(host=args.host, namespace=args.namespace,
                 package_format='PipelineSpec YAML' + (
                     ' (pipelineSpec of the .json)'
                     if args.spec.endswith('.json') else ''))
  if args.action == 'upload':
    request.update(pipeline_name=args.pipeline_name or request['pipeline_name'],
                   version=args.version, description=args.description)
    return request
  request.update(
      experiment=args.experiment,
      parameters=pipeline_parameters(spec, args.param),
      pipeline_root=args.pipeline_root,
      enable_caching=False if args.no_cache else None)
  if args.action == 'run':
    request.update(run_name=args.run_name)
  else:
    request.update(
        job_name=args.job_name or f'{request["pipeline_name"]}-schedule',
        cron=check_cron(args.cron, KFP_CRON_FIELDS, KFP_CRON_DESCRIPTORS),
        max_concurrency=args.max_concurrency, no_catchup=not args.catchup)
  return request


def vertex_request(args) -> Dict[str, Any]:
  spec = load_spec(args.spec)
  request = _common(args, spec)
  pipeline_root = args.pipeline_root
  if pipeline_root is None and args.spec.endswith('.json'):
    with open(args.spec) as f:
      pipeline_root = json.load(f).get('runtimeConfig', {}).get(
          'gcsOutputDirectory')
  if not pipeline_root:
    raise UsageError('--pipeline-root is required: the spec names none')
  request.update(
      project=args.project, region=args.region,
      display_name=args.display_name or request['pipeline_name'],
      pipeline_root=pipeline_root,
      parameters=pipeline_parameters(spec, args.param),
      enable_caching=False if args.no_cache else None,
      service_account=args.service_account)
  if args.action == 'schedule':
    request.update(
        schedule_name=(args.schedule_name or
                       f'{request["pipeline_name"]}-schedule'),
        cron=check_cron(args.cron, VERTEX_CRON_FIELDS),
        max_concurrent_run_count=args.max_concurrency)
  return request


def _kfp_package(spec_path: str, tmp: str) -> str:
  """A package kfp.Client reads: the file itself if YAML, else its spec."""
  if not spec_path.endswith('.json'):
    return spec_path
  path = os.path.join(tmp, 'pipeline.yaml')
  with open(path, 'w') as f:
    yaml.safe_dump(load_spec(spec_path), f, sort_keys=True)
  return path


def send_kfp(request: Dict[str, Any]) -> None:
  import kfp  # pylint: disable=g-import-not-at-top
  client = kfp.Client(host=request['host'], namespace=request['namespace'])
  with tempfile.TemporaryDirectory() as tmp:
    package = _kfp_package(request['spec'], tmp)
    if request['action'] == 'upload':
      pipeline_id = client.get_pipeline_id(request['pipeline_name'])
      if pipeline_id is None:
        client.upload_pipeline(package, request['pipeline_name'],
                               description=request['description'],
                               namespace=request['namespace'])
      elif not request['version']:
        raise UsageError(f'pipeline {request["pipeline_name"]!r} exists: pass '
                         '--version NAME to upload a new version of it')
      else:
        client.upload_pipeline_version(
            package, request['version'], pipeline_id=pipeline_id,
            description=request['description'])
    elif request['action'] == 'run':
      client.create_run_from_pipeline_package(
          package, arguments=request['parameters'],
          run_name=request['run_name'],
          experiment_name=request['experiment'],
          namespace=request['namespace'],
          pipeline_root=request['pipeline_root'],
          enable_caching=request['enable_caching'])
    else:
      experiment = client.create_experiment(request['experiment'],
                                            namespace=request['namespace'])
      recurring = client.create_recurring_run(
          experiment_id=experiment.experiment_id,
          job_name=request['job_name'],
          cron_expression=request['cron'],
          max_concurrency=request['max_concurrency'],
          no_catchup=request['no_catchup'],
          params=request['parameters'],
          pipeline_package_path=package,
          pipeline_root=request['pipeline_root'],
          enable_caching=request['enable_caching'])
      print(f'Recurring run {recurring.recurring_run_id} created.')


def send_vertex(request: Dict[str, Any]) -> None:
  try:
    from google.cloud import aiplatform  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise UsageError('vertex needs google-cloud-aiplatform (it is in '
                     f'requirements.lock): {e}') from e
  job = aiplatform.PipelineJob(
      display_name=request['display_name'], template_path=request['spec'],
      pipeline_root=request['pipeline_root'],
      parameter_values=request['parameters'],
      enable_caching=request['enable_caching'],
      project=request['project'], location=request['region'])
  if request['action'] == 'run':
    job.submit(service_account=request['service_account'])
  else:
    schedule = job.create_schedule(
        cron=request['cron'], display_name=request['schedule_name'],
        max_concurrent_run_count=request['max_concurrent_run_count'],
        service_account=request['service_account'])
    print(f'Schedule {schedule.resource_name} created.')


def make_parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      description=USAGE, formatter_class=argparse.RawDescriptionHelpFormatter)
  common = argparse.ArgumentParser(add_help=False)
  common.add_argument('--spec', required=True,
                      help='The compiled pipeline (.yaml or .json).')
  common.add_argument('--dry-run', action='store_true',
                      help='Print what would be sent, as JSON; connect to '
                      'nothing.')
  running = argparse.ArgumentParser(add_help=False)
  running.add_argument(
      '--param', action='append', default=[], metavar='NAME=VALUE',
      help='A pipeline parameter (repeatable), e.g. data_root=gs://B/data.')
  running.add_argument('--pipeline-root', default=None,
                       help='Override the pipeline root of the runs.')
  running.add_argument('--no-cache', action='store_true',
                       help='Run every component even if cached.')
  cron = argparse.ArgumentParser(add_help=False)
  cron.add_argument('--max-concurrency', type=int, default=1,
                    help='Runs of the schedule at once (default: 1).')

  targets = parser.add_subparsers(dest='target', required=True)
  kfp_parser = targets.add_parser('kfp', help='Kubeflow Pipelines.')
  kfp_common = argparse.ArgumentParser(add_help=False, parents=[common])
  kfp_common.add_argument('--host', required=True,
                          help='The KFP API endpoint, e.g. '
                          'http://localhost:8080 after `kubectl port-forward '
                          '-n kubeflow svc/ml-pipeline-ui 8080:80`.')
  kfp_common.add_argument('--namespace', default=None,
                          help='Kubeflow profile namespace (multi-user).')
  kfp_actions = kfp_parser.add_subparsers(dest='action', required=True)
  upload = kfp_actions.add_parser(
      'upload', parents=[kfp_common],
      help='Create the pipeline, or a new version of it.')
  upload.add_argument('--pipeline-name', default=None,
                      help='Default: the name in the spec.')
  upload.add_argument('--version', default=None,
                      help='Version name; needed once the pipeline exists.')
  upload.add_argument('--description', default=None)
  for action, extra in (('run', []), ('schedule', [cron])):
    sub = kfp_actions.add_parser(
        action, parents=[kfp_common, running] + extra,
        help='Start a run now.' if action == 'run'
        else 'Create a recurring run from a cron expression.')
    sub.add_argument('--experiment', default='Default',
                     help='Experiment (created if missing; default: '
                     '%(default)s).')
    if action == 'run':
      sub.add_argument('--run-name', default=None)
    else:
      sub.add_argument('--cron', required=True,
                       help='6 fields, seconds first, e.g. "0 0 3 * * *".')
      sub.add_argument('--job-name', default=None,
                       help='Default: PIPELINE-schedule.')
      sub.add_argument('--catchup', action='store_true',
                       help='Backfill the runs missed while paused.')

  vertex_parser = targets.add_parser('vertex', help='Vertex AI Pipelines.')
  vertex_common = argparse.ArgumentParser(add_help=False,
                                          parents=[common, running])
  vertex_common.add_argument('--project', required=True)
  vertex_common.add_argument('--region', required=True,
                             help='e.g. europe-west4.')
  vertex_common.add_argument('--display-name', default=None)
  vertex_common.add_argument('--service-account', default=None)
  vertex_actions = vertex_parser.add_subparsers(dest='action', required=True)
  vertex_actions.add_parser('run', parents=[vertex_common],
                            help='Submit a pipeline job.')
  schedule = vertex_actions.add_parser(
      'schedule', parents=[vertex_common, cron],
      help='Create a pipeline job schedule.')
  schedule.add_argument('--cron', required=True,
                        help='5 fields, e.g. "0 3 * * *" or '
                        '"TZ=Europe/Paris 0 3 * * *".')
  schedule.add_argument('--schedule-name', default=None)
  return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
  args = make_parser().parse_args(argv)
  try:
    request = (kfp_request if args.target == 'kfp' else vertex_request)(args)
    if args.dry_run:
      print(json.dumps(request, indent=2, sort_keys=True))
      return 0
    (send_kfp if args.target == 'kfp' else send_vertex)(request)
  except UsageError as e:
    print(f'error: {e}', file=sys.stderr)
    return 2
  return 0


if __name__ == '__main__':
  sys.exit(main())
