"""What LabelCheck leaves in its artifact, and reading it back.

suspects.csv and suspects.json (the labels to review), mistakes.json (the
eval records the model gets wrong) and the counts as custom properties.
What each holds: docs/label-check.md#acting-on-the-list.
"""

import io
import json
import os
from typing import Any, Dict, List

from records import artifact_files
from records import csv_cells

# LabelCheck's output: its artifact, which holds these files.
OUTPUT_KEY = 'suspects'
SUSPECTS_CSV_FILE = 'suspects.csv'
SUSPECTS_FILE = 'suspects.json'
# The eval records the model gets wrong, most confident first.
MISTAKES_FILE = 'mistakes.json'
SUSPECT_COLUMNS = ('split', 'rank', 'source', 'given', 'given_name',
                   'suggested', 'suggested_name', 'score', 'given_probability',
                   'suggested_probability', 'method', 'record')
# Custom properties of the artifact, each JSON of {split: value}: the
# suspects listed, the records checked (a sample of some splits), the
# records in the split, how they were scored, the check's wall time.
SUSPECTS_PROPERTY = 'suspects'
CHECKED_PROPERTY = 'records_checked'
RECORDS_PROPERTY = 'records'
METHODS_PROPERTY = 'methods'
SECONDS_PROPERTY = 'seconds'
MISTAKES_PROPERTY = 'mistakes'  # Records the model gets wrong.
# Wrong labels cleanlab estimates, and the temperature calibrating the
# probabilities, of the calibrated splits only.
ESTIMATES_PROPERTY = 'estimated_wrong'
TEMPERATURES_PROPERTY = 'temperatures'


def _gfile():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile


def write_suspects(uri: str, rows: List[Dict[str, Any]]) -> None:
  """Writes suspects.csv and suspects.json under `uri`."""
  text = io.StringIO()
  writer = csv_cells.DictWriter(text, fieldnames=SUSPECT_COLUMNS,
                                lineterminator='\n')
  writer.writeheader()
  writer.writerows(rows)
  gfile = _gfile()
  gfile.makedirs(uri)
  with gfile.GFile(os.path.join(uri, SUSPECTS_CSV_FILE), 'w') as f:
    f.write(text.getvalue())
  with gfile.GFile(os.path.join(uri, SUSPECTS_FILE), 'w') as f:
    json.dump(rows, f, indent=1)


def write_mistakes(uri: str, rows: List[Dict[str, Any]]) -> None:
  """Writes mistakes.json under `uri`."""
  with _gfile().GFile(os.path.join(uri, MISTAKES_FILE), 'w') as f:
    json.dump(rows, f, indent=1)


def _read_rows(uri: str, name: str) -> List[Dict[str, Any]]:
  """The rows of JSON file `name` under `uri`."""
  path = os.path.join(uri, name)
  if not artifact_files.exists(path):
    raise FileNotFoundError(f'{path} is missing')
  return json.loads(artifact_files.read_bytes(path))


def read_suspects(uri: str) -> List[Dict[str, Any]]:
  """Reads the rows write_suspects wrote.

  Rows written before LabelCheck named the record's place have no `record`.

  Raises:
    FileNotFoundError: `uri` holds no suspects.json.
  """
  return _read_rows(uri, SUSPECTS_FILE)


def read_mistakes(uri: str) -> List[Dict[str, Any]]:
  """Reads the rows write_mistakes wrote.

  Raises:
    FileNotFoundError: `uri` holds no mistakes.json (LabelCheck wrote none
      before it listed mistakes).
  """
  return _read_rows(uri, MISTAKES_FILE)
