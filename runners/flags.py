"""The DAG's flags, shared by local_runner.py and kubeflow/kubeflow_runner.py.

Both runners add these flags and turn them into create_pipeline() arguments
with `pipeline_arguments`, so a DAG tuned locally compiles for Kubeflow with
the same settings; each runner adds only what differs (paths, metadata, Beam
runner).
"""

import argparse
import os
from typing import Any, Dict, List, Optional

from components.image_example_gen.span_pattern import check_span_dir_pattern
from modules.architectures import ARCHITECTURES, AUTO
from pipeline import configs
from records import features


def _class_names(value: Optional[str]) -> Optional[List[str]]:
  if not value:
    return None
  if value.startswith('@'):
    with open(value[1:]) as f:
      return [line.strip() for line in f if line.strip()]
  return [name.strip() for name in value.split(',')]


def _image_size(value: str):
  try:
    height, width = (int(v) for v in value.lower().split('x'))
    return height, width
  except ValueError:
    raise argparse.ArgumentTypeError(
        f'expected HEIGHTxWIDTH, e.g. 28x28, got {value!r}') from None


def _span_dir_pattern(value: str) -> str:
  try:
    return check_span_dir_pattern(value)
  except ValueError:
    # argparse shows this one's text; a ValueError only as "invalid value".
    raise argparse.ArgumentTypeError(
        f'expected one folder name with {{SPAN}} in it, e.g. span-{{SPAN}}, '
        f'got {value!r}') from None


def add_data_flags(parser: argparse.ArgumentParser, data_dir_default: str,
                   data_dir_help: str) -> None:
  """The 'input data' group; --data-dir's default and help are the runner's."""
  data = parser.add_argument_group('input data')
  data.add_argument('--data-dir', default=data_dir_default, help=data_dir_help)
  data.add_argument(
      '--input-format', choices=('idx', 'images'), default=configs.INPUT_FORMAT,
      help='Layout of --data-dir (default: %(default)s).')
  data.add_argument(
      '--dataset', choices=sorted(configs.DATASETS), default=None,
      help='A known dataset: sets its class names, accuracy threshold '
      'and, where it needs more than the budget gives, training epochs '
      '(explicit flags still win).')
  data.add_argument(
      '--class-names', default=None,
      help='Names of labels 0..n-1: a comma-separated list or @FILE with one '
      'name per line. Default: the --dataset\'s; else idx uses the label '
      'values, images the sorted class folder names.')
  data.add_argument(
      '--image-size', type=_image_size, default=None, metavar='HxW',
      help='images only: the size images are resized to (default: %dx%d). '
      'IDX files declare their own in their headers; Transform and Trainer '
      'always take the geometry from the Examples.' % (
          configs.IMAGE_GEOMETRY.height, configs.IMAGE_GEOMETRY.width))
  data.add_argument(
      '--channels', type=int, choices=features.SUPPORTED_CHANNELS,
      default=None,
      help='images only: the channels images are converted to, 1 (grey) or '
      '3 (RGB) (default: %d). IDX files declare their own.' %
      configs.IMAGE_GEOMETRY.channels)
  data.add_argument(
      '--image-encoding',
      choices=(features.AUTO_ENCODING, *features.IMAGE_ENCODINGS),
      default=configs.IMAGE_ENCODING,
      help='How the Examples hold the pixels: raw uint8, or a PNG (lossless) '
      'or JPEG (quality %d) file of them, decoded in the Trainer\'s input_fn '
      'and in serving; auto: png for images of at least %d pixels (height x '
      'width), raw for smaller ones (default: %%(default)s).' % (
          features.JPEG_QUALITY, configs.PNG_MIN_PIXELS))
  data.add_argument(
      '--num-shards', type=int, default=configs.NUM_SHARDS,
      help='TFRecord files written per split (default: %(default)s).')
  data.add_argument(
      '--span-dir-pattern', default=configs.SPAN_DIR_PATTERN, metavar='PATTERN',
      type=_span_dir_pattern,
      help='Data arrives in drops, one folder per span under --data-dir, '
      'each laid out as usual, e.g. "span-{SPAN}" for span-1/, span-2/, ...: '
      'a run reads the newest span, whose number goes on the Examples '
      'artifact.')
  data.add_argument(
      '--skip-bad-images', action='store_true',
      help='images only: skip files that cannot be read as images (corrupt, '
      'empty, not an image) instead of stopping the run; how many and which '
      'are recorded on the Examples artifact and shown in the summary.')
  data.add_argument(
      '--schema', default=None, metavar='SCHEMA_PBTXT',
      help='Use this schema instead of inferring one, e.g. the curated '
      'MNIST schema %s.' % os.path.relpath(configs.MNIST_SCHEMA,
                                           configs.PROJECT_DIR))


def add_training_flags(parser: argparse.ArgumentParser) -> None:
  """The 'training and evaluation' group."""
  train = parser.add_argument_group('training and evaluation')
  train.add_argument(
      '--epochs', type=int, default=configs.EPOCHS,
      help='Passes over the training split (default: from the dataset\'s '
      'size, ceil(%d / training records) within %d..%d).' % (
          configs.TRAINING_EXAMPLES, configs.MIN_EPOCHS, configs.MAX_EPOCHS))
  train.add_argument(
      '--model', choices=(AUTO, *ARCHITECTURES), default=configs.MODEL,
      help='The network: mnist-cnn (the classic MNIST CNN), small-gap-cnn '
      '(conv blocks with batch norm and a global-average-pooling head, its '
      'size independent of the image size), or auto: mnist-cnn for grey '
      'images of at most %d pixels, small-gap-cnn for larger or colour ones '
      '(default: %%(default)s).' % configs.MNIST_CNN_MAX_PIXELS)
  train.add_argument(
      '--augment', action=argparse.BooleanOptionalAction,
      default=configs.AUGMENT,
      help='Random horizontal flips, shifts and brightness changes in '
      'training (never in evaluation or serving). Default: on for colour '
      'images, off for grey ones (digits, text: a flip changes them).')
  train.add_argument(
      '--train-steps', type=int, default=configs.TRAIN_STEPS,
      help='Train this many steps (spread over --epochs) instead of whole '
      'epochs (default: whole epochs).')
  train.add_argument(
      '--input-memory-budget', type=int,
      default=configs.INPUT_MEMORY_BUDGET >> 20, metavar='MB',
      help='Memory the Trainer\'s input may hold, in MiB: a split that fits '
      '(training split first) is cached and shuffled whole, one that does '
      'not is streamed from its shards each epoch (default: %(default)s).')
  train.add_argument('--eval-steps', type=int, default=configs.EVAL_STEPS,
                     help='Validation batches per epoch (default: all).')
  train.add_argument('--batch-size', type=int, default=configs.BATCH_SIZE,
                     help='Batch size per GPU, or on CPU (default: %(default)s).')
  train.add_argument('--learning-rate', type=float,
                     default=configs.LEARNING_RATE,
                     help='Adam learning rate of the first epoch; it decays '
                     'each epoch, to %s times this in the last (default: '
                     '%%(default)s).' % configs.LAST_EPOCH_LEARNING_RATE)
  train.add_argument(
      '--trainer-workers', type=int, default=configs.TRAINER_WORKERS,
      metavar='N',
      help='Train on N workers under MultiWorkerMirroredStrategy, '
      '--batch-size per worker (default: %(default)s). Locally: N processes '
      'on this machine; kubeflow_runner.py --target vertex: a Vertex AI '
      'custom job of N replicas.')
  train.add_argument(
      '--accuracy-threshold', type=float, default=None,
      help='Eval-split accuracy a model needs to be blessed and pushed '
      '(default: the --dataset\'s, else %s).' % configs.ACCURACY_THRESHOLD)


def pipeline_arguments(args: argparse.Namespace) -> Dict[str, Any]:
  """create_pipeline() arguments from the shared flags (no paths but none)."""
  if args.skip_bad_images and args.input_format != 'images':
    raise SystemExit('error: --skip-bad-images applies to image folders only '
                     '(--input-format images)')
  if args.input_format != 'images' and (args.image_size or args.channels):
    # A flag must not contradict the data: IDX files carry their geometry.
    raise SystemExit('error: --image-size and --channels apply to image '
                     'folders only (--input-format images); IDX files declare '
                     'their geometry in their headers')
  if args.trainer_workers < 1:
    raise SystemExit(f'error: --trainer-workers {args.trainer_workers}: '
                     'must be 1 or more')
  if args.trainer_workers > args.num_shards:
    # Each worker reads its own files (shards) of every split.
    raise SystemExit(f'error: --trainer-workers {args.trainer_workers} needs '
                     f'at least as many shards per split, --num-shards is '
                     f'{args.num_shards}')
  preset = configs.DATASETS.get(args.dataset, {})
  accuracy_threshold = args.accuracy_threshold
  if accuracy_threshold is None:
    accuracy_threshold = preset.get('accuracy_threshold',
                                    configs.ACCURACY_THRESHOLD)
  return dict(
      input_format=args.input_format,
      class_names=_class_names(args.class_names) or preset.get('class_names'),
      image_geometry=features.ImageGeometry(
          *(args.image_size or (configs.IMAGE_GEOMETRY.height,
                                configs.IMAGE_GEOMETRY.width)),
          args.channels or configs.IMAGE_GEOMETRY.channels),
      num_shards=args.num_shards,
      skip_bad_images=args.skip_bad_images,
      image_encoding=args.image_encoding,
      span_dir_pattern=args.span_dir_pattern,
      training=dict(epochs=args.epochs or preset.get('epochs'),
                    batch_size=args.batch_size,
                    learning_rate=args.learning_rate, architecture=args.model,
                    augment=args.augment, workers=args.trainer_workers,
                    memory_budget=args.input_memory_budget << 20),
      train_steps=args.train_steps,
      eval_steps=args.eval_steps,
      accuracy_threshold=accuracy_threshold)
