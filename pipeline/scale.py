"""Settings that follow the size of the data.

They are decided when the DAG is built for a known input (local_runner.py).
They set the Beam execution of ExampleGen and of the components that analyse
the records, and StatisticsGen's sampling.
"""

from typing import List, Optional

from components.image_example_gen import input_size
from components.image_example_gen.component import default_input_config
from components.image_example_gen.errors import InputDataError

# ExampleGen runs in one process below this many bytes of input (pixels in
# IDX files, image files in folders), with a worker per core from there on.
# Memory stays bounded either way. The choice is speed: each worker process
# imports TensorFlow and TFX first, which only inputs of several GB repay
# (BENCHMARKS.md).
EXAMPLE_GEN_MULTI_PROCESS_MIN_BYTES = 5 * 10**9
EXAMPLE_GEN_IN_MEMORY_BEAM_ARGS = ('--direct_running_mode=in_memory',
                                   '--direct_num_workers=1')
EXAMPLE_GEN_MULTI_PROCESS_BEAM_ARGS = ('--direct_running_mode=multi_processing',
                                       '--direct_num_workers=0')
# StatisticsGen, Transform and the Evaluator in one process below this many
# records (all splits), a worker per core (the pipeline's Beam args) from
# there on: each worker process imports TensorFlow and TFDV, tf.Transform or
# TFMA (and loads the model) before its first record, which costs more than
# a second core saves on a small input.
ANALYSIS_MULTI_PROCESS_MIN_RECORDS = 200_000
ANALYSIS_IN_MEMORY_BEAM_ARGS = EXAMPLE_GEN_IN_MEMORY_BEAM_ARGS
# StatisticsGen: TFDV computes statistics over a sample of the record
# batches, STATISTICS_SAMPLE_RECORDS of them, when the input holds more than
# STATISTICS_SAMPLE_ABOVE_RECORDS records. A sample loses exact counts
# (TFDV scales them) and rare values, which the schema's checks (label and
# pixel domains) do not need at that size; the records are still read.
STATISTICS_SAMPLE_ABOVE_RECORDS = 1_000_000
STATISTICS_SAMPLE_RECORDS = 500_000


def measure(data_root: str, input_format: str,
            span_dir_pattern: Optional[str] = None
            ) -> Optional[input_size.InputSize]:
  """Returns the input's size, or None when a file cannot be sized.

  Args:
    data_root: the folder of the images or IDX files.
    input_format: 'idx' or 'images', as --input-format.
    span_dir_pattern: each span's folder name, with {SPAN}; None: one span,
      the files right under `data_root`.

  A damaged IDX header gives None. The run then goes on with the small-data
  settings, and ExampleGen stops it with its error about that file. ML
  Metadata records that as a failed execution like any other bad input.
  """
  try:
    return input_size.measure(
        data_root, default_input_config(input_format, span_dir_pattern),
        input_format)
  except InputDataError:
    return None


def example_gen_beam_args(size: Optional[input_size.InputSize]) -> List[str]:
  """Returns ExampleGen's Beam args for an input of `size`.

  They run it in one process for small or unknown (None) inputs, and with a
  worker per core for large ones.
  """
  return list(EXAMPLE_GEN_MULTI_PROCESS_BEAM_ARGS
              if size and size.bytes >= EXAMPLE_GEN_MULTI_PROCESS_MIN_BYTES
              else EXAMPLE_GEN_IN_MEMORY_BEAM_ARGS)


def analysis_beam_args(size: Optional[input_size.InputSize]) -> List[str]:
  """Returns the Beam args of the components that analyse the records.

  They run in one process for small inputs. Large or unknown inputs (those
  on an object store) get none, so the pipeline's Beam args apply.
  """
  return list(ANALYSIS_IN_MEMORY_BEAM_ARGS
              if size and size.records < ANALYSIS_MULTI_PROCESS_MIN_RECORDS
              else ())


def statistics_sample_rate(size: Optional[input_size.InputSize]
                           ) -> Optional[float]:
  """Returns TFDV's sample rate, or None (every record) for small inputs."""
  if not size or size.records <= STATISTICS_SAMPLE_ABOVE_RECORDS:
    return None
  return STATISTICS_SAMPLE_RECORDS / size.records
