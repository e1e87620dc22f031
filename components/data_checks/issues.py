"""Cheap image issues, judged on the scores of signatures.py.

As cleanvision means them:
  near_blank  almost no pixel spread: the brightest and darkest ends
              (1st and 99th percentiles) within NEAR_BLANK_SPREAD of 255
  dark        even the bright end (99th percentile) below DARK_HIGH
  bright      even the dark end (1st percentile) above BRIGHT_LOW
  blurry      sharpness (the Laplacian's variance over the pixels') below
              BLURRY_SHARE of the dataset's median: what is sharp depends
              on the data (MNIST's strokes are soft at 28x28), so only
              images far blurrier than their peers count
"""

from typing import Dict

import numpy as np

ISSUES = ('near_blank', 'dark', 'bright', 'blurry')
NEAR_BLANK_SPREAD = 8.0
DARK_HIGH = 64.0
BRIGHT_LOW = 192.0
BLURRY_SHARE = 0.2


def flags(scores: np.ndarray, median_sharpness: float) -> Dict[str, np.ndarray]:
  """Returns {issue: bool [N]} for the SCORE_DTYPE scores of N images."""
  near_blank = scores['spread'] < NEAR_BLANK_SPREAD
  return {
      'near_blank': near_blank,
      'dark': scores['high'] < DARK_HIGH,
      'bright': scores['low'] > BRIGHT_LOW,
      # A blank image has no edges to blur: it is near_blank only.
      'blurry': ~near_blank & (scores['sharpness'] <
                               BLURRY_SHARE * median_sharpness),
  }
