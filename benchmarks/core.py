"""The core sections, BENCHMARKS.md's head, goals first: 1. conversion
(the tutorial loop, reference_tutorial.py, against our ImageExampleGen),
2. input pipeline, 3. training (how input-bound is the CNN?), 4. the whole
DAG, fresh, then re-run with nothing changed.
"""

import dataclasses
import os
import shutil
from typing import Dict, List, Optional, Tuple

from benchmarks import harness
from benchmarks import reference_tutorial
from benchmarks.harness import Figure, figures, timed

RERUN_GOAL_S = 30.0
INPUT_BATCH_SIZE = 256
SKIPPED = 'left out (--skip-dag)'
# Quick mode re-runs up to the Trainer: past it, the first re-run
# evaluates again, against the model the fresh run blessed.
QUICK_RERUN = ('--to-node', 'Trainer')


@dataclasses.dataclass
class Conversion:
  """Section 1's measurements."""
  examples: int
  seconds: Dict[str, Figure]  # 'reference', 'ours'
  rate: Dict[str, Figure]  # examples/s
  # examples/s beyond the fixed costs, of the median times: per repetition
  # the two times differ by less than their noise once conversion takes
  # under a second. None where the tenth's median is not below the whole's.
  marginal_rate: Dict[str, Optional[float]]
  bytes: Dict[str, int]
  reference_files: Dict[str, List[str]]  # split -> files
  our_examples_uri: str


@dataclasses.dataclass
class Input:
  """Section 2's measurements."""
  batch_size: int
  examples: int
  rate: Dict[str, Figure]  # examples/s per variant
  cpu_seconds: Dict[str, Figure]  # process CPU seconds per epoch
  stage_cpu_seconds: Dict[str, Figure]  # 'parse', 'transform': per epoch


@dataclasses.dataclass
class Training:
  """Section 3's measurements."""
  batch_size: int
  steps: int
  rate: Dict[str, Figure]  # examples/s per feed


@dataclasses.dataclass
class Dag:
  """Section 4's measurements."""
  command: List[str]
  components: List[str]
  first: Dict[str, Figure]  # component (and WHOLE_RUN) -> seconds
  rerun: Dict[str, Figure]
  rerun_cached: Dict[str, bool]  # component -> reused from the cache
  resolvers: List[str]  # Nodes with no execution to cache.
  rerun_args: Tuple[str, ...] = ()  # The re-runs' flags on top.


@dataclasses.dataclass
class Core:
  """The four sections' measurements (`dag`: None when skipped)."""
  conversion: Conversion
  input: Input
  training: Training
  dag: Optional[Dag]


def convert(data_dir: str, work_dir: str, repetitions: int,
            tenth: bool = True) -> Conversion:
  """Section 1: both converters, interleaved, on the data and (`tenth`) a
  tenth of it."""

  def reference(data: str, out_dir: str):
    shutil.rmtree(out_dir, ignore_errors=True)
    return {split: reference_tutorial.write_split(images, labels, out_dir,
                                                  split)
            for split, (images, labels) in harness.load(data).items()}

  def ours(data: str, out_dir: str):
    shutil.rmtree(out_dir, ignore_errors=True)
    return harness.example_gen(data, out_dir,
                               harness.example_gen_beam_args(data))

  examples = sum(len(labels) for _, labels in harness.load(data_dir).values())
  small_dir = os.path.join(work_dir, 'tenth')
  small_examples = (harness.write_subset(data_dir, small_dir, 0.1) if tenth
                    else 0)
  converters = {'reference': reference, 'ours': ours}
  seconds, small_seconds, rate = (figures(converters) for _ in range(3))
  outputs = {}
  for _ in range(repetitions):  # Interleaved, so noise hits both alike.
    for name, run in converters.items():
      out_dir = os.path.join(work_dir, f'conversion-{name}')
      if tenth:
        small_s, _ = timed(lambda: run(small_dir, out_dir + '-tenth'))  # pylint: disable=cell-var-from-loop
        small_seconds[name].add(small_s)
      full_s, outputs[name] = timed(lambda: run(data_dir, out_dir))  # pylint: disable=cell-var-from-loop
      seconds[name].add(full_s)
      rate[name].add(examples / full_s)
  marginal = dict.fromkeys(converters)
  if tenth:
    for name in converters:
      extra_s = seconds[name].median - small_seconds[name].median
      if extra_s > 0:
        marginal[name] = (examples - small_examples) / extra_s
  uri = outputs['ours'].uri
  return Conversion(
      examples=examples, seconds=seconds, rate=rate, marginal_rate=marginal,
      bytes={'reference': harness.bytes_on_disk(
          os.path.join(work_dir, 'conversion-reference')),
             'ours': harness.bytes_on_disk(os.path.join(uri, 'Split-*'))},
      reference_files=outputs['reference'], our_examples_uri=uri)


def stage_datasets(file_pattern: str, transform_output, batch_size: int):
  """Datasets that run one stage of ours over full batches in memory."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from records import features  # pylint: disable=g-import-not-at-top
  read = list(harness.bare_read(file_pattern, batch_size))
  # Full batches only (they stack), or the one partial batch of a subset
  # smaller than a batch.
  batches = [b for b in read if b.shape[0] == batch_size] or read[:1]
  spec = transform_output.raw_feature_spec()
  parsed = [tf.io.parse_example(b, spec) for b in batches]
  parsed = {key: tf.stack([p[key] for p in parsed]) for key in spec}
  layer = transform_output.transform_features_layer()
  stages = {
      'parse': lambda: tf.data.Dataset.from_tensor_slices(
          tf.stack(batches)).map(
              lambda b: tf.io.parse_example(b, spec)[features.LABEL_KEY]),
      'transform': lambda: tf.data.Dataset.from_tensor_slices(parsed).map(
          lambda b: layer(b)[features.LABEL_KEY]),
  }
  for make in stages.values():  # Warm-up: the per-batch cost is wanted.
    harness.epoch(make())
  return stages


def read_inputs(reference_files: List[str], pattern: str, transform_output,
                batch_size: int, repetitions: int) -> Input:
  """Section 2: one epoch of each input, interleaved."""
  from modules.training import input_pipeline  # pylint: disable=g-import-not-at-top
  plan = input_pipeline.plan_training(pattern, harness.TRAINING.input)
  makers = {
      'reference': lambda: reference_tutorial.input_fn(
          reference_files, batch_size, repeat=False),
      'ours, cold': lambda: input_pipeline.make_planned_dataset(
          pattern, transform_output, batch_size, plan),
      'bare read': lambda: harness.bare_read(pattern, batch_size),
  }
  names = [*makers, 'ours, cached']
  rate, cpu = figures(names), figures(names)
  stages = stage_datasets(pattern, transform_output, batch_size)
  stage_cpu = figures(stages)
  for _ in range(repetitions):  # Interleaved, so noise hits all alike.
    for name, make in makers.items():
      dataset = make()
      # Ours a second time: the same dataset, from its cache.
      for shown in [name] + (['ours, cached'] if name == 'ours, cold' else []):
        seconds, cpu_seconds, examples = harness.timed_epoch(dataset)
        cpu[shown].add(cpu_seconds)
        rate[shown].add(examples / seconds)
    for name, make in stages.items():
      _, cpu_seconds, staged = harness.timed_epoch(make())
      stage_cpu[name].add(cpu_seconds * examples / staged)  # Per epoch.
  return Input(batch_size=batch_size, examples=examples, rate=rate,
               cpu_seconds=cpu, stage_cpu_seconds=stage_cpu)


def train(pattern: str, transform_output, num_classes: int, steps: int,
          warmup_steps: int, repetitions: int) -> Training:
  """Section 3: the Trainer's model and train step, fed by ours or by the
  train split already decoded and normalised by our input_fn, in memory."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tf_keras as keras  # pylint: disable=g-import-not-at-top
  from benchmarks import colour_reference  # pylint: disable=g-import-not-at-top
  from modules.training import input_pipeline  # pylint: disable=g-import-not-at-top
  from modules.training import model as model_lib  # pylint: disable=g-import-not-at-top
  from records import features  # pylint: disable=g-import-not-at-top
  training = harness.TRAINING
  batch_size = training.batch_size
  geometry = features.ImageGeometry(*transform_output.transformed_feature_spec()[
      features.IMAGE_KEY].shape)
  in_memory = tf.data.Dataset.from_tensor_slices(
      colour_reference.arrays(pattern, transform_output))
  datasets = {
      'ours': input_pipeline.make_planned_dataset(
          pattern, transform_output, batch_size,
          input_pipeline.plan_training(pattern, training.input), repeat=True),
      'in memory': in_memory.batch(batch_size).cache().repeat().prefetch(
          tf.data.AUTOTUNE),
  }
  feeds = {}
  for name, dataset in datasets.items():
    # As modules/trainer.run_fn builds and compiles it (on CPU): its steps
    # traced without AutoGraph, seconds sooner.
    model = model_lib.build_cnn(geometry, num_classes, training.model)
    model_lib.steps_without_autograph(model)
    model.compile(
        optimizer=keras.optimizers.Adam(training.learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name='accuracy')])
    feeds[name] = (model.make_train_function(), iter(dataset))

  def steps_of(name: str, n: int) -> None:
    step, iterator = feeds[name]
    for _ in range(n):
      logs = step(iterator)
    float(logs['loss'])  # Waits for the last step.

  for name in feeds:
    steps_of(name, warmup_steps)
  rate = figures(feeds)
  for _ in range(repetitions):  # Interleaved, so noise hits both alike.
    for name in feeds:
      seconds, _ = timed(lambda: steps_of(name, steps))  # pylint: disable=cell-var-from-loop
      rate[name].add(steps * batch_size / seconds)
  return Training(batch_size=batch_size, steps=steps, rate=rate)


def whole_dag(ctx: harness.Context, runner_args, fresh_runs: int,
              rerun_args: Tuple[str, ...] = ()) -> Dag:
  """Section 4: `fresh_runs` fresh runs, each followed by re-runs."""
  first: Dict[str, Figure] = {}
  rerun: Dict[str, Figure] = {}
  cached: Dict[str, bool] = {}
  for i in range(fresh_runs):
    local_run, output_dir = ctx.run(f'dag-{i}', *runner_args)
    for n in range(1 + ctx.repetitions):
      if n:
        local_run = harness.run_local_runner(ctx.data_dir, output_dir,
                                             *runner_args, *rerun_args)
      measured = rerun if n else first
      for name, (seconds, was_cached) in local_run.nodes.items():
        measured.setdefault(name, Figure()).add(seconds)
        if n:
          cached[name] = cached.get(name, True) and was_cached
      measured.setdefault(harness.WHOLE_RUN, Figure()).add(local_run.seconds)
  components = [name for name in first if name != harness.WHOLE_RUN]
  return Dag(command=['local_runner.py', '--data-dir', ctx.data_dir_shown,
                      '--output-dir', 'FRESH_DIR', *runner_args],
             components=components, first=first, rerun=rerun,
             rerun_cached=cached, rerun_args=rerun_args,
             resolvers=[n for n in components if n.endswith('resolver')])


def measure(ctx: harness.Context) -> Core:
  """The four sections, one after the other."""
  from records import features  # pylint: disable=g-import-not-at-top
  from tests import transform_analysis  # pylint: disable=g-import-not-at-top
  args = ctx.args
  train_steps, warmup = ctx.pick((args.train_steps, args.warmup_steps), (5, 2))
  print('1/4 conversion ...', flush=True)
  # Quick mode leaves out the tenth (its steady state reads n/a) and
  # analyses in one process, as the pipeline does a small input.
  conv = convert(ctx.data_dir, ctx.work_dir, ctx.repetitions,
                 tenth=not ctx.quick)
  train_pattern = os.path.join(conv.our_examples_uri, 'Split-train', '*')
  transform_output = transform_analysis.analyze(
      train_pattern, features.MNIST_GEOMETRY, ctx.path('transform'),
      ctx.pick(harness.BEAM_ARGS, harness.IN_MEMORY))
  num_classes = len(features.read_class_names(
      os.path.join(conv.our_examples_uri, features.CLASS_NAMES_FILE)))
  print('2/4 input pipeline ...', flush=True)
  inputs = read_inputs(conv.reference_files['train'], train_pattern,
                       transform_output, INPUT_BATCH_SIZE, ctx.repetitions)
  print('3/4 training ...', flush=True)
  training = train(train_pattern, transform_output, num_classes, train_steps,
                   warmup, ctx.repetitions)
  print(f'4/4 whole DAG{": skipped" if args.skip_dag else " ..."}',
        flush=True)
  dag = None if args.skip_dag else whole_dag(
      ctx, ctx.pick((), harness.QUICK_ARGS), ctx.pick(args.dag_runs, 1),
      ctx.pick((), QUICK_RERUN))
  return Core(conv, inputs, training, dag)


def render(core: Core, ctx: harness.Context) -> Dict:
  """The figures templates/core.md.j2 reads: goals, then four tables."""
  c, i, t, d = core.conversion, core.input, core.training, core.dag
  conv_x = c.rate['ours'].median / c.rate['reference'].median
  marginal = c.marginal_rate
  bare_wall_s = i.examples / i.rate['bare read'].median
  return dict(
      c=c, i=i, t=t, d=d, conv_x=conv_x,
      conv_marginal_x=(marginal['ours'] / marginal['reference']
                       if None not in marginal.values() else None),
      bytes_x=c.bytes['ours'] / c.bytes['reference'],
      input_x=i.rate['ours, cold'].median / i.rate['reference'].median,
      input_bare=i.rate['ours, cold'].median / i.rate['bare read'].median,
      train_mem=t.rate['ours'].median / t.rate['in memory'].median,
      rerun_goal_s=RERUN_GOAL_S, skipped=SKIPPED,
      rerun_s=d and d.rerun[harness.WHOLE_RUN].median,
      read=i.cpu_seconds['bare read'].median,
      ours=i.cpu_seconds['ours, cold'].median,
      parse=i.stage_cpu_seconds['parse'].median,
      transform=i.stage_cpu_seconds['transform'].median,
      bare_wall_s=bare_wall_s, budget_s=bare_wall_s / 0.8)


SECTION = harness.Section(
    heading=lambda ctx: '# Benchmarks' + (
        ' (quick mode: a small subset, not the real figures)'
        if ctx.quick else ''),
    measure=measure, render=render, template='core.md.j2')
