"""Benchmarks: `python -m benchmarks` writes BENCHMARKS.md (harness.py)."""

# First: OpenBLAS reads its kernels when numpy loads (see there), as in a
# run.
from pipeline import openblas_kernels  # pylint: disable=unused-import
