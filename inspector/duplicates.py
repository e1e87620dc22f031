"""The copies and image issues DataChecks found in a run's Examples.

Reads the DataChecks artifact of a run: its counts (custom properties) and
its files (records/data_check_results.py). Used by `python -m
inspector duplicates` and by the report's data section.
"""

import os
from typing import Any, Dict, Iterator, List, Optional

from rich.console import Console
from rich.text import Text

from inspector import render
from metadata import queries
from metadata.store import InspectError
from records import artifact_files
from records import csv_cells
from records import data_check_results as results

NODE = 'DataChecks'
SHOWN_PAIRS = 20
# Pairs drawn in the run report, those across splits first.
REPORT_PAIRS = 6


def pair_rows(artifact: queries.Artifact, limit: Optional[int] = None
              ) -> Iterator[Dict[str, str]]:
  path = os.path.join(artifact.uri, results.COPIES_FILE)
  if not artifact_files.exists(path):
    raise InspectError(f'DataChecks {artifact.id}: {path} is missing')
  yield from results.read_pairs(artifact.uri, limit)


def summary(md: queries.Metadata, run: queries.Run,
            limit: int = SHOWN_PAIRS) -> Dict[str, Any]:
  """The counts, the first `limit` pairs, the issue counts, as JSON."""
  artifact = md.run_output(run, NODE, results.OUTPUT_KEY)
  return {
      'run': run.name,
      'data_checks': {'id': artifact.id, 'uri': artifact.uri},
      'images': artifact.json_property(results.IMAGES_PROPERTY),
      'copies': artifact.json_property(results.COPIES_PROPERTY),
      'held_out_copies': artifact.json_property(results.HELD_OUT_PROPERTY),
      'image_issues': artifact.json_property(results.ISSUES_PROPERTY),
      'pairs': list(pair_rows(artifact, limit)),
      'pairs_file': os.path.join(artifact.uri, results.COPIES_FILE),
  }


def report_facts(md: queries.Metadata, run: queries.Run,
                 examples: queries.Artifact) -> Dict[str, Any]:
  """The report's: the counts, and a picture of the first pairs."""
  from inspector import images  # pylint: disable=g-import-not-at-top
  facts = summary(md, run, REPORT_PAIRS)
  facts['cached'] = run.execution(NODE).cached
  if facts['pairs']:
    canvas, _ = pairs_picture(
        examples, facts['pairs'],
        f'DataChecks {facts["data_checks"]["id"]}: the first '
        f'{len(facts["pairs"])} pairs')
    facts.update(images.inline_png(canvas))
  return facts


def write_csv(md: queries.Metadata, run: queries.Run, path: str) -> int:
  """Every pair of the run's DataChecks into `path`; returns how many."""
  render.check_directory(path)
  artifact = md.run_output(run, NODE, results.OUTPUT_KEY)
  count = 0
  with open(path, 'w', newline='', encoding='utf-8') as out:
    writer = csv_cells.DictWriter(out, results.PAIR_COLUMNS,
                                  lineterminator='\n')
    writer.writeheader()
    for row in pair_rows(artifact):
      writer.writerow(row)
      count += 1
  return count


def text(out: Console, result: Dict[str, Any]) -> None:
  """The console form of `summary` (+ 'csv' when written)."""
  images = ', '.join(f'{split} {count:,}'
                     for split, count in result['images'].items())
  out.print(f'DataChecks {result["data_checks"]["id"]} of run '
            f'{result["run"]}: {images} images')
  copies = ', '.join(f'{pair} {count:,}'
                     for pair, count in result['copies'].items())
  out.print(f'copies: {copies}')
  for line in results.held_out_lines(result['held_out_copies']):
    out.print(f'  {line}')
  issues = '; '.join(
      f'{split}: ' + ', '.join(f'{issue.replace("_", "-")} {count:,}'
                               for issue, count in counts.items())
      for split, counts in result['image_issues'].items())
  out.print(f'image issues: {issues}')
  if result['pairs']:
    table = render._table(  # pylint: disable=protected-access
        'split', 'source', 'label', 'split', 'copy', 'label', 'kind',
        'correlation', right=('correlation',),
        title=f'the first {len(result["pairs"])} pairs (all: '
        f'{result["pairs_file"]})')
    for row in result['pairs']:
      table.add_row(row['split_a'], row['source_a'] or row['record_a'],
                    row['label_a'], row['split_b'],
                    row['source_b'] or row['record_b'], row['label_b'],
                    row['kind'], row['correlation'])
    out.print(table)
  if result.get('csv'):
    out.print(Text(f'wrote {result["csv"]["pairs"]:,} pairs to '
                   f'{result["csv"]["path"]}'))


def pairs_picture(examples: queries.Artifact, rows: List[Dict[str, str]],
                  title: str):
  """A grid of the pairs, one a row: the first image, then its copy."""
  from inspector import images as images_lib  # pylint: disable=g-import-not-at-top
  by_split: Dict[str, List[str]] = {}
  for row in rows:
    for side in ('a', 'b'):
      by_split.setdefault(row[f'split_{side}'], []).append(
          row[f'record_{side}'])
  pixels = images_lib.records_in(examples, by_split)
  grid = {number: [pixels[row['split_a']][row['record_a']],
                   pixels[row['split_b']][row['record_b']]]
          for number, row in enumerate(rows)}
  captions = [results.describe_pair(row) for row in rows]
  return images_lib.draw_samples_grid(grid, captions, title)
