"""The hidden and OS metadata files of image folders, onto the Examples
artifact.

Such files (.DS_Store, Thumbs.db, ._name...) are not images and are left
out of the Examples (image_folder.is_os_file), but never silently: `record`
lists them on the artifact, and the run summary shows them.
"""

import json
import os
from typing import Iterable, Tuple

from absl import logging
import tensorflow as tf
from tfx.types import standard_artifacts

from components.image_example_gen import image_folder
from records import features

# Files listed in ML Metadata; the file next to the splits has all.
_MAX_LISTED = 100


def record(examples: standard_artifacts.Examples,
           split_patterns: Iterable[Tuple[str, str]]) -> None:
  """Lists the OS files of each split ((name, pattern) pairs, several for
  a split read from a window of spans) on `examples`."""
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
