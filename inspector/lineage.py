"""An artifact's chain back to the raw input, walking MLMD events backwards.

Down to ExampleGen, whose input is its execution properties and the files
there now (per split, counts and the first few). Each artifact is expanded
once. See docs/metadata.md, "The inspect tool".
"""

import bisect
import json
import os
import re
from typing import Any, Callable, Dict, Iterable, Optional, Set

from inspector.artifacts import key_properties
from metadata import queries
from records import artifact_files

# Input files named per split; the others are counted, and listed in full
# only where asked: `inspector lineage --all-files`, the report's CSV.
NAMED_FILES = 5

# Called with (ExampleGen execution id, split, file) for each input file.
OnFile = Callable[[int, str, artifact_files.FileInfo], None]


def lineage(md: queries.Metadata, artifact: queries.Artifact, key=None,
            seen: Optional[Set[int]] = None, all_files: bool = False,
            on_file: Optional[OnFile] = None) -> Dict[str, Any]:
  """`artifact`'s lineage tree, down to ExampleGen's input files.

  Args:
    md: the store.
    artifact: the tree's root.
    key: the input key `artifact` has in the execution that read it.
    seen: the artifacts expanded so far (each is expanded once).
    all_files: each split's every input file in `files_now`, not only the
      first NAMED_FILES.
    on_file: called for each input file, as it is met.
  """
  seen = set() if seen is None else seen
  node = {'key': key, 'artifact': {
      'id': artifact.id, 'type': artifact.type, 'uri': artifact.uri,
      'state': artifact.state, 'properties': key_properties(md, artifact)}}
  if artifact.id in seen:
    return {**node, 'seen': True}
  seen.add(artifact.id)
  producer = md.producer(artifact.id)
  if producer is None:
    return {**node, 'producer': None}
  execution = {'id': producer.id, 'node': producer.node,
               'state': producer.state, 'run': producer.run,
               'seconds': producer.seconds,
               'inputs': [lineage(md, a, k, seen, all_files, on_file)
                          for k, a in md.inputs(producer.id)]}
  if 'input_base' in producer.properties:
    execution['input_data'] = input_data(producer, all_files, on_file)
  later = [r for r in md.runs_using(artifact.id) if r != producer.run]
  if later:
    execution['reused_by_runs'] = later
  return {**node, 'producer': execution}


_FINGERPRINT = re.compile(
    r'split:(?P<split>[^,]*),num_files:(?P<num_files>\d+),'
    r'total_bytes:(?P<total_bytes>\d+),xor_checksum:(?P<xor>\d+),'
    r'sum_checksum:(?P<sum>\d+)')


def _fingerprints(text: str) -> Dict[str, Dict[str, int]]:
  """TFX's input fingerprint ('split:S,num_files:N,...' per line) by split."""
  result = {}
  for match in _FINGERPRINT.finditer(text or ''):
    values = match.groupdict()
    split = values.pop('split')
    result[split] = {k: int(v) for k, v in values.items()}
  return result


# What each fingerprint field tells, for a user reading what changed.
_FINGERPRINT_PARTS = {'num_files': 'number of files',
                      'total_bytes': 'total size', 'xor': 'modification times',
                      'sum': 'modification times'}


def _summarise(infos: Iterable[artifact_files.FileInfo],
               all_files: bool) -> Dict[str, Any]:
  """The fingerprint of the files there now, as tfx io_utils computes it
  (count, bytes, and xor and sum of the whole-second mtimes), the first
  NAMED_FILES by path, and, if `all_files`, every one by path."""
  fingerprint = {'num_files': 0, 'total_bytes': 0, 'xor': 0, 'sum': 0}
  first, listed = [], []
  for info in infos:
    fingerprint['num_files'] += 1
    fingerprint['total_bytes'] += info.size
    fingerprint['xor'] ^= int(info.mtime)
    fingerprint['sum'] += int(info.mtime)
    if all_files:
      listed.append(info)
    else:
      bisect.insort(first, info, key=lambda i: i.path)
      del first[NAMED_FILES:]
  listed.sort(key=lambda i: i.path)
  return {'fingerprint': fingerprint,
          'first': listed[:NAMED_FILES] if all_files else first,
          'all': listed if all_files else None}


def _file(info: artifact_files.FileInfo) -> Dict[str, Any]:
  return {'path': info.path, 'bytes': info.size, 'mtime': info.mtime}


def input_data(execution: queries.Execution, all_files: bool = False,
               on_file: Optional[OnFile] = None) -> Dict[str, Any]:
  """What an ExampleGen execution read: per split the recorded fingerprint,
  the files there now and whether they still match.

  Args:
    execution: the ExampleGen execution.
    all_files: list every file of a split, not only the first few.
    on_file: called with every file found (OnFile).
  """
  props = execution.properties
  base = props['input_base']
  try:
    splits = json.loads(props.get('input_config', '{}')).get('splits', [])
  except ValueError:
    splits = []
  recorded = _fingerprints(props.get('input_fingerprint', ''))
  result = {'input_base': base, 'span': props.get('span'),
            'version': props.get('version'), 'splits': []}
  for split in splits:
    name = split.get('name')
    pattern = os.path.join(base, split.get('pattern', ''))
    infos = (artifact_files.stat(p) for p in artifact_files.iglob(pattern))
    if on_file:
      infos = _seen_by(on_file, execution.id, name, infos)
    summary = _summarise(infos, all_files)
    now = summary['fingerprint']
    entry = {'name': name, 'pattern': split.get('pattern'),
             'recorded': recorded.get(name),
             'now': {'num_files': now['num_files'],
                     'total_bytes': now['total_bytes']},
             'first_files': [_file(i) for i in summary['first']]}
    if all_files:
      entry['files_now'] = [_file(i) for i in summary['all']]
    if entry['recorded']:
      entry['unchanged'] = entry['recorded'] == now
      entry['changed'] = [_FINGERPRINT_PARTS[k] for k in _FINGERPRINT_PARTS
                          if entry['recorded'][k] != now[k]]
    result['splits'].append(entry)
  return result


def _seen_by(on_file: OnFile, execution: int, split: str,
             infos: Iterable[artifact_files.FileInfo]):
  for info in infos:
    on_file(execution, split, info)
    yield info


def split_facts(split: Dict[str, Any]) -> str:
  """What a split of ExampleGen's input recorded, and whether the files
  there now still match: one line for the text and the HTML renderings."""
  recorded = split.get('recorded')
  facts = (f'read {recorded["num_files"]} files, '
           f'{recorded["total_bytes"]:,} bytes' if recorded
           else 'no input fingerprint recorded')
  if 'unchanged' in split:
    facts += ('; the files there now are the same' if split['unchanged']
              else '; the files there now differ in: '
              + ', '.join(dict.fromkeys(split['changed'])))
  if not split.get('unchanged'):
    now = split['now']
    facts += (f'; there now: {now["num_files"]:,} files, '
              f'{now["total_bytes"]:,} bytes')
  return facts


def more_files(split: Dict[str, Any]) -> str:
  """'and 1,234 more files' when a split holds more files now than its
  entry names; '' when it names them all."""
  listed = len(split.get('files_now', split['first_files']))
  more = split['now']['num_files'] - listed
  return f'and {more:,} more file{"s" if more != 1 else ""}' if more else ''
