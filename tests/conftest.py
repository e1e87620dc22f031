"""Fixtures shared by test modules (one set of tiny runs and one tiny model
per session), and the hook that keeps such fixtures built once when `make
test` runs the tests on 2 xdist workers (tests/xdist_groups.py)."""

# pylint: disable=unused-import
from tests.tiny_models import grey_model
from tests.tiny_runs import stopped_run, two_runs
from tests.xdist_groups import pytest_collection_modifyitems
