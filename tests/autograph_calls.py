"""The calls AutoGraph converts while a block runs: where the project turns
AutoGraph off (tf_keras code that needs no conversion), tests check that
nothing is converted there, and that the same library code, left to
AutoGraph, still is (else the workaround has outlived its reason)."""

import contextlib
import logging
import os
from typing import Iterator, List

import tensorflow as tf

# AutoGraph logs this (at verbosity 1) for every call it is asked to
# convert, converted now or from its cache; it leaves TensorFlow's own
# functions as they are (its config: DoNotConvert('tensorflow')).
_CONVERTED = 'Converted call: %s'
_NOT_CONVERTED = 'tensorflow.'


class _Calls(logging.Handler):

  def __init__(self):
    super().__init__(level=logging.INFO)
    self.calls: List[str] = []

  def emit(self, record):
    if str(record.msg).startswith(_CONVERTED):
      function = record.args[0]
      module = getattr(function, '__module__', None) or ''
      if not module.startswith(_NOT_CONVERTED):
        name = getattr(function, '__qualname__', function)
        self.calls.append(f'{module}.{name}')


@contextlib.contextmanager
def converted_calls() -> Iterator[List[str]]:
  """Yields the list of the calls AutoGraph converts in the block
  (module.function names)."""
  handler = _Calls()
  logger = tf.get_logger()
  level = logger.level
  logger.setLevel(logging.INFO)
  logger.addHandler(handler)
  tf.autograph.set_verbosity(1)
  try:
    yield handler.calls
  finally:
    # The default: AutoGraph reads it from the environment.
    tf.autograph.set_verbosity(int(os.environ.get('AUTOGRAPH_VERBOSITY', 0)))
    logger.removeHandler(handler)
    logger.setLevel(level)
