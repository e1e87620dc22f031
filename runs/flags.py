"""The DAG's flags, shared by local_runner.py and kubeflow/kubeflow_runner.py.

Generated from the knobs' fields (pipeline/knobs.py,
modules/training/config.py). A flag not given is left out of the namespace,
so its field keeps its default or its --dataset preset.
"""

import argparse
import dataclasses
from typing import Any, Dict

from modules.knob import knob_fields, presets
from modules.training.config import DEFAULT_BACKBONE
from pipeline import knobs as knobs_lib

# Help groups, and the configs whose flags each holds, in their order.
GROUPS = (
    ('input data', (knobs_lib.DataConfig,)),
    ('training and evaluation', (knobs_lib.TrainingConfig,
                                 knobs_lib.EvaluationConfig)),
    ('tuning', (knobs_lib.TuningConfig,)),
)


def _defaults() -> Dict[str, Any]:
  """Every knob's default, by field name (what help texts refer to)."""
  return {field.name: field.default
          for _, classes in GROUPS for config_class in classes
          for field in knob_fields(config_class)}


def _parser(parse):
  """`parse` as an argparse type: its ValueError's message is the error."""
  def parse_flag(value):
    try:
      return parse(value)
    except ValueError as e:
      raise argparse.ArgumentTypeError(str(e)) from None
  parse_flag.__name__ = parse.__name__
  return parse_flag


def _add_flag(group, field: dataclasses.Field, defaults: Dict[str, Any]):
  options = dict(field.metadata)
  flag = options.pop('flag')
  to_flag = options.pop('to_flag', lambda value: value)
  options.pop('from_flag', None)
  options.pop('presets')
  if 'parse' in options:
    options['type'] = _parser(options.pop('parse'))
  # argparse would show SUPPRESS as the default: the help shows the field's.
  help_text = options.pop('help') % dict(
      defaults, default=to_flag(field.default))
  group.add_argument(flag, dest=field.name, default=argparse.SUPPRESS,
                     help=help_text.replace('%', '%%'), **options)


def add_flags(parser: argparse.ArgumentParser, data_dir_default: str,
              data_dir_help: str) -> None:
  """Every knob's flag; --data-dir's default and help are the runner's.

  Args:
    parser: the runner's parser; each of GROUPS becomes a group of it.
    data_dir_default: --data-dir's default.
    data_dir_help: --data-dir's help text.
  """
  defaults = _defaults()
  for title, classes in GROUPS:
    group = parser.add_argument_group(title)
    if classes[0] is knobs_lib.DataConfig:
      group.add_argument('--data-dir', default=data_dir_default,
                         help=data_dir_help)
    for config_class in classes:
      for field in knob_fields(config_class):
        if field.metadata.get('flag'):
          _add_flag(group, field, defaults)


def add_runner_flags(group, config_class) -> None:
  """The flags of a config only one runner has (knobs_lib.DiskConfig).

  Args:
    group: the argparse group the flags are added to.
    config_class: the config's dataclass, whose every field is a flag.
  """
  defaults = _defaults()
  for field in knob_fields(config_class):
    _add_flag(group, field, defaults)


def runner_config(args: argparse.Namespace, config_class):
  """`config_class` of the parsed flags that add_runner_flags added."""
  given = vars(args)
  return config_class(**{field.name: given[field.name]
                         for field in dataclasses.fields(config_class)
                         if field.name in given})


def knobs_from_args(args: argparse.Namespace) -> knobs_lib.Knobs:
  """The configs of the parsed flags: given flags, else the values the knobs
  preset for the --dataset, else the fields' defaults.

  Args:
    args: the flags add_flags added, parsed.

  Raises:
    SystemExit: flags that contradict each other or the input format.
  """
  given = vars(args)
  dataset = given.get('dataset')

  def build(config_class):
    values = {}
    for field in dataclasses.fields(config_class):
      if dataclasses.is_dataclass(field.default_factory):
        values[field.name] = build(field.default_factory)
      elif field.metadata.get('flag') and field.name in given:
        values[field.name] = field.metadata.get(
            'from_flag', lambda value: value)(given[field.name])
      elif dataset in presets(field):
        values[field.name] = presets(field)[dataset]
    return config_class(**values)

  knobs = knobs_lib.Knobs(data=build(knobs_lib.DataConfig),
                          training=build(knobs_lib.TrainingConfig),
                          evaluation=build(knobs_lib.EvaluationConfig),
                          tuning=build(knobs_lib.TuningConfig))
  _check(knobs)
  return _network_input(knobs)


def _network_input(knobs: knobs_lib.Knobs) -> knobs_lib.Knobs:
  """--image-size, when given, is the network's input size too (the
  images are already that size: the model does not resize them); --weights
  without --backbone loads the default backbone."""
  model = knobs.training.model
  if knobs.data.image_size and model.input_size is None:
    model = dataclasses.replace(model,
                                input_size=tuple(knobs.data.image_size))
  if model.weights and not model.backbone:
    model = dataclasses.replace(model, backbone=DEFAULT_BACKBONE)
  return knobs._replace(training=dataclasses.replace(knobs.training,
                                                     model=model))


def _check(knobs: knobs_lib.Knobs) -> None:
  data, workers = knobs.data, knobs.training.workers
  if data.skip_bad_images and data.input_format != 'images':
    raise SystemExit('error: --skip-bad-images applies to image folders only '
                     '(--input-format images)')
  if data.input_format != 'images' and (data.image_size or data.channels):
    # A flag must not contradict the data: IDX files carry their geometry.
    raise SystemExit('error: --image-size and --channels apply to image '
                     'folders only (--input-format images); IDX files declare '
                     'their geometry in their headers')
  if not 0 < data.eval_percent < 100:
    raise SystemExit(f'error: --eval-percent {data.eval_percent}: must be '
                     'between 1 and 99')
  if not 0 <= data.validation_percent < 100:
    raise SystemExit(f'error: --validation-percent {data.validation_percent}: '
                     'must be between 0 and 99')
  if knobs.tuning.trials and not data.validation_percent:
    raise SystemExit('error: --tune needs a validation split to score its '
                     'trials on; --validation-percent 0 leaves none')
  if data.max_image_pixels < 1:
    raise SystemExit(f'error: --max-image-pixels {data.max_image_pixels}: '
                     'must be 1 or more')
  if workers < 1:
    raise SystemExit(f'error: --trainer-workers {workers}: must be 1 or more')
  tuning = knobs.tuning
  if tuning.trials < 0 or tuning.trial_steps < 1:
    raise SystemExit(f'error: --tune {tuning.trials}, --tune-trial-steps '
                     f'{tuning.trial_steps}: trials must be 0 (no tuning) or '
                     'more, trial steps 1 or more')
  if workers > data.num_shards:
    # Each worker reads its own files (shards) of every split.
    raise SystemExit(f'error: --trainer-workers {workers} needs at least as '
                     f'many shards per split, --num-shards is '
                     f'{data.num_shards}')
