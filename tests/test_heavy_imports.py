"""runners/heavy_imports.py: a block run without the garbage collector,
what it leaves behind frozen, the collector as it was before."""

import gc

from runners import heavy_imports


def test_the_block_runs_without_the_collector_and_its_objects_stay_frozen():
  assert gc.isenabled()
  before = gc.get_freeze_count()
  try:
    with heavy_imports.without_gc():
      assert not gc.isenabled()
      kept = [[] for _ in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + len(kept)
  finally:
    gc.unfreeze()


def test_a_collector_that_was_off_stays_off():
  gc.disable()
  try:
    with heavy_imports.without_gc():
      pass
    assert not gc.isenabled()
  finally:
    gc.enable()
    gc.unfreeze()
