"""Chooses numpy's OpenBLAS kernels by the CPU's flags and vendor, before
numpy loads.

Importing this module does it; the entry files import it first. OpenBLAS
picks its kernels by CPU model, and falls back to SSE3 ones on models it
does not know. Why: docs/development.md, "How a process starts and ends".
"""

import os
from typing import AbstractSet, MutableMapping, Optional, Tuple

CORETYPE = 'OPENBLAS_CORETYPE'
CPUINFO = '/proc/cpuinfo'
_AVX512 = frozenset({'avx512f', 'avx512cd', 'avx512bw', 'avx512dq',
                     'avx512vl'})
# The vendors whose AVX2 cores OpenBLAS gives its Zen kernels.
_AMD = ('AuthenticAMD', 'HygonGenuine')


def kernels_for(flags: AbstractSet[str], vendor: str = '') -> Optional[str]:
  """Returns the kernels OpenBLAS picks on the CPUs it knows with these
  flags (as /proc/cpuinfo names them) and vendor; None below AVX2."""
  if _AVX512 <= flags:
    return 'Cooperlake' if 'avx512_bf16' in flags else 'SkylakeX'
  if {'avx2', 'fma'} <= flags:
    return 'Zen' if vendor in _AMD else 'Haswell'
  return None


def cpu_info(path: str = CPUINFO) -> Tuple[str, AbstractSet[str]]:
  """Returns the first CPU's (vendor, flags) in `path`; none where there is
  no such file (not Linux)."""
  vendor, flags = '', frozenset()
  try:
    with open(path, encoding='utf-8') as cpuinfo:
      for line in cpuinfo:
        name, _, value = line.partition(':')
        if name.strip() == 'vendor_id':
          vendor = value.strip()
        elif name.strip() == 'flags':
          flags = frozenset(value.split())
          break
  except OSError:
    pass
  return vendor, flags


def chosen(path: str = CPUINFO) -> Optional[str]:
  """The kernels kernels_for this CPU, as `path` describes it."""
  vendor, flags = cpu_info(path)
  return kernels_for(flags, vendor)


def choose(environ: MutableMapping[str, str] = os.environ,
           path: str = CPUINFO) -> None:
  """Sets OPENBLAS_CORETYPE in `environ` to the kernels chosen for this
  CPU, unless it is set already (the user's choice stands).

  OpenBLAS reads it once, when numpy or scipy loads it; the processes this
  one starts (Beam's workers) inherit it.
  """
  if CORETYPE not in environ:
    kernels = chosen(path)
    if kernels is not None:
      environ[CORETYPE] = kernels


choose()
