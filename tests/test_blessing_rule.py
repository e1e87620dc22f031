"""The blessing rule's arithmetic: the smallest accuracy whose Wilson score
95% lower bound is above always guessing the eval split's most common
class, checked against scipy's Wilson interval; and the label counts it
starts from, read from real gzipped TFRecord files."""

import os

import pytest
from scipy import stats
import tensorflow as tf

from components.evaluator import blessing_rule
from records import features


def _clear_of(share, total):
  """The fewest correct of `total` whose Wilson 95% lower bound (scipy's)
  is above `share`."""
  return next(k for k in range(total + 1) if stats.binomtest(
      k, total).proportion_ci(0.95, method='wilson').low > share)


@pytest.mark.parametrize('majority,total', [
    (120, 600), (1, 3), (50, 100), (900, 1000), (5, 10), (1000, 10000),
    (21, 40)])
def test_the_threshold_is_the_smallest_accuracy_clearly_above_the_majority(
    majority, total):
  threshold = blessing_rule.clear_margin_threshold(majority, total)
  correct = _clear_of(majority / total, total)
  # An accuracy of `correct` / total passes, one fewer does not.
  assert (correct - 1) / total < threshold <= correct / total
  assert threshold == round(threshold, 4)  # The number shown is the one used.


def test_five_balanced_classes_and_a_too_small_split():
  rule = blessing_rule.from_class_counts(
      [120] * 5, ['daisy', 'dandelion', 'roses', 'sunflowers', 'tulips'])
  assert rule.threshold == 0.2321
  assert rule.text == (
      "accuracy >= 0.2321, clearly above always guessing 'daisy' (20.0% of "
      '600 eval images); --accuracy-threshold sets a fixed one')
  # 8 of 10 in one class: even 10 of 10 right is not clearly better.
  small = blessing_rule.from_class_counts([2, 8], ['a', 'b'])
  assert small.threshold > 1
  assert 'too few eval images for any model to be clearly better' in (
      small.text)
  with pytest.raises(ValueError, match='no eval examples'):
    blessing_rule.from_class_counts([0, 0])


def test_a_fixed_threshold_says_so():
  assert blessing_rule.fixed(0.99).text.startswith(
      'accuracy >= 0.99, a fixed threshold')


def test_labels_are_counted_from_the_split_files(tmp_path):
  labels = [2, 0, 2, 2, 5, 0] * 1000
  for shard in range(2):
    path = os.path.join(tmp_path, f'data_tfrecord-0000{shard}-of-00002.gz')
    with tf.io.TFRecordWriter(path, options='GZIP') as writer:
      for label in labels[shard::2]:
        writer.write(tf.train.Example(features=tf.train.Features(feature={
            features.LABEL_KEY: tf.train.Feature(
                int64_list=tf.train.Int64List(value=[label])),
            features.IMAGE_KEY: tf.train.Feature(
                bytes_list=tf.train.BytesList(value=[b'\0' * 64]))}
        )).SerializeToString())
  counts = blessing_rule.count_labels([str(tmp_path / '*')],
                                      features.LABEL_KEY)
  assert counts.tolist() == [2000, 0, 3000, 0, 0, 1000]
