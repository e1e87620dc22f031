"""The one check of a span folder pattern, e.g. 'span-{SPAN}'.

Its own module, free of TFX and TensorFlow: runners/flags.py checks the
--span-dir-pattern flag with it, and importing TensorFlow there would cost
every `--help` seconds.
"""

# TFX's span placeholder (tfx.components.example_gen.utils.SPAN_SPEC), whose
# module imports TensorFlow.
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
