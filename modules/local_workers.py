"""A Trainer module file for --trainer-workers N on this machine.

Its run_fn starts N worker processes on loopback, each running
modules.trainer.run_fn with a TF_CONFIG of its own (`python -m
modules.local_workers ARGS.json`). Why and how: docs/training.md.
"""

import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

import attr
from absl import logging
import tensorflow as tf
from tfx.components.trainer.fn_args_utils import FnArgs

import modules
from modules import trainer
from modules.training import devices
from modules.training import input_pipeline
from modules.training import callbacks


WORKER_MODULE = 'modules.local_workers'
# The folder holding this copy of the project's packages, which the workers
# import (first on their PYTHONPATH).
PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(
    modules.__file__)))
# In the ModelRun artifact: worker-<i>.log, each worker's whole output.
LOGS_DIR = 'workers'
# Lines of a failed worker's output the error quotes.
TAIL_LINES = 15
_POLL_SECONDS = 0.5
# An epoch line as the worker prints it (`INFO:absl:Epoch 1/4: ...`, or
# with absl's own handler `I... callbacks.py:123] Epoch 1/4: ...`).
_EPOCH_LINE = re.compile(r'[:\]] ?Epoch (\d+)/(\d+): (.*)$')


class WorkerError(RuntimeError):
  """A worker failed, or the workers did not finish in time."""


def run_fn(fn_args: FnArgs) -> None:
  """TFX Trainer entry point: trains on config.workers local processes.

  Each worker reads files of its own, so a split of fewer files than
  workers is refused before any starts. Under a cluster manager's TF_CONFIG
  this process is already one worker, and trains as modules.trainer does.

  Args:
    fn_args: TFX's FnArgs, as modules.trainer.run_fn takes them.

  Raises:
    ValueError: a split has fewer files than workers.
    WorkerError: a worker failed, or they did not finish in time.
  """
  config = trainer.training_config(fn_args)
  if config.workers <= 1 or devices.has_tf_config():
    trainer.run_fn(fn_args)
    return
  input_pipeline.check_files_per_worker(
      fn_args, config.workers, input_pipeline.validation_split(fn_args))
  train(fn_args, config.workers, config.workers_timeout_seconds)


def local_tf_config(addresses: List[str], index: int) -> str:
  """Returns the TF_CONFIG of worker `index` of a cluster on this machine.

  Args:
    addresses: the workers' host:port. Worker 0 is the chief.
    index: this worker's index.
  """
  config: Dict[str, Any] = {'cluster': {'worker': list(addresses)},
                            'task': {'type': 'worker', 'index': index}}
  return json.dumps(config)


def fn_args_to_dict(fn_args: FnArgs) -> Dict[str, Any]:
  """Returns FnArgs as JSON-able values.

  The data accessor (functions of the pipeline's process) stays behind,
  since run_fn does not use it.
  """
  return {k: v for k, v in attr.asdict(fn_args, recurse=False).items()
          if k != 'data_accessor'}


def fn_args_from_dict(values: Dict[str, Any]) -> FnArgs:
  """Returns the FnArgs of what `fn_args_to_dict` returned."""
  return FnArgs(**values)


def free_ports(count: int) -> List[int]:
  """Returns `count` distinct loopback ports free right now.

  All are held open until all are chosen, so none is picked twice.
  """
  sockets = []
  try:
    for _ in range(count):
      s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
      s.bind(('127.0.0.1', 0))
      sockets.append(s)
    return [s.getsockname()[1] for s in sockets]
  finally:
    for s in sockets:
      s.close()


def threads_per_worker(workers: int, cores: Optional[int] = None) -> int:
  """Returns each worker's share of the machine's cores, for its thread pools.

  Left alone, every worker would size its pools for the whole machine.
  """
  return max(1, (cores or os.cpu_count() or 1) // workers)


def _exit_status(code: int) -> str:
  if code < 0:
    return f'was killed by {signal.Signals(-code).name}'
  return f'exited with status {code}'


def _tail(path: str, lines: int = TAIL_LINES) -> str:
  with open(path, errors='replace') as f:
    return ''.join(f.readlines()[-lines:]).rstrip()


class _EpochRelay:
  """Re-logs the chief's epoch lines in this process.

  The console then shows training as it does with one process
  (runs/run_summary.py).
  """

  def __init__(self, path: str):
    self._path = path
    self._offset = 0

  def relay(self) -> None:
    with open(self._path, 'rb') as f:
      f.seek(self._offset)
      chunk = f.read()
    end = chunk.rfind(b'\n') + 1  # Whole lines only.
    self._offset += end
    for line in chunk[:end].decode(errors='replace').splitlines():
      match = _EPOCH_LINE.search(line)
      if match:
        logging.info(callbacks.EPOCH_LINE, int(match[1]), int(match[2]),
                     match[3])


def _stop(processes: Sequence[subprocess.Popen]) -> None:
  for process in processes:
    if process.poll() is None:
      process.kill()
  for process in processes:
    process.wait()


def train(fn_args: FnArgs, workers: int, timeout_seconds: float) -> None:
  """Trains with `workers` worker processes; returns when all succeeded.

  Args:
    fn_args: the Trainer's FnArgs, passed on to each worker; the workers'
      logs are kept under its model_run_dir.
    workers: the number of processes; worker 0 is the chief.
    timeout_seconds: how long they may take in all before they are stopped.

  Raises:
    WorkerError: a worker failed (naming it, with its last lines), or
      they had not finished after `timeout_seconds`.
  """
  addresses = [f'127.0.0.1:{port}' for port in free_ports(workers)]
  threads = threads_per_worker(workers)
  with tempfile.TemporaryDirectory(prefix='trainer-workers-') as tmp:
    args_path = os.path.join(tmp, 'fn_args.json')
    with open(args_path, 'w') as f:
      json.dump({'fn_args': fn_args_to_dict(fn_args), 'threads': threads}, f)
    logs = [os.path.join(tmp, f'worker-{i}.log') for i in range(workers)]
    logging.info('Trainer: %d worker processes on %s, %d threads each; '
                 'worker 0 is the chief.', workers, ', '.join(addresses),
                 threads)
    processes = []
    try:
      for i in range(workers):
        env = {**os.environ,
               devices.TF_CONFIG: local_tf_config(addresses, i),
               # Lines reach the log as they are written (the epoch lines
               # are relayed from there).
               'PYTHONUNBUFFERED': '1',
               # The workers import this very copy of the project.
               'PYTHONPATH': os.pathsep.join(
                   [PROJECT_ROOT] + [p for p in [os.environ.get('PYTHONPATH')]
                                     if p])}
        with open(logs[i], 'wb') as log:
          processes.append(subprocess.Popen(
              [sys.executable, '-m', WORKER_MODULE, args_path],
              stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
              env=env))
      _wait(processes, logs, timeout_seconds)
    finally:
      _stop(processes)
      _keep_logs(logs, fn_args.model_run_dir)


def _wait(processes: Sequence[subprocess.Popen], logs: Sequence[str],
          timeout_seconds: float) -> None:
  relay = _EpochRelay(logs[0])
  deadline = time.monotonic() + timeout_seconds
  while True:
    relay.relay()
    codes = [process.poll() for process in processes]
    failed = [(i, code) for i, code in enumerate(codes) if code]
    if failed:
      _stop(processes)
      # Several at once: the first one killed by a signal is the likelier
      # cause (its peers then fail for want of it).
      i, code = sorted(failed, key=lambda f: (f[1] > 0, f[0]))[0]
      raise WorkerError(
          f'Trainer worker {i} of {len(processes)} '
          f'({"chief" if i == 0 else "worker"}) {_exit_status(code)}; '
          f'its last lines (all of them in the ModelRun\'s {LOGS_DIR}/'
          f'worker-{i}.log):\n{_tail(logs[i])}')
    if all(code == 0 for code in codes):
      return
    if time.monotonic() > deadline:
      _stop(processes)
      raise WorkerError(
          f'Trainer workers had not finished after {timeout_seconds:.0f}s '
          '(the workers\' timeout): all stopped; their output is in the '
          f'ModelRun\'s {LOGS_DIR}/ folder')
    time.sleep(_POLL_SECONDS)


def _keep_logs(logs: Sequence[str], model_run_dir: str) -> None:
  target = os.path.join(model_run_dir, LOGS_DIR)
  tf.io.gfile.makedirs(target)
  for log in logs:
    if os.path.exists(log):
      tf.io.gfile.copy(log, os.path.join(target, os.path.basename(log)),
                       overwrite=True)


# Linux's prctl option: a signal for this process when its parent dies.
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
  """Has this worker killed when the Trainer's process that started it dies.

  So a killed run leaves no worker training on. It is set here rather than
  between fork and exec (preexec_fn), where gRPC, running in the Trainer's
  process, prints warnings about the fork.
  """
  parent = os.getppid()
  try:
    ctypes.CDLL('libc.so.6', use_errno=True).prctl(_PR_SET_PDEATHSIG,
                                                   signal.SIGKILL)
  except OSError:
    return  # Not Linux: the communication timeout ends orphans instead.
  if os.getppid() != parent:  # It died before prctl took effect.
    os.kill(os.getpid(), signal.SIGKILL)


def main(argv) -> int:
  """Trains as one worker, with the FnArgs of the file argv[1] names.

  Returns:
    0 once training is done.

  Raises:
    SystemExit: the command line does not name one file.
  """
  _die_with_parent()
  if len(argv) != 2:
    raise SystemExit(f'usage: {argv[0]} ARGS.json')
  with open(argv[1]) as f:
    args = json.load(f)
  # Before any TensorFlow op: pools cannot be resized once TF runs.
  tf.config.threading.set_intra_op_parallelism_threads(args['threads'])
  # At least 2: with one inter-op thread, a step's collective op can wait
  # for the very thread it blocks.
  tf.config.threading.set_inter_op_parallelism_threads(
      max(2, args['threads']))
  logging.set_verbosity(logging.INFO)  # Epoch lines: the chief's are relayed.
  trainer.run_fn(fn_args_from_dict(args['fn_args']))
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))
