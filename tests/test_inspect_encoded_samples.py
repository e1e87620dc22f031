"""`inspector samples` reads records of every image encoding alike."""

import numpy as np

from components.image_example_gen.options import ImageExampleGenOptions
from inspector import images
from metadata import queries
from records import features
from tests import artifacts
from tests import datasets


def _samples(tmp_path, encoding):
  examples = artifacts.run_example_gen(
      tmp_path / 'in', tmp_path / encoding, ImageExampleGenOptions(
          input_format='images', geometry=features.ImageGeometry(8, 6, 3),
          num_shards=1, image_encoding=encoding))
  artifact = queries.Artifact(
      id=1, type='Examples', uri=examples.uri, state='LIVE', created_ms=0,
      properties={'split_names': examples.split_names,
                  'file_format': 'tfrecords_gzip',
                  **{key: examples.get_string_custom_property(key) for key in
                     (features.CLASS_NAMES_PROPERTY,
                      features.IMAGE_ENCODING_PROPERTY)}})
  found = images.samples(artifact, 'train', per_class=4)
  # Records are shuffled: compare each class's images as a set.
  return {label: sorted(image.tobytes() for image in found[label])
          for label in found}


def test_png_samples_are_the_raw_ones(tmp_path):
  datasets.write_image_folder(str(tmp_path / 'in'))
  raw = _samples(tmp_path, 'raw')
  assert sorted(raw) == [0, 1, 2] and all(len(v) == 4 for v in raw.values())
  assert _samples(tmp_path, 'png') == raw
  assert np.frombuffer(raw[0][0], np.uint8).size == 8 * 6 * 3
