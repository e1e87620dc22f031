"""Photos cut to a part of their frame: an image against windows of another.

Why and how: docs/data-checks.md#photos-cut-to-part-of-their-frame.
"""

from typing import Iterator, Tuple

import numpy as np

from components.data_checks import alignment
from components.data_checks import image_signatures

# A crop keeps at least MIN_KEEP of each side of its original.
MIN_KEEP = 0.8
# The grid of windows: these shares of each side, at OFFSETS places.
_KEEPS = (0.8, 0.875, 0.95)
_OFFSETS = 3
# The coarse images that candidates are found on: (height, width).
COARSE = (6, 8)
# Each image is a candidate copy of the images owning its TOP nearest
# windows.
TOP = 4
# A copy's colours, its original's window warped onto it, differ from it by
# less than this share of its own contrast, on average (`differences`).
MAX_CROP_DIFFERENCE = 0.2
# Pairs that differ by more than this at the grid's window are not searched.
MAX_START_DIFFERENCE = 1.2
# The fine search: the steps of keep and offset (shares of the side).
_STEPS = (0.02, 0.01, 0.005, 0.0025)
_TARGET_BLOCK = 256
_QUERY_BLOCK = 1024


def grid() -> np.ndarray:
  """[W, 4]: the windows, (keep y, offset y, keep x, offset x) as shares."""
  axis = [(keep, offset) for keep in _KEEPS
          for offset in np.linspace(0, 1 - keep, _OFFSETS)]
  return np.array([(ky, oy, kx, ox) for ky, oy in axis for kx, ox in axis],
                  np.float32)


def _resampling(windows: np.ndarray, height: int, width: int,
                shape: Tuple[int, int], samples: int
                ) -> Tuple[np.ndarray, np.ndarray]:
  """The (rows, columns) resampling weights of [P, 4] windows (shares of the
  side) of [height, width] images to `shape`."""
  return (alignment.resampling(windows[:, 1] * height, windows[:, 0] * height,
                               height, shape[0], samples),
          alignment.resampling(windows[:, 3] * width, windows[:, 2] * width,
                               width, shape[1], samples))


def warp(images: np.ndarray, windows: np.ndarray, shape: Tuple[int, int]
         ) -> np.ndarray:
  """Returns float32 [P, *shape]: each window of float32 [P, H, W] images
  ([P, 4] windows) resized to `shape`.

  Args:
    images: float32 [P, H, W].
    windows: [P, 4], one per image, as `grid` gives them: (keep y,
      offset y, keep x, offset x), shares of the side.
    shape: the (height, width) each window is resized to.
  """
  _, height, width = images.shape
  rows, columns = _resampling(windows, height, width, shape, 1)
  return rows @ images @ columns.transpose(0, 2, 1)


def _unit(values: np.ndarray) -> np.ndarray:
  """Flattens the last two axes; zero mean and unit length."""
  flat = values.reshape(*values.shape[:-2], -1)
  flat = flat - flat.mean(axis=-1, keepdims=True)
  return flat / np.maximum(np.linalg.norm(flat, axis=-1, keepdims=True),
                           1e-3)


def _coarse(grey: np.ndarray, windows: np.ndarray) -> np.ndarray:
  """[P, W, COARSE pixels]: windows ([W, 4]) of float32 [P, h, w] images,
  area-resized to COARSE, zero mean and unit length."""
  _, height, width = grey.shape
  rows, columns = _resampling(windows, height, width, COARSE, 4)
  return _unit(rows[None] @ grey[:, None] @ columns.transpose(0, 2, 1)[None])


def candidates(grey, split: np.ndarray, pick: np.ndarray
               ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Each picked image with the TOP images of other splits whose windows
  look most like it.

  Args:
    grey: a function of an index array to the float32 [P, h, w] grey
      details of those images (read a block at a time).
    split: each image's split.
    pick: the images to match, in order.

  Returns:
    (copy, original, window): index arrays and the [P, 4] window of the
    original nearest to the copy.
  """
  whole = np.array([[1.0, 0.0, 1.0, 0.0]], np.float32)
  queries = np.concatenate([_coarse(grey(block), whole)[:, 0] for block in
                            _blocks(pick, _QUERY_BLOCK)] or
                           [np.zeros((0, COARSE[0] * COARSE[1]))])
  best = np.full((len(pick), TOP), -np.inf, np.float32)
  owner = np.zeros((len(pick), TOP), np.int64)
  window = np.zeros((len(pick), TOP), np.int64)
  for target_split in np.unique(split[pick]):
    others = np.flatnonzero(split[pick] != target_split)  # Rows of queries.
    for targets in _blocks(pick[split[pick] == target_split], _TARGET_BLOCK):
      windows = _coarse(grey(targets), grid())  # [T, W, D]
      count = windows.shape[1]
      windows = windows.reshape(-1, windows.shape[-1])
      for rows in _blocks(others, _QUERY_BLOCK):
        similar = (queries[rows] @ windows.T).reshape(-1, len(targets), count)
        nearest = similar.argmax(axis=2)
        score = np.take_along_axis(similar, nearest[..., None], 2)[..., 0]
        joined = np.concatenate([best[rows], score], axis=1)
        top = np.argsort(-joined, axis=1, kind='stable')[:, :TOP]
        best[rows] = np.take_along_axis(joined, top, 1)
        owner[rows] = np.take_along_axis(np.concatenate(
            [owner[rows], np.broadcast_to(targets, score.shape)], axis=1),
                                         top, 1)
        window[rows] = np.take_along_axis(
            np.concatenate([window[rows], nearest], axis=1), top, 1)
  keep = np.isfinite(best)
  copies = np.broadcast_to(pick[:, None], best.shape)[keep]
  return copies, owner[keep], grid()[window[keep]]


def _blocks(index: np.ndarray, size: int) -> Iterator[np.ndarray]:
  for start in range(0, len(index), size):
    yield index[start:start + size]


def search(original: np.ndarray, copy: np.ndarray, windows: np.ndarray
           ) -> np.ndarray:
  """Refines each pair's window: the one whose warp of `original` differs
  least from `copy`, by coordinate descent on keep and offset, one axis at
  a time, in finer and finer steps.

  Args:
    original: float32 [P, h, w] grey details.
    copy: the same, of the copies.
    windows: [P, 4] the windows to start from.

  Returns:
    [P, 4] windows.
  """
  shape = copy.shape[1:]
  windows = windows.astype(np.float32).copy()

  def error(candidate):
    return np.abs(warp(original, candidate, shape) - copy).mean(axis=(1, 2))

  best = error(windows)
  for step in _STEPS:
    for axis in (0, 2, 0, 2):
      for keep_step in (-step, 0.0, step):
        for offset_step in (-step, 0.0, step):
          if not keep_step and not offset_step:
            continue
          candidate = windows.copy()
          candidate[:, axis] += keep_step
          candidate[:, axis + 1] += offset_step
          candidate[:, axis] = np.clip(candidate[:, axis], MIN_KEEP - step,
                                       1.0)
          candidate[:, axis + 1] = np.clip(
              candidate[:, axis + 1], 0.0, 1.0 - candidate[:, axis])
          found = error(candidate)
          better = found < best
          best = np.where(better, found, best)
          windows[better] = candidate[better]
  return windows


def _blurred(images: np.ndarray) -> np.ndarray:
  """[P, h, w, C] blurred by [1, 2, 1] / 4 along both axes, edges repeated:
  what resampling moves, a pixel's texture, counts less."""
  padded = np.pad(images, ((0, 0), (1, 1), (1, 1), (0, 0)), mode='edge')
  rows = (padded[:, :-2] + 2 * padded[:, 1:-1] + padded[:, 2:]) / 4
  return (rows[:, :, :-2] + 2 * rows[:, :, 1:-1] + rows[:, :, 2:]) / 4


def differences(original: np.ndarray, copy: np.ndarray, windows: np.ndarray
                ) -> np.ndarray:
  """Returns float32 [P]: the mean colour difference of each copy and its
  original's window warped onto it, both blurred, as a share of the copy's
  contrast (the mean distance of its pixels from their mean).

  Args:
    original: float32 [P, h, w, C] details.
    copy: the same, of the copies.
    windows: [P, 4].
  """
  channels = original.shape[-1]
  warped = np.stack([warp(original[..., c], windows, copy.shape[1:3])
                     for c in range(channels)], axis=-1)
  flat = copy.reshape(len(copy), -1, channels)
  contrast = np.abs(flat - flat.mean(axis=1, keepdims=True)).mean(axis=(1, 2))
  return (np.abs(_blurred(warped) - _blurred(copy)).mean(axis=(1, 2, 3)) /
          np.maximum(contrast, 1.0)).astype(np.float32)


def verify(original: np.ndarray, copy: np.ndarray, start: np.ndarray
           ) -> np.ndarray:
  """Returns float32 [P]: how far each copy is from a crop of its original
  (`differences` at the best window; inf when not searched).

  Args:
    original: float32 [P, h, w, C] details.
    copy: the same, of the copies.
    start: [P, 4] the grid's windows to start the search from.
  """
  result = differences(original, copy, start)
  near = np.flatnonzero(result < MAX_START_DIFFERENCE)
  result[result >= MAX_START_DIFFERENCE] = np.inf
  if len(near):
    found = search(image_signatures.grey(original[near]),
                   image_signatures.grey(copy[near]), start[near])
    result[near] = differences(original[near], copy[near], found)
  return result
