"""Section 1, conversion: the tutorial loop vs our ImageExampleGen, from
the same IDX files to TFRecords; also from a tenth of the data, for the
steady-state rate without the fixed costs (Beam's start-up, validation)."""

import dataclasses
import os
import shutil
from typing import Dict, List, Optional

from benchmarks import data
from benchmarks import reference_tutorial
from benchmarks import runs
from benchmarks.figures import Figure, figures, timed


@dataclasses.dataclass
class Result:
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


def _reference(data_dir: str, out_dir: str):
  shutil.rmtree(out_dir, ignore_errors=True)
  return {split: reference_tutorial.write_split(images, labels, out_dir, split)
          for split, (images, labels) in data.load(data_dir).items()}


def _ours(data_dir: str, out_dir: str):
  shutil.rmtree(out_dir, ignore_errors=True)
  return runs.example_gen(data_dir, out_dir,
                          runs.example_gen_beam_args(data_dir))


def run(data_dir: str, work_dir: str, repetitions: int) -> Result:
  examples = data.count(data_dir)
  small_dir = os.path.join(work_dir, 'tenth')
  small_examples = data.write_subset(data_dir, small_dir, 0.1)
  converters = {'reference': _reference, 'ours': _ours}
  seconds, small_seconds, rate = (figures(converters) for _ in range(3))
  outputs = {}
  for _ in range(repetitions):  # Interleaved, so noise hits both alike.
    for name, convert in converters.items():
      out_dir = os.path.join(work_dir, f'conversion-{name}')
      small_s, _ = timed(lambda: convert(small_dir, out_dir + '-tenth'))  # pylint: disable=cell-var-from-loop
      full_s, outputs[name] = timed(lambda: convert(data_dir, out_dir))  # pylint: disable=cell-var-from-loop
      seconds[name].add(full_s)
      small_seconds[name].add(small_s)
      rate[name].add(examples / full_s)
  marginal = {}
  for name in converters:
    extra_s = seconds[name].median - small_seconds[name].median
    marginal[name] = ((examples - small_examples) / extra_s if extra_s > 0
                      else None)
  ours = outputs['ours'].uri
  return Result(
      examples=examples, seconds=seconds, rate=rate, marginal_rate=marginal,
      bytes={'reference': data.bytes_on_disk(
          os.path.join(work_dir, 'conversion-reference')),
             'ours': data.bytes_on_disk(os.path.join(ours, 'Split-*'))},
      reference_files=outputs['reference'], our_examples_uri=ours)
