"""The Trainer's settings, each a knob (modules/knob.py), the networks'
names, and what `--tune` searches.

Free of TensorFlow, so that `--help` stays fast; passed to run_fn as a dict
in its custom_config (`to_dict`, `from_dict`). See docs/training.md.
"""

import argparse
import dataclasses
from typing import Any, Dict, Mapping, Optional, Tuple

from modules.knob import knob

# Keras' name of the accuracy on the validation split (the networks are
# compiled with a metric named 'accuracy', model.py).
VALIDATION_ACCURACY = 'val_accuracy'
# custom_config's entry naming the split validated on (None: none); the
# serving model's training_plan.json names it under the same key.
VALIDATION_SPLIT_KEY = 'validation_split'
# custom_config: training records whose class probabilities are averaged over
# the epochs for LabelCheck (modules/training/callbacks.py); absent or 0:
# none.
EPOCH_PROBABILITIES_KEY = 'epoch_probabilities_records'
# custom_config: LabelCheck may cross-fit a training split of at most this
# many records itself (components/label_check/); a warm start keeps no
# probabilities of one.
CROSS_FIT_RECORDS_KEY = 'cross_fit_records'

# The networks from scratch (`--architecture`; model.py builds them).
AUTO = 'auto'
MNIST_CNN = 'mnist-cnn'
SMALL_BN_CNN = 'small-bn-cnn'
SMALL_GAP_CNN = 'small-gap-cnn'
ARCHITECTURES = (SMALL_BN_CNN, MNIST_CNN, SMALL_GAP_CNN)

# Keras Applications (`--backbone`), by flag value: each one's input size
# (height, width) by default, the size its ImageNet weights were trained at.
BACKBONE_SIZES = {
    'mobilenet-v3-small': (224, 224),
    'mobilenet-v3-large': (224, 224),
    'mobilenet-v2': (224, 224),
    'efficientnet-b0': (224, 224),
    'resnet50': (224, 224),
}
BACKBONES = tuple(BACKBONE_SIZES)
# What `auto` starts colour photos from, and what --weights alone loads.
DEFAULT_BACKBONE = 'mobilenet-v3-small'
# --weights: Keras' published ImageNet weights, or none (from scratch); any
# other value is a weights file.
IMAGENET = 'imagenet'
NO_WEIGHTS = 'none'
# Keras Applications refuse smaller inputs.
BACKBONE_MIN_SIDE = 32


def parse_fraction(value: str) -> float:
  """`value` as a fraction within 0..1.

  Raises:
    ValueError: `value` is not a number within 0..1; the message says so.
  """
  try:
    fraction = float(value)
  except ValueError:
    fraction = -1.0
  if not 0 <= fraction <= 1:
    raise ValueError(f'expected a fraction within 0..1, got {value!r}')
  return fraction


@dataclasses.dataclass(frozen=True)
class Budget:
  """How long to train (modules/training/plan.py)."""
  epochs: Optional[int] = knob(
      None, 'Passes over the training split (default: from the dataset\'s '
      'size, ceil(%(training_examples)d / training records) within '
      '%(min_epochs)d..%(max_epochs)d).', flag='--epochs', type=int,
      # Fashion-MNIST reaches its accuracy threshold only with more epochs
      # than the budget gives its 60,000 images.
      presets={'fashion-mnist': 8})
  training_examples: int = knob(
      180_000, 'Examples the budget shows the model: the epochs are this '
      'over the training records (BENCHMARKS.md, "MNIST time to accuracy").')
  min_epochs: int = knob(3, 'Fewest epochs the budget gives.')
  max_epochs: int = knob(
      30, 'Most epochs the budget gives: with the one-cycle schedule and '
      'early stopping, enough for a few thousand images (BENCHMARKS.md, '
      '"Colour time to accuracy").')
  warmup_fraction: float = knob(
      0.2, 'Fraction of the training steps over which the learning rate '
      'rises from a tenth of --learning-rate to all of it; a cosine then '
      'takes it down to zero at the last step (a one-cycle schedule: few '
      'epochs reach what many did at a decaying rate).')
  patience: int = knob(
      5, 'Stop training when %(early_stopping_metric)s has not improved for '
      'N epochs once the learning rate is down to half its peak, and keep '
      'the weights of the best epoch (they are kept even when every '
      'planned epoch runs); 0: no early stopping (default: %(default)s).',
      flag='--early-stopping-patience', type=int, metavar='N')
  early_stopping_metric: str = knob(
      VALIDATION_ACCURACY, 'What early stopping watches, and which epoch\'s '
      'weights it keeps: the Evaluator\'s measure, on the validation split '
      '(the eval split makes no choice).')
  # --warm-start (modules/training/warm_start.py): fine-tuning what the served
  # model learnt needs a fraction of the steps; steps as large as from
  # scratch let it follow the data's drift (BENCHMARKS.md, "A schedule").
  warm_start_epochs_fraction: float = knob(
      0.2, '--warm-start: the epochs are this share of the from-scratch '
      'budget\'s (at least one) unless --epochs says how many (default: '
      '%(default)s).', flag='--warm-start-epochs-fraction',
      parse=parse_fraction, metavar='FRACTION')
  warm_start_learning_rate_factor: float = knob(
      1.0, '--warm-start: the peak learning rate is this share of '
      '--learning-rate, on the same one-cycle schedule over the fewer '
      'epochs (default: %(default)s).',
      flag='--warm-start-learning-rate-factor', type=float, metavar='FACTOR')


@dataclasses.dataclass(frozen=True)
class ModelConfig:
  """Which network (modules/training/model.py) and its size."""
  architecture: str = knob(
      AUTO, 'The network: small-bn-cnn (conv blocks with batch norm, a dense '
      'head; fast on small grey images), mnist-cnn (the classic MNIST CNN), '
      'small-gap-cnn (conv blocks with batch norm and a global-average-'
      'pooling head, its size independent of the image size), or auto: '
      'small-bn-cnn for grey images of at most %(small_grey_max_pixels)d '
      'pixels, small-gap-cnn for larger or colour ones, and for colour '
      'photos (a shorter side of %(photo_min_side)d pixels or more) the '
      'pretrained ' + DEFAULT_BACKBONE + ' when its ImageNet weights can be '
      'had (default: %(default)s).', flag='--model',
      choices=(AUTO, *ARCHITECTURES))
  small_grey_max_pixels: int = knob(
      32 * 32, 'auto: small-bn-cnn for grey images up to this many pixels '
      '(its dense head grows with the image area).')
  photo_min_side: int = knob(
      112, 'auto: colour images whose shorter side has at least this many '
      'pixels are photos, which start from a pretrained backbone when its '
      'weights can be had: half ImageNet\'s 224, below which little of what '
      'its features see is left.')
  scratch_max_side: int = knob(
      96, 'A network trained from scratch sees the images scaled down to at '
      'most this many pixels a side unless --image-size was given: its '
      'last features see a whole 96x96 image, and on a CPU larger inputs '
      'cost time that a first model rarely repays (BENCHMARKS.md, '
      '"Photos").')
  batch_norm_momentum: float = knob(
      0.9, 'small-bn-cnn and small-gap-cnn: how much of their value batch '
      'norm\'s moving averages keep per step. Keras\'s 0.99 remembers too '
      'many steps on a few thousand images, while the weights change under '
      'them: evaluation then normalises with stale statistics.')
  # small-bn-cnn.
  bn_conv_filters: Tuple[int, ...] = knob(
      (32, 64, 128), 'small-bn-cnn: one conv block per width, a 2x2 '
      'max-pool between blocks.')
  # mnist-cnn.
  conv_filters: Tuple[int, ...] = knob((32, 64), 'mnist-cnn: conv widths.')
  kernel_size: int = knob(5, 'mnist-cnn: conv kernel size.')
  dense_units: int = knob(1024, 'mnist-cnn: units of its dense layer.')
  dropout: float = knob(0.4, 'mnist-cnn: dropout before the logits.')
  # small-gap-cnn.
  gap_conv_filters: Tuple[int, ...] = knob(
      (32, 64, 128, 256, 256), 'small-gap-cnn: one conv block per width; '
      'enough blocks that its last features see most of a 96x96 image '
      '(BENCHMARKS.md, "Colour images").')
  gap_dropout: float = knob(0.3, 'small-gap-cnn: dropout before the logits.')
  # A pretrained backbone (modules/training/model.py, modules/trainer.py).
  backbone: Optional[str] = knob(
      None, 'Transfer learning: a Keras Applications network (ImageNet '
      'weights unless --weights says otherwise) with a new head, trained in '
      'two phases, instead of --model (default: none, --model decides).',
      flag='--backbone', choices=BACKBONES)
  weights: Optional[str] = knob(
      None, '--backbone\'s starting weights: ' + IMAGENET + ' (Keras\' '
      'published ones, downloaded once into Keras\' cache), a weights file '
      'of that network (.h5 or .weights.h5, without its top), or ' +
      NO_WEIGHTS + ' (from scratch) (default: ' + IMAGENET + '). Without '
      '--backbone: the weights of ' + DEFAULT_BACKBONE + ', which then '
      'trains.', flag='--weights', metavar=f'{IMAGENET}|PATH|{NO_WEIGHTS}')
  input_size: Optional[Tuple[int, int]] = knob(
      None, 'The network\'s input size, which the model resizes the images '
      'to; None: a backbone\'s own (224x224), a scratch network\'s the '
      'images\' within %(scratch_max_side)d a side, or --image-size when '
      'given (runs/flags.py sets it).')
  head_dropout: float = knob(
      0.2, '--backbone: dropout between the pooled features and the logits.')
  head_epochs_fraction: float = knob(
      0.5, '--backbone: the share of the epochs that train the new head '
      'alone, the backbone frozen; the rest fine-tune the top of the '
      'backbone too (default: %(default)s).',
      flag='--head-epochs-fraction', parse=parse_fraction,
      metavar='FRACTION')
  fine_tune_layers_fraction: float = knob(
      0.3, '--backbone: the top share of the backbone\'s layers that the '
      'second phase trains (default: %(default)s).',
      flag='--fine-tune-layers-fraction', parse=parse_fraction,
      metavar='FRACTION')
  fine_tune_learning_rate_factor: float = knob(
      0.1, '--backbone: the second phase\'s learning rate, as a fraction of '
      'the first\'s at the same epoch: small steps keep what the pretrained '
      'layers learnt (default: %(default)s).',
      flag='--fine-tune-learning-rate-factor', type=float,
      metavar='FACTOR')
  augment: Optional[bool] = knob(
      None, 'Random horizontal flips, shifts and brightness changes in '
      'training (never in evaluation or serving). Default: on for colour '
      'images, off for grey ones (digits, text: a flip changes them).',
      flag='--augment', action=argparse.BooleanOptionalAction)
  augment_shift: float = knob(
      0.1, 'Augmentation: shifts of up to this fraction of the height and '
      'width.')
  augment_brightness: float = knob(
      0.2, 'Augmentation: brightness shifts of up to this many standard '
      'deviations of the training pixels.')

  def __post_init__(self):
    if self.architecture not in (AUTO, *ARCHITECTURES):
      raise ValueError(f'architecture must be {AUTO!r} or one of '
                       f'{ARCHITECTURES}, got {self.architecture!r}')
    if self.backbone is not None and self.backbone not in BACKBONES:
      raise ValueError(f'backbone must be one of {BACKBONES}, got '
                       f'{self.backbone!r}')
    for name in ('head_epochs_fraction', 'fine_tune_layers_fraction'):
      if not 0 <= getattr(self, name) <= 1:
        raise ValueError(f'{name} must be within 0..1, got '
                         f'{getattr(self, name)}')

  @property
  def backbone_weights(self) -> str:
    """What --weights says, its default filled in."""
    return self.weights or IMAGENET

  @classmethod
  def from_dict(cls, d: Dict[str, Any]) -> 'ModelConfig':
    """The ModelConfig of `d` (its JSON form: lists for tuples)."""
    d = dict(d)
    for key in ('bn_conv_filters', 'conv_filters', 'gap_conv_filters'):
      d[key] = tuple(int(f) for f in d[key])
    if d.get('input_size') is not None:
      d['input_size'] = tuple(int(v) for v in d['input_size'])
    return cls(**d)


@dataclasses.dataclass(frozen=True)
class InputConfig:
  """How the input_fn (modules/training/input_pipeline.py) may use memory."""
  memory_budget: int = knob(
      1 << 30, 'Memory the Trainer\'s input may hold, in MiB: a split that '
      'fits (training split first) is cached and shuffled whole, one that '
      'does not is streamed from its shards each epoch (default: '
      '%(default)s).', flag='--input-memory-budget', type=int, metavar='MB',
      from_flag=lambda mib: mib << 20, to_flag=lambda size: size >> 20)
  cycle_length: int = knob(
      8, 'Streaming: shards read at once, enough parallel reads for several '
      'cores.')
  shuffle_buffer_bytes: int = knob(
      64 << 20, 'Streaming: the training shuffle buffer (at most the '
      'memory budget).')


@dataclasses.dataclass(frozen=True)
class TuningConfig:
  """TFX's Tuner before the Trainer (the space: TUNING_SPACES)."""
  trials: int = knob(
      0, 'Tune the learning rate, width and dropout first: TFX\'s Tuner '
      'trains this many trials of --tune-trial-steps steps each, and the '
      'Trainer trains the full budget with the best (default: no tuning).',
      flag='--tune', type=int, metavar='TRIALS')
  trial_steps: int = knob(
      100, 'Training steps of each tuning trial, then one pass over the '
      'eval split (--eval-steps batches) (default: %(default)s).',
      flag='--tune-trial-steps', type=int, metavar='STEPS')
  search: str = knob(
      'random', 'How the Tuner picks each trial: random, or bayesian (a '
      'Gaussian process over the trials so far) (default: %(default)s).',
      flag='--tune-search', choices=('random', 'bayesian'))
  seed: int = knob(0, 'The search\'s random seed: the same trials each run.')

  def to_dict(self) -> Dict[str, Any]:
    """The settings as a dict of JSON values."""
    return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class TrainingConfig:
  """Everything the Trainer is told. The fields' order is their flags'."""
  budget: Budget = dataclasses.field(default_factory=Budget)
  model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
  # TFX's TrainArgs and EvalArgs (the Trainer's FnArgs carry them).
  train_steps: Optional[int] = knob(
      None, 'Train this many steps (spread over --epochs) instead of whole '
      'epochs (default: whole epochs).', flag='--train-steps', type=int)
  input: InputConfig = dataclasses.field(default_factory=InputConfig)
  eval_steps: Optional[int] = knob(
      None, 'Validation batches per epoch (default: all).',
      flag='--eval-steps', type=int)
  batch_size: int = knob(
      128, 'Batch size per GPU, or on CPU (default: %(default)s).',
      flag='--batch-size', type=int)
  learning_rate: float = knob(
      3e-3, 'Adam\'s peak learning rate, reached after the warm-up '
      '(default: %(default)s).', flag='--learning-rate', type=float)
  label_smoothing: float = knob(
      0.1, 'Label smoothing of the cross-entropy loss (default: '
      '%(default)s).', flag='--label-smoothing', type=float)
  seed: Optional[int] = knob(
      None, 'Seed for the initial weights, the shuffling and dropout, so a '
      'run can be repeated (default: none, a new draw each run).',
      flag='--seed', type=int)
  mixed_precision: bool = knob(
      True, 'Train in float32 only. By default GPUs train in mixed float16 '
      'and CPUs that compute bfloat16 natively (AVX512_BF16 or AMX) in '
      'mixed bfloat16; the served model is float32 either way.',
      flag='--no-mixed-precision', action='store_false')
  warm_start: bool = knob(
      False, 'Start from the model in service (the newest version under the '
      'serving directory) and fine-tune it on a smaller budget '
      '(--warm-start-epochs-fraction, --warm-start-learning-rate-factor; '
      'docs/training.md). A served model of another network, '
      'image size or class list it cannot be grown into: the run says why '
      'and trains from scratch (default: from scratch).',
      flag='--warm-start', action='store_true')
  # A cluster's TF_CONFIG (Vertex AI, Kubeflow's Training Operator) says
  # how many workers it has; without one, run_fn starts this many.
  workers: int = knob(
      1, 'Train on N workers under MultiWorkerMirroredStrategy, '
      '--batch-size per worker (default: %(default)s). Locally: N processes '
      'on this machine; kubeflow_runner.py --target vertex: a Vertex AI '
      'custom job of N replicas.', flag='--trainer-workers', type=int,
      metavar='N')
  workers_timeout_seconds: float = knob(
      24 * 3600, 'Local workers: all of training must end within this time, '
      'or every worker is stopped (a hung worker never hangs the run).')
  communication_timeout_seconds: float = knob(
      600, 'Any cluster: a collective op that waits this long for the other '
      'workers fails, and its worker with it. Longer than any one step or '
      'the chief\'s export of the model.')

  def to_dict(self) -> Dict[str, Any]:
    """The settings as a dict of JSON values, for the Trainer's
    custom_config."""
    return dataclasses.asdict(self)

  @classmethod
  def from_dict(cls, d: Dict[str, Any]) -> 'TrainingConfig':
    """The TrainingConfig of `to_dict`'s dict (after a trip through JSON)."""
    d = dict(d)
    d['budget'] = Budget(**d['budget'])
    d['model'] = ModelConfig.from_dict(d['model'])
    d['input'] = InputConfig(**d['input'])
    return cls(**d)


# What `--tune` searches. `with_tuned` maps a point of the search to the
# TrainingConfig that both the Tuner's trials and the Trainer train with.
# The space: docs/training.md, "Tuning".

# What a trial's score is: the Trainer's validation metric, higher better.
TUNING_OBJECTIVE = VALIDATION_ACCURACY
# The hyperparameters, by their keras_tuner names.
TUNED_LEARNING_RATE = 'learning_rate'
TUNED_WIDTH = 'width'
TUNED_DROPOUT = 'dropout'
TUNED_NETWORK = 'network'

LEARNING_RATE_RANGE = (1e-4, 1e-2)
TUNED_WIDTHS = (0.5, 1.0, 1.5)
DROPOUT_RANGE = (0.1, 0.6)
DROPOUT_STEP = 0.05


@dataclasses.dataclass(frozen=True)
class NetworkSpace:
  """Which ModelConfig fields a network's `width` and `dropout` set."""
  dropout: Optional[str] = None
  widths: Tuple[str, ...] = ()


TUNING_SPACES = {
    SMALL_BN_CNN: NetworkSpace(widths=('bn_conv_filters',)),
    MNIST_CNN: NetworkSpace(dropout='dropout',
                            widths=('conv_filters', 'dense_units')),
    SMALL_GAP_CNN: NetworkSpace(dropout='gap_dropout',
                                widths=('gap_conv_filters',)),
    # A pretrained backbone: its head's dropout (its widths are its own).
    **{backbone: NetworkSpace(dropout='head_dropout')
       for backbone in BACKBONES},
}


def network_space(network: str) -> NetworkSpace:
  """Returns the NetworkSpace of `network`.

  Raises:
    ValueError: TUNING_SPACES has no entry for it.
  """
  try:
    return TUNING_SPACES[network]
  except KeyError:
    raise ValueError(f'--tune: no search space for the network {network!r} '
                     '(modules/training/config.py TUNING_SPACES has '
                     f'{sorted(TUNING_SPACES)})') from None


def search_space(network: str):
  """Returns the search space for `network`, as keras_tuner HyperParameters."""
  import keras_tuner  # pylint: disable=g-import-not-at-top
  space = network_space(network)
  hp = keras_tuner.HyperParameters()
  hp.Fixed(TUNED_NETWORK, network)
  hp.Float(TUNED_LEARNING_RATE, *LEARNING_RATE_RANGE, sampling='log')
  if space.widths:
    hp.Choice(TUNED_WIDTH, list(TUNED_WIDTHS))
  if space.dropout:
    hp.Float(TUNED_DROPOUT, *DROPOUT_RANGE, step=DROPOUT_STEP)
  return hp


def _scaled(value, width: float):
  if isinstance(value, (tuple, list)):
    return tuple(_scaled(v, width) for v in value)
  return max(1, round(value * width))


def with_tuned(config: TrainingConfig,
               values: Mapping[str, Any]) -> TrainingConfig:
  """Returns `config` with the values of a point of the space.

  The point sets the network, the learning rate, the widths (scaled by its
  width) and the dropout.

  Args:
    config: the run's training settings.
    values: {hyperparameter name: value} of the point, as a keras_tuner
      trial holds them; the network must be in TUNING_SPACES.
  """
  network = values[TUNED_NETWORK]
  space = network_space(network)
  # A backbone is chosen by --backbone, which stays as it is.
  model = {} if network in BACKBONES else {'architecture': network}
  if space.dropout:
    model[space.dropout] = float(values[TUNED_DROPOUT])
  for field in space.widths:
    model[field] = _scaled(getattr(config.model, field),
                           float(values[TUNED_WIDTH]))
  return dataclasses.replace(
      config, learning_rate=float(values[TUNED_LEARNING_RATE]),
      model=dataclasses.replace(config.model, **model))


def tuned_values(hyperparameters_config: Optional[Dict[str, Any]]
                 ) -> Optional[Dict[str, Any]]:
  """Returns the values of the Trainer's fn_args.hyperparameters, or None.

  That is a keras_tuner HyperParameters config, as TFX's Tuner writes the
  best one.
  """
  if not hyperparameters_config:
    return None
  return dict(hyperparameters_config['values'])


def describe_tuned(values: Mapping[str, Any]) -> str:
  """Describes a point of the space in one line.

  For example 'network mnist-cnn, learning_rate 0.00123, width 1, dropout
  0.35'.
  """
  return ', '.join(f'{name} {value:.3g}' if isinstance(value, float)
                   else f'{name} {value}' for name, value in values.items())
