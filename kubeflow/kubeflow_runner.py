"""Compiles the pipeline for Kubeflow Pipelines or Vertex AI Pipelines.

USAGE below is the --help text: how to run it, and what differs from a
local run. Why and how: docs/kubeflow.md.
"""

import argparse
import dataclasses
import json
import os
import re
import shlex
import sys
from typing import Any, Dict, List, Optional, Sequence
from urllib import parse

# The project first on the path, as a script too (pipeline/startup.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The project's imports follow that line; heavy ones wait for the function
# that needs them (pipeline/startup.py).
# pylint: disable=g-import-not-at-top,wrong-import-position
from kubeflow import open_source_kfp
from kubeflow import vertex_training
from pipeline import constants
from pipeline import knobs as knobs_lib
from pipeline import startup
from runs import flags

# The --help text, above the flags.
USAGE = """Compiles the pipeline for Kubeflow Pipelines or Vertex AI Pipelines.

  python kubeflow/kubeflow_runner.py --output pipeline.yaml \\
      --image REGISTRY/image-pipeline:1 \\
      --pipeline-root s3://BUCKET/tfx --data-dir s3://BUCKET/data/mnist \\
      --s3-endpoint http://minio-service.kubeflow:9000
  python kubeflow/kubeflow_runner.py --target vertex --output pipeline.json \\
      --image europe-docker.pkg.dev/PROJECT/REPO/image-pipeline:1 \\
      --pipeline-root gs://BUCKET/tfx --data-dir gs://BUCKET/data/mnist

The DAG is the one local_runner.py runs, built by the same
pipeline.create_pipeline() from the same flags and defaults. What differs,
and only this:
  * paths: pipeline root, data and serving directory on object storage
    (gs://, or s3:// for S3 and MinIO), where every pod can reach them;
  * metadata: none configured, the cluster's ML Metadata is used;
  * Beam: --beam-args, e.g. Dataflow, Flink or Spark runner flags;
  * the Trainer may request GPUs (--gpu), an accelerator in the spec;
  * the data location is the runtime parameter `data_root` (default
    --data-dir), so a run or a schedule can point at new data;
  * --target kubeflow: the Evaluator's baseline is the served model
    (ServedModel; KFP runs no resolver), see pipeline/pipeline.py;
  * --keep-runs K (--target kubeflow): a KeepRuns step ends the DAG and
    deletes the large artifacts of older runs (pipeline/stages.py,
    keep_runs), where local_runner.py collects after the run;
  * the runner: TFX's KubeflowV2DagRunner writes a PipelineSpec, run by
    containers of --image (kubeflow/Dockerfile).

--target kubeflow (the default) is for open-source Kubeflow Pipelines 2.x,
whose backend differs from Vertex AI's in ways kubeflow/open_source_kfp.py
lists; it changes TFX's spec accordingly (the project's container
entrypoint, no lifecycle hook, ImageExampleGen and ServedModel never
cached) and writes a bare PipelineSpec (.yaml), the only form KFP's API
server takes. --target vertex writes TFX's spec as it is, .json as a
PipelineJob or .yaml.

A --schema file of the project is read from the image (it holds the
project); any other schema must be on object storage.

Output by extension: .yaml/.yml is a PipelineSpec (what Kubeflow Pipelines
uploads), .json a PipelineJob (PipelineSpec plus runtime config, what Vertex
AI takes; --target vertex only). kubeflow/submit.py uploads, runs and
schedules either.
"""

SPEC_EXTENSIONS = ('.json', '.yaml', '.yml')
TARGETS = ('kubeflow', 'vertex')


def make_parser() -> argparse.ArgumentParser:
  """The command line: the Kubeflow target's flags and the DAG's."""
  parser = argparse.ArgumentParser(
      description=USAGE, formatter_class=argparse.RawDescriptionHelpFormatter)
  kubeflow = parser.add_argument_group('Kubeflow')
  kubeflow.add_argument(
      '--target', choices=TARGETS, default='kubeflow',
      help='kubeflow: open-source Kubeflow Pipelines 2.x (default); vertex: '
      'Vertex AI Pipelines.')
  kubeflow.add_argument(
      '--output', required=True, metavar='SPEC_FILE',
      help='The compiled pipeline: .yaml/.yml (PipelineSpec) or, for '
      '--target vertex, .json (PipelineJob).')
  kubeflow.add_argument(
      '--image', required=True,
      help='Container image every component runs in, built from '
      'kubeflow/Dockerfile and pushed, e.g. gcr.io/PROJECT/image-pipeline:1.')
  kubeflow.add_argument(
      '--pipeline-root', required=True,
      help='Where the cluster writes artifacts, e.g. gs://BUCKET/tfx or '
      's3://BUCKET/tfx.')
  kubeflow.add_argument(
      '--serving-model-dir', default=None,
      help='Where Pusher copies blessed models (default: PIPELINE_ROOT/%s).'
      % constants.SERVING_MODEL_DIR_NAME)
  kubeflow.add_argument(
      '--pipeline-name', default=constants.KUBEFLOW_PIPELINE_NAME,
      help='Pipeline name, [a-z0-9-] only (default: %(default)s).')
  kubeflow.add_argument(
      '--beam-args', default='',
      help='Extra Beam pipeline args for every Beam-based component, as one '
      'string, after the defaults (%s), which they override. E.g. '
      '"--runner=DataflowRunner --project=P --region=R '
      '--temp_location=gs://BUCKET/tmp", "--runner=FlinkRunner '
      '--flink_master=HOST:8081 --environment_type=EXTERNAL '
      '--environment_config=localhost:50000" or "--runner=SparkRunner '
      '--spark_master_url=spark://HOST:7077".' %
      ' '.join(constants.BEAM_PIPELINE_ARGS))
  kubeflow.add_argument(
      '--gpu', type=int, default=0, metavar='N',
      help='GPUs the Trainer requests (default: none). The image needs the '
      'CUDA libraries: build it with --build-arg WITH_GPU=1.')
  kubeflow.add_argument(
      '--gpu-type', default='nvidia.com/gpu',
      help='Accelerator type for --gpu: the Kubernetes resource on Kubeflow '
      '(default: %(default)s), a machine accelerator type on Vertex AI, e.g. '
      'NVIDIA_TESLA_T4.')
  kubeflow.add_argument(
      '--vertex-project', default=None, metavar='PROJECT',
      help='--target vertex with --trainer-workers N: the Google Cloud '
      'project of the Trainer\'s Vertex AI custom job.')
  kubeflow.add_argument(
      '--vertex-region', default=None, metavar='REGION',
      help='--target vertex with --trainer-workers N: the region of that '
      'custom job, e.g. europe-west4.')
  kubeflow.add_argument(
      '--trainer-machine-type', default='n1-standard-8',
      help='--target vertex with --trainer-workers N: the machine of each '
      'replica (default: %(default)s); --gpu and --gpu-type give each its '
      'accelerators.')
  kubeflow.add_argument(
      '--s3-endpoint', default=None, metavar='URL',
      help='S3-compatible endpoint for s3:// paths, e.g. MinIO in the '
      'cluster: http://minio-service.kubeflow:9000. Credentials come from the '
      'pods\' AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (--target kubeflow: '
      'from a secret, see --s3-credentials-secret).')
  kubeflow.add_argument(
      '--s3-credentials-secret', default='mlpipeline-minio-artifact',
      metavar='NAME',
      help='--target kubeflow with s3:// locations: the Kubernetes secret in '
      'the run\'s namespace whose keys become every task\'s '
      'AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (default: %(default)s, '
      'the one Kubeflow Pipelines keeps for its MinIO).')
  kubeflow.add_argument(
      '--s3-credentials-keys', default='accesskey,secretkey',
      metavar='ACCESS_KEY,SECRET_KEY',
      help='The keys of that secret holding the access key and the secret '
      'key (default: %(default)s).')
  kubeflow.add_argument(
      '--s3-region', default='us-east-1',
      help='Region for --s3-endpoint (default: %(default)s; MinIO accepts '
      'any).')
  kubeflow.add_argument(
      '--no-cache', action='store_true',
      help='Compile with caching off: every run re-runs every component.')
  kubeflow.add_argument(
      '--allow-local-paths', action='store_true',
      help='Accept local paths for --pipeline-root, --data-dir and '
      '--serving-model-dir (tests; a cluster whose pods share a volume).')
  # --target kubeflow: a last step of the DAG (pipeline/stages.py, keep_runs).
  flags.add_runner_flags(kubeflow, knobs_lib.DiskConfig)
  flags.add_flags(
      parser, data_dir_default=None, data_dir_help=(
          'Required. Dataset location on object storage (default of the '
          'runtime parameter %s). idx: train-* and t10k-* IDX files; images: '
          'train/<class>/<image> and eval/<class>/<image>.' %
          constants.DATA_ROOT_PARAMETER))
  return parser


def _location(flag: str, value: str, allow_local: bool) -> str:
  """`value` if pods can reach it, else a clear error."""
  if value.startswith(constants.OBJECT_STORE_SCHEMES):
    return value.rstrip('/')
  if '://' in value or not allow_local:
    raise SystemExit(
        f'error: {flag} {value}: pods need object storage, a URI starting '
        f'with {" or ".join(constants.OBJECT_STORE_SCHEMES)} (or '
        '--allow-local-paths for a shared volume)')
  return os.path.abspath(value)


def _schema_location(schema: str) -> str:
  """A schema file as the containers see it."""
  if schema.startswith(constants.OBJECT_STORE_SCHEMES):
    return schema
  path = os.path.abspath(schema)
  relative = os.path.relpath(path, constants.PROJECT_DIR)
  if relative.startswith('..') or not os.path.isfile(path):
    raise SystemExit(
        f'error: --schema {schema}: not a file of this project, so not in the '
        'image; copy it to object storage and pass its URI')
  # The image holds the project at IMAGE_PROJECT_DIR (kubeflow/Dockerfile).
  return f'{constants.IMAGE_PROJECT_DIR}/{relative}'


def _s3_settings(endpoint: Optional[str], region: str):
  """(Beam args, container env) that point S3 clients at `endpoint`."""
  if not endpoint:
    return [], {}
  url = parse.urlparse(endpoint)
  if url.scheme not in ('http', 'https') or not url.netloc:
    raise SystemExit(f'error: --s3-endpoint {endpoint}: expected '
                     'http(s)://HOST:PORT')
  https = '1' if url.scheme == 'https' else '0'
  # Beam's S3 filesystem (boto3) takes pipeline options; TensorFlow's (from
  # tensorflow-io) reads the environment, and wants the scheme in
  # S3_ENDPOINT: given HOST:PORT alone it speaks https whatever S3_USE_HTTPS
  # says (seen against a plain-http server). Credentials are the pods'
  # AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, which both read.
  beam_args = [f'--s3_endpoint_url={endpoint}', f'--s3_region_name={region}']
  env = {'S3_ENDPOINT': endpoint, 'S3_USE_HTTPS': https,
         'S3_VERIFY_SSL': https, 'AWS_REGION': region}
  return beam_args, env


def check_args(args: argparse.Namespace) -> knobs_lib.Knobs:
  """The knobs of `args`, the schema as the containers see it; normalises
  locations in place. Exits with a message on bad flags.

  Args:
    args: the parsed command line (make_parser's).

  Raises:
    SystemExit: a bad flag, flags that contradict each other or the target,
      or a local path without --allow-local-paths.
  """
  if not args.output.endswith(SPEC_EXTENSIONS):
    raise SystemExit(f'error: --output {args.output}: the file name must end '
                     f'with {", ".join(SPEC_EXTENSIONS)}')
  if args.target == 'kubeflow' and args.output.endswith('.json'):
    raise SystemExit(f'error: --output {args.output}: Kubeflow Pipelines '
                     'takes a bare PipelineSpec, write .yaml (a .json '
                     'PipelineJob is for --target vertex)')
  if not args.data_dir:
    raise SystemExit('error: --data-dir is required (the dataset on object '
                     'storage)')
  if not re.fullmatch(r'[a-z0-9][a-z0-9-]{0,127}', args.pipeline_name):
    raise SystemExit(f'error: --pipeline-name {args.pipeline_name}: '
                     'Kubeflow allows [a-z0-9-] only, up to 128 characters')
  if args.gpu < 0:
    raise SystemExit(f'error: --gpu {args.gpu}: must be 0 or more')
  knobs = flags.knobs_from_args(args)
  workers = knobs.training.workers
  if workers > 1 and args.target == 'kubeflow':
    # The Trainer's pod would start the workers beside itself, on one
    # machine: no scaling out. docs/training.md, "Several workers", says
    # what a cluster needs (Kubeflow's Training Operator).
    raise SystemExit(
        f'error: --trainer-workers {workers}: not supported on '
        'open-source Kubeflow Pipelines (--target kubeflow); --target vertex '
        'runs the Trainer as a Vertex AI custom job of that many replicas')
  if workers > 1 and not (args.vertex_project and args.vertex_region):
    raise SystemExit(
        f'error: --trainer-workers {workers} on Vertex AI needs '
        '--vertex-project and --vertex-region (where the Trainer\'s custom '
        'job runs)')
  args.pipeline_root = _location('--pipeline-root', args.pipeline_root,
                                 args.allow_local_paths)
  args.data_dir = _location('--data-dir', args.data_dir, args.allow_local_paths)
  if args.serving_model_dir is None:
    args.serving_model_dir = (f'{args.pipeline_root}/'
                              f'{constants.SERVING_MODEL_DIR_NAME}')
  args.serving_model_dir = _location('--serving-model-dir',
                                     args.serving_model_dir,
                                     args.allow_local_paths)
  _check_keep_runs(args)
  keys = args.s3_credentials_keys.split(',')
  if len(keys) != 2 or not all(keys):
    raise SystemExit(f'error: --s3-credentials-keys '
                     f'{args.s3_credentials_keys}: expected ACCESS_KEY,SECRET_KEY')
  if knobs.data.schema:
    knobs = knobs._replace(data=dataclasses.replace(
        knobs.data, schema=_schema_location(knobs.data.schema)))
  return knobs


def _check_keep_runs(args: argparse.Namespace) -> None:
  """Exits unless --keep-runs, if given, can tell run folders apart."""
  if flags.runner_config(args, knobs_lib.DiskConfig).keep_runs is None:
    return
  if args.target != 'kubeflow':
    raise SystemExit(
        'error: --keep-runs: --target kubeflow only; Vertex AI lays out '
        'and keeps its artifacts its own way')
  runs = f'{args.pipeline_root}/{args.pipeline_name}'
  serving = args.serving_model_dir.rstrip('/')
  if serving == runs or serving.startswith(runs + '/'):
    raise SystemExit(
        f'error: --keep-runs with --serving-model-dir {serving}: inside '
        f'{runs}/, where Kubeflow Pipelines puts the run folders; put it '
        'elsewhere')


def trainer_resources(gpus: int, gpu_type: str):
  """The Trainer's container resources: `gpus` accelerators of `gpu_type`."""
  from kfp.pipeline_spec import pipeline_spec_pb2
  resource_spec = (
      pipeline_spec_pb2.PipelineDeploymentConfig.PipelineContainerSpec
      .ResourceSpec)
  # Both field pairs, as the KFP SDK writes them: type/count for older
  # backends and Vertex AI, resource_type/resource_count for KFP 2.
  return resource_spec(accelerator=resource_spec.AcceleratorConfig(
      type=gpu_type, count=gpus, resource_type=gpu_type,
      resource_count=str(gpus)))


def _vertex_training(args: argparse.Namespace,
                     workers: int) -> Optional[Dict[str, Any]]:
  """The Trainer's Vertex AI custom job (--trainer-workers N), or None.

  Its replicas get the accelerators (--gpu): the pipeline's Trainer task
  only starts the job and waits.
  """
  if workers <= 1:
    return None
  return vertex_training.trainer_custom_config(
      args.vertex_project, args.vertex_region, args.image,
      workers, args.trainer_machine_type, args.gpu,
      args.gpu_type)


def build_pipeline(args: argparse.Namespace, knobs: knobs_lib.Knobs):
  """The DAG of `args` and `knobs` (from check_args) with the cluster's
  paths."""
  with startup.without_gc():
    from tfx.orchestration.data_types import RuntimeParameter
    from pipeline import pipeline
  s3_beam_args, _ = _s3_settings(args.s3_endpoint, args.s3_region)
  workers = knobs.training.workers
  evaluation = knobs.evaluation
  if args.target == 'kubeflow':
    # KFP runs no resolver: the baseline is read from the serving directory.
    evaluation = dataclasses.replace(evaluation, baseline=knobs_lib.SERVED)
  dag = pipeline.create_pipeline(
      pipeline_name=args.pipeline_name,
      pipeline_root=args.pipeline_root,
      data_root=RuntimeParameter(
          name=constants.DATA_ROOT_PARAMETER, ptype=str, default=args.data_dir),
      serving_model_dir=args.serving_model_dir,
      data=knobs.data,
      training=knobs.training,
      evaluation=evaluation,
      tuning=knobs.tuning,
      infrastructure=knobs_lib.InfrastructureConfig(
          beam_pipeline_args=(list(constants.IMAGE_BEAM_PIPELINE_ARGS) +
                              list(constants.BEAM_PIPELINE_ARGS) +
                              s3_beam_args + shlex.split(args.beam_args)),
          metadata_connection_config=None,  # The cluster's ML Metadata.
          enable_cache=not args.no_cache,
          vertex_training=_vertex_training(args, workers)),
      keep_runs_step=flags.runner_config(args,
                                         knobs_lib.DiskConfig).keep_runs)
  if args.gpu and not workers > 1:
    [trainer] = [c for c in dag.components if c.id == 'Trainer']
    trainer.with_platform_config(trainer_resources(args.gpu, args.gpu_type))
  return dag


def compile_pipeline(dag, args: argparse.Namespace) -> Dict[str, Any]:
  """The PipelineJob (as a dict) of `dag`, run by containers of args.image.

  Args:
    dag: build_pipeline's pipeline.
    args: the checked command line: the image, target, data and S3 flags.

  Raises:
    SystemExit: --target kubeflow, and the spec is not runnable on
      open-source Kubeflow Pipelines (open_source_kfp.check).
  """
  from tfx.orchestration.kubeflow.v2 import kubeflow_v2_dag_runner
  runner = kubeflow_v2_dag_runner.KubeflowV2DagRunner(
      config=kubeflow_v2_dag_runner.KubeflowV2DagRunnerConfig(
          default_image=args.image,
          # Schema 2.1: the parameter format of KFP 2 and Vertex AI.
          use_pipeline_spec_2_1=True))
  job = runner.run(dag, parameter_values={
      constants.DATA_ROOT_PARAMETER: args.data_dir}, write_out=False)
  spec = job['pipelineSpec']
  # TFX puts the parameter's default only in the PipelineJob's runtime
  # config; in the spec too, a run started from the YAML needs no value.
  parameter = spec['root']['inputDefinitions']['parameters'][
      constants.DATA_ROOT_PARAMETER]
  parameter.update(defaultValue=args.data_dir, isOptional=True)
  _, env = _s3_settings(args.s3_endpoint, args.s3_region)
  for executor in spec['deploymentSpec']['executors'].values():
    if env and 'container' in executor:
      executor['container']['env'] = [
          {'name': k, 'value': v} for k, v in sorted(env.items())]
  if args.target == 'kubeflow':
    try:
      open_source_kfp.adapt(spec)
    except ValueError as e:
      raise SystemExit(f'error: {e}') from e
    locations = (args.pipeline_root, args.data_dir, args.serving_model_dir)
    if any(l.startswith('s3://') for l in locations):
      access_key, secret_key = args.s3_credentials_keys.split(',')
      job['platformSpec'] = open_source_kfp.credentials_platform_spec(
          spec, args.s3_credentials_secret, access_key, secret_key)
  return job


def write_spec(job: Dict[str, Any], path: str) -> None:
  """`job` as a PipelineJob (.json) or a PipelineSpec (.yaml), checked first.

  A PlatformSpec (job['platformSpec'], --target kubeflow) follows the
  PipelineSpec as a second YAML document, as KFP's API server reads it.
  """
  import yaml
  from google.protobuf import json_format
  from kfp.pipeline_spec import pipeline_spec_pb2
  json_format.ParseDict(job['pipelineSpec'], pipeline_spec_pb2.PipelineSpec())
  platform = job.get('platformSpec')
  if platform:
    json_format.ParseDict(platform, pipeline_spec_pb2.PlatformSpec())
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with open(path, 'w') as f:
    if path.endswith('.json'):
      json.dump(job, f, indent=2, sort_keys=True)
    else:
      yaml.safe_dump_all([job['pipelineSpec']] + ([platform] if platform
                                                  else []),
                         f, sort_keys=True)


def task_summary(job: Dict[str, Any]) -> List[str]:
  """The names of the compiled tasks of `job`, sorted."""
  return sorted(job['pipelineSpec']['root']['dag']['tasks'])


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Compiles the pipeline as `argv` says and writes it; returns 0."""
  startup.quiet_tensorflow()
  args = make_parser().parse_args(argv)
  knobs = check_args(args)
  job = compile_pipeline(build_pipeline(args, knobs), args)
  write_spec(job, args.output)
  workers = knobs.training.workers
  keep = flags.runner_config(args, knobs_lib.DiskConfig).keep_runs
  print(f'Wrote {args.output}: pipeline {args.pipeline_name!r} for '
        f'{args.target}, {len(task_summary(job))} tasks, image {args.image}\n'
        f'  pipeline root: {args.pipeline_root}\n'
        f'  runtime parameter {constants.DATA_ROOT_PARAMETER} = '
        f'{args.data_dir}\n'
        f'  pushed models: {args.serving_model_dir}'
        + (f'\n  Trainer: {args.gpu} x {args.gpu_type}' if args.gpu else '')
        + (f'\n  keeps the large artifacts of the newest {keep} runs '
           '(KeepRuns, last)' if keep else '')
        + (f'\n  Trainer: a Vertex AI custom job of {workers} '
           f'replicas ({args.trainer_machine_type}) in {args.vertex_project}/'
           f'{args.vertex_region}' if workers > 1 else ''))
  return 0


if __name__ == '__main__':
  sys.exit(main())
