"""The pipeline's knobs, each declared once with its default, help, flag and
dataset presets (modules/knob.py).

runs/flags.py sets a knob's field from its flag (or `--dataset` preset);
create_pipeline() hands each config to the components that use it.
"""

import dataclasses
import os
from typing import Any, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ml_metadata.proto import metadata_store_pb2

from components.image_example_gen.span_pattern import check_span_dir_pattern
from modules.knob import KNOWN_DATASETS, dataset_preset, knob
from modules.training.config import TrainingConfig, TuningConfig
from pipeline import constants
from records import features

# The accuracy threshold of IDX files (MNIST's layout) and of MNIST.
IDX_ACCURACY_THRESHOLD = 0.99
# The Evaluator's baselines (pipeline/stages.py's baseline): the newest
# blessed model in ML Metadata, or the newest version being served.
LAST_BLESSED = 'last_blessed'
SERVED = 'served'


def parse_class_names(value: str) -> Optional[List[str]]:
  """A comma-separated list, or @FILE with one name per line.

  Args:
    value: --class-names' text; '' gives None (no names given).

  Raises:
    ValueError: the file cannot be read.
  """
  if not value:
    return None
  if not value.startswith('@'):
    return [name.strip() for name in value.split(',')]
  try:
    with open(value[1:]) as f:
      return [line.strip() for line in f if line.strip()]
  except OSError as e:
    raise ValueError(f'cannot read {value[1:]}: {e.strerror}') from None


def parse_image_size(value: str) -> Tuple[int, int]:
  """(height, width) of 'HEIGHTxWIDTH'; ValueError with a message if not.

  Args:
    value: --image-size's text, e.g. '28x28'.

  Raises:
    ValueError: not two integers joined by an x.
  """
  try:
    height, width = (int(v) for v in value.lower().split('x'))
    return height, width
  except ValueError:
    raise ValueError(
        f'expected HEIGHTxWIDTH, e.g. 28x28, got {value!r}') from None


def parse_span_dir_pattern(value: str) -> str:
  """`value` if it is one folder name with {SPAN}; ValueError if not.

  Args:
    value: --span-dir-pattern's text, e.g. 'span-{SPAN}'.

  Raises:
    ValueError: a path of several folders, or no {SPAN} in it.
  """
  try:
    return check_span_dir_pattern(value)
  except ValueError:
    raise ValueError(
        f'expected one folder name with {{SPAN}} in it, e.g. span-{{SPAN}}, '
        f'got {value!r}') from None


@dataclasses.dataclass(frozen=True)
class DataConfig:
  """What ExampleGen reads and writes, and the schema it is checked against."""
  input_format: str = knob(
      'idx', 'Layout of --data-dir (default: %(default)s).',
      flag='--input-format', choices=('idx', 'images'))
  dataset: Optional[str] = knob(
      None, 'A known dataset: sets its class names, accuracy threshold '
      'and, where it needs more than the budget gives, training epochs '
      '(explicit flags still win).', flag='--dataset',
      choices=sorted(KNOWN_DATASETS))
  class_names: Optional[Sequence[str]] = knob(
      None, 'Names of labels 0..n-1: a comma-separated list or @FILE with one '
      'name per line. Default: the --dataset\'s; else idx uses the label '
      'values, images the sorted class folder names.', flag='--class-names',
      parse=parse_class_names,
      presets={'mnist': [str(digit) for digit in range(10)],
               'fashion-mnist': ['T-shirt/top', 'Trouser', 'Pullover',
                                 'Dress', 'Coat', 'Sandal', 'Shirt',
                                 'Sneaker', 'Bag', 'Ankle boot']})
  # Of image folders; IDX files carry their own geometry. None: chosen by
  # ImageExampleGen from the images' headers (geometry_choice.py).
  image_size: Optional[Tuple[int, int]] = knob(
      None, 'images only: the size images are resized to (default: chosen '
      'from the headers of a sample of the images, and printed; see '
      'docs/input-data.md). IDX files declare their own in their headers; '
      'Transform and Trainer always take the geometry from the Examples.',
      flag='--image-size', parse=parse_image_size, metavar='HxW')
  channels: Optional[int] = knob(
      None, 'images only: the channels images are converted to, 1 (grey) or '
      '3 (RGB) (default: 3 if any sampled image is in colour, else 1). IDX '
      'files declare their own.', flag='--channels', type=int,
      choices=features.SUPPORTED_CHANNELS)
  # Keras' validation_split examples hold out a fifth.
  eval_percent: int = knob(
      20, 'images only, class folders directly in --data-dir (no train/ '
      'and eval/ folders): the percentage of images put in eval, chosen by '
      'a hash of each image\'s path (default: %(default)s).',
      flag='--eval-percent', type=int, metavar='PERCENT')
  # A tenth of MNIST's 60,000 training images validates to within a few
  # tenths of a percent.
  validation_percent: int = knob(
      10, 'The percentage of the training data held out as the validation '
      'split, chosen by a hash of each image (its path in image folders, its '
      'pixels in IDX files); a validation/ folder beside train/ and eval/ is '
      'taken as given instead. Validation decides early stopping, the epoch '
      'kept and the --tune trials\' scores; eval decides nothing, so the '
      'Evaluator\'s accuracy is not optimistic. 0: no validation split, no '
      'early stopping, the last epoch kept, no --tune (default: '
      '%(default)s).', flag='--validation-percent', type=int,
      metavar='PERCENT')
  # Pillow's own limit is about 89 million; a phone's largest photos are
  # near 100 million pixels.
  max_image_pixels: int = knob(
      120_000_000, 'images only: an image whose header claims more pixels '
      '(width x height) is refused before it is decoded, naming the file '
      '(skipped with --skip-bad-images) (default: %(default)s).',
      flag='--max-image-pixels', type=int, metavar='PIXELS')
  # Raw by default: PNG reads slower for a little less disk, JPEG is lossy
  # (BENCHMARKS.md, "Encodings"); png or auto are for input bound by its
  # storage's bandwidth, not its CPU.
  image_encoding: str = knob(
      'raw', 'How the Examples hold the pixels: raw uint8, or a PNG '
      '(lossless) or JPEG (quality %d) file of them, decoded in the '
      'Trainer\'s input_fn and in serving; auto: png for images of at least '
      '%%(png_min_pixels)d pixels (height x width), raw for smaller ones '
      '(default: %%(default)s).' % features.JPEG_QUALITY,
      flag='--image-encoding',
      choices=(features.AUTO_ENCODING, *features.IMAGE_ENCODINGS))
  png_min_pixels: int = knob(
      128 * 128, 'image_encoding auto: PNG from this many pixels (height x '
      'width) on.')
  num_shards: int = knob(
      16, 'TFRecord files written per split (default: %(default)s).',
      flag='--num-shards', type=int)
  span_dir_pattern: Optional[str] = knob(
      None, 'Data arrives in drops, one folder per span under --data-dir, '
      'each laid out as usual, e.g. "span-{SPAN}" for span-1/, span-2/, ...: '
      'a run reads the newest span, whose number goes on the Examples '
      'artifact.', flag='--span-dir-pattern', parse=parse_span_dir_pattern,
      metavar='PATTERN')
  span_window: int = knob(
      1, 'With --span-dir-pattern: train on the newest N spans on disk '
      '(fewer if fewer are there), each split taken from each span; the '
      'Evaluator judges on the newest span\'s eval split (default: '
      '%(default)s, the newest span alone).', flag='--span-window', type=int,
      metavar='N')
  skip_bad_images: bool = knob(
      False, 'images only: skip files that cannot be read as images (corrupt, '
      'empty, not an image) instead of stopping the run; how many and which '
      'are recorded on the Examples artifact and shown in the summary.',
      flag='--skip-bad-images', action='store_true')
  # A curated schema beats an inferred one.
  schema: Optional[str] = knob(
      None, 'Use this schema instead of inferring one, e.g. the curated '
      'MNIST schema %s.' % os.path.relpath(constants.MNIST_SCHEMA,
                                           constants.PROJECT_DIR),
      flag='--schema', metavar='SCHEMA_PBTXT')
  # Copies of training images in eval score the model on what it learnt.
  eval_copies: str = knob(
      'stop', 'What to do when DataChecks finds more than '
      '--max-eval-copy-share of a held-out split (eval) copied from train: '
      'stop the run at the ValidationGate; keep going; or drop them: the '
      'Evaluator then reads eval without its copies of training images '
      '(the pairs are listed in every case; see docs/data-checks.md) '
      '(default: %(default)s).',
      flag='--eval-copies', choices=('stop', 'keep', 'drop'))
  max_eval_copy_share: float = knob(
      0.01, 'The share of a held-out split\'s images that may have a copy in '
      'train before --eval-copies applies (default: %(default)s).',
      flag='--max-eval-copy-share', type=float, metavar='SHARE')

  @property
  def image_geometry(self) -> features.ImageGeometry:
    """What image folders are converted to, where no flag says and the
    images' headers do not (IDX files declare their own)."""
    default = features.MNIST_GEOMETRY
    return features.ImageGeometry(
        *(self.image_size or (default.height, default.width)),
        self.channels or default.channels)

  @property
  def images(self) -> bool:
    """The input is image folders (--input-format images), not IDX files."""
    return self.input_format == 'images'

  @property
  def infer_size(self) -> bool:
    """ExampleGen chooses the size from the images: no --image-size."""
    return self.images and self.image_size is None

  @property
  def infer_channels(self) -> bool:
    """ExampleGen chooses the channels from the images: no --channels."""
    return self.images and self.channels is None


@dataclasses.dataclass(frozen=True)
class EvaluationConfig:
  """When the Evaluator blesses (and the Pusher pushes) a model."""
  # None: IDX files' fixed one, or from the data for image folders (see
  # fixed_accuracy_threshold).
  accuracy_threshold: Optional[float] = knob(
      None, 'Eval-split accuracy a model needs to be blessed and pushed, '
      'fixed (default: the --dataset\'s; else for IDX files %s; for image '
      'folders from the data: clearly above always guessing the eval split\'s '
      'most common class, printed when the Evaluator runs; see '
      'docs/serving.md).' % IDX_ACCURACY_THRESHOLD,
      flag='--accuracy-threshold', type=float,
      presets={'mnist': IDX_ACCURACY_THRESHOLD, 'fashion-mnist': 0.91})
  # Set by the runner: Kubeflow Pipelines runs no resolver.
  baseline: str = knob(
      LAST_BLESSED, 'What a new model must be no worse than: '
      '\'last_blessed\' (TFX\'s Resolver over ML Metadata; LocalDagRunner, '
      'Vertex AI) or \'served\' (the newest version in the serving '
      'directory). See pipeline/stages.py\'s baseline.')
  # With --span-window: the earlier spans' eval too (docs/input-data.md).
  judge_window: bool = knob(
      False, 'With --span-window: the Evaluator judges on the eval splits '
      'of every span of the window, not on the newest span\'s alone.',
      flag='--judge-window', action='store_true')
  # After the Trainer: components/label_check/, docs/label-check.md.
  label_check: bool = knob(
      True, 'Skip LabelCheck, which lists per split the images whose given '
      'class a model that never trained on them doubts (default: run it).',
      flag='--no-label-check', action='store_false')
  label_check_folds: Optional[int] = knob(
      None, 'LabelCheck: how the training split is scored. K >= 2: by K-fold '
      'cross-fitting, a model trained per fold; 0: from the Trainer\'s own '
      'run (each record\'s class probabilities averaged over its epochs, no '
      'extra model) (default: 2 folds for a training split of at most twice '
      '--label-check-train-examples records, unless the Trainer\'s run shows '
      'that a model of that budget is too weak to doubt labels; the '
      'Trainer\'s run otherwise).',
      flag='--label-check-folds', type=int, metavar='K')
  label_check_train_examples: int = knob(
      10_000, 'LabelCheck with --label-check-folds K: examples each fold\'s '
      'model trains on (never more than the Trainer\'s budget for that '
      'share of the data) (default: %(default)s).',
      flag='--label-check-train-examples', type=int, metavar='N')
  label_check_records: int = knob(
      10_000, 'LabelCheck: training and validation records checked at most, '
      'each split a sample chosen by a hash of each record (all of a smaller '
      'split); eval is always checked whole, since its labels judge the model '
      'that is pushed; 0: train and validation are not checked '
      '(default: %(default)s).',
      flag='--label-check-records', type=int, metavar='N')

  def epoch_probabilities_records(self) -> int:
    """Training records the Trainer scores every epoch for LabelCheck."""
    if self.label_check and not self.label_check_folds:
      return self.label_check_records
    return 0

  def fixed_accuracy_threshold(self, data: DataConfig) -> Optional[float]:
    """The fixed threshold for `data`; None: the Evaluator sets it from the
    eval split's classes (components/evaluator/blessing_rule.py)."""
    if self.accuracy_threshold is not None:
      return self.accuracy_threshold
    return None if data.images else IDX_ACCURACY_THRESHOLD


@dataclasses.dataclass(frozen=True)
class InfrastructureConfig:
  """How and where the DAG runs: what each runner sets, none of it a flag."""
  beam_pipeline_args: Sequence[str] = ()
  # After beam_pipeline_args, so these win for ExampleGen (pipeline/scale.py
  # picks them by the input's size).
  example_gen_beam_pipeline_args: Sequence[str] = ()
  # Likewise for StatisticsGen, Transform and the Evaluator.
  analysis_beam_pipeline_args: Sequence[str] = ()
  # TFDV's statistics over this fraction of the record batches; None: all.
  statistics_sample_rate: Optional[float] = None
  # None: the orchestrator's own ML Metadata (Kubeflow).
  metadata_connection_config: Optional[
      metadata_store_pb2.ConnectionConfig] = None
  enable_cache: bool = True
  # The Trainer as a Vertex AI custom job: these custom_config entries
  # describe it (kubeflow/vertex_training.py).
  vertex_training: Optional[Mapping[str, Any]] = None


def parse_keep_runs(value: str) -> int:
  """`value` as a number of runs, 1 or more; ValueError if not.

  Args:
    value: --keep-runs' text.

  Raises:
    ValueError: not an integer, or less than 1.
  """
  try:
    runs = int(value)
  except ValueError:
    runs = 0
  if runs < 1:
    raise ValueError(f'expected a number of runs, 1 or more, got {value!r}')
  return runs


@dataclasses.dataclass(frozen=True)
class DiskConfig:
  """What runs keep on disk: the runners' flags, applied after a local run
  (runs/keep_runs_local.py) or by a last step on Kubeflow Pipelines
  (pipeline/stages.py, keep_runs)."""
  # Off by default: deleting a user's artifacts is for them to choose.
  keep_runs: Optional[int] = knob(
      None, 'After the run, delete the large artifacts (Examples, models) '
      'of all but the newest K runs of the pipeline; the served model and '
      'its lineage stay. Locally ML Metadata keeps every record, marked '
      'DELETED (docs/metadata.md); on Kubeflow Pipelines a last step '
      'decides from the run folders (docs/kubeflow.md) (default: keep '
      'everything).',
      flag='--keep-runs', parse=parse_keep_runs, metavar='K')


class Knobs(NamedTuple):
  """The configs the flags set: create_pipeline(**knobs._asdict())."""
  data: DataConfig = DataConfig()
  training: TrainingConfig = TrainingConfig()
  evaluation: EvaluationConfig = EvaluationConfig()
  tuning: TuningConfig = TuningConfig()


# Every known dataset's preset, {dataset: {field name: value}}, gathered
# from the knobs that declare them.
DATASETS = {dataset: dataset_preset(dataset, DataConfig, TrainingConfig,
                                     EvaluationConfig, TuningConfig)
            for dataset in KNOWN_DATASETS}
