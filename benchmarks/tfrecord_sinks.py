"""The tfrecord-sinks section: ImageExampleGen writing its shards with the
project's batched sink (ours) or, as TFX's own ExampleGen does, with Beam's
`WriteToTFRecord`, the same shard count. Each run is a fresh process under
a memory cgroup where one can be made: a writer holding a split in memory
ends in the OOM killer, not in swap.
"""

import dataclasses
import os
import shutil
import subprocess
import sys
import time
from typing import Any, Dict, List

import apache_beam as beam
from tfx.components.example_gen import write_split
from tfx.dsl.components.base import base_beam_executor
from tfx.types import artifact_utils

from benchmarks import harness
from benchmarks.harness import Figure
from components.image_example_gen import executor
from components.image_example_gen.options import ImageExampleGenOptions
from pipeline import constants

OURS = 'ours (batched, per worker)'
BEAM = "Beam's WriteToTFRecord"

# What one run does: argv is the sink ('ours' or 'beam'), the data and the
# output directory.
_RUN = '''
import sys
from benchmarks import harness
from benchmarks import tfrecord_sinks
from components.image_example_gen.options import ImageExampleGenOptions
from tests import example_gen_standalone
sink, data_dir, out_dir = sys.argv[1:]
beam_args = harness.example_gen_beam_args(data_dir)
example_gen_standalone.run_example_gen(
    data_dir, out_dir, ImageExampleGenOptions(num_shards=harness.DATA.num_shards),
    beam_args, example_gen=(tfrecord_sinks.beam_sink_executor(beam_args)
                            if sink == 'beam' else None))
'''


class BeamSinkExecutor(executor.Executor):
  """ImageExampleGen writing its splits with Beam's TFRecord sink, as TFX's
  ExampleGen does (write_split.WriteSplit), with a fixed shard count."""

  def _write_splits(self, pipeline: beam.Pipeline,
                    exec_properties: Dict[str, Any], plan,
                    examples_channel: List[Any]) -> None:
    del plan  # GenerateExamplesByBeam reads it.
    options = ImageExampleGenOptions.from_exec_properties(exec_properties)
    for split, records in self.GenerateExamplesByBeam(
        pipeline, exec_properties).items():
      _ = records | f'WriteSplit[{split}]' >> beam.io.WriteToTFRecord(
          os.path.join(artifact_utils.get_split_uri(examples_channel, split),
                       write_split.DEFAULT_TF_RECORD_FILE_NAME),
          file_name_suffix='.gz', num_shards=options.num_shards)


def beam_sink_executor(beam_pipeline_args: List[str]) -> BeamSinkExecutor:
  """BeamSinkExecutor, built as tests/example_gen_standalone.py builds ours."""
  return BeamSinkExecutor(base_beam_executor.BaseBeamExecutor.Context(
      beam_pipeline_args=[*beam_pipeline_args,
                          *constants.LOCAL_BEAM_PIPELINE_ARGS]))


@dataclasses.dataclass
class Run:
  """A sink's runs on one input."""
  wall: Figure = dataclasses.field(default_factory=Figure)
  cpu: Figure = dataclasses.field(default_factory=Figure)
  peak_gib: Figure = dataclasses.field(default_factory=Figure)
  output_bytes: int = 0
  load: List[str] = dataclasses.field(default_factory=list)
  killed: List[str] = dataclasses.field(default_factory=list)


def run_once(sink: str, data_dir: str, out_dir: str, result: Run,
             cap_bytes: int) -> None:
  """One ExampleGen in a fresh process under `cap_bytes` (when a cgroup
  can be made); adds its figures to `result`."""
  shutil.rmtree(out_dir, ignore_errors=True)
  result.load.append(open('/proc/loadavg').read().split()[0])
  env = {**os.environ, 'PYTHONPATH': harness.PROJECT_DIR}
  group, _ = harness.make_cgroup(f'tfrecord-sinks-{os.getpid()}', cap_bytes)
  command = [sys.executable, '-c', _RUN, sink, data_dir, out_dir]
  start = time.perf_counter()
  try:
    with open(out_dir + '.log', 'w') as log:
      process = subprocess.Popen(  # pylint: disable=consider-using-with
          group.wrap(command) if group else command,
          cwd=harness.PROJECT_DIR, env=env,
          stdout=log, stderr=subprocess.STDOUT)
      _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    oom_kills = group.oom_kills() if group else 0
  finally:
    if group:
      group.remove()
  if oom_kills:
    result.killed.append(f'{wall:.0f}')
    shutil.rmtree(out_dir, ignore_errors=True)
    return
  if process.returncode:
    sys.exit(f'ImageExampleGen ({sink}) failed; see {out_dir}.log')
  result.wall.add(wall)
  result.cpu.add(usage.ru_utime + usage.ru_stime)
  result.peak_gib.add(usage.ru_maxrss * 1024 / 2**30)
  result.output_bytes = harness.bytes_on_disk(out_dir)
  shutil.rmtree(out_dir, ignore_errors=True)


def measure_input(data_dir: str, work_dir: str, repetitions: int,
                  cap_bytes: int) -> Dict[str, Run]:
  """Both sinks on one input, in turn."""
  sinks = {BEAM: 'beam', OURS: 'ours'}
  runs = {name: Run() for name in sinks}
  for _ in range(repetitions):
    for name, sink in sinks.items():
      run_once(sink, data_dir, os.path.join(work_dir, f'examples-{sink}'),
               runs[name], cap_bytes)
  return runs


def measure(ctx: harness.Context) -> Dict[str, Any]:
  """Per input each sink's runs, the cap, and whether a cgroup held it."""
  cap_bytes = int(ctx.args.memory_cap_gb * 1e9)
  probe, _ = harness.make_cgroup(f'tfrecord-sinks-probe-{os.getpid()}',
                                 cap_bytes)
  if probe:
    probe.remove()
  return dict(results={
      os.path.basename(os.path.normpath(d)): measure_input(
          os.path.abspath(d), ctx.work_dir, ctx.repetitions, cap_bytes)
      for d in ctx.args.data_dirs}, cap_bytes=cap_bytes,
              capped=probe is not None, beam=BEAM, ours=OURS)


SECTION = harness.Section(
    heading='## TFRecord sinks: ImageExampleGen with Beam\'s WriteToTFRecord '
    'or a home-made sink', measure=measure, template='tfrecord_sinks.md.j2')
