"""Which folders of a serving directory are served versions, and where a
served model came from.

The Pusher, ServedModel, warm start, --keep-runs and the predict tool all
ask this module. Why and how: docs/serving.md#a-push-is-whole-or-absent.
"""

import re
from typing import Callable, Iterable, Optional

SAVED_MODEL_FILE = 'saved_model.pb'
# ServedModel's Model artifact property: the served version's path, '' when
# nothing was served.
SERVED_FROM_PROPERTY = 'served_from'
# The served model a Trainer started from ('' from scratch): an entry of
# its training_plan.json, and a property of its Model artifact.
WARM_START_FROM = 'warm_start_from'
# TF Serving loads only version folders named by digits.
_VERSION = re.compile('[0-9]+')


def is_version(name: str) -> bool:
  """Whether `name` is a version folder's name: digits only."""
  return bool(_VERSION.fullmatch(name))


def newest(names: Iterable[str],
           holds_saved_model: Callable[[str], bool]) -> Optional[str]:
  """Returns the highest numbered name whose folder holds a SavedModel.

  Names not all digits (a push still copying, or left by a killed one) and
  folders without saved_model.pb (copied last) are not versions.

  Args:
    names: a serving directory's entries (a trailing '/' is ignored).
    holds_saved_model: whether the entry of that name holds saved_model.pb.

  Returns:
    The version, None if there is none.
  """
  versions = sorted((name for name in (n.rstrip('/') for n in names)
                     if is_version(name)), key=int, reverse=True)
  return next((v for v in versions if holds_saved_model(v)), None)
