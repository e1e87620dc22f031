"""The record format every part of the pipeline shares.

features.py holds the feature keys and image geometry and writes Examples.
decode.py decodes them in TensorFlow. image_conversion.py converts image
files with Pillow as ImageExampleGen does. served_versions.py says which
folders of a serving directory are served versions. This package imports
nothing of the project.
"""
