"""Predict the classes of image files with a served model.

Why and how: docs/serving.md#batch-predictions-image-pipeline-predict.
"""

import argparse
import sys
import time
from typing import List, Optional, Sequence

from pipeline import startup

startup.quiet_tensorflow()  # Before anything imports TensorFlow.

# pylint: disable=g-import-not-at-top
import numpy as np

from predict import inputs
from predict import output
from predict import model_loading
# pylint: enable=g-import-not-at-top

BATCH_SIZE = 64
TOP_K = 3
# Off a terminal (a log file, a CI job), a progress line this often.
PROGRESS_SECONDS = 30.0
# Unreadable files named in the summary; all of them are rows of the output.
LISTED_ERRORS = 20


def make_parser() -> argparse.ArgumentParser:
  """Returns the command line's parser."""
  parser = argparse.ArgumentParser(
      prog='image-pipeline-predict',
      description='Predict the classes of image files with a served model.',
      epilog='PNG, JPEG, GIF, BMP, WebP, TIFF, HEIF (HEIC) and AVIF files of '
      'any size and mode '
      'are converted as the pipeline converted its training images, turned '
      'upright by their EXIF orientation.')
  parser.add_argument(
      'model', metavar='MODEL',
      help='a pushed model version (OUT/serving_model/<version>/), a folder '
      'of versions, or a pipeline output directory: its newest pushed model')
  parser.add_argument('images', metavar='IMAGES', nargs='+',
                      help='image files, folders (recursively) or globs')
  parser.add_argument('-o', '--output', metavar='FILE',
                      help='where the rows go (default: stdout)')
  parser.add_argument('--format', choices=output.FORMATS,
                      help='csv or jsonl (default: jsonl for a .jsonl or '
                      '.json --output, else csv)')
  parser.add_argument('--top-k', type=_positive, default=TOP_K, metavar='K',
                      help=f'classes per row, most likely first (default '
                      f'{TOP_K}, at most the number of classes)')
  parser.add_argument('--batch-size', type=_positive, default=BATCH_SIZE,
                      metavar='N', help=f'files per model call (default '
                      f'{BATCH_SIZE}): memory holds one batch of files')
  return parser


def _positive(value: str) -> int:
  number = int(value)
  if number < 1:
    raise argparse.ArgumentTypeError(f'must be at least 1, got {value}')
  return number


class _Progress:
  """A tqdm bar on a terminal; elsewhere, a line every PROGRESS_SECONDS."""

  def __init__(self):
    self._bar = None
    if sys.stderr.isatty():
      from tqdm import tqdm  # pylint: disable=g-import-not-at-top
      self._bar = tqdm(unit=' images', file=sys.stderr, dynamic_ncols=True)
    self._start = self._last = time.monotonic()
    self.done = self.errors = 0

  def update(self, done: int, errors: int) -> None:
    self.done += done
    self.errors += errors
    if self._bar is not None:
      self._bar.update(done)
      if errors:
        self._bar.set_postfix(unreadable=self.errors)
      return
    now = time.monotonic()
    if now - self._last >= PROGRESS_SECONDS:
      self._last = now
      print(f'predict: {self.done:,} files, {self.errors:,} unreadable, '
            f'{self.done / (now - self._start):,.0f} files/s', file=sys.stderr,
            flush=True)

  def close(self) -> float:
    if self._bar is not None:
      self._bar.close()
    return time.monotonic() - self._start


def _predict(model: model_loading.Model,
             batch: List[inputs.Item]) -> List[Optional[np.ndarray]]:
  """Returns each readable item's probabilities, None for the others.

  An item the model cannot decode gets None and its error. The batch goes to
  the model in one call; only when that fails, one call per file finds which
  file it was.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  readable = [item for item in batch if item.error is None]
  results = {}
  try:
    if readable:
      results = dict(zip(map(id, readable),
                         model.probabilities([i.data for i in readable])))
  except tf.errors.InvalidArgumentError:
    for item in readable:
      try:
        results[id(item)] = model.probabilities([item.data])[0]
      except tf.errors.InvalidArgumentError as e:
        reason = e.message.strip().splitlines()[0]
        item.error = f'the model cannot decode it: {reason}'
  return [results.get(id(item)) for item in batch]


def _ranked(probabilities: np.ndarray, names: Sequence[str], top_k: int):
  best = np.argsort(-probabilities, kind='stable')[:top_k]
  return [(names[i], float(probabilities[i])) for i in best]


def _summary(predicted: int, errors: List[inputs.Item], seconds: float,
             where: str) -> None:
  rate = f' ({predicted / seconds:,.0f} images/s)' if seconds > 0 else ''
  images = 'image' if predicted == 1 else 'images'
  print(f'Predicted {predicted:,} {images} in {seconds:.1f}s{rate}: {where}.',
        file=sys.stderr)
  if errors:
    print(f'{len(errors):,} could not be predicted (rows with an error):',
          file=sys.stderr)
    for item in errors[:LISTED_ERRORS]:
      print(f'  {item.path}: {item.error}', file=sys.stderr)
    if len(errors) > LISTED_ERRORS:
      print(f'  ... and {len(errors) - LISTED_ERRORS:,} more',
            file=sys.stderr)


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Predicts the files `argv` names and writes a row per file.

  Args:
    argv: the command line's arguments, without the program; None reads
      sys.argv.

  Returns:
    The exit status: 1 if the model is missing, the output cannot be written
    or no file could be predicted, else 0.
  """
  args = make_parser().parse_args(argv)
  try:
    model = model_loading.Model(model_loading.locate(args.model))
  except model_loading.ModelNotFound as e:
    print(f'error: {e}', file=sys.stderr)
    return 1
  top_k = min(args.top_k, len(model.class_names))
  try:
    stream = (open(args.output, 'w', newline='', encoding='utf-8')
              if args.output else sys.stdout)
  except OSError as e:
    print(f'error: {args.output}: cannot write: {e.strerror}', file=sys.stderr)
    return 1
  writer = output.Writer(stream, args.format or output.format_for(args.output),
                         top_k)
  progress = _Progress()
  predicted, errors = 0, []
  try:
    for batch in inputs.batches(inputs.paths(args.images), args.batch_size):
      for item, probabilities in zip(batch, _predict(model, batch)):
        if probabilities is None:
          errors.append(item)
          writer.row(item.path, error=item.error)
        else:
          predicted += 1
          writer.row(item.path, _ranked(probabilities, model.class_names,
                                        top_k))
        item.data = None  # The bytes are done with.
      progress.update(len(batch),
                      sum(item.error is not None for item in batch))
  finally:
    seconds = progress.close()
    if stream is not sys.stdout:
      stream.close()
  _summary(predicted, errors, seconds,
           f'{model.path} -> {args.output or "stdout"}')
  return 0 if predicted else 1


if __name__ == '__main__':
  sys.exit(main())
