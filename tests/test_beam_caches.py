"""Beam remembers signatures and option views (pipeline/beam_caches.py):
the same arguments and settings as Beam finds itself, and stateful DoFns and
pipelines still run. Which processes set it up: tests/test_startup.py."""

import functools
import pickle

import apache_beam as beam
from apache_beam.options import pipeline_options
from apache_beam.testing import util as beam_testing
from apache_beam.transforms import core
from apache_beam.transforms import userstate
import pytest

from pipeline import beam_caches

class _Counting(beam.DoFn):
  """A stateful DoFn: Beam finds its state and timer in its defaults."""
  COUNT = userstate.ReadModifyWriteStateSpec('count', beam.coders.VarIntCoder())
  FLUSH = userstate.TimerSpec('flush', beam.TimeDomain.WATERMARK)

  def process(self, element, count=beam.DoFn.StateParam(COUNT),
              flush=beam.DoFn.TimerParam(FLUSH)):
    key, _ = element
    count.write((count.read() or 0) + 1)
    flush.set(0)
    del key

  @userstate.on_timer(FLUSH)
  def emit(self, key=beam.DoFn.KeyParam, count=beam.DoFn.StateParam(COUNT)):
    yield key, count.read()


def _function(a, b=2, *args, c=3, **kwargs):
  return a, b, args, c, kwargs


class _CallableObject:

  def __call__(self, x, y=1):
    return x, y


CALLABLES = {
    'a function': _function,
    'a lambda': lambda x, y=1: x,
    'a bound method': _Counting().process,
    'a timer callback': _Counting().emit,
    'a class': _Counting,
    'a partial': functools.partial(_function, 1),
    'a builtin': len,
    'a method descriptor': str.upper,
    'a callable object': _CallableObject(),
}


OPTIONS = pipeline_options.PipelineOptions
VIEWS = (pipeline_options.StandardOptions, pipeline_options.DirectOptions,
         pipeline_options.SetupOptions, pipeline_options.TypeOptions,
         pipeline_options.GoogleCloudOptions)
FLAGS = ['--direct_running_mode=in_memory', '--direct_num_workers=1',
         '--pickle_library=cloudpickle', '--beam_plugins=a', '--beam_plugins=b',
         '--some_flag_beam_does_not_know=1']


@pytest.fixture
def beams_own(monkeypatch):
  """Beam's own get_signature and view_as, put back after the test."""
  own = getattr(core.get_signature, '__wrapped__', core.get_signature)
  monkeypatch.setattr(core, 'get_signature', own)
  monkeypatch.setattr(OPTIONS, 'view_as',
                      getattr(OPTIONS.view_as, '__wrapped__', OPTIONS.view_as))
  return own


def _settings(options):
  return {cls.__name__: str(options.view_as(cls)) for cls in VIEWS}


@pytest.mark.parametrize('name', list(CALLABLES))
def test_the_same_arguments_as_beam_finds_itself(beams_own, name):
  del beams_own
  func = CALLABLES[name]
  expected = core.get_function_args_defaults(func)
  beam_caches.cache_signatures()
  assert core.get_function_args_defaults(func) == expected
  assert core.get_function_args_defaults(func) == expected  # From the cache.


def test_each_function_is_inspected_once(beams_own, monkeypatch):
  taken = []
  monkeypatch.setattr(core, 'get_signature',
                      lambda f: taken.append(f) or beams_own(f))
  beam_caches.cache_signatures()
  userstate.get_dofn_specs(_Counting())
  first = len(taken)
  for _ in range(2):  # Bound to a new object each time, as Beam sees them.
    userstate.get_dofn_specs(_Counting())
  assert first > 0
  assert len(taken) == first


def test_a_stateful_dofn_still_runs(beams_own):
  del beams_own
  beam_caches.cache_signatures()
  with beam.Pipeline() as p:
    counts = (p | beam.Create([('a', 1), ('b', 1), ('a', 1)])
              | beam.ParDo(_Counting()))
    beam_testing.assert_that(counts,
                             beam_testing.equal_to([('a', 2), ('b', 1)]))


def test_cache_signatures_is_idempotent(beams_own):
  beam_caches.cache_signatures()
  cached = core.get_signature
  beam_caches.cache_signatures()
  assert core.get_signature is cached
  assert cached.__wrapped__ is beams_own


def test_the_same_settings_as_beam_finds_itself(beams_own):
  del beams_own
  expected = _settings(OPTIONS(FLAGS))
  beam_caches.cache_option_views()
  options = OPTIONS(FLAGS)
  assert _settings(options) == expected
  assert _settings(options) == expected  # From the cache.


def test_each_view_is_parsed_once(beams_own):
  del beams_own
  beam_caches.cache_option_views()
  options = OPTIONS(FLAGS)
  for cls in VIEWS:
    assert options.view_as(cls) is options.view_as(cls)
  assert OPTIONS(FLAGS).view_as(VIEWS[0]) is not options.view_as(VIEWS[0])


def test_a_setting_made_in_one_view_is_seen_by_all(beams_own):
  del beams_own
  beam_caches.cache_option_views()
  options = OPTIONS(FLAGS)
  setup = options.view_as(pipeline_options.SetupOptions)
  setup.save_main_session = True
  options.view_as(pipeline_options.DirectOptions).direct_num_workers = 3
  assert options.view_as(pipeline_options.SetupOptions).save_main_session
  assert setup.view_as(pipeline_options.DirectOptions).direct_num_workers == 3
  # Options travel to workers pickled: the settings go with them.
  again = pickle.loads(pickle.dumps(options))
  assert _settings(again) == _settings(options)


def test_a_pipeline_runs_on_cached_views(beams_own):
  del beams_own
  beam_caches.install()
  with beam.Pipeline(options=OPTIONS(FLAGS[:3])) as p:
    counts = p | beam.Create(['a', 'b', 'a']) | beam.combiners.Count.PerElement()
    beam_testing.assert_that(counts,
                             beam_testing.equal_to([('a', 2), ('b', 1)]))


def test_cache_option_views_is_idempotent(beams_own):
  del beams_own
  beam_caches.cache_option_views()
  cached = OPTIONS.view_as
  beam_caches.install()
  assert OPTIONS.view_as is cached
