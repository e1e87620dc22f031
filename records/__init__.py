"""The record format every part of the pipeline shares: feature keys, image
geometry, writing Examples (features.py) and decoding them in TensorFlow
(decode.py). It imports nothing of the project."""
