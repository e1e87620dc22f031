"""Section 1, conversion: the tutorial loop vs our ImageExampleGen.

Both start from the same gzipped IDX files and end with TFRecord files on
disk. Ours is the real component's executor (constructed as TFX's Beam
executor operator does, with the pipeline's Beam args for ExampleGen), so
the wall time includes validating the input, Beam's start-up and gzip.

Beam's start-up and validating the input are a fixed cost per run; the
steady-state (marginal) rate is measured too, from a run on a tenth of the
data: (N - N/10) / (t(N) - t(N/10)).
"""

import dataclasses
import os
import shutil
from typing import Dict, List

from benchmarks import data
from benchmarks import reference_tutorial
from benchmarks.timing import Figure, timed
from components.image_example_gen.options import ImageExampleGenOptions
from pipeline import configs
from pipeline.knobs import DataConfig
from pipeline import scale
from tests import example_gen_standalone

# Beam args of every Beam component in a local run (local_runner.py).
BEAM_ARGS = (list(configs.BEAM_PIPELINE_ARGS) +
             list(configs.LOCAL_BEAM_PIPELINE_ARGS))


def example_gen_beam_args(data_dir: str):
  """ExampleGen's Beam args in a local run on `data_dir`: its execution
  follows the input's size (pipeline/scale.py)."""
  return BEAM_ARGS + scale.example_gen_beam_args(scale.measure(data_dir,
                                                               'idx'))


@dataclasses.dataclass
class Result:
  examples: int
  seconds: Dict[str, Figure]  # 'reference', 'ours'
  rate: Dict[str, Figure]  # examples/s
  marginal_rate: Dict[str, Figure]  # examples/s beyond the fixed costs
  bytes: Dict[str, int]
  reference_files: Dict[str, List[str]]  # split -> files
  our_examples_uri: str


def _reference(data_dir: str, out_dir: str):
  shutil.rmtree(out_dir, ignore_errors=True)
  return reference_tutorial.convert(data.load(data_dir), out_dir)


def _ours(data_dir: str, out_dir: str):
  shutil.rmtree(out_dir, ignore_errors=True)
  return example_gen_standalone.run_example_gen(
      data_dir, out_dir, ImageExampleGenOptions(num_shards=DataConfig().num_shards),
      example_gen_beam_args(data_dir))


def run(data_dir: str, work_dir: str, repetitions: int) -> Result:
  examples = data.count(data_dir)
  small_dir = os.path.join(work_dir, 'tenth')
  small_examples = data.write_subset(data_dir, small_dir, 0.1)
  runs = {'reference': _reference, 'ours': _ours}
  seconds = {name: Figure() for name in runs}
  rate = {name: Figure() for name in runs}
  marginal = {name: Figure() for name in runs}
  outputs = {}
  for _ in range(repetitions):  # Interleaved, so noise hits both alike.
    for name, convert in runs.items():
      out_dir = os.path.join(work_dir, f'conversion-{name}')
      small_s, _ = timed(lambda: convert(small_dir, out_dir + '-tenth'))  # pylint: disable=cell-var-from-loop
      full_s, outputs[name] = timed(lambda: convert(data_dir, out_dir))  # pylint: disable=cell-var-from-loop
      seconds[name].add(full_s)
      rate[name].add(examples / full_s)
      marginal[name].add((examples - small_examples) /
                         max(full_s - small_s, 1e-9))
  ours = outputs['ours']
  return Result(
      examples=examples, seconds=seconds, rate=rate, marginal_rate=marginal,
      bytes={'reference': data.bytes_on_disk(
          os.path.join(work_dir, 'conversion-reference')),
             'ours': sum(data.bytes_on_disk(os.path.join(ours.uri, f'Split-{s}'))
                         for s in data.SPLIT_PREFIXES)},
      reference_files=outputs['reference'], our_examples_uri=ours.uri)
