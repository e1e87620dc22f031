"""Reading an Examples artifact's records back, the way a consumer would."""

import glob
import os
from typing import Dict, List

import numpy as np
import tensorflow as tf

from records import features


def split_files(examples_uri: str, split: str) -> List[str]:
  return sorted(glob.glob(os.path.join(examples_uri, f'Split-{split}', '*')))


def read_split(examples_uri: str, split: str) -> List[Dict]:
  """Every record of a split as {'image': HxWxC uint8 array, 'source':
  str, ...}."""
  records = []
  for raw in tf.data.TFRecordDataset(split_files(examples_uri, split),
                                     compression_type='GZIP'):
    feature = tf.train.Example.FromString(raw.numpy()).features.feature
    assert sorted(feature) == sorted(features.FEATURE_KEYS)
    ints = {k: feature[k].int64_list.value[0] for k in features.FEATURE_KEYS
            if k not in (features.IMAGE_KEY, features.SOURCE_KEY)}
    shape = (ints['height'], ints['width'], ints['channels'])
    image = np.frombuffer(feature[features.IMAGE_KEY].bytes_list.value[0],
                          np.uint8).reshape(shape)
    source = feature[features.SOURCE_KEY].bytes_list.value[0].decode()
    records.append({**ints, 'image': image, 'source': source})
  return records
