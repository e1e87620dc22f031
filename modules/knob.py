"""Knobs: settings declared once, with default, help, flag and presets.

runs/flags.py sets each knob from its flag, else the `--dataset` preset,
else its default. Free of TensorFlow, so that `--help` stays fast.
"""

import dataclasses
from typing import Any, Dict, Iterator, Mapping, Optional

# The known datasets (`--dataset NAME`). A knob's `presets` give its value
# for some of them; a knob without one keeps its default.
KNOWN_DATASETS = ('fashion-mnist', 'mnist')


def knob(default: Any, help: str, flag: Optional[str] = None,  # pylint: disable=redefined-builtin
         presets: Optional[Mapping[str, Any]] = None,
         **argparse_kwargs) -> Any:
  """A dataclass field with its help and, if it is one, its flag.

  Args:
    default: The field's default.
    help: A %-template: %(default)s is the field's default (as the flag
      takes it), %(NAME)s the default of any other knob.
    flag: The flag that sets the field, e.g. '--epochs'; None for none.
    presets: {known dataset: value}: what `--dataset NAME` sets the field
      to when its flag is not given.
    **argparse_kwargs: type, choices, metavar, action; `parse` (a function
      raising ValueError with a message), `from_flag` and `to_flag` (the
      flag's unit to the field's and back).

  Returns:
    The dataclasses.field.

  Raises:
    ValueError: `presets` names a dataset that is not known.
  """
  unknown = sorted(set(presets or {}) - set(KNOWN_DATASETS))
  if unknown:
    raise ValueError(f'presets for unknown datasets {unknown}; the known '
                     f'ones are {KNOWN_DATASETS}')
  return dataclasses.field(
      default=default, metadata=dict(help=help, flag=flag,
                                     presets=dict(presets or {}),
                                     **argparse_kwargs))


def knob_fields(config_class: type) -> Iterator[dataclasses.Field]:
  """Every knob of `config_class`, nested configs' in their place."""
  for field in dataclasses.fields(config_class):
    if dataclasses.is_dataclass(field.default_factory):
      yield from knob_fields(field.default_factory)
    else:
      yield field


def presets(field: dataclasses.Field) -> Mapping[str, Any]:
  """{known dataset: value} of the knob `field`, empty for none."""
  return field.metadata.get('presets', {})


def dataset_preset(dataset: str, *config_classes: type) -> Dict[str, Any]:
  """{field name: value} of every knob of `config_classes` that `dataset`
  presets."""
  return {field.name: presets(field)[dataset]
          for config_class in config_classes
          for field in knob_fields(config_class)
          if dataset in presets(field)}
