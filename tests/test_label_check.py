"""LabelCheck finds labels planted wrong, in a real pipeline run on tiny
data, names their source files, and the inspector lists them for review."""

import collections
import csv
import dataclasses
import glob
import html as html_lib
import json
import os
import re
import shutil

import numpy as np
import pytest
from tfx import types
from tfx.types import artifact_utils
from tfx.types import standard_artifacts

from components.label_check import component as component_lib
from components.label_check import executor as executor_lib
from components.label_check import scoring as scoring_lib
from components.image_example_gen import idx
from inspector import commands
from inspector import labels as inspector_labels
from inspector import report
from inspector import report_page
from modules import cross_fit
from modules.training import callbacks
from modules.training.config import TrainingConfig
from pipeline import knobs
from pipeline import pipeline
from records import epoch_probabilities as recorded_probabilities
from records import eval_predictions
from records import features
from records import label_check_results
from records import shards
from tests import datasets
from tests import local_run
from tests import tiny_runs
from tests.absl_lines import absl_lines

TRAIN, EVAL = 400, 200
# Few classes: a tiny model learns them in the seconds a test trains.
CLASSES = 4
PLANTED = {'train': 12, 't10k': 10}  # 3% and 5%.
# IDX prefix -> the splits its records go to (validation: a hash's share).
SPLITS = {'train': ('train', 'validation'), 't10k': ('eval',)}
# The targets: recall in a list at most twice what was planted.
RECALL = {'train': 0.7, 't10k': 0.9}


def write_planted_dataset(directory: str, seed: int = 7):
  """tests/datasets.py's separable images with PLANTED labels per IDX
  file moved to another class; {prefix: the planted records' sources}."""
  written = datasets.write_idx_dataset(directory, {'train': TRAIN,
                                                   't10k': EVAL},
                                      num_classes=CLASSES)
  rng = np.random.default_rng(seed)
  planted = {}
  for prefix, (_, labels) in written.items():
    labels = labels.copy()
    where = np.sort(rng.choice(len(labels), PLANTED[prefix], replace=False))
    labels[where] = (labels[where] + rng.integers(1, CLASSES, len(where))) % CLASSES
    idx.write(os.path.join(directory, f'{prefix}-labels-idx1-ubyte.gz'),
              labels, True)
    [images] = glob.glob(os.path.join(directory, f'{prefix}-images-*'))
    planted[prefix] = {f'{os.path.basename(images)}:{i}'
                       for i in where.tolist()}
  return planted


def write_named_shards(tmp_path, sizes):
  """Writes an eval split of shards of `sizes` records, each of class 0 and
  source 'img-SHARD-INDEX'; returns the split's folder."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  geometry = features.ImageGeometry(height=2, width=2, channels=1)
  split_uri = tmp_path / 'Split-eval'
  split_uri.mkdir()
  for number, size in enumerate(sizes):
    with tf.io.TFRecordWriter(
        str(split_uri / f'data_tfrecord-{number:05d}-of-{len(sizes):05d}.gz'),
        'GZIP') as writer:
      for index in range(size):
        writer.write(features.make_example(bytes(4), geometry, 0,
                                           source=f'img-{number}-{index}'))
  return split_uri


def test_suspects_name_their_records_source_and_place(tmp_path):
  # A split of three shards; the records checked, a sample, are counted
  # over the shards in name order. A row's place, 'shard file:index', is
  # the record its source names.
  split_uri = write_named_shards(tmp_path, (5, 9, 7))
  positions = np.array([0, 3, 4, 5, 12, 13, 14, 19, 20])
  labels = np.zeros(len(positions), np.int64)
  probabilities = np.tile([[0.9, 0.1]], (len(positions), 1))
  doubted = [2, 3, 4, 5, 8]  # Positions 4, 5, 12, 13 and 20.
  probabilities[doubted] = [[0.2, 0.8], [0.3, 0.7], [0.1, 0.9], [0.4, 0.6],
                            [0.25, 0.75]]
  rows, _ = scoring_lib.suspects_rows(
      'eval', str(split_uri), positions, labels, probabilities, ['a', 'b'],
      executor_lib.OUT_OF_SAMPLE, averaged_over_run=True)
  assert [(r['source'], r['record']) for r in rows] == [
      ('img-1-7', 'data_tfrecord-00001-of-00003.gz:7'),
      ('img-0-4', 'data_tfrecord-00000-of-00003.gz:4'),
      ('img-2-6', 'data_tfrecord-00002-of-00003.gz:6'),
      ('img-1-0', 'data_tfrecord-00001-of-00003.gz:0'),
      ('img-1-8', 'data_tfrecord-00001-of-00003.gz:8')]
  label_check_results.write_suspects(str(tmp_path / 'suspects'), rows)
  assert label_check_results.read_suspects(str(tmp_path / 'suspects')) == rows
  with open(tmp_path / 'suspects' / label_check_results.SUSPECTS_CSV_FILE) as f:
    assert [r['record'] for r in csv.DictReader(f)] == [
        r['record'] for r in rows]


def test_the_evaluators_rows_are_matched_to_the_split_by_source(tmp_path):
  # The Evaluator writes its rows in no set order; LabelCheck puts them in
  # the split's, or scores the split itself where they are not its records.
  split_uri = write_named_shards(tmp_path, (5, 9, 7))
  files = shards.split_files(str(split_uri))
  sources = np.array([f'img-{n}-{i}'.encode() for n, size in
                      enumerate((5, 9, 7)) for i in range(size)], np.bytes_)
  probabilities = np.tile([[0.9, 0.1]], (len(sources), 1)).astype(np.float32)
  probabilities[[4, 12]] = [[0.2, 0.8], [0.4, 0.6]]
  order = np.random.default_rng(0).permutation(len(sources))
  path = eval_predictions.path_in(str(tmp_path / 'evaluation'))
  os.makedirs(os.path.dirname(path))
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with tf.io.TFRecordWriter(path, 'GZIP') as writer:
    for rows in np.array_split(order, 3):  # A record a batch.
      writer.write(eval_predictions.to_record(
          sources[rows], np.zeros(len(rows)), probabilities[rows]))
  given = eval_predictions.read(str(tmp_path / 'evaluation'))
  scored, why = scoring_lib.evaluators_probabilities(files, given)
  assert why == ''
  np.testing.assert_array_equal(scored.positions, np.arange(21))
  np.testing.assert_array_equal(scored.probabilities, probabilities)
  assert scored.named == {4: ('img-0-4', 'data_tfrecord-00000-of-00003.gz:4'),
                          12: ('img-1-7', 'data_tfrecord-00001-of-00003.gz:7')}
  assert eval_predictions.read(str(tmp_path / 'none')) is None

  def mismatch(rows, labels=None, names=None):
    return scoring_lib.evaluators_probabilities(files, eval_predictions.Predictions(
        sources[rows] if names is None else names,
        np.zeros(len(rows), np.int64) if labels is None else labels,
        probabilities[rows]))
  everything = np.arange(len(sources))
  assert mismatch(everything[1:]) == (
      None, 'a record of the split is not among its rows')
  extra = np.r_[sources, np.array([b'img-9-9'])]
  assert mismatch(np.r_[everything, 0], names=extra) == (
      None, 'it has 22 rows for 21 records')
  assert mismatch(np.r_[everything, 0]) == (
      None, 'two of its rows name the same source')
  assert mismatch(everything, labels=np.r_[1, np.zeros(20, np.int64)]) == (
      None, 'a record\'s label is not the one its row gives')
  assert mismatch(everything, names=np.full(21, b'')) == (
      None, 'its rows name no source')


def test_scoring_names_the_records_the_model_puts_in_another_class(
    tmp_path):
  # The pass that scores a split names the records whose most probable
  # class is not their label (every suspect and mistake) as sources_at
  # would, so the split is not read again for them; sampled or whole.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  split_uri = write_named_shards(tmp_path, (5, 900, 7))
  wrong = r'img-(0-4|1-7|1-6\d\d|2-0|2-6)'

  def serve(batch):
    sources = tf.io.parse_example(batch, {features.SOURCE_KEY: (
        tf.io.FixedLenFeature([], tf.string))})[features.SOURCE_KEY]
    return {'probabilities': tf.one_hot(tf.cast(
        tf.strings.regex_full_match(sources, wrong), tf.int64), 2)}

  files = executor_lib.split_files(_examples_of(tmp_path), 'eval')
  whole = scoring_lib.model_probabilities(serve, files, 'probabilities')
  assert len(whole.labels) == 912
  assert sorted(whole.named) == [4, 12, *range(605, 705), 905, 911]
  assert whole.named == scoring_lib.sources_at(str(split_uri),
                                               np.array(sorted(whole.named)))
  assert whole.named[12] == ('img-1-7', 'data_tfrecord-00001-of-00003.gz:7')
  assert whole.named[911] == ('img-2-6', 'data_tfrecord-00002-of-00003.gz:6')
  sampled = scoring_lib.model_probabilities(
      serve, files, 'probabilities', shards.sample_buckets(912, 300))
  wrong_in_sample = [p for p in sampled.positions.tolist() if p in whole.named]
  assert 10 < len(wrong_in_sample) < 80
  assert sampled.named == {p: whole.named[p] for p in wrong_in_sample}


def test_the_trainers_run_names_the_records_it_doubts(two_runs, tmp_path):
  # The Trainer's callback names the sampled records its averaged
  # probabilities put in another class as it predicts them, as the split
  # names them (LabelCheck then reads it no more). Here a model sure of
  # class 0 doubts every other label.
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_transform as tft  # pylint: disable=g-import-not-at-top
  import tf_keras as keras  # pylint: disable=g-import-not-at-top
  out = two_runs / 'out'
  [split] = glob.glob(str(out / 'pipeline/ImageExampleGen/examples/*/'
                          'Split-train'))
  [graph] = glob.glob(str(out / 'pipeline/Transform/transform_graph/*'))
  files = shards.split_files(split)
  records = shards.count_records(files)
  scored = callbacks.EpochProbabilities(
      files, records, records // 2, tft.TFTransformOutput(graph),
      str(tmp_path), planned_epochs=2, examples_per_epoch=640)
  scored.set_model(keras.Sequential([keras.layers.Lambda(
      lambda images: tf.one_hot(tf.zeros(tf.shape(images)[:1], tf.int32),
                                10) * 5.0)]))
  scored.on_epoch_end(0, {'val_accuracy': 0.5})
  scored.on_epoch_end(1, {'val_accuracy': 0.75})
  scored.on_train_end()
  run = recorded_probabilities.read(str(tmp_path))
  # Every epoch's validation accuracy is kept, the epochs scored or not.
  assert run.epochs == 1
  assert run.validation_curve.tolist() == [[640, 0.5], [1280, 0.75]]
  doubted = run.positions[run.labels != 0]
  assert 0 < len(doubted) < len(run.positions) < records
  assert sorted(run.named) == doubted.tolist()
  assert run.named == scoring_lib.sources_at(split, doubted)


def test_the_trainer_scores_validation_as_the_served_model_does(planted_run):
  # The Trainer scores the validation split with the weights it kept, at
  # the training precision; LabelCheck reads those instead of loading the
  # served model again: they must be the served model's probabilities.
  out, _ = planted_run
  [model_run] = (out / 'pipeline' / 'Trainer' / 'model_run').iterdir()
  held_out = recorded_probabilities.read(
      str(model_run), recorded_probabilities.HELD_OUT_FILE)
  [split] = glob.glob(str(out / 'pipeline/ImageExampleGen/examples/*/'
                          'Split-validation'))
  [model] = glob.glob(str(out / 'pipeline/Trainer/model/*/Format-Serving'))
  served = scoring_lib.model_probabilities(
      scoring_lib.load_signature(model, 'serving_default'),
      shards.split_files(split), 'probabilities')
  assert held_out.split == 'validation'
  assert held_out.records == len(served.labels) > 0
  np.testing.assert_array_equal(held_out.positions, served.positions)
  np.testing.assert_array_equal(held_out.labels, served.labels)
  np.testing.assert_allclose(held_out.probabilities, served.probabilities,
                             atol=0.02)
  # The records each puts in another class, named alike; a record only one
  # of them names is a near tie of the served model's two likeliest.
  common = held_out.named.keys() & served.named.keys()
  assert all(held_out.named[p] == served.named[p] for p in common)
  top_two = np.sort(served.probabilities, axis=1)[:, -2:]
  for position in set(held_out.named) ^ set(served.named):
    row = np.flatnonzero(served.positions == position)[0]
    assert top_two[row, 1] - top_two[row, 0] < 0.04, position
  assert len(set(held_out.named) ^ set(served.named)) <= 1


def test_eval_is_scored_by_the_evaluators_run_of_the_served_model(
    planted_run):
  # The Evaluator writes its model's probabilities of eval as TFMA scores
  # them; LabelCheck reads those instead of scoring eval again: they must
  # be the served model's, and its mistakes the evaluation's.
  out, _ = planted_run
  [evaluation] = (out / 'pipeline' / 'Evaluator' / 'evaluation').iterdir()
  given = eval_predictions.read(str(evaluation))
  [split] = glob.glob(str(out / 'pipeline/ImageExampleGen/examples/*/'
                          'Split-eval'))
  [model] = glob.glob(str(out / 'pipeline/Trainer/model/*/Format-Serving'))
  files = shards.split_files(split)
  served = scoring_lib.model_probabilities(
      scoring_lib.load_signature(model, 'serving_default'), files,
      'probabilities')
  evaluators, why = scoring_lib.evaluators_probabilities(files, given)
  assert why == '' and len(given.labels) == EVAL
  np.testing.assert_array_equal(evaluators.positions, served.positions)
  np.testing.assert_array_equal(evaluators.labels, served.labels)
  np.testing.assert_allclose(evaluators.probabilities, served.probabilities,
                             atol=1e-5)
  assert evaluators.named == served.named
  # The mistakes listed are the confusion matrix's, pair by pair.
  [uri] = (out / 'pipeline' / 'LabelCheck' / 'suspects').iterdir()
  pairs = collections.Counter(
      (r['given'], r['predicted'])
      for r in label_check_results.read_mistakes(str(uri)))
  matrix = np.array(tiny_runs.inspect_json(out, 'confusion')['matrix'])
  assert pairs and pairs == {
      (given, predicted): matrix[given, predicted]
      for given, predicted in zip(*np.nonzero(matrix))
      if given != predicted}


def test_a_warm_start_keeps_no_run_of_a_split_labelcheck_cross_fits(
    two_runs, tmp_path):
  # A scratch run keeps its probabilities of a small split (LabelCheck may
  # fall back on them); a warm start's few epochs do not, unless the split
  # is too large to cross-fit.
  import tensorflow_transform as tft  # pylint: disable=g-import-not-at-top
  from tfx.components.trainer.fn_args_utils import FnArgs  # pylint: disable=g-import-not-at-top
  from modules.training import config  # pylint: disable=g-import-not-at-top
  from modules.training import callbacks  # pylint: disable=g-import-not-at-top
  out = two_runs / 'out'
  [split] = glob.glob(str(out / 'pipeline/ImageExampleGen/examples/*/'
                          'Split-train'))
  [graph] = glob.glob(str(out / 'pipeline/Transform/transform_graph/*'))
  records = shards.count_records(shards.split_files(split))
  fn_args = FnArgs(train_files=[os.path.join(split, '*')], custom_config={
      config.EPOCH_PROBABILITIES_KEY: records,
      config.CROSS_FIT_RECORDS_KEY: records})

  def kept(warm, records=records):
    return callbacks.epoch_scores(
        fn_args, records, tft.TFTransformOutput(graph), str(tmp_path), None, 2,
        640, warm) is not None

  assert kept(warm=False)
  assert not kept(warm=True)
  assert kept(warm=True, records=records + 1)


def _examples_of(tmp_path):
  """An Examples artifact of tmp_path's one split, eval."""
  from tfx.types import standard_artifacts  # pylint: disable=g-import-not-at-top
  examples = standard_artifacts.Examples()
  examples.uri = str(tmp_path)
  examples.split_names = '["eval"]'
  return examples


def test_a_sample_within_one_fold_takes_one_model():
  assert cross_fit.plan(60_000, 2, 10_000).models == 1
  assert cross_fit.plan(60_000, 2, 40_000).models == 2
  everything = cross_fit.plan(300, 2, 10_000)
  assert everything.models == 2
  assert everything.checked_buckets == shards.BUCKETS


def test_a_sample_comes_in_full_blocks_that_name_their_records(tmp_path):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  path = str(tmp_path / 'records.gz')
  total = 3 * cross_fit.PREDICT_BATCH + 17
  with tf.io.TFRecordWriter(path, 'GZIP') as writer:
    for i in range(total):
      writer.write(f'record {i}'.encode())
  the_plan = cross_fit.plan(total, 1, total // 5)

  def parse(block):
    number = tf.strings.to_number(tf.strings.split(block).values[1::2],
                                  tf.int64)
    return number, number

  blocks = list(cross_fit.held_out([path], 0, the_plan, parse, cache=True))
  # One shard: its number 0, each record's index there its position.
  assert all((s.numpy() == 0).all() and (i.numpy() == p.numpy()).all()
             for p, s, i, *_ in blocks)
  positions = np.concatenate([p.numpy() for p, *_ in blocks])
  # Each position is its record's place in the file, the sample about a
  # fifth of them, in order, and read in as few blocks as it fills.
  assert all((p.numpy() == n.numpy()).all() for p, _, _, n, _ in blocks)
  assert (np.diff(positions) > 0).all()
  assert total // 10 < len(positions) < total // 2
  assert len(blocks) == -(-len(positions) // cross_fit.PREDICT_BATCH)


def write_labelled_records(path: str, labels) -> None:
  """Writes a gzipped TFRecord file of Examples carrying only `labels`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with tf.io.TFRecordWriter(path, 'GZIP') as writer:
    for i, label in enumerate(labels):
      writer.write(tf.train.Example(features=tf.train.Features(feature={
          features.LABEL_KEY: tf.train.Feature(
              int64_list=tf.train.Int64List(value=[int(label)])),
          # Records of the same label differ in their bytes, so they hash
          # apart.
          'n': tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
      })).SerializeToString())


def test_a_split_larger_than_the_cap_is_scored_on_a_stable_hash_sample(
    tmp_path):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  total, cap, classes = 4000, 1000, 3
  labels = np.arange(total) % classes
  files = [str(tmp_path / f'part-{i}.gz') for i in range(2)]
  write_labelled_records(files[0], labels[:total // 2])
  write_labelled_records(files[1], labels[total // 2:])

  def serve(batch):
    # A stand-in for the model's signature: sure of each record's label.
    spec = {features.LABEL_KEY: tf.io.FixedLenFeature([], tf.int64)}
    return {'probabilities': tf.one_hot(
        tf.io.parse_example(batch, spec)[features.LABEL_KEY], classes)}

  assert shards.count_records(files) == total
  buckets = shards.sample_buckets(total, cap)
  first = scoring_lib.model_probabilities(serve, files, 'probabilities',
                                          buckets)
  positions, checked_labels, probabilities, _ = first
  # Exactly the records the hash keeps, about `cap` of them, each scored
  # once, from the whole split (both files), in order.
  in_sample = np.concatenate([shards.bucket_of(block).numpy() < buckets
                              for block in tf.data.TFRecordDataset(
                                  files, 'GZIP').batch(999)])
  assert positions.tolist() == np.flatnonzero(in_sample).tolist()
  assert 0.85 * cap < len(positions) < 1.15 * cap
  assert positions.min() < total // 10 and positions.max() > total * 9 // 10
  assert checked_labels.tolist() == labels[positions].tolist()
  assert probabilities.shape == (len(positions), classes)
  # Batches of the sample are full, but the last.
  scored = [len(batch) for *_, batch in scoring_lib.read_records(files,
                                                                buckets)]
  assert all(n == scoring_lib.BATCH_SIZE for n in scored[:-1])
  # The same records on a second call.
  again = scoring_lib.model_probabilities(serve, files, 'probabilities',
                                          buckets)
  assert again[0].tolist() == positions.tolist()
  # A split no larger than the cap is scored whole.
  whole = scoring_lib.model_probabilities(
      serve, files, 'probabilities', shards.sample_buckets(total, total))
  assert whole[0].tolist() == list(range(total))
  assert whole[1].tolist() == labels.tolist()
  assert shards.sample_buckets(total, 0) == 0


def test_a_split_is_counted_only_as_far_as_the_automatic_folds_need(
    tmp_path):
  path = str(tmp_path / 'records.gz')
  write_labelled_records(path, np.zeros(300, np.int64))
  assert shards.count_records([path]) == 300
  assert shards.count_records([path], at_most=101) == 101
  properties = {executor_lib.FOLD_EXAMPLES_KEY: 100}
  assert executor_lib._training_folds([path], properties, None) == (
      0, ', auto: over 200 records')
  properties[executor_lib.FOLD_EXAMPLES_KEY] = 150
  assert executor_lib._training_folds([path], properties, None) == (
      2, ', auto: 300 records, at most 300')
  # The Trainer's run counted the split: it is not read again.
  run = recorded_probabilities.EpochProbabilities(
      positions=np.zeros(0, np.int64), labels=np.zeros(0, np.int64),
      probabilities=np.zeros((0, 2), np.float32), epochs=2, records=301,
      seconds=0.0)
  assert executor_lib._training_folds(['gone.gz'], properties, run) == (
      0, ', auto: over 300 records')
  # A small split is scored from the run too where the Trainer's model,
  # after as many examples as a fold's model trains on, was too weak to
  # doubt labels against its end (suspects.folds_too_weak).
  run = dataclasses.replace(run, records=200, validation_curve=np.array(
      [[100, 0.5], [200, 0.9], [300, 0.95]], np.float32))
  properties = {executor_lib.FOLD_EXAMPLES_KEY: 100}
  folds, why = executor_lib._training_folds(['gone.gz'], properties, run,
                                            0.05)
  assert folds == 0
  assert '100 examples' in why and '50.0% of validation' in why
  # Strong enough by a fold's budget, or no disagreement to judge by.
  properties[executor_lib.FOLD_EXAMPLES_KEY] = 150
  assert executor_lib._training_folds(['gone.gz'], properties, run, 0.05) == (
      2, ', auto: 200 records, at most 300')
  properties[executor_lib.FOLD_EXAMPLES_KEY] = 100
  assert executor_lib._training_folds(['gone.gz'], properties, run) == (
      2, ', auto: 200 records, at most 200')
  properties[executor_lib.FOLDS_KEY] = 0
  assert executor_lib._training_folds([path], properties, None) == (0, '')


def test_a_run_is_scored_at_a_few_of_its_epochs_and_its_last():
  for planned in range(1, 61):
    step = callbacks.scoring_stride(planned)
    scored = {e for e in range(1, planned + 1) if e % step == 0} | {planned}
    assert len(scored) <= callbacks.MAX_SCORED_EPOCHS + 1, planned
  # A short run (MNIST's 4 epochs, a warm start's 6): every other epoch.
  assert callbacks.scoring_stride(4) == callbacks.scoring_stride(6) == 2
  assert callbacks.scoring_stride(1) == 2


def test_the_check_is_on_by_default_and_a_flag_turns_it_off():
  def ids(evaluation):
    return {c.id for c in pipeline.create_pipeline(
        'p', 'root', 'data', 'serving', evaluation=evaluation).components}
  assert 'LabelCheck' in ids(knobs.EvaluationConfig())
  assert 'LabelCheck' not in ids(knobs.EvaluationConfig(label_check=False))


def test_the_evaluator_writes_eval_for_labelcheck_where_both_judge_it():
  # LabelCheck reads the Evaluator's probabilities of eval where the
  # Evaluator judges the same eval; else the Evaluator writes none.
  def nodes(**configs):
    return {c.id: c for c in pipeline.create_pipeline(
        'p', 'root', 'data', 'serving', **configs).components}
  shared = nodes()
  assert shared['LabelCheck'].inputs['evaluation'] is (
      shared['Evaluator'].outputs['evaluation'])
  assert shared['Evaluator'].exec_properties['module_path'] == (
      'components.evaluator.extractors')
  for configs in ({'evaluation': knobs.EvaluationConfig(label_check=False)},
                  {'data': knobs.DataConfig(eval_copies='drop')}):
    apart = nodes(**configs)
    assert apart['Evaluator'].exec_properties['module_path'] is None
    if 'LabelCheck' in apart:
      assert 'evaluation' not in apart['LabelCheck'].inputs


@pytest.fixture(scope='module')
def planted_run(tmp_path_factory):
  tmp = tmp_path_factory.mktemp('labels')
  planted = write_planted_dataset(str(tmp / 'data'))
  result = local_run.run(
      '--data-dir', str(tmp / 'data'), '--output-dir', str(tmp / 'out'),
      '--accuracy-threshold', '0.3', '--epochs', '4', '--train-steps', '80',
      '--batch-size', '32', '--seed', '1', '--label-check-train-examples',
      '2560', local_run.ONE_PROCESS)
  assert result.returncode == 0, result.stderr[-3000:]
  (tmp / 'console.txt').write_text(result.stdout)
  return tmp / 'out', planted


def test_planted_wrong_labels_are_among_the_suspects(planted_run):
  out, planted = planted_run
  result = tiny_runs.inspect_json(out, 'labels')
  assert result['methods']['eval'] == 'out_of_sample (by the Evaluator)'
  assert result['methods']['validation'] == (
      'out_of_sample (in the Trainer, by its kept weights)')
  # By default a training split this small is cross-fitted, whole where
  # it is smaller than the sample.
  train = result['checked']['train']
  assert result['methods']['train'] == (
      f'cross_fit (2 folds, auto: {train:,} records, at most 5,120)')
  # The Trainer's run still keeps its probabilities and its validation
  # curve, which said that fold models would be strong enough.
  [model_run] = (out / 'pipeline' / 'Trainer' / 'model_run').iterdir()
  run = recorded_probabilities.read(str(model_run))
  assert run.records == result['records']['train']
  assert len(run.validation_curve) == 4
  for prefix, sources in planted.items():
    listed = [r['source'] for r in result['rows']
              if r['split'] in SPLITS[prefix]]
    assert len(listed) <= 2 * len(sources), (prefix, listed, sources)
    found = len(sources & set(listed)) / len(sources)
    assert found >= RECALL[prefix], (prefix, sorted(listed), sorted(sources))
  assert sum(result['counts'].values()) == len(result['rows'])
  assert result['checked'] == result['records']
  assert result['checked']['train'] + result['checked']['validation'] == TRAIN
  assert result['checked']['eval'] == EVAL


def test_the_models_eval_mistakes_are_listed_most_confident_first(
    planted_run):
  out, planted = planted_run
  [uri] = (out / 'pipeline' / 'LabelCheck' / 'suspects').iterdir()
  mistakes = label_check_results.read_mistakes(str(uri))
  suspects = {r['record'] for r in label_check_results.read_suspects(str(uri))
              if r['split'] == 'eval'}
  assert mistakes and {r['split'] for r in mistakes} == {'eval'}
  assert all(r['predicted'] != r['given'] for r in mistakes)
  confidence = [r['predicted_probability'] for r in mistakes]
  assert confidence == sorted(confidence, reverse=True)
  assert all(r['predicted_probability'] > r['given_probability']
             for r in mistakes)
  # The planted labels the model contradicts are mistakes, and those it
  # doubts enough to list are marked as likely label errors.
  assert len(planted['t10k'] & {r['source'] for r in mistakes}) >= 9
  marked = {r['record'] for r in mistakes if r['suspect']}
  assert marked and marked <= suspects


def test_the_console_says_which_method_scored_which_split(planted_run):
  out, _ = planted_run
  console = (out.parent / 'console.txt').read_text()
  assert ('scored: train by cross_fit; validation, eval by out_of_sample'
          in console), console[-2000:]


def test_the_review_csv_names_each_suspect(planted_run, tmp_path):
  out, planted = planted_run
  path = tmp_path / 'review.csv'
  tiny_runs.inspect(out, 'labels', '--split', 'eval', '--csv', str(path))
  with open(path) as f:
    rows = list(csv.DictReader(f))
  assert rows and {r['split'] for r in rows} == {'eval'}
  assert [int(r['rank']) for r in rows] == list(range(1, len(rows) + 1))
  # The file to open, first after the split and the rank.
  assert list(rows[0])[:3] == ['split', 'rank', 'source']
  assert planted['t10k'] & {r['source'] for r in rows}
  first = rows[0]
  assert first['given'] != first['suggested']
  assert 0 < float(first['score']) <= 1
  text = tiny_runs.inspect(out, 'labels').stdout
  assert 'eval:' in text and 'out_of_sample' in text
  assert first['source'] in text


@pytest.fixture(scope='module')
def planted_report(planted_run, tmp_path_factory):
  """(facts, page) of `inspect report --html report.html --json` of
  planted_run."""
  out, _ = planted_run
  page = tmp_path_factory.mktemp('planted_report') / 'report.html'
  facts = json.loads(tiny_runs.inspect(out, 'report', '--html', str(page),
                                       '--json').stdout)
  return facts, page


def test_the_report_shows_the_suspects(planted_report):
  facts, page = planted_report
  labels = facts['labels']
  assert labels['status'] == 'ok', labels
  assert set(labels['splits']) == {'train', 'validation', 'eval'}
  html = page.read_text()
  assert 'id="labels"' in html and 'suspect images' in html


def _mistakes_file(out):
  [uri] = (out / 'pipeline' / 'LabelCheck' / 'suspects').iterdir()
  return uri / label_check_results.MISTAKES_FILE


def test_the_inspector_lists_the_models_mistakes(planted_run, tmp_path):
  out, planted = planted_run
  listed = label_check_results.read_mistakes(str(_mistakes_file(out).parent))
  path = tmp_path / 'wrong.csv'
  tiny_runs.inspect(out, 'mistakes', '--csv', str(path))
  with open(path, newline='') as f:
    rows = list(csv.DictReader(f))
  assert list(rows[0]) == list(inspector_labels.MISTAKES_CSV_COLUMNS)
  # Every mistake listed, most confident first, those LabelCheck also
  # doubts marked.
  assert [r['record'] for r in rows] == [r['record'] for r in listed]
  confidence = [float(r['predicted_probability']) for r in rows]
  assert confidence == sorted(confidence, reverse=True)
  assert all(r['given'] != r['predicted'] for r in rows)
  suspects = {r['source'] for r in tiny_runs.inspect_json(
      out, 'labels', '--split', 'eval')['rows']}
  marked = {r['source'] for r in rows if r['suspect'] == 'True'}
  assert marked and marked == suspects & {r['source'] for r in rows}
  assert planted['t10k'] & marked
  # --pair: the mistakes of one (true, predicted) pair, by name or label;
  # the pairs counted most frequent first.
  result = tiny_runs.inspect_json(out, 'mistakes')
  counts = [p['count'] for p in result['pairs']]
  assert counts == sorted(counts, reverse=True)
  assert sum(counts) == result['listed'] == len(rows)
  assert result['counts'] == {'eval': len(rows)}
  first = result['pairs'][0]
  for pair in (f'{first["given"]},{first["predicted"]}',
               f'{first["given_name"]},{first["predicted_name"]}'):
    only = tiny_runs.inspect_json(out, 'mistakes', '--pair', pair)['rows']
    assert [r['record'] for r in only] == [
        r['record'] for r in rows if (r['given'], r['predicted']) == (
            str(first['given']), str(first['predicted']))]
  text = tiny_runs.inspect(out, 'mistakes').stdout
  assert f'the model gets {len(rows):,} records wrong' in text
  assert rows[0]['source'] in text and 'label doubted' in text
  error = tiny_runs.inspect(out, 'mistakes', '--pair', '1', expect_rc=1)
  assert 'give TRUE,PREDICTED' in error.stderr
  error = tiny_runs.inspect(out, 'mistakes', '--pair', '0,zebra',
                            expect_rc=1)
  assert "'zebra' is no class" in error.stderr


def _figures(html):
  """(source, whether it shows a picture, whether it is badged 'label
  doubted') of each thumbnail of the model's mistakes, per pair heading."""
  part = html.split('<h3>Images the model gets wrong</h3>', 1)[1].split(
      '<h3>', 1)[0]
  groups = {}
  for heading, body in re.findall(r'<h4 class="pair">(.*?)</h4>(.*?)(?=<h4|$)',
                                  part, re.S):
    pair = re.sub(r'\s+', ' ', re.sub(r'<[^>]+>', ' ', heading)).split()
    groups[' '.join(pair[:3])] = [
        (html_lib.unescape(source), '<img src="data:image/png;base64,' in f,
         'class="badge">label doubted<' in f)
        for source, f in re.findall(r'<figure[^>]* title="([^"]*)">(.*?)'
                                    r'</figure>', body, re.S)]
  return groups


def test_the_report_shows_the_mistakes_by_pair(planted_run, planted_report):
  out, _ = planted_run
  facts, page = planted_report
  listed = label_check_results.read_mistakes(str(_mistakes_file(out).parent))
  part = facts['evaluation']['mistakes']
  assert part['status'] == 'ok', part
  # Beside the confusion matrix: the pairs most frequent first, each its
  # most confident mistakes, a thumbnail each, the doubted labels badged.
  pairs = collections.Counter((r['given_name'], r['predicted_name'])
                              for r in listed)
  ordered = sorted(pairs, key=lambda p: -pairs[p])
  groups = _figures(page.read_text().split('id="evaluation"', 1)[1])
  assert len(groups) == min(len(pairs), report.MISTAKE_PAIRS)
  assert [pairs[tuple(g.split(' → '))] for g in groups] == [
      pairs[p] for p in ordered][:len(groups)]
  for group, shown in groups.items():
    given, predicted = group.split(' → ')
    expected = [r for r in listed if (r['given_name'], r['predicted_name'])
                == (given, predicted)][:report.MISTAKES_PER_PAIR]
    assert shown == [(r['source'], True, r['suspect']) for r in expected]
  assert any(doubted for shown in groups.values() for *_, doubted in shown)


def test_the_mistakes_view_is_bounded_and_says_how_many_more(
    planted_run, planted_report, monkeypatch):
  out, _ = planted_run
  facts, _ = planted_report
  monkeypatch.setattr(report, 'MISTAKE_PAIRS', 2)
  monkeypatch.setattr(report, 'MISTAKES_PER_PAIR', 1)
  md = commands.open_metadata(commands.make_parser().parse_args(
      ['--output-dir', str(out), 'runs']))
  run = md.run('latest')
  part = report.mistakes_part(md, run)
  pairs = part['pairs']
  assert [len(p['rows']) for p in pairs] == [1, 1]
  html = report_page.page({**facts, 'evaluation': {
      **facts['evaluation'], 'mistakes': part}})
  view = html.split('<h3>Images the model gets wrong</h3>', 1)[1]
  assert (f'… {pairs[0]["count"] - 1} more: <code>python -m inspector '
          f'mistakes {run.name} --pair {pairs[0]["given"]},'
          f'{pairs[0]["predicted"]}</code>') in view
  assert (f'{part["more_pairs"]} more pairs ({part["more_images"]} images) '
          'not shown') in view
  assert f'python -m inspector mistakes {run.name} --csv FILE' in view
  # A run whose LabelCheck predates the list: one line saying so, in the
  # report and from the inspector.
  path = _mistakes_file(out)
  moved = path.with_suffix('.moved')
  os.rename(path, moved)
  try:
    part = report.mistakes_part(md, run)
    error = tiny_runs.inspect(out, 'mistakes', expect_rc=1)
  finally:
    os.rename(moved, path)
  assert part['status'] == 'not_recorded'
  assert f'{path} is missing' in error.stderr
  html = report_page.page({**facts, 'evaluation': {
      **facts['evaluation'], 'mistakes': part}})
  view = html.split('<h3>Images the model gets wrong</h3>', 1)[1].split(
      '</div>', 1)[0]
  assert '<b>Not recorded.</b> LabelSuspects' in view
  assert 'predates the list of the model&#39;s mistakes' in view


def test_cross_fitting_scores_train_and_every_other_split_is_checked(
    planted_run, tmp_path):
  # With folds, models trained on the other folds score the training split;
  # any further split is scored by the Trainer's model like eval.
  out, planted = planted_run
  [examples_dir] = (out / 'pipeline' / 'ImageExampleGen' / 'examples').iterdir()
  copy = tmp_path / 'examples'
  shutil.copytree(examples_dir, copy)
  shutil.copytree(copy / 'Split-eval', copy / 'Split-extra')
  examples = standard_artifacts.Examples()
  examples.uri = str(copy)
  examples.split_names = artifact_utils.encode_split_names(
      ['train', 'eval', 'extra'])
  model, graph = standard_artifacts.Model(), standard_artifacts.TransformGraph()
  [model.uri] = [str(p) for p in (out / 'pipeline' / 'Trainer' /
                                  'model').iterdir()]
  [graph.uri] = [str(p) for p in (out / 'pipeline' / 'Transform' /
                                  'transform_graph').iterdir()]
  suspects = component_lib.LabelSuspects()
  suspects.uri = str(tmp_path / 'suspects')
  component = component_lib.LabelCheck(
      examples=channel_of(examples), model=channel_of(model), model_run=None,
      transform_graph=channel_of(graph),
      cross_fit_fn='modules.cross_fit.cross_fit', folds=2,
      fold_examples=2560, checked_records=10_000,
      signature_name='serving_default', probabilities_key='probabilities',
      custom_config={'training': TrainingConfig(
          seed=1, batch_size=32).to_dict()})
  executor_lib.Executor().Do(
      {'examples': [examples], 'model': [model], 'transform_graph': [graph]},
      {'suspects': [suspects]}, component.exec_properties)
  methods = json.loads(suspects.get_string_custom_property('methods'))
  assert methods['extra'] == methods['eval'] == 'out_of_sample'
  assert methods['train'] == 'cross_fit (2 folds)'
  rows = label_check_results.read_suspects(suspects.uri)
  by_split = {split: [r['source'] for r in rows if r['split'] == split]
              for split in ('train', 'eval', 'extra')}
  assert by_split['extra'] == by_split['eval']
  assert len(planted['t10k'] & set(by_split['extra'])) >= 9
  # The planted records hashed into train (the rest went to validation).
  in_train = planted['train'] & set(
      s for s, _ in shards.read_sources(str(copy / 'Split-train')))
  assert len(by_split['train']) <= 2 * len(in_train)
  assert len(in_train & set(by_split['train'])) >= 0.7 * len(in_train)


def check_again(out, tmp_path, checked_records, folds=0, fold_examples=2560,
                custom_config=None, model_run=True):
  """Runs LabelCheck's executor again on `out`'s run with another cap (and
  folds, and the Trainer's settings for them; without the Trainer's run if
  not `model_run`); returns its artifact's properties and its suspects."""
  def artifact(kind, node, key):
    made = kind()
    [made.uri] = [str(p) for p in (out / 'pipeline' / node / key).iterdir()]
    return made
  examples = artifact(standard_artifacts.Examples, 'ImageExampleGen',
                      'examples')
  examples.split_names = artifact_utils.encode_split_names(
      ['train', 'validation', 'eval'])
  inputs = {'examples': [examples],
            'model': [artifact(standard_artifacts.Model, 'Trainer', 'model')],
            **({'model_run': [artifact(standard_artifacts.ModelRun,
                                       'Trainer', 'model_run')]}
               if model_run else {}),
            'transform_graph': [artifact(standard_artifacts.TransformGraph,
                                         'Transform', 'transform_graph')]}
  suspects = component_lib.LabelSuspects()
  suspects.uri = str(tmp_path / f'suspects-{checked_records}-{folds}')
  component = component_lib.LabelCheck(
      examples=channel_of(examples), model=channel_of(inputs['model'][0]),
      model_run=(channel_of(inputs['model_run'][0]) if model_run else None),
      transform_graph=channel_of(inputs['transform_graph'][0]),
      cross_fit_fn='modules.cross_fit.cross_fit', folds=folds,
      fold_examples=fold_examples, checked_records=checked_records,
      signature_name='serving_default', probabilities_key='probabilities',
      custom_config=custom_config)
  executor_lib.Executor().Do(inputs, {'suspects': [suspects]},
                             component.exec_properties)
  properties = {key: json.loads(suspects.get_string_custom_property(key))
                for key in ('methods', 'suspects', 'records_checked',
                            'records')}
  return properties, label_check_results.read_suspects(suspects.uri)


def test_validation_is_sampled_to_the_cap_and_eval_is_checked_whole(
    planted_run, tmp_path):
  out, _ = planted_run
  records = tiny_runs.inspect_json(out, 'labels')['records']
  validation = records['validation']
  cap = validation // 2
  properties, rows = check_again(out, tmp_path, cap)
  checked = properties['records_checked']
  assert properties['records'] == {'train': records['train'],
                                   'validation': validation, 'eval': EVAL}
  assert 0 < checked['validation'] < validation
  assert checked['eval'] == EVAL
  # Folds 0 score train from the Trainer's run, which keeps it even where
  # LabelCheck cross-fits (planted_run's defaults); without the run, it is
  # not checked.
  assert properties['methods']['train'].startswith('training_run')
  properties, _ = check_again(out, tmp_path, cap, model_run=False)
  assert properties['methods']['train'] == 'not checked: the model trained on it'
  # The artifact and every suspect's row say the split was sampled.
  sampled = (f'out_of_sample (a sample of {checked["validation"]:,} of '
             f'{validation:,} records)')
  assert properties['methods']['validation'] == sampled
  assert properties['methods']['eval'] == 'out_of_sample'
  assert {r['method'] for r in rows if r['split'] == 'validation'} <= {sampled}
  # 0: eval alone is checked.
  properties, rows = check_again(out, tmp_path, 0)
  assert properties['records_checked'] == {'eval': EVAL}
  assert properties['methods']['train'] == properties['methods'][
      'validation'] == 'not checked: 0 records asked for'
  assert {r['split'] for r in rows} <= {'eval'}


def channel_of(artifact):
  return types.Channel(type=type(artifact))


def test_fold_models_too_weak_to_doubt_labels_give_way_to_the_trainers_run(
    planted_run, tmp_path):
  out, _ = planted_run
  # One step per fold at a learning rate that leaves the network as it was
  # made, seeded: a model that doubts right labels, in any process.
  weak = TrainingConfig(learning_rate=1e-9, seed=0)
  with absl_lines(cross_fit.FOLD_LINE) as folds:
    properties, rows = check_again(out, tmp_path, 10_000, folds=2,
                                   fold_examples=32,
                                   custom_config={'training': weak.to_dict()})
  # Found too weak after its first fold, the second is not trained; the
  # split is scored from the Trainer's run instead, saying why.
  assert len(folds) == 1
  method = properties['methods']['train']
  assert method.startswith('training_run')
  assert 'the fold models were too weak' in method
  assert properties['records_checked']['train'] > 0
  assert {r['method'] for r in rows if r['split'] == 'train'} == {method}
  # Without the run, the split is left unchecked, saying why.
  properties, rows = check_again(out, tmp_path, 10_000, folds=2,
                                 fold_examples=32,
                                 custom_config={'training': weak.to_dict()},
                                 model_run=False)
  method = properties['methods']['train']
  assert method.startswith('not checked: the fold models were too weak')
  assert '--label-check-train-examples' in method
  assert 'train' not in properties['records_checked']
  assert {r['split'] for r in rows} <= {'validation', 'eval'}
