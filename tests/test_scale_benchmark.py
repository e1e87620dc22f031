"""The scale benchmark's logic (its goals, its report section, resuming),
on made-up measurements: the runs themselves take half an hour, and live
in `python -m benchmarks --scale`, not in CI."""

import numpy as np

from benchmarks import harness
from benchmarks import scaling
from benchmarks.harness import Figure

GB = 10**9


def _row(copies, seconds, peak, cap=None, failed='', skipped=''):
  """A measured row: `seconds` per component, one peak for all."""
  rows = scaling.plan_rows([copies], None, None, 300, 128)
  row = rows[0]
  if cap:
    row = scaling.plan_rows([], copies, cap, 300, 128)[0]
  row.seconds = {**seconds, scaling.WHOLE_RUN: sum(seconds.values())}
  row.peak_memory = {scaling.WHOLE_RUN: peak,
                  **{c: peak // 2 for c in seconds}}
  row.disk_bytes = {c: 10**6 for c in seconds}
  row.failed, row.skipped = failed, skipped
  return row


def _stream(streaming, bare):
  return scaling.StreamResult(copies=10, examples=600_000,
                              rate={'streaming input_fn': Figure([streaming]),
                                    'bare read': Figure([bare])},
                              plan='train: streamed from disk: ...')


# 10x: 610,000 examples; 100x: 6,010,000.
TEN = {'ImageExampleGen': 4.0, 'StatisticsGen': 30.0, 'Transform': 20.0}
HUNDRED = {'ImageExampleGen': 35.0, 'StatisticsGen': 290.0,
           'Transform': 190.0}


def test_goals_met_and_not_met():
  rows = [_row(10, TEN, 3 * GB), _row(100, HUNDRED, 4 * GB),
          _row(100, HUNDRED, 4 * GB, cap=4 * GB)]
  goals = {g.name: g for g in scaling.goals(rows, _stream(80, 100))}
  assert [g.met for g in goals.values()] == [True] * 7
  assert goals['ExampleGen >= 150,000 examples/s at 100x'].measured == (
      f'{6_010_000 / 35:,.0f}')
  assert goals['peak memory at 100x <= 1.5x peak at 10x'].measured.startswith(
      '1.33x')

  slower = dict(HUNDRED, StatisticsGen=320.0, ImageExampleGen=45.0)
  rows = [_row(10, TEN, 2 * GB), _row(100, slower, 4 * GB),
          _row(100, slower, 4 * GB, cap=4 * GB, failed='killed by the OOM '
               'killer (1x)')]
  goals = scaling.goals(rows, _stream(60, 100))
  assert [(g.name.split()[0], g.met) for g in goals] == [
      ('100x', False),  # Killed.
      ('peak', False),  # 2x.
      ('ExampleGen', False),  # 133,556 examples/s.
      ('StatisticsGen:', False),  # 53.2 vs 49.2 µs per example.
      ('Transform:', True),  # 31.7 vs 33.3 µs.
      ('ImageExampleGen:', False),  # 7.5 vs 6.6 µs.
      ('streaming', False),  # 60%.
  ]
  assert goals[0].measured.startswith('killed by the OOM killer (1x) under')


def test_a_cap_not_below_the_raw_pixels_is_not_the_goal():
  # 100x's raw pixels: 6,010,000 x 784 bytes = 4.71 GB.
  rows = [_row(100, HUNDRED, 4 * GB, cap=5 * GB)]
  goal = scaling.goals(rows, None)[0]
  assert goal.met is False and '4.71 GB' in goal.measured


def test_what_was_not_measured_is_neither_met_nor_not_met():
  skipped = scaling.plan_rows([], 100, None, 300, 128)[0]
  skipped.skipped = 'a memory cgroup needs root'
  goals = scaling.goals([_row(1, TEN, GB), skipped], None)
  assert all(g.met is None for g in goals)
  assert goals[0].measured == 'not measured: a memory cgroup needs root'
  # The default cap: 85% of the capped size's raw pixels.
  assert skipped.cap_bytes == int(0.85 * 6_010_000 * 784)


def test_the_section_shows_each_component_and_the_streaming_read():
  rows = [_row(10, TEN, 3 * GB), _row(100, HUNDRED, 4 * GB)]
  section = scaling.SECTION.text((rows, _stream(80, 100)),
                                 harness.Context('python -m x'))
  assert section.startswith('## Scale: 1x, 10x and 100x MNIST')
  assert '    python -m x' in section
  assert '| ImageExampleGen | 4.0 (152,500/s) | 35.0 (171,714/s) |' in section
  assert '| streaming input_fn | 80 | 80% |' in section


def test_a_measured_row_is_read_back_as_it_was_saved():
  row = _row(10, TEN, 3 * GB)
  row.trainer_input = ['train: cached in memory: ...']
  assert scaling.Row.from_json(row.to_json()) == row


def test_an_epoch_is_timed_to_its_last_record_not_the_end_of_the_sequence():
  def batches():  # 3 batches of 4 records, then a stall never waited for.
    for _ in range(3):
      yield np.zeros((4, 2))
    raise AssertionError('read past the last record')

  assert harness.epoch(batches(), 12) == 12
  # Tuples (images, labels), as the input_fn yields them.
  assert harness.epoch(
      iter([(np.zeros((5, 2)), np.zeros(5))] * 2), 10) == 10
