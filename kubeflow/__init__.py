"""The pipeline on Kubeflow Pipelines and Vertex AI (see kubeflow_runner.py).

A portion of the `kubeflow` namespace the Kubeflow SDKs share, declared as
kubeflow-training declares its own (the line below). Why: docs/kubeflow.md.
"""

__path__ = __import__('pkgutil').extend_path(__path__, __name__)
