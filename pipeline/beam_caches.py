"""Beam remembers what it would work out again at every step it builds.

Beam 2.59 takes the signature of every method of a DoFn, and parses the
pipeline's flags again for each view of its options, each time it builds,
checks, translates or runs a step. Neither changes while its object lives.
Beam has no public switch; this is the one place that sets them, and
tests/test_beam_caches.py fails when Beam changes. Why: docs/development.md,
"How a process starts and ends".
"""

import inspect
import types
from typing import Callable
import weakref

from apache_beam.options import pipeline_options
from apache_beam.transforms import core


def install() -> None:
  """Makes this process's Beam remember both; idempotent."""
  cache_signatures()
  cache_option_views()


def cache_signatures() -> None:
  """Makes this process's Beam take each function's signature once."""
  if not hasattr(core.get_signature, '__wrapped__'):
    core.get_signature = cached(core.get_signature)


def cache_option_views() -> None:
  """Makes this process's Beam parse each view of a set of options once."""
  options = pipeline_options.PipelineOptions
  if not hasattr(options.view_as, '__wrapped__'):
    options.view_as = cached_views(options.view_as)


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


def cached_views(view_as):
  """`PipelineOptions.view_as`, remembered per options object and class.

  A view keeps no state of its own: its settings live in the options'
  dictionary, which all views share, and its flags are the options'.
  """
  views = weakref.WeakKeyDictionary()

  def cached_view_as(self, cls):
    by_class = views.get(self)
    if by_class is None:
      by_class = views[self] = {}
    view = by_class.get(cls)
    if view is None:
      view = by_class[cls] = view_as(self, cls)
    return view

  cached_view_as.__wrapped__ = view_as
  return cached_view_as
