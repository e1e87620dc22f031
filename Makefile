# `make run` and `make test` create the virtual environment when it is missing
# (or when requirements.lock or setup.py changed), then do their job.
PYTHON ?= python3
VENV ?= .venv
STAMP := $(VENV)/.installed
ARGS ?=
PYTEST_ARGS ?=
# The tests run on 2 pytest-xdist workers: CI has 2 cores, and many tests
# start multi-process runs of their own that more workers would only crowd.
# PYTEST_ARGS="-n 0" runs them in one process.
TEST_WORKERS ?= 2

.PHONY: run test bench venv clean

run: $(STAMP)
	$(VENV)/bin/python local_runner.py $(ARGS)

test: $(STAMP)
	$(VENV)/bin/python -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

# Side-by-side benchmarks into BENCHMARKS.md (docs/development.md: Benchmarks).
bench: $(STAMP)
	$(VENV)/bin/python -m benchmarks $(ARGS)

venv: $(STAMP)

# uv installs the pins as pip would, but downloads and compiles bytecode in
# parallel; pip compiles on one core. --compile-bytecode: a process started
# with PYTHONDONTWRITEBYTECODE would otherwise compile every import again.
# --no-deps: requirements.lock pins the whole environment, so nothing is
# resolved (unpinned, pip backtracks for ages over Google Cloud clients).
# With --no-deps uv does not check Requires-Python: TFX 1.16 declares <3.11
# but runs on 3.11 (pip needs --ignore-requires-python, docs/development.md);
# the TFX releases that allow 3.11 need glibc 2.39 wheels.
# Then s3:// for TensorFlow and Beam (as in the image built WITH_S3=1) and
# the tests' S3 server (tests/s3_server.py).
UV_VERSION := 0.13.9
UV_INSTALL = $(VENV)/bin/uv pip install --quiet --python $(VENV)/bin/python --compile-bytecode --no-deps
$(STAMP): requirements.lock kubeflow/requirements-s3.lock tests/requirements-s3-server.lock setup.py
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] in ((3, 9), (3, 10), (3, 11)), "Python 3.9-3.11 needed, found " + sys.version'
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet uv==$(UV_VERSION)
	$(UV_INSTALL) -r requirements.lock
	$(UV_INSTALL) -r kubeflow/requirements-s3.lock
	$(UV_INSTALL) -r tests/requirements-s3-server.lock
	$(UV_INSTALL) --no-build-isolation -e .
	touch $(STAMP)

clean:
	rm -rf $(VENV) outputs *.egg-info
