"""Benchmarks: `python -m benchmarks` (BENCHMARKS.md), and older
single-purpose scripts (full_run.py, transform_choice.py)."""
