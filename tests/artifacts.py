"""Real artifacts for the tests: Examples from the ImageExampleGen executor
and a transform graph from tf.Transform, both through real Beam, in one
process (the project's standalone runners, with in-memory Beam)."""

import contextlib
import sys

from tests import example_gen_standalone
from tests import transform_analysis

IN_MEMORY = ['--direct_running_mode=in_memory']
mnist_schema = transform_analysis.mnist_schema


@contextlib.contextmanager
def _program_argv():
  """sys.argv without the test runner's arguments.

  TFX's Beam executors parse sys.argv + their Beam args as absl flags
  (base_beam_executor): under `pytest -v`, pytest's -v reads as absl's
  --verbosity and takes the next argument as its value, and the executor
  fails before it starts.
  """
  argv = sys.argv
  sys.argv = argv[:1]
  try:
    yield
  finally:
    sys.argv = argv


def run_example_gen(input_base, output_uri, options, input_config=None,
                    output_config=None):
  """Runs the ImageExampleGen executor; returns its Examples artifact."""
  with _program_argv():
    return example_gen_standalone.run_example_gen(
        input_base, output_uri, options, IN_MEMORY, input_config=input_config,
        output_config=output_config)


def make_transform_output(train_pattern, geometry, output_dir,
                          encoding='raw'):
  """Analyzes `train_pattern` with the project's preprocessing_fn."""
  return transform_analysis.analyze(train_pattern, geometry, output_dir,
                                    IN_MEMORY, encoding)



def trainer_inputs(data_dir, tmp, geometry):
  """ImageExampleGen on the train/eval folders of `data_dir`, then
  Transform, under `tmp`; returns the splits' file patterns."""
  from components.image_example_gen.options import ImageExampleGenOptions  # pylint: disable=g-import-not-at-top
  examples = run_example_gen(data_dir, tmp / 'examples', ImageExampleGenOptions(
      num_shards=2, input_format='images', geometry=geometry))
  patterns = {split: f'{examples.uri}/Split-{split}/*'
              for split in ('train', 'eval')}
  make_transform_output(patterns['train'], geometry, str(tmp / 'transform'))
  return patterns


def run_trainer(tmp, patterns, config, train_steps):
  """The Trainer's run_fn on trainer_inputs' `patterns` with TrainingConfig
  `config`; returns the serving model's directory."""
  # Imported here: most tests of this module's artifacts train nothing.
  from tfx.components.trainer.fn_args_utils import FnArgs  # pylint: disable=g-import-not-at-top
  from modules import trainer  # pylint: disable=g-import-not-at-top
  trainer.run_fn(FnArgs(
      train_files=[patterns['train']], eval_files=[patterns['eval']],
      train_steps=train_steps, eval_steps=None,
      transform_graph_path=str(tmp / 'transform'),
      serving_model_dir=str(tmp / 'serving'),
      model_run_dir=str(tmp / 'model_run'),
      custom_config={'training': config.to_dict()}))
  return str(tmp / 'serving')
