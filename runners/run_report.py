"""The report a local run writes when it ends: OUT/report.html.

The run's work is done and recorded in ML Metadata by the time the report is
written, so the report never fails the run: a report that cannot be written
at all is one console line and a traceback in the run's log, and parts of it
that cannot be built say so on the page (inspector/report.py).
"""

import logging
import os

REPORT_NAME = 'report.html'


def write_report(metadata_path: str, output_dir: str,
                 pipeline_name: str) -> str:
  """Writes the report of the pipeline's newest run in the SQLite store at
  `metadata_path` to OUT/report.html; returns the console line naming it,
  or saying why there is none."""
  path = os.path.join(output_dir, REPORT_NAME)
  try:
    # pylint: disable=g-import-not-at-top
    from inspector import queries
    from inspector import report
    from inspector import store
    from inspector.errors import InspectError
    # pylint: enable=g-import-not-at-top
    md = queries.Metadata(store.open_store(metadata_path), metadata_path)
    # The output directory is locked for this run: its newest run is ours.
    runs = [r for r in md.runs() if r.pipeline == pipeline_name]
    if not runs:
      raise InspectError(f'{metadata_path} holds no run of {pipeline_name!r}')
    report.write(md, runs[0], path)
    return f'Report: {path}'
  except Exception as e:  # pylint: disable=broad-except
    logging.exception('The run report could not be written')
    return (f'Report: not written ({type(e).__name__}: {e}); the log has the '
            'traceback')
