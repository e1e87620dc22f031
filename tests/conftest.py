"""Fixtures shared by test modules (one set of tiny runs and one tiny model
per session), and the hook that keeps such fixtures built once when `make
test` runs the tests on 2 xdist workers (tests/xdist_groups.py)."""

# pylint: disable=unused-import
# First: OpenBLAS reads its kernels when numpy loads (see there), as in
# a run.
from pipeline import openblas_kernels  # pylint: disable=g-bad-import-order
from tests.tiny_models import grey_model
from tests.tiny_runs import (first_report, stopped_run, tuned_run, two_runs,
                              warm_run)
from tests.xdist_groups import pytest_collection_modifyitems

import pytest
from PIL import Image

from components.image_example_gen.image_folder import PILLOW_MAX_PIXELS


@pytest.fixture(autouse=True)
def pillow_pixel_limit():
  """Starts and ends every test with Pillow's own decompression-bomb limit.

  ImageExampleGen sets the process-wide limit from --max-image-pixels, which
  is right for a run's process; a test (or fixture) that runs it in this
  process must not leave its small limit to the tests after it.
  """
  Image.MAX_IMAGE_PIXELS = PILLOW_MAX_PIXELS
  yield
  Image.MAX_IMAGE_PIXELS = PILLOW_MAX_PIXELS
