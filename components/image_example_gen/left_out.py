"""Image files left out of the Examples, listed on the Examples artifact:
images a `skip_bad_images` run skipped, and hidden and OS metadata files."""

import json
import os
from typing import Dict, Iterable, List, Tuple

from absl import logging
import tensorflow as tf
from tfx.types import standard_artifacts

from components.image_example_gen import image_folder
from components.image_example_gen.errors import InputDataError
from records import features

# Where the workers' files go, inside the Examples artifact's folder.
_WORK_DIR = '.skipped'
# Files listed in ML Metadata; the file next to the splits has all.
_MAX_LISTED = 100


def skipped_files(examples_uri: str, split_names) -> Dict[str, str]:
  """{split name: the file Beam writes its skipped images to}."""
  return {name: os.path.join(examples_uri, _WORK_DIR, f'{name}.jsonl')
          for name in split_names}


def record_skipped(examples: standard_artifacts.Examples,
                   split_files: Dict[str, List[str]],
                   skipped: Dict[str, str]) -> None:
  """Gathers what the workers skipped (`skipped_files`) onto `examples`.

  Raises:
    InputDataError: every image of a split was skipped.
  """
  listed = []
  for name, images in split_files.items():
    lines = []
    if tf.io.gfile.exists(skipped[name]):
      with tf.io.gfile.GFile(skipped[name]) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    if lines and len(lines) == len(images):
      # Nothing left to learn from: an empty split, whatever the option says.
      raise InputDataError(
          os.path.commonpath(images),
          f'all {len(lines)} images of split {name!r} are unreadable '
          f'(first: {lines[0]["path"]}: {lines[0]["reason"]})')
    listed += [{'split': name, **line} for line in lines]
  tf.io.gfile.rmtree(os.path.join(examples.uri, _WORK_DIR))
  listed.sort(key=lambda s: (s['split'], s['path']))
  if listed:
    logging.warning('Skipped %d unreadable images, e.g. %s: %s', len(listed),
                    listed[0]['path'], listed[0]['reason'])
  with tf.io.gfile.GFile(
      os.path.join(examples.uri, features.SKIPPED_IMAGES_FILE), 'w') as f:
    json.dump(listed, f, indent=1)
  examples.set_int_custom_property(features.SKIPPED_IMAGES_PROPERTY,
                                   len(listed))
  examples.set_string_custom_property(
      features.SKIPPED_IMAGES_LIST_PROPERTY, json.dumps(listed[:_MAX_LISTED]))


def record_os_files(examples: standard_artifacts.Examples,
                    split_patterns: Iterable[Tuple[str, str]]) -> None:
  """Lists the OS files of each (split name, pattern) on `examples`."""
  left_out = [{'split': name, 'path': path}
              for name, pattern in sorted(split_patterns)
              for path in image_folder.list_split(pattern)[1]]
  examples.set_int_custom_property(features.OS_FILES_PROPERTY, len(left_out))
  examples.set_string_custom_property(features.OS_FILES_LIST_PROPERTY,
                                      json.dumps(left_out[:_MAX_LISTED]))
  if left_out:
    logging.info('Left out %d hidden or OS metadata files, e.g. %s',
                 len(left_out), left_out[0]['path'])
    with tf.io.gfile.GFile(
        os.path.join(examples.uri, features.OS_FILES_FILE), 'w') as f:
      json.dump(left_out, f, indent=1)
