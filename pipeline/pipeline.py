"""The TFX DAG, in one screen: raw images to a served, validated CNN.

Each stage's settings are built in pipeline/stages.py (and warm start in
warm_start_model.py); this file says what runs, on what, in which order.
"""

from typing import Optional

from tfx.components import ExampleValidator
from tfx.orchestration import pipeline as pipeline_lib

from components.data_checks import component as data_checks_component
from components.validation_gate import ValidationGate
from pipeline import stages
from pipeline import warm_start_model
from pipeline.knobs import DataConfig, EvaluationConfig, InfrastructureConfig, TrainingConfig, TuningConfig  # pylint: disable=g-multiple-import
from records import data_check_results


def create_pipeline(
    pipeline_name: str,
    pipeline_root: str,
    data_root: str,
    serving_model_dir: str,
    data: DataConfig = DataConfig(),
    training: TrainingConfig = TrainingConfig(),
    evaluation: EvaluationConfig = EvaluationConfig(),
    infrastructure: InfrastructureConfig = InfrastructureConfig(),
    tuning: TuningConfig = TuningConfig(),
    keep_runs_step: Optional[int] = None,
) -> pipeline_lib.Pipeline:
  """Raw images -> validated Examples -> transform -> CNN -> blessed, pushed.

  Args:
    data_root: where ExampleGen reads (a path, or a RuntimeParameter).
    data, training, evaluation, infrastructure, tuning: pipeline/knobs.py's.
    keep_runs_step: K, for a last step that keeps the large artifacts of
      the newest K runs (Kubeflow Pipelines; stages.keep_runs). A
      local run collects after the run instead (runs/keep_runs_local.py).
  """
  example_gen = stages.example_gen(data_root, data, infrastructure)
  examples = example_gen.outputs['examples']
  statistics_gen = stages.statistics_gen(examples, infrastructure)
  statistics = statistics_gen.outputs['statistics']
  schema_gen = stages.schema_gen(data.schema, statistics)
  schema = schema_gen.outputs['schema']
  example_validator = ExampleValidator(statistics=statistics, schema=schema)
  # Copies within and across splits, and image issues (docs/data-checks.md).
  data_checks = data_checks_component.node(
      examples, drop_held_out_copies=data.eval_copies == 'drop')
  # Nothing that trains or pushes may run on data with anomalies, or with
  # eval copied from train.
  validation_gate = ValidationGate(
      anomalies=example_validator.outputs['anomalies'],
      data_checks=data_checks.outputs[data_check_results.OUTPUT_KEY],
      eval_copies=data.eval_copies,
      max_eval_copy_share=data.max_eval_copy_share)
  transform = stages.transform(examples, schema)
  transform.add_upstream_node(validation_gate)
  transform_graph = transform.outputs['transform_graph']

  tuner = stages.tuner(tuning, training, examples, transform_graph, schema,
                       data.validation_percent)  # With --tune.
  # With --warm-start, the served model is where the Trainer starts.
  warm_start_node = warm_start_model.served_model_node(training.warm_start,
                                                       serving_model_dir)
  trainer = stages.trainer(examples, transform_graph, schema, tuner,
                           warm_start_node, data, training, evaluation,
                           infrastructure)

  # What the new model must not be worse than.
  baseline = stages.baseline(evaluation.baseline, serving_model_dir, trainer)
  # LabelCheck reads eval's probabilities from the Evaluator where it
  # judges the same eval.
  shared_eval = evaluation.label_check and data.eval_copies != 'drop'
  evaluator = stages.evaluator(
      data_checks.outputs['examples_without_copies']
      if data.eval_copies == 'drop' else examples,  # Eval without its copies.
      trainer.outputs['model'], baseline.outputs['model'], data, evaluation,
      write_eval_predictions=shared_eval)
  pusher = stages.pusher(trainer.outputs['model'],
                         evaluator.outputs['blessing'], serving_model_dir)
  label_check = stages.label_check(examples, trainer, transform_graph,
                                   training, evaluation,
                                   evaluator if shared_eval else None)
  # As ExampleGen's: Beam in one process for a small input (pipeline/scale.py).
  stages.with_beam_args(infrastructure.analysis_beam_pipeline_args,
                        statistics_gen, data_checks, transform, evaluator)

  nodes = [node for node in (
      example_gen, statistics_gen, schema_gen, example_validator,
      data_checks, validation_gate, transform, tuner, warm_start_node,
      trainer, baseline, evaluator, pusher, label_check) if node]
  if keep_runs_step is not None:
    nodes.append(stages.keep_runs(nodes, keep_runs_step, serving_model_dir,
                                  pipeline_name))
  return pipeline_lib.Pipeline(
      pipeline_name=pipeline_name,
      pipeline_root=pipeline_root,
      components=nodes,
      enable_cache=infrastructure.enable_cache,
      metadata_connection_config=infrastructure.metadata_connection_config,
      beam_pipeline_args=list(infrastructure.beam_pipeline_args))
