"""The report a local run writes when it ends: OUT/report.html.

A report that cannot be written never fails the run: it is one console
line and a traceback in the run's log. See docs/metadata.md, "The run report".
"""

import logging
import os

from metadata import local_store

REPORT_NAME = 'report.html'


def write_report(run_store: local_store.LocalStore, output_dir: str,
                 pipeline_name: str) -> str:
  """Writes the report of the pipeline's newest run in the run's store to
  OUT/report.html; returns the console line naming it, or saying why not.

  Args:
    run_store: the ML Metadata store the run recorded in.
    output_dir: OUT, the run's output directory.
    pipeline_name: the pipeline whose newest run is reported.
  """
  path = os.path.join(output_dir, REPORT_NAME)
  try:
    # pylint: disable=g-import-not-at-top
    from metadata import queries
    from inspector import report
    from metadata import store
    # pylint: enable=g-import-not-at-top
    md = queries.Metadata(
        store.open_store(mysql=run_store.mysql) if run_store.mysql else
        store.open_store(local_store.sqlite_path(output_dir)),
        run_store.description)
    # The output directory is locked for this run, so the pipeline's newest
    # run is ours; in a shared MySQL store, only if nobody else started a
    # run of the same pipeline name since (docs/metadata.md).
    runs = [r for r in md.runs() if r.pipeline == pipeline_name]
    if not runs:
      raise store.InspectError(f'{md.where} holds no run of {pipeline_name!r}')
    report.write(md, runs[0], path)
    return f'Report: {path}'
  except Exception as e:  # pylint: disable=broad-except
    logging.exception('The run report could not be written')
    return (f'Report: not written ({type(e).__name__}: {e}); the log has the '
            'traceback')
