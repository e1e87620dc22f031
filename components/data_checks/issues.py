"""Cheap image issues, judged on the scores of signatures.py.

near_blank, dark, bright and blurry, as cleanvision means them.
Why and how: docs/data-checks.md.
"""

from typing import Dict

import numpy as np

ISSUES = ('near_blank', 'dark', 'bright', 'blurry')
NEAR_BLANK_SPREAD = 8.0
DARK_HIGH = 64.0
BRIGHT_LOW = 192.0
BLURRY_SHARE = 0.2


def flags(scores: np.ndarray, median_sharpness: float) -> Dict[str, np.ndarray]:
  """Returns {issue: bool [N]} for the SCORE_DTYPE scores of N images.

  Args:
    scores: SCORE_DTYPE [N] (image_signatures.scores).
    median_sharpness: the median sharpness of all images checked; an image
      below BLURRY_SHARE of it is blurry.
  """
  near_blank = scores['spread'] < NEAR_BLANK_SPREAD
  return {
      'near_blank': near_blank,
      'dark': scores['high'] < DARK_HIGH,
      'bright': scores['low'] > BRIGHT_LOW,
      # A blank image has no edges to blur: it is near_blank only.
      'blurry': ~near_blank & (scores['sharpness'] <
                               BLURRY_SHARE * median_sharpness),
  }
