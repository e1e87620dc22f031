"""An artifact's chain back to the raw input, walking MLMD events backwards.

artifact <- the execution that produced it <- that execution's inputs <- ...
until executions without inputs: ExampleGen, whose input is described by its
execution properties (input_base, input_config, span, version and the input
fingerprint it computed over the files) and by the files there now.

The lineage graph is a DAG with shared parts (Examples feed StatisticsGen,
Transform, Trainer and Evaluator): each artifact is expanded once, later
occurrences are marked `seen`, which also ends any cycle.
"""

import json
import os
import re
from typing import Any, Dict, List, Optional, Set

from inspector import files
from inspector import queries
from inspector.artifacts import key_properties


def lineage(md: queries.Metadata, artifact: queries.Artifact, key=None,
            seen: Optional[Set[int]] = None) -> Dict[str, Any]:
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
               'inputs': [lineage(md, a, k, seen)
                          for k, a in md.inputs(producer.id)]}
  if 'input_base' in producer.properties:
    execution['input_data'] = input_data(producer)
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


def _fingerprint_now(infos: List[files.FileInfo]) -> Dict[str, int]:
  """The same summary of the files there now (as tfx io_utils computes it:
  count, bytes, and xor and sum of the whole-second mtimes)."""
  xor, total = 0, 0
  for info in infos:
    xor ^= int(info.mtime)
    total += int(info.mtime)
  return {'num_files': len(infos), 'total_bytes': sum(i.size for i in infos),
          'xor': xor, 'sum': total}


def input_data(execution: queries.Execution) -> Dict[str, Any]:
  """What an ExampleGen execution read."""
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
    pattern = os.path.join(base, split.get('pattern', ''))
    infos = [files.stat(p) for p in files.glob(pattern)]
    entry = {'name': split.get('name'), 'pattern': split.get('pattern'),
             'recorded': recorded.get(split.get('name')),
             'files_now': [{'path': i.path, 'bytes': i.size, 'mtime': i.mtime}
                           for i in infos]}
    if entry['recorded']:
      now = _fingerprint_now(infos)
      entry['unchanged'] = entry['recorded'] == now
      entry['changed'] = [_FINGERPRINT_PARTS[k] for k in _FINGERPRINT_PARTS
                          if entry['recorded'][k] != now[k]]
    result['splits'].append(entry)
  return result


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
  return facts
