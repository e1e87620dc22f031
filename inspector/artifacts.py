"""The few properties that say what an artifact is, per artifact type."""

import json
from typing import Any, Dict, List, Optional

from metadata import queries
from metadata.store import InspectError
from records import features
from records import serving_model


def key_properties(md: queries.Metadata, artifact: queries.Artifact
                   ) -> Dict[str, Any]:
  """Splits and record counts of Examples, blessing of a ModelBlessing, ...

  Record counts are DataChecks' (inspector.data.record_counts: read from
  ML Metadata, not the records); None when there are none.
  """
  props = artifact.properties
  out: Dict[str, Any] = {}
  if artifact.type == 'Examples':
    splits = artifact.split_names()
    from inspector import data  # pylint: disable=g-import-not-at-top
    counts = data.record_counts(md, artifact)
    out['splits'] = {s: counts.get(s) for s in splits}
    if features.CLASS_NAMES_PROPERTY in props:
      out['class_names'] = features.decode_class_names(
          props[features.CLASS_NAMES_PROPERTY])
    if 'span' in props:
      out['span'] = props['span']
    if props.get('spans'):  # The spans read (a span window), oldest first.
      out['spans'] = json.loads(props['spans'])
    if all(key in props for key in features.GEOMETRY_PROPERTIES):
      out['image_geometry'] = str(features.ImageGeometry.from_dict(
          {key: props[key] for key in features.GEOMETRY_PROPERTIES}))
    if features.GEOMETRY_CHOICE_PROPERTY in props:  # Image folders.
      out['image_geometry_chosen'] = props[features.GEOMETRY_CHOICE_PROPERTY]
    # What ExampleGen read but left out of the records (image folders).
    for count_key, list_key in (
        (features.OS_FILES_PROPERTY, features.OS_FILES_LIST_PROPERTY),
        (features.SKIPPED_IMAGES_PROPERTY,
         features.SKIPPED_IMAGES_LIST_PROPERTY)):
      if props.get(count_key):
        out[count_key] = props[count_key]
        out[list_key] = json.loads(props.get(list_key) or '[]')
  elif artifact.type == 'ModelBlessing':
    if 'blessed' in props:
      out['blessed'] = bool(props['blessed'])
    for key in ('current_model_id', 'baseline_model_id'):
      if key in props:
        out[key] = props[key]
  elif artifact.type == 'PushedModel':
    if serving_model.PUSHED_PROPERTY in props:
      out['pushed'] = bool(props[serving_model.PUSHED_PROPERTY])
    if props.get(serving_model.PUSHED_DESTINATION_PROPERTY):
      out['pushed_destination'] = props[
          serving_model.PUSHED_DESTINATION_PROPERTY]
  elif artifact.type == 'ExampleAnomalies' and isinstance(
      props.get('blessed'), dict):
    # ExampleValidator's per split verdict: 1 = no anomalies.
    out['anomalies_in'] = sorted(s for s, ok in props['blessed'].items()
                                 if not ok)
  elif artifact.type in ('ExampleStatistics', 'ExampleAnomalies'):
    if 'split_names' in props:
      out['splits'] = artifact.split_names()
  return out


def summary_text(properties: Dict[str, Any]) -> str:
  """key_properties in a few words."""
  parts: List[str] = []
  splits = properties.get('splits')
  if isinstance(splits, dict):
    parts.append(', '.join(
        f'{s}: {n:,}' if n is not None else s for s in splits for n in
        [splits[s]]))
  elif splits:
    parts.append('splits ' + ', '.join(splits))
  if len(properties.get('spans') or []) > 1:
    parts.append('spans ' + ', '.join(map(str, properties['spans'])))
  elif 'span' in properties:
    parts.append(f'span {properties["span"]}')
  if 'image_geometry' in properties:
    chosen = properties.get('image_geometry_chosen')
    parts.append(f'images {properties["image_geometry"]}' +
                 (f' ({chosen})' if chosen else ''))
  names = properties.get('class_names')
  if names:
    shown = ', '.join(names[:10]) + (', ...' if len(names) > 10 else '')
    parts.append(f'{len(names)} classes: {shown}')
  if features.OS_FILES_PROPERTY in properties:
    parts.append(_left_out(
        f'{properties[features.OS_FILES_PROPERTY]:,} hidden, OS or sidecar '
        f'files left out (not images, all in {features.OS_FILES_FILE})',
        [f['path'] for f in properties[features.OS_FILES_LIST_PROPERTY]]))
  if features.SKIPPED_IMAGES_PROPERTY in properties:
    parts.append(_left_out(
        f'{properties[features.SKIPPED_IMAGES_PROPERTY]:,} unreadable images '
        f'skipped (all in {features.SKIPPED_IMAGES_FILE})',
        [f'{f["path"]} ({f["reason"]})' for f in
         properties[features.SKIPPED_IMAGES_LIST_PROPERTY]]))
  if 'blessed' in properties:
    parts.append('blessed' if properties['blessed'] else 'NOT blessed')
  if 'current_model_id' in properties:
    parts.append(f'model {properties["current_model_id"]}')
  if 'baseline_model_id' in properties:
    parts.append(f'baseline model {properties["baseline_model_id"]}')
  if 'pushed' in properties:
    parts.append(f'pushed to {properties["pushed_destination"]}'
                 if properties['pushed'] else 'not pushed')
  if 'anomalies_in' in properties:
    parts.append('anomalies in ' + ', '.join(properties['anomalies_in'])
                 if properties['anomalies_in'] else 'no anomalies')
  return '; '.join(parts)


def _left_out(what: str, listed: List[str], shown: int = 3) -> str:
  """'2 ... left out (...): a/.DS_Store, b/Thumbs.db'."""
  more = len(listed) > shown
  return (f'{what}: ' + ', '.join(listed[:shown]) + (', ...' if more else '')
          if listed else what)


def listing(md: queries.Metadata, type_name: Optional[str] = None,
            run: Optional[queries.Run] = None) -> List[Dict[str, Any]]:
  if type_name is not None:
    known = sorted({a.type for a in md.artifacts.values()})
    if type_name not in known:
      raise InspectError(f'no artifacts of type {type_name!r} in {md.where} '
                         f'(types: {", ".join(known) or "none"})')
  chosen = md.run_artifacts(run) if run else list(md.artifacts.values())
  rows = []
  for artifact in chosen:
    if type_name is not None and artifact.type != type_name:
      continue
    producer = md.producer(artifact.id)
    rows.append({
        'id': artifact.id, 'type': artifact.type, 'uri': artifact.uri,
        'state': artifact.state, 'created_ms': artifact.created_ms,
        'producer': producer.node if producer else None,
        'run': producer.run if producer else None,
        'reused_by_runs': [r for r in md.runs_using(artifact.id)
                           if producer and r != producer.run],
        'properties': key_properties(md, artifact),
    })
  return rows
