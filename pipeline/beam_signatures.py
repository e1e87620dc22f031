"""Beam inspects a function's signature once, not at every use.

Beam 2.59 takes the signature of every method of a DoFn each time it builds,
checks, translates or runs one, and a function's signature does not change
while it lives. Beam has no public switch; this is the one place that sets
it, and tests/test_beam_signatures.py fails when Beam changes. Why:
docs/development.md, "How a process starts and ends".
"""

import inspect
import types
from typing import Callable
import weakref

from apache_beam.transforms import core


def cached(get_signature: Callable[..., inspect.Signature]):
  """`get_signature`, remembered per function and per method's function."""
  functions = weakref.WeakKeyDictionary()
  methods = weakref.WeakKeyDictionary()

  def cached_get_signature(func):
    if type(func) is types.FunctionType:  # pylint: disable=unidiomatic-typecheck
      cache, key = functions, func
    elif (type(func) is types.MethodType  # pylint: disable=unidiomatic-typecheck
          and type(func.__func__) is types.FunctionType):  # pylint: disable=unidiomatic-typecheck
      cache, key = methods, func.__func__  # Bound to any object: one signature.
    else:  # Builtins, partials, classes, callable objects: Beam's own way.
      return get_signature(func)
    signature = cache.get(key)
    if signature is None:
      signature = cache[key] = get_signature(func)
    return signature

  cached_get_signature.__wrapped__ = get_signature
  return cached_get_signature


def cache_signatures() -> None:
  """Makes this process's Beam remember the signatures it takes; idempotent."""
  if not hasattr(core.get_signature, '__wrapped__'):
    core.get_signature = cached(core.get_signature)
