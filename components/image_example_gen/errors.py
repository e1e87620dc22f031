"""The error every input reader raises for bad data."""


class InputDataError(ValueError):
  """Bad input data. The message always starts with the offending path."""

  def __init__(self, path: str, problem: str):
    self.path = path
    self.problem = problem
    super().__init__(f'{path}: {problem}')

  def __reduce__(self):
    # Beam pickles exceptions raised in workers; keep both fields.
    return (InputDataError, (self.path, self.problem))
