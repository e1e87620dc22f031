"""The pipeline on Kubeflow Pipelines and Vertex AI (see kubeflow_runner.py).

`kubeflow` is also the top-level name of the Kubeflow SDKs on PyPI. This
package is a portion of that namespace, declared as kubeflow-training
declares its own (the same line below), so that both import side by side
in one environment: whichever `kubeflow/` comes first on sys.path extends
the package with the others. The unified `kubeflow` SDK ships a regular
`kubeflow/__init__.py` that extends nothing: with it, this package must
come first on sys.path, as it does wherever the project runs its Kubeflow
modules (`python -m kubeflow.MODULE` from the repository root or the image's
WORKDIR, kubeflow_runner.py as a script). tests/test_kubeflow_namespace.py
checks both.
"""

__path__ = __import__('pkgutil').extend_path(__path__, __name__)
