"""Screenshots of pages in a real headless Chromium (Debian's `chromium`)."""

import os
import shutil
import subprocess
import tempfile

import numpy as np
from PIL import Image
import pytest

CHROMIUM = 'chromium'
WINDOW = (1280, 2000)


def screenshot(page: str, png: str, window=WINDOW) -> Image.Image:
  """Renders the local file `page` to `png` as a laptop-sized window shows
  it, with no network or profile: the page must stand alone."""
  binary = shutil.which(CHROMIUM)
  if binary is None:
    pytest.skip('chromium is not installed (apt-get install chromium; '
                '.ci/run installs it)')
  with tempfile.TemporaryDirectory() as profile:
    result = subprocess.run(
        [binary, '--headless', '--no-sandbox', '--disable-gpu',
         '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync',
         f'--user-data-dir={profile}',
         f'--window-size={window[0]},{window[1]}', f'--screenshot={png}',
         'file://' + os.path.abspath(page)],
        capture_output=True, text=True, timeout=180)
  assert result.returncode == 0 and os.path.isfile(png), result.stderr[-2000:]
  return Image.open(png)


def distinct_colours(image: Image.Image) -> int:
  pixels = np.asarray(image.convert('RGB')).reshape(-1, 3)
  return len(np.unique(pixels, axis=0))
