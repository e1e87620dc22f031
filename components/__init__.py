"""Custom TFX components of this pipeline."""


def __getattr__(name):
  """Returns components.LabelSuspects, DataCheckResults or KeptRuns.

  These are the import paths their type names encode. TFX's Kubeflow V2
  entrypoint imports a custom artifact class by that name. They are imported
  only when asked for, so the package stays light.
  """
  if name == 'LabelSuspects':
    from components.label_check.component import LabelSuspects  # pylint: disable=g-import-not-at-top
    return LabelSuspects
  if name == 'DataCheckResults':
    from components.data_checks.component import DataCheckResults  # pylint: disable=g-import-not-at-top
    return DataCheckResults
  if name == 'KeptRuns':
    from components.keep_runs.component import KeptRuns  # pylint: disable=g-import-not-at-top
    return KeptRuns
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
