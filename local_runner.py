"""Runs the whole pipeline on this machine: LocalDagRunner + ML Metadata.

  python local_runner.py                       # MNIST, downloaded if missing
  python local_runner.py --data-dir DIR --input-format images
  python local_runner.py --beam-args="--direct_num_workers=4"
  MLMD_MYSQL_PASSWORD=... python local_runner.py --mysql-host db.example.com

Everything a run writes goes under --output-dir: the artifacts in
OUT/pipeline, ML Metadata in OUT/metadata.db (or in MySQL with --mysql-host),
pushed models in OUT/serving_model, the full log in OUT/logs, and the run's
report (one HTML page) in OUT/report.html.
"""

# First: OpenBLAS reads its kernels when numpy loads (see there).
from pipeline import openblas_kernels  # pylint: disable=unused-import,g-bad-import-order
import argparse
import dataclasses
import datetime
import logging
import os
import shlex
import sys
from typing import Optional, Sequence

from absl import logging as absl_logging
from ml_metadata import metadata_store

from metadata import local_store
from metadata import store as inspect_store
from pipeline import constants
from pipeline import knobs as knobs_lib
from pipeline import startup
from runs import flags
from runs import interrupted_runs
from runs import run_report
from runs import schema_history

# Heavy imports wait for the function that needs them (pipeline/startup.py).
# pylint: disable=g-import-not-at-top


def make_parser() -> argparse.ArgumentParser:
  """The command line: the DAG's flags and this runner's own."""
  parser = argparse.ArgumentParser(
      description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  flags.add_flags(
      parser, data_dir_default=constants.MNIST_DIR, data_dir_help=(
          'Dataset directory (input_base of ExampleGen). idx: train-* and '
          't10k-* IDX files, gzipped or not. images: train/<class>/<image> and '
          'eval/<class>/<image>, in any format Pillow reads. Default: %(default)s, where MNIST '
          'is downloaded (checksums verified) when missing.'))

  run = parser.add_argument_group('run')
  run.add_argument(
      '--output-dir', default=constants.OUTPUT_DIR,
      help='Where artifacts (OUT/pipeline), ML Metadata (OUT/metadata.db), '
      'pushed models (OUT/serving_model) and logs (OUT/logs) go '
      '(default: %(default)s).')
  run.add_argument('--pipeline-name', default=constants.PIPELINE_NAME,
                   help='Pipeline name in ML Metadata (default: %(default)s).')
  run.add_argument(
      '--beam-args', default='',
      help='Extra Beam pipeline args for every Beam-based component, as one '
      'string; they override the defaults (%s). E.g. "--runner=FlinkRunner '
      '--flink_master=host:8081 --environment_type=LOOPBACK".' %
      ' '.join(constants.BEAM_PIPELINE_ARGS))
  run.add_argument(
      '--to-node', default=None, metavar='COMPONENT',
      help='Run the DAG only up to this component (and what it needs), e.g. '
      'ValidationGate to check new data without training.')
  run.add_argument(
      '--freeze-schema', action='store_true',
      help='Check the data against the schema of the last run whose data '
      'passed the ValidationGate (in this --output-dir), instead of '
      'inferring one from the new data. The first run infers it. For data '
      'that arrives in spans: a new span unlike the earlier ones stops the '
      'run.')
  run.add_argument('--no-cache', action='store_true',
                   help='Run every component even if its inputs are unchanged.')
  run.add_argument('--verbose', action='store_true',
                   help='Also print the full TFX/Beam log on stderr.')
  flags.add_runner_flags(run, knobs_lib.DiskConfig)

  mlmd = parser.add_argument_group(
      'ML Metadata in MySQL (default: SQLite in OUT/metadata.db)',
      'A store a team shares (the inspect tool takes the same flags). The '
      'artifacts stay under --output-dir, which then belongs to that store.')
  inspect_store.add_mysql_flags(mlmd)
  return parser


def _check_data_dir(args, data: knobs_lib.DataConfig) -> None:
  if args.data_dir == constants.MNIST_DIR and data.input_format == 'idx':
    from data import mnist
    if mnist.missing_files(args.data_dir):
      print(f'MNIST is missing from {args.data_dir}; downloading it.')
      try:
        mnist.download(args.data_dir)
      except mnist.DownloadError as e:
        raise SystemExit(f'error: {e}\nWith MNIST already on disk, pass '
                         '--data-dir DIR.') from e
  if '://' not in args.data_dir:
    if not os.path.isdir(args.data_dir):
      raise SystemExit(f'error: --data-dir {args.data_dir}: no such directory')
    if not os.access(args.data_dir, os.R_OK | os.X_OK):
      raise SystemExit(f'error: --data-dir {args.data_dir}: permission denied '
                       '(the directory cannot be read)')


def _check_backbone_weights(model) -> None:
  """The backbone's weights fetched (into Keras' cache) or read now, so a
  run without network or with a wrong file stops before ExampleGen, not in
  the Trainer; the Trainer still fetches them itself where it runs alone
  (Kubeflow)."""
  if not model.backbone:
    return
  from modules.training import model as model_lib
  try:
    model_lib.check_weights(model)
  except model_lib.WeightsError as e:
    raise SystemExit(f'error: {e}') from e


def _setup_logging(output_dir: str, verbose: bool) -> str:
  log_dir = os.path.join(output_dir, 'logs')
  os.makedirs(log_dir, exist_ok=True)
  path = os.path.join(
      log_dir, datetime.datetime.now().strftime('run-%Y%m%d-%H%M%S.log'))
  root = logging.getLogger()
  root.setLevel(logging.INFO)
  absl_logging.set_verbosity(absl_logging.INFO)
  if not verbose:
    # Importing TFX leaves a stderr handler on the root logger (a
    # logging.basicConfig() call): without --verbose the log goes to the
    # file only, and the console shows progress and errors.
    for handler in list(root.handlers):
      root.removeHandler(handler)
    # TensorFlow's logger prints through a handler of its own.
    tf_logger = logging.getLogger('tensorflow')
    for handler in list(tf_logger.handlers):
      tf_logger.removeHandler(handler)
    tf_logger.propagate = True
  file_handler = logging.FileHandler(path)
  file_handler.setFormatter(
      logging.Formatter('%(asctime)s %(levelname)s %(name)s: %(message)s'))
  root.addHandler(file_handler)
  return path


def _root_cause(error: BaseException) -> str:
  """The message a user needs from an error, even when Beam wrapped it."""
  from components.image_example_gen.errors import InputDataError
  from components.validation_gate import DataValidationError
  ours = (InputDataError.__name__, DataValidationError.__name__)
  seen = error
  while seen is not None:
    if isinstance(seen, (InputDataError, DataValidationError)):
      return str(seen)
    seen = seen.__cause__ or seen.__context__
  # Beam re-raises worker errors as text: find our error's line in it.
  lines = str(error).splitlines()
  for i, line in enumerate(lines):
    for name in ours:
      if line.lstrip().startswith(name + ':') or f'.{name}: ' in line:
        return line.split(name + ':', 1)[1].strip()
  return f'{type(error).__name__}: {lines[0] if lines else error}'


def _store(args) -> local_store.LocalStore:
  return local_store.for_run(os.path.abspath(args.output_dir),
                             inspect_store.mysql_options(args))


def _schema_path(args, schema: Optional[str],
                 connection_config) -> Optional[str]:
  """--schema, or with --freeze-schema the last validated run's schema."""
  if schema:
    return os.path.abspath(schema)
  if not args.freeze_schema:
    return None
  path = schema_history.last_validated_schema(
      metadata_store.MetadataStore(connection_config), args.pipeline_name)
  print(f'--freeze-schema: checking the data against {path}, the schema of '
        'the last run whose data passed validation' if path else
        '--freeze-schema: no run has passed validation yet; inferring the '
        'schema from this data')
  return path


def _keep_runs(args, dag) -> bool:
  """--keep-runs: the large artifacts of older runs deleted, after a run
  whether it succeeded or not (runs/keep_runs_local.py). False: nothing was
  deleted, since what is served could not be read."""
  keep_runs = flags.runner_config(args, knobs_lib.DiskConfig).keep_runs
  if keep_runs is None:
    return True
  from components import push_once
  from runs import keep_runs_local as keep_runs_lib
  output_dir = os.path.abspath(args.output_dir)
  try:
    collected = keep_runs_lib.collect(
        dag.metadata_connection_config, args.pipeline_name, keep_runs,
        os.path.join(output_dir, constants.SERVING_MODEL_DIR_NAME),
        dag.pipeline_info.pipeline_root)
  except push_once.ServingDirectoryError as e:
    print(f'error: --keep-runs {keep_runs}: nothing deleted: {e}',
          file=sys.stderr)
    return False
  print(collected.describe(keep_runs))
  return True


def build_pipeline(args: argparse.Namespace):
  """The DAG of `args`, with this machine's paths and its ML Metadata."""
  from pipeline import pipeline
  from pipeline import scale
  knobs = flags.knobs_from_args(args)
  output_dir = os.path.abspath(args.output_dir)
  connection_config = _store(args).connection_config
  local = '://' not in args.data_dir
  # The Beam execution of ExampleGen and of the components that analyse the
  # records, and StatisticsGen's sampling, follow the input's size; not known
  # for object stores (then: ExampleGen in one process, the others with the
  # pipeline's Beam args, and --beam-args).
  size = (scale.measure(args.data_dir, knobs.data.input_format,
                        knobs.data.span_dir_pattern) if local else None)
  beam_args = shlex.split(args.beam_args)
  return pipeline.create_pipeline(
      pipeline_name=args.pipeline_name,
      pipeline_root=os.path.join(output_dir, constants.PIPELINE_ROOT_NAME),
      data_root=os.path.abspath(args.data_dir) if local else args.data_dir,
      serving_model_dir=os.path.join(output_dir,
                                     constants.SERVING_MODEL_DIR_NAME),
      data=dataclasses.replace(knobs.data, schema=_schema_path(
          args, knobs.data.schema, connection_config)),
      training=knobs.training,
      evaluation=knobs.evaluation,
      tuning=knobs.tuning,
      infrastructure=knobs_lib.InfrastructureConfig(
          beam_pipeline_args=(list(constants.BEAM_PIPELINE_ARGS) +
                              list(constants.LOCAL_BEAM_PIPELINE_ARGS) +
                              beam_args),
          # --beam-args last, so that they override these components' own too.
          example_gen_beam_pipeline_args=(scale.example_gen_beam_args(size) +
                                          beam_args),
          analysis_beam_pipeline_args=(scale.analysis_beam_args(size) +
                                       beam_args),
          statistics_sample_rate=scale.statistics_sample_rate(size),
          metadata_connection_config=connection_config,
          enable_cache=not args.no_cache))


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Runs the pipeline as `argv` says.

  Returns:
    The exit status: 0 when the run succeeded and older runs were kept as
    --keep-runs says, 1 otherwise.
  """
  startup.quiet_tensorflow()
  args = make_parser().parse_args(argv)
  knobs = flags.knobs_from_args(args)  # Exits on contradicting flags.
  data = knobs.data
  _check_data_dir(args, data)
  _check_backbone_weights(knobs.training.model)

  output_dir = os.path.abspath(args.output_dir)
  # The store and the output directory are checked before TFX (and with it
  # TensorFlow) is imported: a wrong password or a busy directory is said in
  # a fraction of a second, not after seconds of imports.
  try:  # Held until this process ends, however it ends.
    store = _store(args)  # InspectError: a defaults file that cannot be read.
    lock = interrupted_runs.lock_output_dir(output_dir)  # pylint: disable=unused-variable
    local_store.check_output_dir(output_dir, store)
    if store.mysql:  # Unreachable, refused, ...: said before anything runs.
      inspect_store.open_store(mysql=store.mysql)
    local_store.bind_output_dir(output_dir, store)
  except (interrupted_runs.OutputDirBusyError, local_store.StoreMismatchError,
          inspect_store.InspectError) as e:
    print(f'error: {e}', file=sys.stderr)
    return 1
  with startup.without_gc():
    from tfx.orchestration.local.local_dag_runner import LocalDagRunner
    from runs import run_summary
    startup.speed_up_beam()  # Beam runs in this process too.
  log_path = _setup_logging(output_dir, args.verbose)
  dag = build_pipeline(args)
  connection_config = dag.metadata_connection_config
  for closed in interrupted_runs.close_interrupted(
      connection_config, dag.pipeline_info.pipeline_root, args.pipeline_name,
      shared_store=store.shared):
    print(f'{closed.node_id} (execution {closed.execution_id}) was left '
          'running by an interrupted run: marked CANCELED'
          + ('; its partial outputs removed' if closed.removed else ''))

  progress = run_summary.ComponentProgress(connection_config, args.pipeline_name)
  logging.getLogger('absl').addHandler(progress)
  print(f'Running pipeline {args.pipeline_name!r} on {args.data_dir} '
        f'({data.input_format}); log: {log_path}')
  run_options = None
  if args.to_node:
    from tfx.orchestration import pipeline as pipeline_lib
    node_ids = [c.id for c in dag.components]
    if args.to_node not in node_ids:
      raise SystemExit(f'error: --to-node {args.to_node}: not a component of '
                       f'the pipeline ({", ".join(node_ids)})')
    run_options = pipeline_lib.RunOptions(to_nodes=[args.to_node])
  try:
    LocalDagRunner().run(dag, run_options=run_options)
  except Exception as e:  # pylint: disable=broad-except
    node = progress.mark_failed()
    logging.exception('Pipeline run failed')
    where = f' in {node.node_id}' if node else ''
    print(f'\nerror{where}: {_root_cause(e)}\nFull log: {log_path}',
          file=sys.stderr)
    if node and node.node_id == 'ValidationGate':  # The data is reported on.
      print(run_report.write_report(store, output_dir, args.pipeline_name),
            file=sys.stderr)
    _keep_runs(args, dag)
    return 1
  finally:
    logging.getLogger('absl').removeHandler(progress)

  run_summary.print_summary(connection_config, args.pipeline_name,
                           progress.nodes, store.description, log_path)
  print(run_report.write_report(store, output_dir, args.pipeline_name))
  return 0 if _keep_runs(args, dag) else 1


if __name__ == '__main__':
  startup.exit_without_gc(main())
