"""How each stage of the DAG is built: the settings that pipeline.py's
create_pipeline leaves to a name. One function a stage; each returns the
stage's node.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

import tensorflow_data_validation as tfdv
import tensorflow_model_analysis as tfma
from tfx.components import StatisticsGen, Trainer, Tuner  # pylint: disable=g-multiple-import
from tfx.dsl.components.base import base_node
from tfx.components.schema_gen.import_schema_gen.component import ImportSchemaGen
from tfx.dsl.components.common.resolver import Resolver
from tfx.dsl.input_resolution.strategies.latest_blessed_model_strategy import LatestBlessedModelStrategy
from tfx.proto import pusher_pb2
from tfx.proto import trainer_pb2
from tfx.types import standard_artifacts
from tfx.types.channel import Channel

from components.evaluator import baseline_evaluator
from components.image_example_gen.component import ImageExampleGen
from components.image_example_gen.options import ImageExampleGenOptions
from components.image_schema_gen import ImageSchemaGen
from components.image_transform import ImageTransform
from components.keep_runs import component as keep_runs_component
from components.keep_runs import rule as keep_runs_rule
from components.label_check.component import LabelCheck
from components.label_check.executor import auto_cross_fit_records
from components import push_once
from components.served_model import ServedModel
from modules.training.config import (CROSS_FIT_RECORDS_KEY,  # pylint: disable=g-multiple-import
                                     EPOCH_PROBABILITIES_KEY,
                                     VALIDATION_SPLIT_KEY)
from pipeline import constants
from pipeline import warm_start_model
from pipeline.knobs import (LAST_BLESSED, SERVED, DataConfig,  # pylint: disable=g-multiple-import
                            EvaluationConfig, InfrastructureConfig,
                            TrainingConfig, TuningConfig)
from records import features
from records import model_blessing
from records.serving_model import PROBABILITIES, SERVING_SIGNATURE


def example_gen(data_root, data: DataConfig,
                infrastructure: InfrastructureConfig) -> ImageExampleGen:
  """ImageExampleGen, reading `data_root` (a path or a RuntimeParameter).

  Args:
    data_root: the folder of the images or IDX files (of every span).
    data: the input's format, classes, geometry, splits and spans.
    infrastructure: ExampleGen's own Beam args, if it has any.
  """
  node = ImageExampleGen(
      input_base=data_root, options=ImageExampleGenOptions(
          input_format=data.input_format, class_names=data.class_names,
          geometry=data.image_geometry, num_shards=data.num_shards,
          skip_bad_images=data.skip_bad_images,
          image_encoding=data.image_encoding,
          png_min_pixels=data.png_min_pixels, infer_size=data.infer_size,
          infer_channels=data.infer_channels, eval_percent=data.eval_percent,
          validation_percent=data.validation_percent,
          max_image_pixels=data.max_image_pixels if data.images else None,
          span_window=data.span_window),
      span_dir_pattern=data.span_dir_pattern)
  if infrastructure.example_gen_beam_pipeline_args:
    node.with_beam_pipeline_args(
        list(infrastructure.example_gen_beam_pipeline_args))
  return node


def statistics_gen(examples,
                   infrastructure: InfrastructureConfig
                   ) -> StatisticsGen:
  """TFX's StatisticsGen, sampling as the input's size asks.

  Top-k and uniques come from sketches, not from TFDV's exact generator,
  whose GroupByKey over every distinct image holds them all in the runner's
  memory: bounded memory at any size, the same counts for the schema.
  """
  return StatisticsGen(
      examples=examples,
      stats_options=tfdv.StatsOptions(
          sample_rate=infrastructure.statistics_sample_rate,
          use_sketch_based_topk_uniques=True))


def schema_gen(schema_file: Optional[str], statistics):
  """The schema: `schema_file` imported, or one inferred from `statistics`.

  The inferred one is SchemaGen's, plus domains for geometry, labels and
  pixel range (components/image_schema_gen.py).
  """
  if schema_file:
    return ImportSchemaGen(schema_file=schema_file)
  return ImageSchemaGen(statistics=statistics,
                        infer_feature_shape=True).with_id('SchemaGen')


def transform(examples, schema) -> ImageTransform:
  """tf.Transform's graph of the images, not materialised.

  The Trainer applies the graph per batch (modules/transform.py says why).
  The image geometry comes from the Examples (components/image_transform.py).
  """
  return ImageTransform(
      examples=examples,
      schema=schema,
      preprocessing_fn=constants.PREPROCESSING_FN,
      materialize=False,
      # No pre- and post-transform statistics: StatisticsGen's are the
      # data's, nothing reads these, and the post-transform ones hold every
      # transformed split in the runner's memory on the DirectRunner.
      disable_statistics=True).with_id('Transform')


# The split the Trainer and the Tuner validate on: ImageExampleGen's
# validation split, or none with --validation-percent 0 (docs/training.md,
# "What the validation split decides").


def validation_split(validation_percent: int) -> Optional[str]:
  """The validation split's name, None without one."""
  return features.VALIDATION_SPLIT if validation_percent else None


def train_args(num_steps: Optional[int]) -> trainer_pb2.TrainArgs:
  """Returns TrainArgs of the training split, for `num_steps` steps."""
  return trainer_pb2.TrainArgs(splits=[features.TRAIN_SPLIT],
                               num_steps=num_steps)


def eval_args(validation_percent: int,
              num_steps: Optional[int]) -> trainer_pb2.EvalArgs:
  """Returns EvalArgs of the validation split.

  Without one, TFX still hands the Trainer the files of its default split,
  'eval'. run_fn reads none of them, since `custom_config`'s
  VALIDATION_SPLIT_KEY is None.

  Args:
    validation_percent: the share of the data held out for validation, in
      percent; 0: no validation split.
    num_steps: evaluation steps; None: the whole split.
  """
  return trainer_pb2.EvalArgs(
      splits=[validation_split(validation_percent) or features.EVAL_SPLIT],
      num_steps=num_steps)


def training_reads(examples, transform_graph, schema,
                   train_steps: Optional[int], validation_percent: int,
                   eval_steps: Optional[int]) -> Dict[str, Any]:
  """What the Trainer and each of the Tuner's trials read, as their
  keyword arguments: the records, the Transform graph and the schema, the
  training split for `train_steps` steps and the validation split for
  `eval_steps` (None: whole)."""
  return dict(examples=examples, transform_graph=transform_graph,
              schema=schema, train_args=train_args(train_steps),
              eval_args=eval_args(validation_percent, eval_steps))


def validation_config(validation_percent: int) -> Dict[str, Any]:
  """Returns what run_fn and tuner_fn are told of the validation split."""
  return {VALIDATION_SPLIT_KEY: validation_split(validation_percent)}


def tuner(tuning: TuningConfig, training: TrainingConfig, examples,
          transform_graph, schema,
          validation_percent: int) -> Optional[Tuner]:
  """Returns the Tuner node, or None without --tune.

  Its trials read what the Trainer reads. Each trains tuning.trial_steps
  steps (its TrainArgs) and scores on the validation split (the Trainer's
  eval steps).

  Args:
    tuning: --tune's settings: trials, steps per trial, search and seed.
    training: the Trainer's settings; its eval steps score each trial.
    examples: ExampleGen's Examples.
    transform_graph: Transform's graph.
    schema: the schema the records were checked against.
    validation_percent: the share of the data held out for validation, in
      percent; 0: no validation split.

  Raises:
    ValueError: --tune without a validation split (validation_percent 0).
  """
  if not tuning.trials:
    return None
  if not validation_percent:
    raise ValueError('--tune needs a validation split to score its trials '
                     'on; --validation-percent 0 leaves none')
  return Tuner(
      tuner_fn=constants.TUNER_FN,
      **training_reads(examples, transform_graph, schema, tuning.trial_steps,
                       validation_percent, training.eval_steps),
      custom_config={'training': training.to_dict(),
                     'tuning': tuning.to_dict(),
                     **validation_config(validation_percent)})


def trainer(examples, transform_graph, schema, tuner, warm_start_node,
            data: DataConfig, training: TrainingConfig,
            evaluation: EvaluationConfig,
            infrastructure: InfrastructureConfig):
  """TFX's Trainer, or its Vertex AI one with --trainer-workers N there.

  The Vertex AI Trainer starts a custom job whose replicas run TFX's Trainer
  executor with this same custom_config; locally, modules/local_workers.py's
  run_fn starts the N workers. Choices are made on the validation
  split only (validation_split below); with --tune the hyperparameters are
  the Tuner's best; with --warm-start the base model is the served one
  (pipeline/warm_start_model.py).

  Args:
    examples: ExampleGen's Examples.
    transform_graph: Transform's graph, applied per batch.
    schema: the schema the records were checked against.
    tuner: the Tuner node; None without --tune.
    warm_start_node: the ServedModel node of the model to start from; None
      without --warm-start.
    data: its validation_percent chooses the validation split.
    training: run_fn's settings: steps, budget, model and its knobs.
    evaluation: what LabelCheck needs the Trainer to record.
    infrastructure: its vertex_training, the Vertex AI job's custom_config
      entries; None: TFX's Trainer.
  """
  trainer_class = Trainer
  if infrastructure.vertex_training:
    # Only here: TFX's Google Cloud extensions take a second to import.
    from tfx.extensions.google_cloud_ai_platform.trainer import component as vertex_trainer  # pylint: disable=g-import-not-at-top
    trainer_class = vertex_trainer.Trainer
  local_workers = training.workers > 1 and not infrastructure.vertex_training
  return trainer_class(
      run_fn=(constants.LOCAL_WORKERS_RUN_FN if local_workers
              else constants.RUN_FN),
      **training_reads(examples, transform_graph, schema,
                       training.train_steps, data.validation_percent,
                       training.eval_steps),
      hyperparameters=(tuner.outputs['best_hyperparameters'] if tuner
                       else None),
      custom_config={'training': training.to_dict(),
                     **validation_config(data.validation_percent),
                     EPOCH_PROBABILITIES_KEY:
                         evaluation.epoch_probabilities_records(),
                     CROSS_FIT_RECORDS_KEY: (
                         auto_cross_fit_records(
                             evaluation.label_check_train_examples)
                         if evaluation.label_check_folds is None else 0),
                     **(infrastructure.vertex_training or {})},
      **warm_start_model.trainer_args(warm_start_node,
                                      bool(infrastructure.vertex_training)))


def label_check(examples, trainer_node, transform_graph,
                training: TrainingConfig, evaluation: EvaluationConfig,
                evaluator_node=None) -> Optional[LabelCheck]:
  """The records whose label a model that never trained on them doubts.

  Args:
    examples: ExampleGen's Examples, whose labels are checked.
    trainer_node: the Trainer, whose model and model run are read.
    transform_graph: Transform's graph.
    training: the Trainer's settings, which the cross-fit models train with.
    evaluation: LabelCheck's settings (--label-check-*, --no-label-check).
    evaluator_node: the Evaluator of the same `examples`, whose
      probabilities of eval are read; None: LabelCheck scores eval itself.

  Returns:
    LabelCheck (components/label_check/), or None with --no-label-check.
  """
  if not evaluation.label_check:
    return None
  return LabelCheck(
      examples=examples,
      model=trainer_node.outputs['model'],
      model_run=trainer_node.outputs['model_run'],
      transform_graph=transform_graph,
      cross_fit_fn=constants.CROSS_FIT_FN, folds=evaluation.label_check_folds,
      fold_examples=evaluation.label_check_train_examples,
      checked_records=evaluation.label_check_records,
      signature_name=SERVING_SIGNATURE, probabilities_key=PROBABILITIES,
      custom_config={'training': training.to_dict()},
      evaluation=(evaluator_node.outputs['evaluation'] if evaluator_node
                  else None))


def baseline(choice: str, serving_model_dir: str, trainer_node):
  """The node that finds the Evaluator's baseline.

  With the push-once Pusher both choices name the same model as long as
  only this pipeline pushes to the serving directory.

  Args:
    choice: 'last_blessed': TFX's Resolver, the newest blessed model in ML
      Metadata (a Trainer's Model; needs an orchestrator that runs
      resolvers: LocalDagRunner, Vertex AI). 'served': ServedModel, the
      newest version under the serving directory, found without ML Metadata
      (open-source Kubeflow Pipelines runs no resolver), read once the
      model is trained, as late as it can be; the Evaluator then also runs
      when nothing is served yet (components/evaluator/baseline_evaluator.py).
    serving_model_dir: where the Pusher pushes.
    trainer_node: the Trainer, which a served baseline waits for.

  Raises:
    ValueError: another choice.
  """
  if choice == LAST_BLESSED:
    return Resolver(
        strategy_class=LatestBlessedModelStrategy,
        model=Channel(type=standard_artifacts.Model),
        model_blessing=Channel(
            type=standard_artifacts.ModelBlessing)).with_id(
                'latest_blessed_model_resolver')
  if choice == SERVED:
    node = ServedModel(serving_model_dir=serving_model_dir)
    node.add_upstream_node(trainer_node)
    return node
  raise ValueError(f'baseline {choice!r}: last_blessed or served')


def evaluator(examples, model, baseline_model, data: DataConfig,
              evaluation: EvaluationConfig,
              write_eval_predictions: bool = False
              ) -> baseline_evaluator.Evaluator:
  """TFX's Evaluator, which may set the accuracy threshold from the eval
  split's classes (components/evaluator/baseline_evaluator.py).

  Args:
    examples: the Examples judged on (eval's copies of train dropped with
      --eval-copies drop).
    model: the Trainer's model.
    baseline_model: the model it must be no worse than (baseline()'s).
    data: the input, whose format decides whether the threshold is fixed.
    evaluation: the threshold, and the spans judged on (--judge-window).
    write_eval_predictions: write the model's probabilities of eval, for
      LabelCheck.
  """
  accuracy_threshold = evaluation.fixed_accuracy_threshold(data)
  return baseline_evaluator.Evaluator(
      examples=examples,
      example_splits=baseline_evaluator.judged_splits(evaluation.judge_window),
      model=model,
      baseline_model=baseline_model,
      eval_config=eval_config(accuracy_threshold),
      accuracy_threshold_from_data=accuracy_threshold is None,
      write_eval_predictions=write_eval_predictions)


def eval_config(accuracy_threshold: Optional[float]) -> tfma.EvalConfig:
  """What the Evaluator computes and blesses on.

  Accuracy on the eval split, above the threshold and with no regression;
  and the confusion matrix (the inspector's, read from the evaluation).

  Args:
    accuracy_threshold: the lowest accuracy blessed; None: the Evaluator
      sets it.
  """
  value_threshold = None if accuracy_threshold is None else (
      tfma.GenericValueThreshold(lower_bound={'value': accuracy_threshold}))
  accuracy = tfma.MetricConfig(
      class_name=model_blessing.ACCURACY_METRIC, module='modules.accuracy',
      threshold=tfma.MetricThreshold(
          value_threshold=value_threshold,
          change_threshold=tfma.GenericChangeThreshold(
              direction=tfma.MetricDirection.HIGHER_IS_BETTER,
              absolute={'value': -1e-10})))
  return tfma.EvalConfig(
      model_specs=[tfma.ModelSpec(signature_name=SERVING_SIGNATURE,
                                  label_key=features.LABEL_KEY,
                                  prediction_key=PROBABILITIES)],
      slicing_specs=[tfma.SlicingSpec()],
      metrics_specs=[tfma.MetricsSpec(metrics=[
          tfma.MetricConfig(class_name='ExampleCount'), accuracy,
          tfma.MetricConfig(class_name='MultiClassConfusionMatrixPlot')])])


def pusher(model, blessing, serving_model_dir: str) -> push_once.Pusher:
  """TFX's Pusher, except that the model already served is not pushed again
  (components/push_once.py).

  Args:
    model: the Trainer's model.
    blessing: the Evaluator's blessing; an unblessed model is not pushed.
    serving_model_dir: the folder each pushed version is written under.
  """
  return push_once.Pusher(
      model=model,
      model_blessing=blessing,
      push_destination=pusher_pb2.PushDestination(
          filesystem=pusher_pb2.PushDestination.Filesystem(
              base_directory=serving_model_dir)))


_Output = Tuple[str, str]  # (node id, output key)


def _name(output: _Output) -> str:
  return '/'.join(output)


def _inputs(node: base_node.BaseNode) -> List[Tuple[str, _Output]]:
  """(input key, the output it reads) of each input read from a node."""
  return [(key, (channel.producer_component_id, channel.output_key))
          for key, channel in node.inputs.items()
          if getattr(channel, 'producer_component_id', None)]


def outputs_to_keep(nodes: Sequence[base_node.BaseNode]
                    ) -> Tuple[List[str], List[str], str]:
  """(large outputs, the large ones in the served model's lineage, the
  output the Pusher pushes), each as 'node/output'.

  Args:
    nodes: every node of the DAG.

  Raises:
    ValueError: the DAG pushes no model, or more than one.
  """
  by_id: Dict[str, base_node.BaseNode] = {node.id: node for node in nodes}
  types = {(node.id, key): channel.type.TYPE_NAME
           for node in nodes for key, channel in node.outputs.items()}
  large = [output for output, name in types.items()
           if name in keep_runs_rule.LARGE_TYPES]
  pushes = [output for output, name in types.items() if name == 'PushedModel']
  if len(pushes) != 1:
    raise ValueError(f'--keep-runs needs a DAG with one Pusher; outputs of '
                     f'type PushedModel: {[_name(p) for p in pushes]}')
  [model] = [upstream for key, upstream in _inputs(by_id[pushes[0][0]])
             if key == keep_runs_rule.PUSHED_MODEL_INPUT]
  lineage = keep_runs_rule.lineage(
      pushes, writers=lambda output: [output[0]],
      inputs=lambda node_id: _inputs(by_id[node_id]),
      outputs=lambda node_id: [(node_id, key)
                               for key in by_id[node_id].outputs],
      type_name=types.__getitem__)
  return ([_name(o) for o in large],
          [_name(o) for o in large if o in lineage], _name(model))


def keep_runs(nodes: Sequence[base_node.BaseNode], keep: int,
              serving_model_dir: str, pipeline_name: str
              ) -> keep_runs_component.KeepRuns:
  """--keep-runs K on Kubeflow Pipelines: a KeepRuns step after every one
  of `nodes`, keeping `keep` runs, told what to keep by the DAG.

  Args:
    nodes: every other node of the DAG; the step runs after them all.
    keep: K, how many of the newest runs keep their large artifacts.
    serving_model_dir: where the Pusher pushes; the served model's run
      keeps what made it.
    pipeline_name: the pipeline's name, whose runs are counted.
  """
  large, lineage, model = outputs_to_keep(nodes)
  step = keep_runs_component.KeepRuns(
      keep_runs=keep, serving_model_dir=serving_model_dir,
      pipeline_name=pipeline_name, large_outputs=large,
      lineage_outputs=lineage, model_output=model)
  # Last: a run that reaches it has finished everything else.
  for other in nodes:
    step.add_upstream_node(other)
  return step

def with_beam_args(beam_args, *components) -> None:
  """Gives `components` their own Beam args, when there are any."""
  if beam_args:
    for component in components:
      component.with_beam_pipeline_args(list(beam_args))
