"""One worker process of a multi-worker Trainer on this machine.

`TF_CONFIG=... python -m modules.training.worker ARGS.json` (the FnArgs and
thread count), started by modules/training/local_workers.py, runs TFX's run_fn.
"""

import ctypes
import json
import os
import signal
import sys

from absl import logging
import tensorflow as tf

from modules.training import local_workers
from modules import trainer


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
  trainer.run_fn(local_workers.fn_args_from_dict(args['fn_args']))
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))
