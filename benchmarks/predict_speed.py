"""Throughput of the predict command against `serve_images`, on MNIST.

The same served model three ways: `serve_images` on arrays in memory,
`predict.cli.main` in this process, and `python -m predict` as a user runs it.
"""

import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Dict

import numpy as np
from PIL import Image

from benchmarks import harness


def _serve_images(model_path: str, images: np.ndarray, batch: int):
  """A function that classifies `images` through the model's serve_images,
  traced and warm; it returns the class names."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from records import serving_model  # pylint: disable=g-import-not-at-top
  serve = tf.saved_model.load(model_path).signatures[
      serving_model.IMAGES_SIGNATURE]
  serve(images=tf.constant(images[:batch]))

  def run():
    names = []
    for start in range(0, len(images), batch):
      out = serve(images=tf.constant(images[start:start + batch]))
      names += [n.decode() for n in out[serving_model.CLASS_NAMES].numpy()]
    return names

  return run


def _median_s(fn, repeats: int):
  """(median seconds of `repeats` calls, the last call's result)."""
  seconds = harness.Figure()
  for _ in range(repeats):
    seconds_once, result = harness.timed(fn)
    seconds.add(seconds_once)
  return seconds.median, result


def _read_json(model_path: str, *names: str) -> Any:
  """A JSON file of the model's directory, or None."""
  path = os.path.join(model_path, *names)
  if not os.path.isfile(path):
    return None
  with open(path) as f:
    return json.load(f)


def measure(ctx: harness.Context) -> Dict[str, Any]:
  """Times the three paths on the same images and model."""
  from records import serving_model  # pylint: disable=g-import-not-at-top
  from predict import cli  # pylint: disable=g-import-not-at-top
  from predict import model_loading  # pylint: disable=g-import-not-at-top
  if not ctx.args.model:
    raise SystemExit('error: --section predict-speed needs --model')
  model_path = model_loading.locate(ctx.args.model)
  images, _ = harness.load_split(ctx.data_dir, harness.SPLIT_PREFIXES['eval'])
  images = images[:ctx.args.images]
  batch, repeats = cli.BATCH_SIZE, ctx.repetitions
  load_before = os.getloadavg()
  with tempfile.TemporaryDirectory(prefix='predict-speed-') as tmp:
    folder = os.path.join(tmp, 'png')
    os.makedirs(folder)
    for i, image in enumerate(images):
      Image.fromarray(image).save(os.path.join(folder, f'{i:06d}.png'))
    rows = os.path.join(tmp, 'rows.csv')
    flags = [model_path, folder, '-o', rows, '--batch-size', str(batch)]
    arrays_s, reference = _median_s(
        _serve_images(model_path, images, batch), repeats)

    def in_process():
      with open(os.devnull, 'w') as null:
        stderr, sys.stderr = sys.stderr, null
        try:
          assert cli.main(flags) == 0
        finally:
          sys.stderr = stderr
      return [r['class'] for r in harness.read_csv(rows)]

    in_process()  # Warm: the first load reads the files from disk.
    process_s, by_files = _median_s(in_process, repeats)
    load_s, _ = _median_s(lambda: model_loading.Model(model_path), repeats)

    def command():
      subprocess.run([sys.executable, '-m', 'predict', *flags], check=True,
                     cwd=harness.PROJECT_DIR, capture_output=True)
      return [r['class'] for r in harness.read_csv(rows)]

    command_s, by_command = _median_s(command, repeats)
  return dict(
      images=len(images), batch=batch, repeats=repeats,
      loads=(load_before, os.getloadavg()),
      seconds=(arrays_s, process_s - load_s, command_s), load_s=load_s,
      agree=min(np.mean(np.array(by_files) == np.array(reference)),
                np.mean(np.array(by_command) == np.array(reference))),
      plan=serving_model.read_training_plan(model_path),
      tflite=_read_json(model_path, serving_model.TFLITE_DIR,
                        serving_model.TFLITE_RESULTS_FILE))


SECTION = harness.Section(
    heading='## Predict speed: image files vs arrays in memory',
    measure=measure, template='predict_speed.md.j2')
