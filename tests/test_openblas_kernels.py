"""pipeline/openblas_kernels.py: the kernels chosen by the CPU's flags and
vendor, a choice the user made kept, and numpy's and scipy's OpenBLAS
running the chosen kernels in the processes a run starts from."""

import json
import os
import subprocess
import sys

import pytest

from pipeline import openblas_kernels
from tests.local_run import PROJECT_DIR

AVX512 = {'avx512f', 'avx512cd', 'avx512bw', 'avx512dq', 'avx512vl'}
AVX2 = {'sse3', 'avx', 'avx2', 'fma'}


@pytest.mark.parametrize('flags, vendor, kernels', [
    (AVX2 | AVX512 | {'avx512_bf16', 'amx_bf16'}, 'GenuineIntel',
     'Cooperlake'),
    (AVX2 | AVX512 | {'avx512_bf16'}, 'AuthenticAMD', 'Cooperlake'),
    (AVX2 | AVX512, 'GenuineIntel', 'SkylakeX'),
    # AVX-512 in part: not SkylakeX's.
    (AVX2 | {'avx512f'}, 'GenuineIntel', 'Haswell'),
    (AVX2, 'GenuineIntel', 'Haswell'),
    (AVX2, 'AuthenticAMD', 'Zen'),
    ({'sse3', 'avx'}, 'GenuineIntel', None),
])
def test_kernels_follow_the_cpus_flags_and_vendor(flags, vendor, kernels):
  assert openblas_kernels.kernels_for(frozenset(flags), vendor) == kernels


def test_vendor_and_flags_are_read_from_the_first_cpu(tmp_path):
  cpuinfo = tmp_path / 'cpuinfo'
  cpuinfo.write_text('processor\t: 0\nvendor_id\t: AuthenticAMD\n'
                     'flags\t\t: fpu sse3 avx avx2 fma\n\n'
                     'processor\t: 1\nvendor_id\t: Other\nflags\t\t: fpu\n')
  assert openblas_kernels.cpu_info(str(cpuinfo)) == (
      'AuthenticAMD', {'fpu', 'sse3', 'avx', 'avx2', 'fma'})
  assert openblas_kernels.chosen(str(cpuinfo)) == 'Zen'
  assert openblas_kernels.cpu_info(str(tmp_path / 'missing')) == ('', set())


def test_the_choice_is_set_unless_the_user_made_one(tmp_path):
  cpuinfo = tmp_path / 'cpuinfo'
  cpuinfo.write_text('flags\t\t: sse3 avx avx2 fma\n')
  environ = {}
  openblas_kernels.choose(environ, str(cpuinfo))
  assert environ == {'OPENBLAS_CORETYPE': 'Haswell'}
  environ = {'OPENBLAS_CORETYPE': 'Prescott'}
  openblas_kernels.choose(environ, str(cpuinfo))
  assert environ == {'OPENBLAS_CORETYPE': 'Prescott'}
  cpuinfo.write_text('flags\t\t: sse3\n')
  environ = {}
  openblas_kernels.choose(environ, str(cpuinfo))
  assert not environ  # OpenBLAS's own detection.


def _kernels_in_a_process(entry_module: str) -> dict:
  """{library file: the kernels OpenBLAS runs} in a fresh process that
  imports `entry_module`, then numpy and scipy's BLAS, as a run would."""
  program = (
      'import json, os\n'
      f'import {entry_module}\n'
      'import numpy, scipy.linalg\n'
      'from threadpoolctl import threadpool_info\n'
      'print(json.dumps({os.path.basename(i["filepath"]): i["architecture"]\n'
      '                  for i in threadpool_info()\n'
      '                  if i["internal_api"] == "openblas"}))\n')
  environ = {k: v for k, v in os.environ.items()
             if k != openblas_kernels.CORETYPE}
  result = subprocess.run(
      [sys.executable, '-c', program], cwd=PROJECT_DIR,
      env=environ, capture_output=True, text=True, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.parametrize('entry_module', [
    'local_runner', 'kubeflow.container_entrypoint', 'benchmarks'])
def test_numpy_and_scipy_run_the_chosen_kernels(entry_module):
  # Fails if OpenBLAS stops taking the names, or if an entry file loads
  # numpy before choosing.
  kernels = openblas_kernels.chosen()
  if kernels is None:
    pytest.skip('no AVX2 on this CPU: OpenBLAS detects its kernels itself')
  found = _kernels_in_a_process(entry_module)
  assert len(found) == 2, found  # numpy's OpenBLAS and scipy's.
  assert set(found.values()) == {kernels}, found
