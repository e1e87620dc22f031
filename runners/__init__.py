"""What the runners (local_runner.py, kubeflow/kubeflow_runner.py) share: the
DAG's flags (flags.py), the console progress and summary (run_summary.py),
the HTML report written at the end of a run (run_report.py),
recovery from killed runs (interrupted_runs.py), the schema of the last
validated run (schema_history.py)."""
