"""The TFX DAG, in one screen."""

import dataclasses
from typing import Any, Mapping, Optional, Sequence

from ml_metadata.proto import metadata_store_pb2
import tensorflow_data_validation as tfdv
import tensorflow_model_analysis as tfma
from tfx import v1 as tfx

from components import baseline_evaluator
from components import push_once
from components.image_example_gen.component import ImageExampleGen
from components.image_schema_gen import ImageSchemaGen
from components.image_transform import ImageTransform
from components.served_model import ServedModel
from components.validation_gate import ValidationGate
from modules.input_pipeline import InputConfig
from modules.model import ModelConfig
from modules.training_plan import Budget
from modules.trainer import PROBABILITIES, SERVING_SIGNATURE, TrainingConfig
from pipeline import configs
from records import features


def create_pipeline(
    pipeline_name: str,
    pipeline_root: str,
    data_root: str,
    serving_model_dir: str,
    input_format: str = configs.INPUT_FORMAT,
    class_names: Optional[Sequence[str]] = None,
    image_geometry: features.ImageGeometry = configs.IMAGE_GEOMETRY,
    num_shards: int = configs.NUM_SHARDS,
    skip_bad_images: bool = configs.SKIP_BAD_IMAGES,
    image_encoding: str = configs.IMAGE_ENCODING,
    span_dir_pattern: Optional[str] = configs.SPAN_DIR_PATTERN,
    schema_path: Optional[str] = None,
    training: Mapping[str, Any] = None,
    train_steps: Optional[int] = configs.TRAIN_STEPS,
    eval_steps: Optional[int] = configs.EVAL_STEPS,
    accuracy_threshold: float = configs.ACCURACY_THRESHOLD,
    beam_pipeline_args: Sequence[str] = (),
    example_gen_beam_pipeline_args: Sequence[str] = (),
    statistics_sample_rate: Optional[float] = None,
    metadata_connection_config: Optional[
        metadata_store_pb2.ConnectionConfig] = None,
    enable_cache: bool = True,
    baseline: str = configs.BASELINE,
    vertex_training: Optional[Mapping[str, Any]] = None,
) -> tfx.dsl.Pipeline:
  """Raw images -> validated Examples -> transform -> CNN -> blessed, pushed.

  image_geometry: what image folders are converted to; IDX files declare
  their own. Transform and Trainer take the geometry from the Examples.
  training: settings that override configs.py's (epochs, batch_size,
  learning_rate, architecture, augment...; see `training_config`).
  baseline: what the Evaluator compares the new model with, 'last_blessed'
  or 'served' (see _baseline).
  vertex_training: the Trainer runs as a Vertex AI custom job: these
  custom_config entries describe it (kubeflow/vertex_training.py).
  statistics_sample_rate: TFDV computes statistics over this fraction of
  the record batches (None: all; see pipeline/scale.py).
  """
  example_gen = ImageExampleGen(
      input_base=data_root, input_format=input_format,
      class_names=class_names, image_geometry=image_geometry,
      num_shards=num_shards, skip_bad_images=skip_bad_images,
      image_encoding=image_encoding, png_min_pixels=configs.PNG_MIN_PIXELS,
      span_dir_pattern=span_dir_pattern)
  # After beam_pipeline_args, so these win for ExampleGen; local_runner.py
  # passes pipeline/scale.py's choice by the input's size.
  if example_gen_beam_pipeline_args:
    example_gen.with_beam_pipeline_args(list(example_gen_beam_pipeline_args))

  # Top-k and uniques from sketches: bounded memory (configs.py says why).
  statistics_gen = tfx.components.StatisticsGen(
      examples=example_gen.outputs['examples'],
      stats_options=tfdv.StatsOptions(
          sample_rate=statistics_sample_rate,
          use_sketch_based_topk_uniques=configs.STATISTICS_SKETCH_TOP_K))

  if schema_path:  # A curated schema beats an inferred one.
    schema_gen = tfx.components.ImportSchemaGen(schema_file=schema_path)
  else:
    # SchemaGen's inference, plus domains for geometry, labels and pixel
    # range (see components/image_schema_gen.py).
    schema_gen = ImageSchemaGen(
        statistics=statistics_gen.outputs['statistics'],
        infer_feature_shape=True).with_id('SchemaGen')

  example_validator = tfx.components.ExampleValidator(
      statistics=statistics_gen.outputs['statistics'],
      schema=schema_gen.outputs['schema'])

  # Nothing that trains or pushes may run on data with anomalies.
  validation_gate = ValidationGate(
      anomalies=example_validator.outputs['anomalies'])

  # Not materialised: the Trainer applies the graph per batch (see
  # modules/transform.py for the measurement behind that). The image
  # geometry comes from the Examples (see components/image_transform.py).
  transform = ImageTransform(
      examples=example_gen.outputs['examples'],
      schema=schema_gen.outputs['schema'],
      preprocessing_fn=configs.PREPROCESSING_FN,
      materialize=False,
      # StatisticsGen's are the data's statistics (configs.py says why).
      disable_statistics=not configs.TRANSFORM_STATISTICS).with_id('Transform')
  transform.add_upstream_node(validation_gate)

  # TFX's Trainer, or its Vertex AI one, which starts a custom job whose
  # replicas run TFX's Trainer executor with this same custom_config.
  trainer_class = tfx.components.Trainer
  if vertex_training:
    from tfx.v1.extensions import google_cloud_ai_platform  # pylint: disable=g-import-not-at-top
    trainer_class = google_cloud_ai_platform.Trainer
  trainer = trainer_class(
      run_fn=configs.RUN_FN,
      examples=example_gen.outputs['examples'],
      transform_graph=transform.outputs['transform_graph'],
      schema=schema_gen.outputs['schema'],
      train_args=tfx.proto.TrainArgs(num_steps=train_steps),
      eval_args=tfx.proto.EvalArgs(num_steps=eval_steps),
      custom_config={'training': training_config(**(training or {})).to_dict(),
                     **(vertex_training or {})})

  # What the new model must not be worse than (see _baseline).
  baseline_node, evaluator_class = _baseline(baseline, serving_model_dir)
  if baseline == 'served':
    # Read what is served as late as it can be: once the model is trained.
    baseline_node.add_upstream_node(trainer)
  evaluator = evaluator_class(
      examples=example_gen.outputs['examples'],
      example_splits=['eval'],
      model=trainer.outputs['model'],
      baseline_model=baseline_node.outputs['model'],
      eval_config=_eval_config(accuracy_threshold))

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
          validation_gate, transform, trainer, baseline_node, evaluator,
          pusher,
      ],
      enable_cache=enable_cache,
      metadata_connection_config=metadata_connection_config,
      beam_pipeline_args=list(beam_pipeline_args),
  )


def _baseline(baseline: str, serving_model_dir: str):
  """(The node that finds the Evaluator's baseline, the Evaluator class).

  last_blessed: TFX's Resolver, the newest blessed model in ML Metadata (a
    Trainer's Model; needs an orchestrator that runs resolvers: LocalDagRunner,
    Vertex AI).
  served: ServedModel, the newest version under the serving directory,
    found without ML Metadata (open-source Kubeflow Pipelines runs no
    resolver); the Evaluator then also runs when nothing is served yet.
  With the push-once Pusher both name the same model as long as only this
  pipeline pushes to the serving directory.
  """
  if baseline == 'last_blessed':
    return tfx.dsl.Resolver(
        strategy_class=tfx.dsl.experimental.LatestBlessedModelStrategy,
        model=tfx.dsl.Channel(type=tfx.types.standard_artifacts.Model),
        model_blessing=tfx.dsl.Channel(
            type=tfx.types.standard_artifacts.ModelBlessing)).with_id(
                'latest_blessed_model_resolver'), tfx.components.Evaluator
  if baseline == 'served':
    return (ServedModel(serving_model_dir=serving_model_dir),
            baseline_evaluator.Evaluator)
  raise ValueError(f'baseline {baseline!r}: last_blessed or served')


def training_config(**overrides) -> TrainingConfig:
  """The Trainer's settings: configs.py's values, with `overrides`.

  Overrides may name TrainingConfig fields (batch_size, learning_rate...),
  Budget fields (epochs...), ModelConfig fields (architecture,
  augment...) and InputConfig fields (memory_budget...).
  """
  budget = {field.name for field in dataclasses.fields(Budget)}
  model = {field.name for field in dataclasses.fields(ModelConfig)}
  inputs = {field.name for field in dataclasses.fields(InputConfig)}
  budget_values = dict(
      epochs=configs.EPOCHS, training_examples=configs.TRAINING_EXAMPLES,
      min_epochs=configs.MIN_EPOCHS, max_epochs=configs.MAX_EPOCHS,
      learning_rate_decay=configs.LEARNING_RATE_DECAY,
      last_epoch_learning_rate=configs.LAST_EPOCH_LEARNING_RATE)
  model_values = dict(
      architecture=configs.MODEL,
      mnist_cnn_max_pixels=configs.MNIST_CNN_MAX_PIXELS,
      conv_filters=configs.CONV_FILTERS, kernel_size=configs.KERNEL_SIZE,
      dense_units=configs.DENSE_UNITS, dropout=configs.DROPOUT,
      gap_conv_filters=configs.GAP_CONV_FILTERS,
      gap_dropout=configs.GAP_DROPOUT,
      gap_batch_norm_momentum=configs.GAP_BATCH_NORM_MOMENTUM,
      augment=configs.AUGMENT,
      augment_shift=configs.AUGMENT_SHIFT,
      augment_brightness=configs.AUGMENT_BRIGHTNESS)
  input_values = dict(
      memory_budget=configs.INPUT_MEMORY_BUDGET,
      cycle_length=configs.INPUT_CYCLE_LENGTH,
      shuffle_buffer_bytes=configs.INPUT_SHUFFLE_BUFFER_BYTES)
  values = dict(
      batch_size=configs.BATCH_SIZE, learning_rate=configs.LEARNING_RATE,
      mixed_precision=configs.MIXED_PRECISION,
      workers=configs.TRAINER_WORKERS,
      workers_timeout_seconds=configs.TRAINER_WORKERS_TIMEOUT_SECONDS,
      communication_timeout_seconds=configs.COMMUNICATION_TIMEOUT_SECONDS)
  for key, value in overrides.items():
    target = (budget_values if key in budget else
              model_values if key in model else
              input_values if key in inputs else values)
    target[key] = value
  return TrainingConfig(budget=Budget(**budget_values),
                        model=ModelConfig(**model_values),
                        input=InputConfig(**input_values), **values)


def _eval_config(accuracy_threshold: float) -> tfma.EvalConfig:
  """Accuracy on the eval split: above the threshold, and no regression;
  and the confusion matrix (the inspector's, read from the evaluation)."""
  accuracy = tfma.MetricConfig(
      class_name='SparseCategoricalAccuracy',
      threshold=tfma.MetricThreshold(
          value_threshold=tfma.GenericValueThreshold(
              lower_bound={'value': accuracy_threshold}),
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
