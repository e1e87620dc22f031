"""Chooses numpy's OpenBLAS kernels by the CPU's flags, before numpy loads.

Importing this module does it; the entry files import it first. OpenBLAS
picks its kernels by CPU model, and falls back to SSE3 ones on models it
does not know. Why: docs/development.md, "How a process starts and ends".
"""

import os
from typing import AbstractSet, MutableMapping, Optional

CORETYPE = 'OPENBLAS_CORETYPE'
CPUINFO = '/proc/cpuinfo'
_AVX512 = frozenset({'avx512f', 'avx512cd', 'avx512bw', 'avx512dq',
                     'avx512vl'})


def kernels_for(flags: AbstractSet[str]) -> Optional[str]:
  """Returns the kernels OpenBLAS picks on the CPUs it knows with these
  flags (as /proc/cpuinfo names them); None below AVX2."""
  if _AVX512 <= flags:
    return 'Cooperlake' if 'avx512_bf16' in flags else 'SkylakeX'
  if {'avx2', 'fma'} <= flags:
    return 'Haswell'
  return None


def cpu_flags(path: str = CPUINFO) -> AbstractSet[str]:
  """Returns the first CPU's flags in `path`; none where there is no such
  file (not Linux)."""
  try:
    with open(path, encoding='utf-8') as cpuinfo:
      for line in cpuinfo:
        name, _, value = line.partition(':')
        if name.strip() == 'flags':
          return frozenset(value.split())
  except OSError:
    pass
  return frozenset()


def choose(environ: MutableMapping[str, str] = os.environ,
           path: str = CPUINFO) -> None:
  """Sets OPENBLAS_CORETYPE in `environ` to kernels_for this CPU, unless
  it is set already (the user's choice stands).

  OpenBLAS reads it once, when numpy or scipy loads it; the processes this
  one starts (Beam's workers) inherit it.
  """
  if CORETYPE not in environ:
    kernels = kernels_for(cpu_flags(path))
    if kernels is not None:
      environ[CORETYPE] = kernels


choose()
