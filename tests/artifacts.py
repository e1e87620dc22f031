"""Real artifacts for the tests: Examples from the ImageExampleGen executor
and a transform graph from tf.Transform, both through real Beam, in one
process (the project's standalone runners, with in-memory Beam)."""

from tests import example_gen_standalone
from tests import transform_analysis

IN_MEMORY = ['--direct_running_mode=in_memory']
mnist_schema = transform_analysis.mnist_schema


def run_example_gen(input_base, output_uri, options, input_config=None,
                    output_config=None):
  """Runs the ImageExampleGen executor; returns its Examples artifact."""
  return example_gen_standalone.run_example_gen(
      input_base, output_uri, options, IN_MEMORY, input_config=input_config,
      output_config=output_config)


def make_transform_output(train_pattern, geometry, output_dir,
                          encoding='raw'):
  """Analyzes `train_pattern` with the project's preprocessing_fn."""
  return transform_analysis.analyze(train_pattern, geometry, output_dir,
                                    IN_MEMORY, encoding)
