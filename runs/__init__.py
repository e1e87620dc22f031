"""A run's before and after, shared by local_runner.py and
kubeflow/kubeflow_runner.py: the DAG's flags, the console summary, the
report, recovery from killed runs, the last validated schema, and old runs'
artifacts deleted after a local run."""
