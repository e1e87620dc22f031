"""A cgroup v1 memory limit around one process tree, for the scale
benchmark's capped run: the kernel enforces it (the OOM killer ends a
process of the tree past it), and the group reports its peak. The group is
made inside this process's own memory cgroup, so the run stays accounted
wherever the caller's is; it needs root and a cgroup v1 hierarchy."""

import os
import time
from typing import List, Optional, Tuple

MOUNT = '/sys/fs/cgroup/memory'


class Group:
  """A memory cgroup with a limit."""

  def __init__(self, path: str):
    self.path = path

  def wrap(self, command: List[str]) -> List[str]:
    """`command`, run inside the group (a shell moves itself in, then
    execs it: every process it starts is in the group too)."""
    return ['/bin/sh', '-c', 'echo $$ > "$0" && exec "$@"',
            os.path.join(self.path, 'cgroup.procs'), *command]

  def _read(self, name: str) -> str:
    with open(os.path.join(self.path, name)) as f:
      return f.read()

  def max_usage(self) -> int:
    """Peak bytes charged to the group: resident memory and page cache."""
    return int(self._read('memory.max_usage_in_bytes'))

  def oom_kills(self) -> int:
    fields = dict(line.split(' ', 1) for line in
                  self._read('memory.oom_control').splitlines())
    return int(fields.get('oom_kill', 0))

  def remove(self, timeout_s: float = 60) -> None:
    """Removes the group once its processes are gone."""
    deadline = time.monotonic() + timeout_s
    while self._read('cgroup.procs').strip():
      if time.monotonic() > deadline:
        raise RuntimeError(f'{self.path}: processes still in the group after '
                           f'{timeout_s:.0f} s: {self._read("cgroup.procs")}')
      time.sleep(0.5)
    os.rmdir(self.path)


def make(name: str, limit_bytes: int) -> Tuple[Optional[Group], str]:
  """(the group, '') or (None, why it cannot be made)."""
  with open('/proc/self/cgroup') as f:  # This process's memory cgroup.
    own = next((path for _, controllers, path in
                (line.rstrip('\n').split(':', 2) for line in f)
                if 'memory' in controllers.split(',')), None)
  if own is None or not os.path.isdir(MOUNT):
    return None, f'no cgroup v1 memory hierarchy ({MOUNT})'
  if os.geteuid() != 0:
    return None, 'a memory cgroup needs root'
  path = os.path.join(MOUNT + own, name)
  try:
    os.mkdir(path)
  except OSError as e:
    return None, f'cannot make a memory cgroup in {os.path.dirname(path)}: {e}'
  # Where swap is accounted, the limit covers it too (no swapping instead
  # of the cap).
  for limit in ('memory.limit_in_bytes', 'memory.memsw.limit_in_bytes'):
    if os.path.exists(os.path.join(path, limit)):
      with open(os.path.join(path, limit), 'w') as f:
        f.write(str(limit_bytes))
  return Group(path), ''
