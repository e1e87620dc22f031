"""records/shards.py: the one reader of TFRecord files."""

import numpy as np
import tensorflow as tf

from records import features
from records import shards


def _write(path, payloads):
  options = 'GZIP' if str(path).endswith('.gz') else None
  with tf.io.TFRecordWriter(str(path), options=options) as writer:
    for payload in payloads:
      writer.write(payload)
  return str(path)


def _example(label):
  return tf.train.Example(features=tf.train.Features(feature={
      features.LABEL_KEY: tf.train.Feature(
          int64_list=tf.train.Int64List(value=[label]))})).SerializeToString()


def test_gzipped_and_plain_files_are_read_in_order(tmp_path):
  gzipped = _write(tmp_path / 'a.gz', [b'1', b'2'])
  plain = _write(tmp_path / 'b.tfrecord', [b'3'])
  assert shards.compression_of(gzipped) == shards.GZIP
  assert shards.compression_of(plain) == ''
  assert list(shards.records([gzipped]).as_numpy_iterator()) == [b'1', b'2']
  assert list(shards.records(plain, shards.compression_of(plain))
              .as_numpy_iterator()) == [b'3']


def test_interleaved_batches_hold_every_record_once(tmp_path):
  files = [_write(tmp_path / f'{n}.gz', [b'%d-%d' % (n, i) for i in range(5)])
           for n in range(3)]
  read = [record for batch in shards.interleaved_batches(files, 2)
          .as_numpy_iterator() for record in batch]
  assert sorted(read) == sorted(b'%d-%d' % (n, i) for n in range(3)
                                for i in range(5))


def test_labels_are_counted_over_every_file(tmp_path):
  files = [_write(tmp_path / '0.gz', [_example(l) for l in (3, 0, 3)]),
           _write(tmp_path / '1.gz', [_example(1)])]
  assert shards.label_counts(files, features.LABEL_KEY).tolist() == [1, 1, 0, 2]
  assert shards.label_counts([], features.LABEL_KEY).tolist() == []


def test_a_reader_without_autotuning_reads_the_same_records(tmp_path):
  # tf.data's option that its autotuning thread hangs on (records/shards.py
  # says why): if TensorFlow renames it, this fails.
  files = [_write(tmp_path / f'{n}.gz', [b'%d-%d' % (n, i) for i in range(5)])
           for n in range(2)]
  tuned = shards.numbered_batches(files, 2).map(
      lambda index, batch: (index, tf.strings.length(batch)),
      num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)
  untuned = shards.without_autotuning(tuned)
  assert tuned.options().autotune.enabled is not False
  assert untuned.options().autotune.enabled is False
  assert [(i, list(n)) for i, n in untuned.as_numpy_iterator()] == [
      (i, list(n)) for i, n in tuned.as_numpy_iterator()] == [
          (0, [3, 3]), (0, [3, 3]), (0, [3]), (1, [3, 3]), (1, [3, 3]),
          (1, [3])]


def test_mistakes_are_the_records_whose_top_class_is_not_their_label():
  files = ['gs://bucket/Split-train/data-00000-of-00002.gz',
           'gs://bucket/Split-train/data-00001-of-00002.gz']
  probabilities = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]], np.float32)
  named = shards.names_of_mistakes(
      files, probabilities, labels=np.array([0, 0, 1]),
      positions=np.array([10, 11, 12]), shard_numbers=np.array([0, 1, 1]),
      indices=np.array([4, 0, 1]), sources=np.array([b'a.png', b'b.png',
                                                      b'c.png']))
  assert named == {11: ('b.png', 'data-00001-of-00002.gz:0'),
                   12: ('c.png', 'data-00001-of-00002.gz:1')}
