"""KeepRuns (--keep-runs K): the rule of which runs keep their large artifacts,
and the step that applies it to the run folders on Kubeflow Pipelines."""
