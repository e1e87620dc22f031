"""The Evaluator's TFMA extractors: TFMA's own, and one that writes eval's
probabilities.

TFX's Evaluator takes them from its module's `custom_extractors`: TFMA's
defaults plus one that writes the candidate's probabilities of each batch
as it passes (records/eval_predictions.py), so that LabelCheck does not score
the split again. Why: docs/label-check.md#what-it-costs.
"""

import contextlib
from typing import Dict, Iterator, List, Optional

import apache_beam as beam
import numpy as np
import tensorflow_model_analysis as tfma
from tensorflow_model_analysis.extractors import unbatch_extractor

from records import eval_predictions
from records import features

STAGE_NAME = 'WriteEvalPredictions'
# The ModelEvaluation folder of the running Evaluator: set by written_to,
# read when its Beam pipeline is built (in the executor's process, on any
# runner). TFX reloads this module before it takes custom_extractors: the
# setting outlives the reload.
_WRITTEN_TO: Dict[str, Optional[str]] = globals().get(
    '_WRITTEN_TO', {'evaluation_uri': None})


@contextlib.contextmanager
def written_to(evaluation_uri: str) -> Iterator[None]:
  """Has custom_extractors add the writer, writing under `evaluation_uri`."""
  before = _WRITTEN_TO['evaluation_uri']
  _WRITTEN_TO['evaluation_uri'] = evaluation_uri
  try:
    yield
  finally:
    _WRITTEN_TO['evaluation_uri'] = before


def custom_extractors(eval_shared_model, eval_config: tfma.EvalConfig,
                      tensor_adapter_config) -> Optional[List]:
  """TFX's hook: TFMA's default extractors and the writer, within
  written_to; None (TFMA's defaults) outside it."""
  evaluation_uri = _WRITTEN_TO['evaluation_uri']
  if evaluation_uri is None:
    return None
  extractors = tfma.default_extractors(
      eval_shared_model=eval_shared_model, eval_config=eval_config,
      tensor_adapter_config=tensor_adapter_config)
  [candidate] = [spec for spec in eval_config.model_specs
                 if not spec.is_baseline]
  stages = [extractor.stage_name for extractor in extractors]
  # On the batches, before TFMA cuts them into single records.
  at = (stages.index(unbatch_extractor.UNBATCH_EXTRACTOR_STAGE_NAME)
        if unbatch_extractor.UNBATCH_EXTRACTOR_STAGE_NAME in stages
        else len(stages))
  extractors.insert(at, tfma.extractors.Extractor(
      stage_name=STAGE_NAME, ptransform=_Write(  # pylint: disable=no-value-for-parameter
          eval_predictions.path_in(evaluation_uri),
          candidate.name if len(eval_config.model_specs) > 1 else None,
          candidate.prediction_key)))
  return extractors


def _batch_record(extracts, model_name: Optional[str],
                  prediction_key: str) -> bytes:
  """A batch's rows: its records' sources and labels, and the candidate's
  probabilities."""
  predictions = extracts[tfma.PREDICTIONS_KEY]
  if model_name is not None:  # With a baseline, keyed by model.
    predictions = predictions[model_name]
  if isinstance(predictions, dict):
    predictions = predictions[prediction_key]
  found = extracts[tfma.FEATURES_KEY]
  labels = np.asarray(found[features.LABEL_KEY]).reshape(-1)
  # Records written before records named their source: LabelCheck then
  # scores the split itself.
  sources = (np.asarray(found[features.SOURCE_KEY]).reshape(-1)
             if features.SOURCE_KEY in found else np.full(len(labels), b''))
  return eval_predictions.to_record(sources, labels, np.asarray(predictions))


@beam.ptransform_fn
def _Write(extracts, path: str, model_name: Optional[str],  # pylint: disable=invalid-name
           prediction_key: str):
  """Writes the rows to `path`, one file, and passes `extracts` on."""
  _ = (extracts
       | 'Rows' >> beam.Map(_batch_record, model_name, prediction_key)
       | 'Write' >> beam.io.WriteToTFRecord(
           path, shard_name_template='',
           compression_type=beam.io.filesystem.CompressionTypes.GZIP))
  return extracts
