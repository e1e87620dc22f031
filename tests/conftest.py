"""Fixtures shared by test modules (one set of tiny runs per session)."""

from tests.tiny_runs import stopped_run, two_runs  # pylint: disable=unused-import
