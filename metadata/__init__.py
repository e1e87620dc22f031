"""ML Metadata access: opening a store (SQLite or MySQL), reading runs,
executions and artifacts, and binding a local run's output directory to its
store. Why and how: docs/metadata.md."""
