"""The record format every part of the pipeline shares: feature keys, image
geometry, writing Examples (features.py), decoding them in TensorFlow
(decode.py) and converting image files with Pillow as ImageExampleGen does
(image_conversion.py). It imports nothing of the project."""
