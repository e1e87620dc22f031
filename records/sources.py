"""Reading back which input each record came from (the `source` feature).

For the data checks that give a person a list to act on ("eval/roses/
IMG_0412.jpg is a copy of train/roses/IMG_0077.jpg"): they find records by
their pixels or predictions, and name them by this.
"""

from typing import Iterator, Tuple

import tensorflow as tf

from records import features
from records import shards

# Records parsed at once: the parse copies only the source and label.
_BATCH = 4096


def read_sources(split_uri: str) -> Iterator[Tuple[str, int]]:
  """(source, label) of each record of an Examples split, in the order of
  its shard files (sorted by name) and of the records in each.

  Only these two features are parsed, a batch of records at a time: the
  image bytes are skipped, and memory holds one batch.

  Args:
    split_uri: the split's folder (artifact_utils.get_split_uri), of the
      gzipped TFRecord shards ExampleGen writes.

  Raises:
    FileNotFoundError: the folder holds no shard.
  """
  files = shards.split_files(split_uri)
  spec = {features.SOURCE_KEY: tf.io.FixedLenFeature([], tf.string),
          features.LABEL_KEY: tf.io.FixedLenFeature([], tf.int64)}
  batches = (tf.data.TFRecordDataset(files, compression_type='GZIP')
             .batch(_BATCH)
             .map(lambda records: tf.io.parse_example(records, spec))
             .prefetch(1))
  for batch in batches.as_numpy_iterator():
    for source, label in zip(batch[features.SOURCE_KEY].tolist(),
                             batch[features.LABEL_KEY].tolist()):
      yield source.decode(), label
