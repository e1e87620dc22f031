"""The error every input reader raises for bad data."""

from typing import Optional


class InputDataError(ValueError):
  """Bad input data. The message always starts with the offending path."""

  def __init__(self, path: str, problem: str):
    self.path = path
    self.problem = problem
    super().__init__(f'{path}: {problem}')

  def __reduce__(self):
    # Beam pickles exceptions raised in workers; keep both fields.
    return (InputDataError, (self.path, self.problem))


def find_input_data_error(error: BaseException) -> Optional[InputDataError]:
  """The InputDataError behind `error`, in its causes or its text, if any.

  Beam's workers send errors back as text, '... InputDataError: PATH: PROBLEM'.
  """
  seen = error
  while seen is not None:
    if isinstance(seen, InputDataError):
      return seen
    seen = seen.__cause__ or seen.__context__
  marker = InputDataError.__name__ + ': '
  for line in str(error).splitlines():
    if marker in line:
      path, _, problem = line.split(marker, 1)[1].strip().partition(': ')
      if problem:
        return InputDataError(path, problem)
  return None
