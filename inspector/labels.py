"""LabelCheck's suspects: the list a person reviews, and their thumbnails.

Read from LabelCheck's suspects.json (and mistakes.json, the eval records
the model gets wrong), each record's image read back by its place in the
Examples. Why and how: docs/label-check.md.
"""

import math
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from inspector import render
from metadata import queries
from metadata.store import InspectError
from records import csv_cells
from records import label_check_results as results

NODE = 'LabelCheck'
# The reviewer's CSV: where the image is, what it is said to be, what the
# model says, and how sure.
CSV_COLUMNS = ('split', 'rank', 'source', 'given', 'given_name', 'suggested',
               'suggested_name', 'score', 'method')
MISTAKES_CSV_COLUMNS = ('split', 'rank', 'source', 'given', 'given_name',
                        'predicted', 'predicted_name', 'predicted_probability',
                        'given_probability', 'suspect', 'record')
THUMBNAILS_PER_SPLIT = 12


class NoMistakesListed(InspectError):
  """A LabelSuspects artifact without mistakes.json: LabelCheck wrote it
  before it listed the model's mistakes."""


def suspects_artifact(md: queries.Metadata, run: queries.Run
                      ) -> queries.Artifact:
  return md.run_output(run, NODE, results.OUTPUT_KEY)


def suspects(md: queries.Metadata, run: queries.Run,
             split: Optional[str] = None) -> Dict[str, Any]:
  """The run's suspects, with the counts and the method that scored each
  split.

  Args:
    md: the store.
    run: the run whose LabelCheck listed them.
    split: only this split's suspects; None: every split's.

  Raises:
    InspectError: the run has no LabelCheck output, its list is missing,
      or it has no split `split`.
  """
  artifact = suspects_artifact(md, run)
  try:
    rows = results.read_suspects(artifact.uri)
  except FileNotFoundError as e:
    raise InspectError(f'LabelSuspects {artifact.id}: {e}') from e
  methods = artifact.json_property(results.METHODS_PROPERTY)
  if split is not None:
    if split not in methods:
      raise InspectError(f'LabelSuspects {artifact.id} has no split '
                         f'{split!r} (splits: {", ".join(methods)})')
    rows = [r for r in rows if r['split'] == split]
  return {'suspects': {'id': artifact.id, 'uri': artifact.uri},
          'methods': methods,
          'counts': artifact.json_property(results.SUSPECTS_PROPERTY),
          'checked': artifact.json_property(results.CHECKED_PROPERTY),
          'records': artifact.json_property(results.RECORDS_PROPERTY),
          'seconds': artifact.json_property(results.SECONDS_PROPERTY),
          'rows': rows}


def mistakes(md: queries.Metadata, run: queries.Run,
             pair: Optional[str] = None) -> Dict[str, Any]:
  """The eval records the run's model gets wrong, most confident first (of
  the (true, predicted) `pair` 'TRUE,PREDICTED', class names or labels, or
  all), with every pair's count.

  Raises:
    NoMistakesListed: the run's LabelCheck wrote no mistakes.json.
    InspectError: the run has no LabelCheck output, or `pair` names no
      two classes.
  """
  artifact = suspects_artifact(md, run)
  try:
    rows = results.read_mistakes(artifact.uri)
  except FileNotFoundError as e:
    raise NoMistakesListed(
        f'LabelSuspects {artifact.id}: {e} (LabelCheck of this run predates '
        'the list of the model\'s mistakes)') from e
  counts = artifact.json_property(results.MISTAKES_PROPERTY)
  pairs = confusions(rows)
  result = {'suspects': {'id': artifact.id, 'uri': artifact.uri},
            'counts': counts, 'listed': len(rows),
            'pairs': [{k: v for k, v in p.items() if k != 'rows'}
                      for p in pairs]}
  if pair is not None:
    from inspector import images  # pylint: disable=g-import-not-at-top
    names = images.class_names(md.run_output(run, 'ImageExampleGen',
                                             'examples'))
    given, predicted = _pair(pair, names)
    rows = [r for r in rows
            if (r['given'], r['predicted']) == (given, predicted)]
    result['pair'] = {'given': given, 'given_name': names[given],
                      'predicted': predicted,
                      'predicted_name': names[predicted]}
  return {**result, 'rows': rows}


def _pair(text: str, names: List[str]) -> Tuple[int, int]:
  """The labels (true, predicted) of --pair's 'TRUE,PREDICTED'."""
  parts = text.split(',')
  if len(parts) != 2:
    raise InspectError(f'--pair {text!r}: give TRUE,PREDICTED, two classes '
                       'by name or label, e.g. 3,5')
  labels = []
  for part in (p.strip() for p in parts):
    if part in names:
      labels.append(names.index(part))
    elif part.isdigit() and int(part) < len(names):
      labels.append(int(part))
    else:
      raise InspectError(f'--pair {text!r}: {part!r} is no class (classes: '
                         f'{", ".join(names)})')
  return labels[0], labels[1]


def confusions(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
  """The (true, predicted) pairs of the mistakes in `rows`, most frequent
  first (ties in the confusion matrix's order), each with its count, how
  many of them LabelCheck doubts, and its rows in their order."""
  found: Dict[Tuple[int, int], Dict[str, Any]] = {}
  for r in rows:
    group = found.setdefault((r['given'], r['predicted']), {
        'given': r['given'], 'given_name': r['given_name'],
        'predicted': r['predicted'], 'predicted_name': r['predicted_name'],
        'count': 0, 'doubted': 0, 'rows': []})
    group['count'] += 1
    group['doubted'] += bool(r['suspect'])
    group['rows'].append(r)
  return [found[key] for key in sorted(
      found, key=lambda key: (-found[key]['count'], key))]


def write_csv(path: str, rows: List[Dict[str, Any]],
              columns: Tuple[str, ...] = CSV_COLUMNS) -> None:
  """Writes `rows` to `path` as CSV, one column of each of `columns`."""
  render.check_directory(path)
  with open(path, 'w', newline='', encoding='utf-8') as f:
    writer = csv_cells.DictWriter(f, fieldnames=columns,
                                  extrasaction='ignore', lineterminator='\n')
    writer.writeheader()
    writer.writerows(rows)


def images_at(examples: queries.Artifact, split: str,
              rows: List[Dict[str, Any]]) -> Dict[str, np.ndarray]:
  """{source: HxWxC uint8} of the records in `rows` (suspects or
  mistakes), all of `split`."""
  return images_in(examples, [dict(r, split=split) for r in rows]).get(
      split, {})


def images_in(examples: queries.Artifact, rows: List[Dict[str, Any]]
              ) -> Dict[str, Dict[str, np.ndarray]]:
  """{split: {source: HxWxC uint8}} of the records in `rows` (suspects or
  mistakes), each of its row's `split`.

  A row names its record's place ('shard file:index') in `record`, so only
  the shards holding them are read, those of every split in one pass, each
  up to its last one. Suspects written before LabelCheck named the place
  are found by their source, reading their split until all are found.
  """
  from inspector import images  # pylint: disable=g-import-not-at-top
  placed: Dict[str, Dict[str, str]] = {}  # split -> place -> source
  unplaced: Dict[str, List[str]] = {}  # split -> sources
  for r in rows:
    if r.get('source'):
      if r.get('record'):
        placed.setdefault(r['split'], {})[r['record']] = r['source']
      else:
        unplaced.setdefault(r['split'], []).append(r['source'])
  found = {split: {placed[split][name]: pixels
                   for name, pixels in by_name.items()}
           for split, by_name in images.records_in(examples, placed).items()}
  for split, sources in unplaced.items():
    found.setdefault(split, {}).update(
        images.records_with_sources(examples, split, sources))
  return found


def short(source: str, length: int = 24) -> str:
  """`source`, its start cut to `length` characters (the file name and
  the index are at its end)."""
  return source if len(source) <= length else '...' + source[3 - length:]


_PAD = 6
_FONT_SIZE = 12


def draw_suspects(rows: List[Dict[str, Any]],
                  pictures: Dict[str, np.ndarray], columns: int = 6
                  ) -> Image.Image:
  """A grid of the suspects' images, each captioned with its rank and
  source, 'given -> suggested' and its score, in rank order.

  Args:
    rows: the suspects, as `suspects` lists them.
    pictures: {source: HxWxC uint8} (images_at); a row without one is left
      out.
    columns: images per row of the grid.

  Raises:
    InspectError: no row has a picture.
  """
  from inspector import images  # pylint: disable=g-import-not-at-top
  font = ImageFont.load_default(size=_FONT_SIZE)
  shown = [r for r in rows if r.get('source') in pictures]
  if not shown:
    raise InspectError('no suspects\' images to draw')
  height = max(pictures[r['source']].shape[0] for r in shown)
  width = max(pictures[r['source']].shape[1] for r in shown)
  scale = images.scale_for(pictures[r['source']] for r in shown)
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
    canvas.paste(images.as_rgb(pictures[row['source']], scale), (left, top))
    for i, line in enumerate(caption):
      draw.text((left, top + height * scale + 2 + i * line_h), line,
                fill=(20, 20, 20), font=font)
  return canvas


def text(out, result: Dict[str, Any], top: int = 20) -> None:
  """The counts and methods per split, then each split's top suspects."""
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


def mistakes_text(out, result: Dict[str, Any], top: int = 20) -> None:
  """The count per split, the pairs most frequent first, then the most
  confident mistakes (of --pair's, if given)."""
  out.print(f'LabelSuspects {result["suspects"]["id"]} '
            f'{result["suspects"]["uri"]}')
  for split, count in result['counts'].items():
    out.print(f'  {split}: the model gets {count:,} records wrong'
              + (f' (the {result["listed"]:,} most confident listed)'
                 if result['listed'] < count else ''))
  if result['pairs']:
    table = render._table(  # pylint: disable=protected-access
        'true', 'predicted', 'mistakes', 'label doubted',
        right=('mistakes', 'label doubted'),
        title='by (true, predicted) class, most frequent first')
    for p in result['pairs'][:top]:
      table.add_row(p['given_name'], p['predicted_name'], f'{p["count"]:,}',
                    f'{p["doubted"]:,}')
    out.print(table)
  pair = result.get('pair')
  rows = result['rows'][:top]
  if rows:
    table = render._table(  # pylint: disable=protected-access
        'rank', 'source', 'true', 'predicted', 'probability', '',
        right=('rank', 'probability'),
        title=f'the {len(rows)} most confident' + (
            f' of {pair["given_name"]} -> {pair["predicted_name"]}'
            if pair else ''))
    for r in rows:
      table.add_row(str(r['rank']), r['source'], r['given_name'],
                    r['predicted_name'], f'{r["predicted_probability"]:.3f}',
                    'label doubted' if r['suspect'] else '')
    out.print(table)
  written = result.get('csv')
  if written:
    out.print(f'wrote {written["path"]} ({written["rows"]:,} rows)')
