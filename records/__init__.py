"""The record format every part of the pipeline shares.

features.py defines it and decode.py reads it in TensorFlow; this package
imports nothing of the project. The format: docs/input-data.md.
"""
