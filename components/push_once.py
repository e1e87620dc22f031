"""TFX's Pusher, copying whole or not at all, and not again what is served.

It copies into a hidden sibling and renames it into place once complete.
Why and how: docs/serving.md#a-push-is-whole-or-absent.
"""

import os
import re
import socket
import time
from typing import Any, Dict, List, Optional
import uuid

from absl import logging
import tensorflow as tf
from tfx import types
from tfx.components.pusher import component as pusher_component
from tfx.components.pusher import executor as pusher_executor
from tfx.dsl.components.base import executor_spec
from tfx.dsl.io import fileio
from tfx.proto import pusher_pb2
from tfx.types import artifact_utils
from tfx.types import standard_component_specs
from tfx.utils import io_utils
from tfx.utils import proto_utils

from components import tfx_workarounds
from records import serving_model

# Set to 1 on a PushedModel whose model was found already served.
_CHUNK_BYTES = 1 << 20
# A push copies into BASE/.push-<start time>-<host>-<pid>-<random>/<version>/
# first: a name not all digits, so no lookup takes it for a version.
_STAGING = re.compile(r'\.push-(?P<start>[0-9]+)-(?P<host>.+)-(?P<pid>[0-9]+)'
                      r'-[0-9a-f]{8}')
# Started longer ago than this, another host's staging folder is a killed
# push's.
_STALE_SECONDS = 3600


def _file_sizes(root: str) -> Dict[str, int]:
  """Relative path -> size of every file under `root`."""
  sizes = {}
  for dirpath, _, filenames in fileio.walk(root):
    for name in filenames:
      path = os.path.join(dirpath, name)
      stat = fileio.stat(path)  # TensorFlow's FileStatistics, or os.stat
      sizes[os.path.relpath(path, root)] = getattr(stat, 'length', None) or (
          getattr(stat, 'st_size', 0))
  return sizes


def _same_bytes(a: str, b: str) -> bool:
  with fileio.open(a, 'rb') as fa, fileio.open(b, 'rb') as fb:
    while True:
      chunk = fa.read(_CHUNK_BYTES)
      if chunk != fb.read(_CHUNK_BYTES):
        return False
      if not chunk:
        return True


def same_files(a: str, b: str) -> bool:
  """Whether directories `a` and `b` hold the same files, byte for byte."""
  sizes = _file_sizes(a)
  if sizes != _file_sizes(b):
    return False
  return all(_same_bytes(os.path.join(a, p), os.path.join(b, p))
             for p in sorted(sizes))


class ServingDirectoryError(IOError):
  """The serving directory could not be read, so what is served is unknown."""


def _store_root(path: str) -> Optional[str]:
  """'s3://bucket/' of an object store URL; None for a local path."""
  scheme, sep, rest = path.partition('://')
  return f'{scheme}://{rest.split("/", 1)[0]}/' if sep and rest else None


def _cause(error: Exception) -> str:
  """'PermissionDeniedError: ...': TFX's NotFoundError says nothing itself."""
  error = error if str(error) else (error.__cause__ or error)
  message = getattr(error, 'message', None) or str(error) or 'not found'
  return f'{type(error).__name__}: {message.strip()}'


def _stat(base_directory: str):
  """Returns the directory's statistics, None if it does not exist.

  `fileio.isdir` and `fileio.listdir` answer "no such directory" whatever
  went wrong. `stat` raises NotFoundError only when the path is missing, and
  other errors as they are. S3 is the exception. There tensorflow-io answers
  NotFound for a path under a bucket whatever failed, a denied listing too.
  So a path said missing is believed only once its bucket answers, since a
  bucket's own stat reports its errors, and once `_check_missing` agrees.
  """
  try:
    return fileio.stat(base_directory)
  except fileio.NotFoundError:
    root = _store_root(base_directory)
    if root and root != base_directory:
      try:
        fileio.stat(root)
      except fileio.NotFoundError:
        return None  # No bucket: nothing served.
      _check_missing(base_directory, root)
    return None


def _check_missing(path: str, root: str) -> None:
  """Raises OSError unless the nearest listable folder above `path`, up to
  the bucket `root`, shows `path` missing.

  Listing a folder reports a denied listing (PermissionDeniedError), while
  a folder that is missing or denied alike reads as NotFound: so climb
  until a listing answers. Listed there yet said missing, `path` is there
  but cannot be read.
  """
  child = path.rstrip('/')
  while True:
    parent, name = child.rsplit('/', 1)
    parent += '/'
    try:
      names = {n.rstrip('/') for n in fileio.listdir(parent)}
    except fileio.NotFoundError:
      if parent == root:
        return
      child = parent.rstrip('/')
      continue
    if name in names:
      raise OSError(f'{parent} lists {name}, yet reading {path} says it '
                    'does not exist (its listing denied?)')
    return


def _unreadable(base_directory: str,
                error: Exception) -> ServingDirectoryError:
  return ServingDirectoryError(
      f'cannot read the serving directory {base_directory}, so which model '
      f'is served is unknown: {_cause(error)}')


def newest_version(base_directory: str) -> Optional[str]:
  """Returns the newest version under `base_directory` (serving_model.newest).

  Returns None if it does not exist or holds no version.

  Raises:
    ServingDirectoryError: it cannot be read (permissions, an unreachable
      object store, ...). Taking that for "nothing served" would skip the
      comparison with the served model and push a possibly worse one.
  """
  try:
    stat = _stat(base_directory)
    # It exists: any error now, NotFound too, is one reading it.
    names = (fileio.listdir(base_directory) if stat and stat.is_directory
             else [])
  except (OSError, tf.errors.OpError) as e:
    raise _unreadable(base_directory, e) from e
  if stat is None:
    return None
  if not stat.is_directory:
    raise ServingDirectoryError(
        f'serving directory {base_directory}: a file, not a directory of '
        'model versions')

  def holds_saved_model(version: str) -> bool:
    try:
      fileio.stat(os.path.join(base_directory, version,
                               serving_model.SAVED_MODEL_FILE))
    except fileio.NotFoundError:
      return False
    return True

  try:
    return serving_model.newest(names, holds_saved_model)
  except (OSError, tf.errors.OpError) as e:
    raise _unreadable(base_directory, e) from e


def _staging_name() -> str:
  return (f'.push-{int(time.time())}-{socket.gethostname()}-{os.getpid()}-'
          f'{uuid.uuid4().hex[:8]}')


def _killed(name: str) -> bool:
  """Whether `name` is a staging folder no push is writing any more.

  It is if a process of this host wrote it and has ended, or if another
  host's push started it over _STALE_SECONDS ago (its process cannot be
  asked). A process of this host that is alive is still writing it, however
  long it has run.
  """
  staging = _STAGING.fullmatch(name)
  if not staging:
    return False
  if staging['host'] != socket.gethostname():
    return time.time() - int(staging['start']) > _STALE_SECONDS
  try:
    os.kill(int(staging['pid']), 0)
  except ProcessLookupError:
    return True
  except PermissionError:  # Another user's live process.
    return False
  return False


def _remove_push(base_directory: str, staging: str) -> None:
  """Removes the staging folder `staging`, and first what it half moved.

  On an object store its `<version>/` is copied object by object to the
  version folder, saved_model.pb last: a push stopped during that copy
  leaves, beside its staging folder, the version folder without
  saved_model.pb. Removed before the staging folder, which marks it as this
  push's, it is never left unmarked.
  """
  staged = os.path.join(base_directory, staging)
  if not fileio.exists(staged):
    return
  for version in sorted(n.rstrip('/') for n in fileio.listdir(staged)):
    half_moved = os.path.join(base_directory, version)
    if (serving_model.is_version(version) and fileio.exists(half_moved)
        and not fileio.exists(os.path.join(
            half_moved, serving_model.SAVED_MODEL_FILE))):
      fileio.rmtree(half_moved)
      logging.info('Removed %s, a version folder without %s that a push '
                   'stopped while moving it into place.', half_moved,
                   serving_model.SAVED_MODEL_FILE)
  fileio.rmtree(staged)


def _remove_killed_pushes(base_directory: str) -> None:
  """Removes what killed pushes left in `base_directory` (_remove_push)."""
  if not fileio.exists(base_directory):
    return
  for name in sorted(n.rstrip('/') for n in fileio.listdir(base_directory)):
    if _killed(name):
      _remove_push(base_directory, name)
      logging.info('Removed %s, left by a push that was killed.',
                   os.path.join(base_directory, name))


def _move_into_place(staged: str, serving_path: str) -> None:
  """Moves the whole copy `staged` to `serving_path`.

  On a filesystem that is one rename. An object store has no rename (a
  folder's is a copy of each object), so the objects are copied within the
  store, saved_model.pb last as TFX's Pusher does: a lookup takes the
  version for served only once that is there.
  """
  if _store_root(serving_path) is None:
    fileio.rename(staged, serving_path)
    return
  saved_model = os.path.join(staged, serving_model.SAVED_MODEL_FILE)
  io_utils.copy_dir(staged, serving_path,
                    deny_regex_patterns=[re.escape(saved_model) + '$'])
  if fileio.exists(saved_model):
    io_utils.copy_file(saved_model, os.path.join(
        serving_path, serving_model.SAVED_MODEL_FILE))


def _remove(path: str) -> None:
  if fileio.exists(path):
    fileio.rmtree(path)


class Executor(pusher_executor.Executor):
  """TFX's Pusher, whole or not at all, minus a push of the newest version."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    """Pushes as TFX's Pusher, unless the newest version holds the model.

    Raises:
      ServingDirectoryError: the serving directory cannot be read.
      OSError, tf.errors.OpError: the copy failed (its partial copy removed).
    """
    destination = pusher_pb2.PushDestination()
    proto_utils.json_to_proto(
        exec_properties[standard_component_specs.PUSH_DESTINATION_KEY],
        destination)
    if (destination.WhichOneof('destination') == 'filesystem'
        and self.CheckBlessing(input_dict)):
      base_directory = destination.filesystem.base_directory
      version = newest_version(base_directory)
      _remove_killed_pushes(base_directory)
      model_path = self.GetModelPath(input_dict)
      serving_path = version and os.path.join(base_directory, version)
      if version and same_files(model_path, serving_path):
        logging.info('The model is already served as %s; not pushed again.',
                     serving_path)
        model_push = artifact_utils.get_single_instance(
            output_dict[standard_component_specs.PUSHED_MODEL_KEY])
        # As TFX's Pusher does: the artifact keeps a copy of what is served.
        io_utils.copy_dir(model_path, model_push.uri)
        tfx_workarounds.mark_pushed(model_push, serving_path, version)
        model_push.set_int_custom_property(
            serving_model.ALREADY_SERVED_PROPERTY, 1)
        return
      self._push_whole(destination, input_dict, output_dict, exec_properties)
      return
    super().Do(input_dict, output_dict, exec_properties)

  def _push_whole(self, destination: pusher_pb2.PushDestination,
                  input_dict: Dict[str, List[types.Artifact]],
                  output_dict: Dict[str, List[types.Artifact]],
                  exec_properties: Dict[str, Any]) -> None:
    """TFX's push into a staging folder, then moved to its version."""
    base_directory = destination.filesystem.base_directory
    staging_name = _staging_name()
    staging = os.path.join(base_directory, staging_name)
    destination.filesystem.base_directory = staging
    try:
      super().Do(input_dict, output_dict, {
          **exec_properties,
          standard_component_specs.PUSH_DESTINATION_KEY:
              proto_utils.proto_to_json(destination)})
      model_push = artifact_utils.get_single_instance(
          output_dict[standard_component_specs.PUSHED_MODEL_KEY])
      version = model_push.get_string_custom_property(
          serving_model.PUSHED_VERSION_PROPERTY)
      serving_path = os.path.join(base_directory, version)
      if fileio.exists(serving_path):  # As TFX's Pusher does.
        logging.info('Destination directory %s already exists, skipping '
                     'current push.', serving_path)
      else:
        _move_into_place(os.path.join(staging, version), serving_path)
      tfx_workarounds.mark_pushed(model_push, serving_path, version)
    except BaseException as e:
      try:
        _remove_push(base_directory, staging_name)
      except Exception as removing:  # pylint: disable=broad-except
        e.add_note(f'Removing the partial copy {staging} failed too '
                   f'({_cause(removing)}); the next push removes it.')
      raise
    _remove(staging)


class Pusher(pusher_component.Pusher):
  """TFX's Pusher component with the executor above.

  Its inputs, outputs and node id ('Pusher') are those of TFX's Pusher.
  """
  EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(Executor)
