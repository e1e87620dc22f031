"""The TFX DAG, in one screen."""

from typing import Optional

import tensorflow_data_validation as tfdv
import tensorflow_model_analysis as tfma
from tfx import v1 as tfx

from components import baseline_evaluator
from components import blessing_rule
from components import push_once
from components.data_checks import component as data_checks_component
from components.image_example_gen.component import ImageExampleGen
from components.image_example_gen.options import ImageExampleGenOptions
from components.image_schema_gen import ImageSchemaGen
from components.image_transform import ImageTransform
from components.label_check import LabelCheck
from components.served_model import ServedModel
from components.validation_gate import ValidationGate
from modules.trainer import EPOCH_PROBABILITIES_KEY
from modules.trainer import PROBABILITIES, SERVING_SIGNATURE
from pipeline import configs
from pipeline import tuning as tuning_lib
from pipeline import validation
from pipeline import warm_start
from pipeline.knobs import DataConfig, EvaluationConfig, InfrastructureConfig, TrainingConfig, TuningConfig  # pylint: disable=g-multiple-import
from records import features


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
) -> tfx.dsl.Pipeline:
  """Raw images -> validated Examples -> transform -> CNN -> blessed, pushed.

  data_root: where ExampleGen reads (a path, or a RuntimeParameter). The
  configs are pipeline/knobs.py's.
  """
  example_gen = ImageExampleGen(
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
    example_gen.with_beam_pipeline_args(
        list(infrastructure.example_gen_beam_pipeline_args))

  # Top-k and uniques from sketches, not TFDV's exact generator, whose
  # GroupByKey over every distinct image holds them all in the runner's
  # memory: bounded memory at any size, the same counts for the schema.
  statistics_gen = tfx.components.StatisticsGen(
      examples=example_gen.outputs['examples'],
      stats_options=tfdv.StatsOptions(
          sample_rate=infrastructure.statistics_sample_rate,
          use_sketch_based_topk_uniques=True))

  if data.schema:
    schema_gen = tfx.components.ImportSchemaGen(schema_file=data.schema)
  else:
    # SchemaGen's inference, plus domains for geometry, labels and pixel
    # range (see components/image_schema_gen.py).
    schema_gen = ImageSchemaGen(
        statistics=statistics_gen.outputs['statistics'],
        infer_feature_shape=True).with_id('SchemaGen')

  example_validator = tfx.components.ExampleValidator(
      statistics=statistics_gen.outputs['statistics'],
      schema=schema_gen.outputs['schema'])

  # Copies within and across splits, and image issues (docs/data-checks.md).
  data_checks = data_checks_component.node(
      example_gen.outputs['examples'],
      drop_held_out_copies=data.eval_copies == 'drop')

  # Nothing that trains or pushes may run on data with anomalies, or with
  # eval copied from train.
  validation_gate = ValidationGate(
      anomalies=example_validator.outputs['anomalies'],
      data_checks=data_checks.outputs['data_checks'],
      eval_copies=data.eval_copies,
      max_eval_copy_share=data.max_eval_copy_share)

  # Not materialised: the Trainer applies the graph per batch (see
  # modules/transform.py for the measurement behind that). The image
  # geometry comes from the Examples (see components/image_transform.py).
  transform = ImageTransform(
      examples=example_gen.outputs['examples'],
      schema=schema_gen.outputs['schema'],
      preprocessing_fn=configs.PREPROCESSING_FN,
      materialize=False,
      # No pre- and post-transform statistics: StatisticsGen's are the
      # data's, nothing reads these, and the post-transform ones hold every
      # transformed split in the runner's memory on the DirectRunner.
      disable_statistics=True).with_id('Transform')
  transform.add_upstream_node(validation_gate)

  # With --tune, TFX's Tuner picks the Trainer's hyperparameters.
  tuner = tuning_lib.tuner(tuning, training, example_gen.outputs['examples'],
                           transform.outputs['transform_graph'],
                           schema_gen.outputs['schema'],
                           data.validation_percent)

  # --warm-start: the model in service as the Trainer's base_model
  # (pipeline/warm_start.py).
  warm_start_node = warm_start.served_model_node(training.warm_start,
                                                 serving_model_dir)

  # TFX's Trainer, or its Vertex AI one, which starts a custom job whose
  # replicas run TFX's Trainer executor with this same custom_config.
  trainer_class = tfx.components.Trainer
  if infrastructure.vertex_training:
    from tfx.v1.extensions import google_cloud_ai_platform  # pylint: disable=g-import-not-at-top
    trainer_class = google_cloud_ai_platform.Trainer
  trainer = trainer_class(
      run_fn=configs.RUN_FN,
      examples=example_gen.outputs['examples'],
      transform_graph=transform.outputs['transform_graph'],
      schema=schema_gen.outputs['schema'],
      # Choices on the validation split only (pipeline/validation.py).
      train_args=validation.train_args(training.train_steps),
      eval_args=validation.eval_args(data.validation_percent,
                                     training.eval_steps),
      hyperparameters=(tuner.outputs['best_hyperparameters'] if tuner
                       else None),
      custom_config={'training': training.to_dict(),
                     **validation.custom_config(data.validation_percent),
                     EPOCH_PROBABILITIES_KEY:
                         evaluation.epoch_probabilities_records(),
                     **(infrastructure.vertex_training or {})},
      **warm_start.trainer_args(warm_start_node,
                                bool(infrastructure.vertex_training)))

  # The records whose label a model that never trained on them doubts
  # (components/label_check.py); on by default, --no-label-check.
  label_check = LabelCheck(
      examples=example_gen.outputs['examples'],
      model=trainer.outputs['model'],
      model_run=trainer.outputs['model_run'],
      transform_graph=transform.outputs['transform_graph'],
      cross_fit_fn=configs.CROSS_FIT_FN, folds=evaluation.label_check_folds,
      fold_examples=evaluation.label_check_train_examples,
      train_records=evaluation.label_check_train_records,
      signature_name=SERVING_SIGNATURE, probabilities_key=PROBABILITIES,
      custom_config={'training': training.to_dict()}
  ) if evaluation.label_check else None

  # What the new model must not be worse than (see _baseline).
  baseline_node = _baseline(evaluation.baseline, serving_model_dir)
  if evaluation.baseline == 'served':
    # Read what is served as late as it can be: once the model is trained.
    baseline_node.add_upstream_node(trainer)
  evaluated = example_gen.outputs['examples']
  if data.eval_copies == 'drop':  # Eval without its copies of train images.
    evaluated = data_checks.outputs['examples_without_copies']
  # TFX's Evaluator, which may set the accuracy threshold from the eval
  # split's classes (see components/baseline_evaluator.py).
  accuracy_threshold = evaluation.fixed_accuracy_threshold(data)
  evaluator = baseline_evaluator.Evaluator(
      examples=evaluated,
      example_splits=baseline_evaluator.judged_splits(evaluation.judge_window),
      model=trainer.outputs['model'],
      baseline_model=baseline_node.outputs['model'],
      eval_config=eval_config(accuracy_threshold),
      accuracy_threshold_from_data=accuracy_threshold is None)

  # As ExampleGen's: Beam in one process for a small input (pipeline/scale.py).
  if infrastructure.analysis_beam_pipeline_args:
    for component in (statistics_gen, data_checks, transform, evaluator):
      component.with_beam_pipeline_args(
          list(infrastructure.analysis_beam_pipeline_args))

  # TFX's Pusher, except that the model already served is not pushed again
  # (see components/push_once.py).
  pusher = push_once.Pusher(
      model=trainer.outputs['model'],
      model_blessing=evaluator.outputs['blessing'],
      push_destination=tfx.proto.PushDestination(
          filesystem=tfx.proto.PushDestination.Filesystem(
              base_directory=serving_model_dir)))

  return tfx.dsl.Pipeline(
      pipeline_name=pipeline_name,
      pipeline_root=pipeline_root,
      components=[
          example_gen, statistics_gen, schema_gen, example_validator,
          data_checks, validation_gate, transform,
          *([tuner] if tuner else []),
          *([warm_start_node] if warm_start_node else []), trainer,
          baseline_node, evaluator,
          pusher, *([label_check] if label_check else []),
      ],
      enable_cache=infrastructure.enable_cache,
      metadata_connection_config=infrastructure.metadata_connection_config,
      beam_pipeline_args=list(infrastructure.beam_pipeline_args),
  )


def _baseline(baseline: str, serving_model_dir: str):
  """The node that finds the Evaluator's baseline.

  last_blessed: TFX's Resolver, the newest blessed model in ML Metadata (a
    Trainer's Model; needs an orchestrator that runs resolvers: LocalDagRunner,
    Vertex AI).
  served: ServedModel, the newest version under the serving directory,
    found without ML Metadata (open-source Kubeflow Pipelines runs no
    resolver); the Evaluator then also runs when nothing is served yet
    (components/baseline_evaluator.py).
  With the push-once Pusher both name the same model as long as only this
  pipeline pushes to the serving directory.
  """
  if baseline == 'last_blessed':
    return tfx.dsl.Resolver(
        strategy_class=tfx.dsl.experimental.LatestBlessedModelStrategy,
        model=tfx.dsl.Channel(type=tfx.types.standard_artifacts.Model),
        model_blessing=tfx.dsl.Channel(
            type=tfx.types.standard_artifacts.ModelBlessing)).with_id(
                'latest_blessed_model_resolver')
  if baseline == 'served':
    return ServedModel(serving_model_dir=serving_model_dir)
  raise ValueError(f'baseline {baseline!r}: last_blessed or served')


def eval_config(accuracy_threshold: Optional[float]) -> tfma.EvalConfig:
  """Accuracy on the eval split: above the threshold (None: the Evaluator
  sets it), and no regression; and the confusion matrix (the inspector's,
  read from the evaluation)."""
  value_threshold = None if accuracy_threshold is None else (
      tfma.GenericValueThreshold(lower_bound={'value': accuracy_threshold}))
  accuracy = tfma.MetricConfig(
      class_name=blessing_rule.ACCURACY_METRIC, module='modules.accuracy',
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
