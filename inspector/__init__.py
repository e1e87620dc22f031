"""Inspecting a pipeline's ML Metadata: runs, artifacts, lineage, data and models.

`python -m inspector --help` (or the `image-pipeline-inspect` console
script). The modules, one job each:

  store.py     connecting to ML Metadata (SQLite read-only, or MySQL)
  queries.py   runs, executions, artifacts and events, as plain values
  artifacts.py the key properties of each artifact type; the listing
  lineage.py   an artifact's chain back to ExampleGen's input files
  files.py     reading artifact files (local or any TensorFlow filesystem)
  data.py      a run's statistics and anomalies (TFDV protos)
  evaluation.py  a model's TFMA metrics, validation and blessing
  training.py  a Trainer's curves per epoch, settings and device plan
  images.py    decoding an Examples artifact's records; the confusion matrix
  pictures.py  drawing sample grids and confusion matrices (Pillow)
  render.py    text (rich) and JSON output
  report.py    a run's report: the facts of every section, written as HTML
  report_outcome.py  the report's headline: what became of the run and why
  report_html.py  the report's page, section by section
  html_blocks.py  its stylesheet, escaping, tables, tiles, boxes
  lineage_html.py  a lineage tree as nested HTML lists
  svg.py       the report's charts and DAG, as inline SVG
  cli.py       the command line
  errors.py    InspectError, the one-line error a user sees

Only data.py, evaluation.py, images.py and training.py import TensorFlow,
TFDV or TFMA, and only when their subcommand (or the report) runs: `runs`,
`artifacts` and `lineage` answer in well under a second.
"""
