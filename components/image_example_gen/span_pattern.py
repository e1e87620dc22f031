"""The check of a span folder pattern, free of TensorFlow for `--help`."""

# tfx.components.example_gen.utils.SPAN_SPEC, whose module imports TF.
SPAN_SPEC = '{SPAN}'


def check_span_dir_pattern(value: str) -> str:
  """Returns `value` if it is one folder name with {SPAN} in it.

  Raises:
    ValueError: it is not.
  """
  if '{SPAN' not in value or '/' in value.strip('/'):
    raise ValueError(
        f'span_dir_pattern must be one folder name containing {SPAN_SPEC}, '
        f'e.g. span-{SPAN_SPEC}; got {value!r}')
  return value
