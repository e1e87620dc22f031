"""What DataChecks leaves in its artifact, and reading it back.

copies.csv, image_issues.csv and the counts as custom properties. What each
holds: docs/data-checks.md#what-a-run-does-with-them.
"""

import json
import os
from typing import Dict, Iterator, List

from records import artifact_files
from records import csv_cells
from records import features

# DataChecks' output: its artifact, which holds these files.
OUTPUT_KEY = 'data_checks'
COPIES_FILE = 'copies.csv'
ISSUES_FILE = 'image_issues.csv'
PAIR_COLUMNS = ('split_a', 'source_a', 'label_a', 'split_b', 'source_b',
                'label_b', 'kind', 'max_difference', 'correlation',
                'record_a', 'record_b')
ISSUE_COLUMNS = ('split', 'source', 'label', 'issue', 'score', 'record')
IMAGES_PROPERTY = 'images'
COPIES_PROPERTY = 'copies'
HELD_OUT_PROPERTY = 'held_out_copies'
ISSUES_PROPERTY = 'image_issues'
LABELS_PROPERTY = 'labels'
# The absl message of what the user should read (the copies and issues
# found), shown on a local run's console (runs/run_summary.py).
NOTICE_LINE = 'DataChecks: %s'


def split_pair(a: str, b: str) -> str:
  """Returns the key of splits `a` and `b` in the `copies` property."""
  return f'{a}-{b}'


def count_property(a: str, b: str) -> str:
  """Returns the name of the property counting copies between `a` and `b`."""
  return f'copies_{a}_{b}'


def _read_csv(path: str, limit=None) -> Iterator[Dict[str, str]]:
  with artifact_files.open_text(path) as f:
    for number, row in enumerate(csv_cells.dict_rows(f)):
      if limit is not None and number >= limit:
        return
      yield row


def read_pairs(uri: str, limit=None) -> Iterator[Dict[str, str]]:
  """The rows of the artifact's copies.csv, the first `limit` if given."""
  return _read_csv(os.path.join(uri, COPIES_FILE), limit)


def read_issues(uri: str, limit=None) -> Iterator[Dict[str, str]]:
  """The rows of the artifact's image_issues.csv, the first `limit` if given."""
  return _read_csv(os.path.join(uri, ISSUES_FILE), limit)


def name(split: str, source: str) -> str:
  """Names a record by its source, and by its split when the source lacks it.

  For example 'eval/roses/IMG_0412.jpg' or 't10k-images-idx3-ubyte.gz:41 in
  eval'.
  """
  return source if source.startswith(f'{split}/') else f'{source} in {split}'


# How describe_pair names a kind of copies.csv.
_KIND_WORDS = {'near': 'near', 'rescaled': 'cropped or rescaled'}


def describe_pair(row: Dict[str, str]) -> str:
  """Describes a row of copies.csv in one line.

  For example 'eval/roses/IMG_0412.jpg is a copy of train/roses/IMG_0077.jpg
  (exact)'. The second of the pair is named as the copy. When the pair
  crosses from train, that is the held-out image.
  """
  kind = ('exact' if row['kind'] == 'exact' else
          f'{_KIND_WORDS.get(row["kind"], row["kind"])}, correlation '
          f'{float(row["correlation"]):.3f}')
  # Examples written before records named their source have none.
  a, b = (name(row[f'split_{side}'], row[f'source_{side}'] or
               row[f'record_{side}']) for side in 'ab')
  return f'{b} is a copy of {a} ({kind})'


def json_property(artifact, name: str):
  """A JSON custom property of a TFX artifact, {} when absent."""
  if not artifact.has_custom_property(name):
    return {}
  return json.loads(artifact.get_string_custom_property(name))


def held_out_lines(held_out: Dict[str, Dict[str, float]]) -> List[str]:
  """One line per split of the `held_out_copies` property, for a person."""
  return [f'{split}: {int(info["images"]):,} images ({info["share"]:.2%}) '
          f'with a copy in {features.TRAIN_SPLIT}'
          for split, info in held_out.items()]
