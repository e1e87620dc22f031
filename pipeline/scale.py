"""Settings that follow the size of the data, decided when the DAG is
built for a known input (local_runner.py): ExampleGen's Beam execution and
StatisticsGen's sampling (the thresholds are configs.py's)."""

from typing import List, Optional

from components.image_example_gen import input_size
from components.image_example_gen.component import default_input_config
from components.image_example_gen.errors import InputDataError
from pipeline import configs


def measure(data_root: str, input_format: str,
            span_dir_pattern: Optional[str] = None
            ) -> Optional[input_size.InputSize]:
  """The input's size; None when a file cannot be sized (a damaged IDX
  header): the run goes on with the small-data settings, and ExampleGen
  stops it with its error about that file, recorded in ML Metadata as a
  failed execution like any other bad input."""
  try:
    return input_size.measure(
        data_root, default_input_config(input_format, span_dir_pattern),
        input_format)
  except InputDataError:
    return None


def example_gen_beam_args(size: input_size.InputSize) -> List[str]:
  """In one process for small inputs, a worker per core for large ones."""
  return list(configs.EXAMPLE_GEN_MULTI_PROCESS_BEAM_ARGS
              if size.bytes >= configs.EXAMPLE_GEN_MULTI_PROCESS_MIN_BYTES
              else configs.EXAMPLE_GEN_IN_MEMORY_BEAM_ARGS)


def statistics_sample_rate(size: input_size.InputSize) -> Optional[float]:
  """TFDV's sample rate, or None (every record) for small inputs."""
  if size.records <= configs.STATISTICS_SAMPLE_ABOVE_RECORDS:
    return None
  return configs.STATISTICS_SAMPLE_RECORDS / size.records
