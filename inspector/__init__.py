"""Inspecting a pipeline's ML Metadata: runs, artifacts, lineage, data and
models, and a run's report (`python -m inspector --help`).

Only the subcommands that need them import TensorFlow, TFDV or TFMA: `runs`,
`artifacts`, `lineage`, `stats` and `anomalies` answer in under a second.
"""
