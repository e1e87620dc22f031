"""A push is whole or absent: a push that fails (a full filesystem) or is
killed half-way leaves no version folder, nothing any served-version lookup
takes for served, and the next push removes what a killed one left.

The pushes run the project's Pusher executor on a blessed model
(tests/pushes.py); a push killed is held by tests/pause.py with every file
but saved_model.pb copied, then SIGKILLed."""

import dataclasses
import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import pytest

from components import push_once
from components import served_model
from predict import model_loading as predict_model
from records import serving_model
from tests import local_run
from tests import pause
from tests import pushes
from tests import s3_server

MODEL = {'saved_model.pb': b'graph',
         'variables/variables.index': b'index',
         'variables/variables.data-00000-of-00001': b'weights',
         'assets.extra/class_names.txt': b'0\n1\n'}
# TFX's Pusher copies saved_model.pb last, on its own: held there, the
# push has copied every other file.
LAST_COPY = 'tfx.utils.io_utils:copy_file'
NOTHING = {'pusher': None, 'served model': None, 'predict': None}


def _served(serving_dir):
  """What each served-version lookup of the project answers."""
  try:
    found = os.path.basename(predict_model.locate(str(serving_dir)))
  except predict_model.ModelNotFound:
    found = None
  return {'pusher': push_once.newest_version(str(serving_dir)),
          'served model': served_model.served_version(str(serving_dir)),
          'predict': found}


def _files(root):
  files = {}
  for folder, _, names in os.walk(root):
    for name in names:
      with open(os.path.join(folder, name), 'rb') as f:
        files[os.path.relpath(os.path.join(folder, name), root)] = f.read()
  return files


@pytest.fixture
def small_filesystem(tmp_path):
  """A serving directory on a 64 KiB tmpfs, unmounted afterwards."""
  if os.geteuid() != 0:
    pytest.skip('mounting a tmpfs needs root')
  path = tmp_path / 'serving'
  path.mkdir()
  mounted = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=64k', 'tmpfs',
                            str(path)], capture_output=True, text=True)
  if mounted.returncode:
    pytest.skip(f'cannot mount a tmpfs: {mounted.stderr.strip()}')
  try:
    yield path
  finally:
    subprocess.run(['umount', str(path)], check=True)


def test_a_push_that_fills_the_filesystem_leaves_nothing(tmp_path,
                                                        small_filesystem):
  big = {**MODEL,
         'variables/variables.data-00000-of-00001': os.urandom(256 * 1024)}
  model = pushes.write_model(str(tmp_path / 'model'), big)
  with pytest.raises(Exception) as failed:
    pushes.push(model, str(small_filesystem), str(tmp_path / 'pushed'))
  # Where, and why.
  assert str(small_filesystem) in str(failed.value)
  assert 'No space left on device' in str(failed.value)
  assert os.listdir(small_filesystem) == []
  assert _served(small_filesystem) == NOTHING


@dataclasses.dataclass
class HeldPush:
  """A push in a process of its own, held before saved_model.pb is copied."""
  model: str
  serving_dir: pathlib.Path
  child: subprocess.Popen
  staging: str  # Its copy's folder in serving_dir.


@pytest.fixture
def held_push(tmp_path):
  """A HeldPush of MODEL to tmp_path/serving; killed in the end if alive."""
  model = pushes.write_model(str(tmp_path / 'model'), MODEL)
  serving_dir = tmp_path / 'serving'
  child = subprocess.Popen(
      [sys.executable, '-m', 'tests.pushes', model, str(serving_dir),
       str(tmp_path / 'held-pushed')],
      env=pause.environment(LAST_COPY, str(tmp_path / 'pause')),
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
      cwd=local_run.PROJECT_DIR, start_new_session=True)
  try:
    pause.reached(child, str(tmp_path / 'pause'))
    [staging] = os.listdir(serving_dir)
    yield HeldPush(model, serving_dir, child, staging)
  finally:
    if child.poll() is None:
      local_run.kill(child)


def test_a_killed_push_is_never_served_and_the_next_push_removes_it(
    tmp_path, held_push):
  serving_dir, staging = held_push.serving_dir, held_push.staging
  assert not staging.isdigit()
  [version] = os.listdir(serving_dir / staging)
  copied = _files(serving_dir / staging / version)
  assert copied and 'saved_model.pb' not in copied  # Half-way.
  assert _served(serving_dir) == NOTHING  # Copying: not served yet.
  local_run.kill(held_push.child)
  assert os.listdir(serving_dir) == [staging]
  assert _served(serving_dir) == NOTHING

  pushed = pushes.push(held_push.model, str(serving_dir),
                       str(tmp_path / 'pushed'))
  [version] = os.listdir(serving_dir)  # The killed push's copy is gone.
  assert _files(serving_dir / version) == MODEL
  assert pushed.get_string_custom_property('pushed_destination') == str(
      serving_dir / version)
  assert set(_served(serving_dir).values()) == {version}


def test_a_push_leaves_a_running_push_alone_and_a_rerun_is_not_pushed_again(
    tmp_path, held_push):
  serving_dir, staging = held_push.serving_dir, held_push.staging
  pushes.push(held_push.model, str(serving_dir), str(tmp_path / 'pushed'))
  listed = set(os.listdir(serving_dir))
  assert staging in listed  # Still being written: left alone.
  [version] = listed - {staging}
  assert _files(serving_dir / version) == MODEL
  local_run.kill(held_push.child)
  # The same model again: already served, and the killed push's copy goes.
  again = pushes.push(held_push.model, str(serving_dir),
                      str(tmp_path / 'again'))
  assert again.get_int_custom_property(
      serving_model.ALREADY_SERVED_PROPERTY) == 1
  assert again.get_string_custom_property('pushed_version') == version
  assert os.listdir(serving_dir) == [version]


def _left_by(serving_dir, host, pid, started, version='1'):
  """Writes what a push from `host` (process `pid`, started at `started`)
  left in serving_dir when it was stopped before moving its copy; returns
  the name of its hidden folder."""
  name = f'.push-{int(started)}-{host}-{pid}-0123abcd'
  pushes.write_model(str(serving_dir / name / 'model'), MODEL)
  os.rename(serving_dir / name / 'model' / 'Format-Serving',
            serving_dir / name / version)
  os.rmdir(serving_dir / name / 'model')
  return name


def test_a_push_removes_other_hosts_copies_only_once_over_an_hour_old(
    tmp_path):
  serving_dir = tmp_path / 'serving'
  elsewhere = socket.gethostname() + '-elsewhere'  # Not this host.
  now = time.time()
  old = _left_by(serving_dir, elsewhere, 7, now - 3700)
  recent = _left_by(serving_dir, elsewhere, 7, now - 60)  # Still copying?
  # A push of this host is asked instead, however long it has run: this
  # process is alive, so its copy is still being written.
  running_here = _left_by(serving_dir, socket.gethostname(), os.getpid(),
                          now - 7200)
  model = pushes.write_model(str(tmp_path / 'model'), MODEL)
  pushes.push(model, str(serving_dir), str(tmp_path / 'pushed'))
  listed = set(os.listdir(serving_dir))
  assert old not in listed
  assert {recent, running_here} <= listed
  [version] = listed - {recent, running_here}
  assert _files(serving_dir / version) == MODEL
  assert _files(serving_dir / recent) == {
      os.path.join('1', path): data for path, data in MODEL.items()}


def test_a_version_folder_without_saved_model_pb_is_not_served(tmp_path):
  # As TFX's own Pusher leaves one that failed half-way (it copies in place,
  # saved_model.pb last).
  serving_dir = tmp_path / 'serving'
  pushes.write_model(str(tmp_path / 'old'), MODEL)
  os.makedirs(serving_dir)
  os.rename(tmp_path / 'old' / 'Format-Serving', serving_dir / '4')
  os.makedirs(serving_dir / '5' / 'variables')
  assert set(_served(serving_dir).values()) == {'4'}


def _stopped_moves(serving_dir):
  """Lays out in serving_dir what pushes stopped while copying their copy
  into place on an object store leave, and a version folder without
  saved_model.pb that no push of this Pusher marks (TFX's own copies in
  place).

  A stopped push leaves its hidden copy whole, and its version folder
  holding every file but saved_model.pb (copied last). One push is of
  another host two hours ago, one of another host a minute ago (maybe
  still copying).

  Returns:
    The paths of the files the next push removes, and of those it keeps.
  """
  elsewhere = socket.gethostname() + '-elsewhere'  # Not this host.
  now = time.time()
  stopped = {}
  for pid, started in ((7, now - 7200), (8, now - 60)):
    version = str(int(started) + 1)
    stopped[pid] = _left_by(serving_dir, elsewhere, pid, started, version)
    pushes.write_model(str(serving_dir / 'half-moved'), {
        path: data for path, data in MODEL.items()
        if path != 'saved_model.pb'})
    os.rename(serving_dir / 'half-moved' / 'Format-Serving',
              serving_dir / version)
    os.rmdir(serving_dir / 'half-moved')
  os.makedirs(serving_dir / '4' / 'variables')
  (serving_dir / '4' / 'variables' / 'variables.index').write_bytes(b'index')
  files = set(_files(serving_dir))
  dead = {stopped[7], str(int(now - 7200) + 1)}
  removed = {path for path in files if path.split('/')[0] in dead}
  return removed, files - removed


def test_a_push_removes_the_version_folder_a_stopped_push_half_moved(
    tmp_path):
  serving_dir = tmp_path / 'serving'
  removed, kept = _stopped_moves(serving_dir)
  assert removed and _served(serving_dir) == NOTHING
  model = pushes.write_model(str(tmp_path / 'model'), MODEL)
  pushed = pushes.push(model, str(serving_dir), str(tmp_path / 'pushed'))
  version = pushed.get_string_custom_property('pushed_version')
  assert set(_files(serving_dir)) == kept | {
      f'{version}/{path}' for path in MODEL}
  assert set(_served(serving_dir).values()) == {version}


def _objects(endpoint):
  listed = s3_server.client(endpoint).list_objects_v2(Bucket='models')
  return sorted(o['Key'] for o in listed.get('Contents', []))


def test_on_s3_the_version_appears_whole_and_its_staging_copy_goes(
    tmp_path_factory, tmp_path):
  model = pushes.write_model(str(tmp_path / 'model'), MODEL)
  log = tmp_path_factory.mktemp('s3') / 's3.log'
  with s3_server.running(str(log)) as endpoint:
    s3_server.client(endpoint).create_bucket(Bucket='models')
    runs = [local_run.python(
        ['-m', 'tests.pushes', model, 's3://models/serving',
         str(tmp_path / name)], 300, s3_server.pod_environment(endpoint))
            for name in ('pushed', 'again')]
    objects = _objects(endpoint)
  for run in runs:
    print(run.stdout, run.stderr[-3000:])
    assert run.returncode == 0
  first, again = (json.loads(run.stdout.splitlines()[-1]) for run in runs)
  version = first['pushed_version']
  assert objects == sorted(f'serving/{version}/{path}' for path in MODEL)
  assert first['pushed_destination'] == f's3://models/serving/{version}'
  assert again['already_served'] == 1 and again['pushed_version'] == version


def test_on_s3_a_push_removes_the_version_folder_a_stopped_push_half_moved(
    tmp_path_factory, tmp_path):
  removed, kept = _stopped_moves(tmp_path / 'left')
  model = pushes.write_model(str(tmp_path / 'model'), MODEL)
  log = tmp_path_factory.mktemp('s3') / 's3.log'
  with s3_server.running(str(log)) as endpoint:
    s3_server.client(endpoint).create_bucket(Bucket='models')
    s3_server.upload_dir(endpoint, str(tmp_path / 'left'), 'models',
                         'serving')
    left = _objects(endpoint)
    run = local_run.python(
        ['-m', 'tests.pushes', model, 's3://models/serving',
         str(tmp_path / 'pushed')], 300, s3_server.pod_environment(endpoint))
    objects = _objects(endpoint)
  print(run.stdout, run.stderr[-3000:])
  assert run.returncode == 0
  assert left == sorted(f'serving/{path}' for path in removed | kept)
  version = json.loads(run.stdout.splitlines()[-1])['pushed_version']
  assert objects == sorted(f'serving/{path}' for path in kept | {
      f'{version}/{path}' for path in MODEL})
