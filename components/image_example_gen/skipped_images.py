"""The images a `skip_bad_images` run skipped, onto the Examples artifact.

Beam's workers write each split's skipped images to a file of its own
(image_folder_source.py); once the pipeline has run, `record` gathers them
into one list next to the splits and into ML Metadata, and removes the
workers' files.
"""

import json
import os
from typing import Dict, List

from absl import logging
import tensorflow as tf
from tfx.types import standard_artifacts

from components.image_example_gen.errors import InputDataError
from records import features

# Where the workers' files go, inside the Examples artifact's folder.
_WORK_DIR = '.skipped'
# Skipped images listed in ML Metadata; the file next to the splits has all.
_MAX_LISTED = 100


def files(examples_uri: str, split_names) -> Dict[str, str]:
  """{split name: the file Beam writes its skipped images to}."""
  return {name: os.path.join(examples_uri, _WORK_DIR, f'{name}.jsonl')
          for name in split_names}


def record(examples: standard_artifacts.Examples,
           split_files: Dict[str, List[str]],
           skipped_files: Dict[str, str]) -> None:
  """Gathers what the workers skipped onto the Examples artifact.

  Args:
    examples: the artifact; its folder holds the workers' files.
    split_files: {split name: the image files it was made of}.
    skipped_files: what `files` returned for them.

  Raises:
    InputDataError: every image of a split was skipped.
  """
  skipped = []
  for name, images in split_files.items():
    path = skipped_files[name]
    lines = []
    if tf.io.gfile.exists(path):
      with tf.io.gfile.GFile(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    if lines and len(lines) == len(images):
      # Nothing left to learn from: an empty split, whatever the option says.
      raise InputDataError(
          os.path.commonpath(images),
          f'all {len(lines)} images of split {name!r} are unreadable '
          f'(first: {lines[0]["path"]}: {lines[0]["reason"]})')
    skipped += [{'split': name, **line} for line in lines]
  tf.io.gfile.rmtree(os.path.join(examples.uri, _WORK_DIR))
  skipped.sort(key=lambda s: (s['split'], s['path']))
  if skipped:
    logging.warning('Skipped %d unreadable images, e.g. %s: %s', len(skipped),
                    skipped[0]['path'], skipped[0]['reason'])
  with tf.io.gfile.GFile(
      os.path.join(examples.uri, features.SKIPPED_IMAGES_FILE), 'w') as f:
    json.dump(skipped, f, indent=1)
  examples.set_int_custom_property(features.SKIPPED_IMAGES_PROPERTY,
                                   len(skipped))
  examples.set_string_custom_property(
      features.SKIPPED_IMAGES_LIST_PROPERTY, json.dumps(skipped[:_MAX_LISTED]))
