"""Reading back which input each record came from (the `source` feature).

The data checks find records by their pixels or predictions and name them by
their source. A person then gets a list to act on, such as "eval/roses/
IMG_0412.jpg is a copy of train/roses/IMG_0077.jpg".
"""

from typing import Iterator, Tuple

import tensorflow as tf

from records import features
from records import shards

# Records parsed at once: the parse copies only the source and label.
_BATCH = 4096


def read_sources(split_uri: str) -> Iterator[Tuple[str, int]]:
  """Yields (source, label) of each record of an Examples split.

  Records come in the order of the shard files (sorted by name) and of the
  records in each. Only these two features are parsed, a batch at a time, so
  memory holds one batch and no image bytes.

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
