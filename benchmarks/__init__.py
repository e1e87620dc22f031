"""Benchmarks: `python -m benchmarks` writes BENCHMARKS.md (harness.py)."""
