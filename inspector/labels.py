"""LabelCheck's suspects: the list a person reviews, and their thumbnails.

LabelCheck (components/label_check.py) writes suspects.json into its
LabelSuspects artifact: one row per suspect, per split, most doubtful first.
Each names its record's source (records/features.py): the image's path
under the input folder, or `<IDX images file>:<index>`; and, in runs since
LabelCheck recorded it, its place in the Examples, `<shard file>:<index>`
within the split's folder, by which its image is read back.
"""

import json
import math
import os
from typing import Any, Dict, List, Optional

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from inspector import files
from inspector import queries
from inspector.store import InspectError
from records import csv_cells

NODE = 'LabelCheck'
OUTPUT_KEY = 'suspects'
SUSPECTS_FILE = 'suspects.json'  # As components/label_check.py writes it.
# The reviewer's CSV: where the image is, what it is said to be, what the
# model says, and how sure.
CSV_COLUMNS = ('split', 'rank', 'source', 'given', 'given_name', 'suggested',
               'suggested_name', 'score', 'method')
THUMBNAILS_PER_SPLIT = 12


def suspects_artifact(md: queries.Metadata, run: queries.Run
                      ) -> queries.Artifact:
  return md.run_output(run, NODE, OUTPUT_KEY)


def _json_property(artifact: queries.Artifact, key: str) -> Dict[str, Any]:
  value = artifact.properties.get(key)
  if isinstance(value, str):
    return json.loads(value) if value else {}
  return value or {}


def suspects(md: queries.Metadata, run: queries.Run,
             split: Optional[str] = None) -> Dict[str, Any]:
  """The run's suspects (of `split`, or all), with the counts and the
  method that scored each split."""
  artifact = suspects_artifact(md, run)
  path = os.path.join(artifact.uri, SUSPECTS_FILE)
  if not files.exists(path):
    raise InspectError(f'LabelSuspects {artifact.id}: {path} is missing')
  rows = json.loads(files.read_bytes(path))
  methods = _json_property(artifact, 'methods')
  if split is not None:
    if split not in methods:
      raise InspectError(f'LabelSuspects {artifact.id} has no split '
                         f'{split!r} (splits: {", ".join(methods)})')
    rows = [r for r in rows if r['split'] == split]
  return {'suspects': {'id': artifact.id, 'uri': artifact.uri},
          'methods': methods,
          'counts': _json_property(artifact, 'suspects'),
          'checked': _json_property(artifact, 'records_checked'),
          'records': _json_property(artifact, 'records'),
          'seconds': _json_property(artifact, 'seconds'),
          'rows': rows}


def write_csv(path: str, rows: List[Dict[str, Any]]) -> None:
  files.check_directory(path)
  with open(path, 'w', newline='', encoding='utf-8') as f:
    writer = csv_cells.DictWriter(f, fieldnames=CSV_COLUMNS,
                                  extrasaction='ignore', lineterminator='\n')
    writer.writeheader()
    writer.writerows(rows)


def images_at(examples: queries.Artifact, split: str,
              rows: List[Dict[str, Any]]) -> Dict[str, np.ndarray]:
  """{source: HxWxC uint8} of the suspects in `rows`, all of `split`.

  A row names its record's place ('shard file:index') in `record`, so only
  the shards holding the suspects are read, each up to its last one. Rows
  written before LabelCheck named the place are found by their source,
  reading the split until all are found.
  """
  from inspector import images  # pylint: disable=g-import-not-at-top
  placed = {r['record']: r['source'] for r in rows
            if r.get('record') and r.get('source')}
  found = {placed[name]: pixels for name, pixels in
           images.records_at(examples, split, placed).items()}
  found.update(images.records_with_sources(
      examples, split, [r['source'] for r in rows
                        if r.get('source') and not r.get('record')]))
  return found


def short(source: str, length: int = 24) -> str:
  """`source`, its start cut to `length` characters (the file name and
  the index are at its end)."""
  return source if len(source) <= length else '...' + source[3 - length:]


_PAD = 6
_CELL_MIN = 56
_FONT_SIZE = 12


def draw_suspects(rows: List[Dict[str, Any]],
                  pictures: Dict[int, np.ndarray], columns: int = 6
                  ) -> Image.Image:
  """A grid of the suspects' images, each captioned with its rank and
  source, 'given -> suggested' and its score, in rank order."""
  font = ImageFont.load_default(size=_FONT_SIZE)
  shown = [r for r in rows if r.get('source') in pictures]
  if not shown:
    raise InspectError('no suspects\' images to draw')
  height = max(pictures[r['source']].shape[0] for r in shown)
  width = max(pictures[r['source']].shape[1] for r in shown)
  scale = max(1, math.ceil(_CELL_MIN / max(height, width)))
  captions = [(f'#{r["rank"]} {short(r["source"])}',
               f'{r["given_name"]} -> {r["suggested_name"]}',
               f'score {r["score"]:.3f}') for r in shown]
  text_w = max(font.getbbox(line)[2] for c in captions for line in c)
  cell_w = max(width * scale, text_w) + _PAD
  line_h = _FONT_SIZE + 3
  cell_h = height * scale + 3 * line_h + _PAD
  columns = min(columns, len(shown))
  rows_n = math.ceil(len(shown) / columns)
  canvas = Image.new('RGB', (columns * cell_w + _PAD, rows_n * cell_h + _PAD),
                     (255, 255, 255))
  draw = ImageDraw.Draw(canvas)
  for n, (row, caption) in enumerate(zip(shown, captions)):
    left = _PAD + (n % columns) * cell_w
    top = _PAD + (n // columns) * cell_h
    pixels = pictures[row['source']]
    image = Image.fromarray(
        pixels[..., 0] if pixels.shape[-1] == 1 else pixels,
        'L' if pixels.shape[-1] == 1 else 'RGB').convert('RGB')
    canvas.paste(image.resize((image.width * scale, image.height * scale),
                              Image.NEAREST), (left, top))
    for i, line in enumerate(caption):
      draw.text((left, top + height * scale + 2 + i * line_h), line,
                fill=(20, 20, 20), font=font)
  return canvas


def text(out, result: Dict[str, Any], top: int = 20) -> None:
  """The counts and methods per split, then each split's top suspects."""
  from inspector import render  # pylint: disable=g-import-not-at-top
  out.print(f'LabelSuspects {result["suspects"]["id"]} '
            f'{result["suspects"]["uri"]}')
  for split, method in result['methods'].items():
    count, checked = (result['counts'].get(split),
                      result['checked'].get(split))
    out.print(f'  {split}: ' + (f'{count:,} suspects of {checked:,} records '
                                f'({method})' if count is not None
                                else method))
  for split in result['methods']:
    rows = [r for r in result['rows'] if r['split'] == split][:top]
    if not rows:
      continue
    table = render._table(  # pylint: disable=protected-access
        'rank', 'source', 'given', 'suggested', 'score',
        right=('rank', 'score'),
        title=f'{split}: the {len(rows)} most doubtful')
    for r in rows:
      table.add_row(str(r['rank']), r.get('source', ''), r['given_name'],
                    r['suggested_name'], f'{r["score"]:.3f}')
    out.print(table)
  written = result.get('csv')
  if written:
    out.print(f'wrote {written["path"]} ({written["rows"]:,} rows)')
