"""Copies cropped or rescaled: each image in a frame of its own, and a check.

The frame is the centre and spread of the image's content along each axis.
Why and how: docs/data-checks.md#copies-that-were-cropped-or-rescaled.
"""

import functools
from typing import NamedTuple, Tuple

import numpy as np
from PIL import Image

from components.data_checks import image_signatures

# The frame spans this many spreads either side of the centre.
SPAN = 2.2
# The detail: the image at most DETAIL pixels a side.
DETAIL = 28
# A copy shows a part of its original, enlarged: B's frame warped onto A may
# reach this many pixels beyond A's edges, no more.
MAX_OUTSIDE = 1.0
# An image has a frame when its content lies on a background: its outer
# EDGE_SHARE of each side holds less than MAX_EDGE_WEIGHT of the content's
# mean weight. A photo filled to its edges has none.
EDGE_SHARE = 0.1
MAX_EDGE_WEIGHT = 0.8
# Pairs further apart than this by their frames alone are not refined.
REFINE_BELOW = 1.2
# Refinement around the frames' warp: relative stretches and pixel shifts.
_STRETCHES = (-0.02, 0.0, 0.02)
_SHIFTS = (-0.3, 0.0, 0.3)
# Shrunk and enlarged copies: the sizes (shares of the side) they may have
# been saved at, and the resamplers, Pillow's, that may have done it.
_SHRINKS = (0.4, 0.9)
_RESAMPLERS = (Image.Resampling.BILINEAR, Image.Resampling.BICUBIC,
               Image.Resampling.LANCZOS, Image.Resampling.BOX)
# Shrunk copies are compared at this size first; only pairs nearer than
# COARSE_BELOW there are compared at full size.
_COARSE = 14
COARSE_BELOW = 0.5
# Values held at once by the shrunk check.
_SHRUNK_BLOCK = 1 << 22


def detail_shape(height: int, width: int) -> Tuple[int, int]:
  """The (height, width) of the detail of images of this size."""
  scale = min(1.0, DETAIL / max(height, width))
  return max(1, round(height * scale)), max(1, round(width * scale))


def _weights(grey: np.ndarray, levels=None) -> np.ndarray:
  """Each pixel's distance from its image's median: its content. `levels`,
  uint8 [N, H, W], are the grey images' levels if at hand."""
  # The median of whole grey levels: a partition of bytes, not of floats,
  # at a third of the time.
  if levels is None:
    levels = np.rint(grey).clip(0, 255).astype(np.uint8)
  result = grey - np.median(levels.reshape(len(grey), -1), axis=1).astype(
      np.float32)[:, None, None]
  return np.abs(result, out=result)


def on_background(weights: np.ndarray) -> np.ndarray:
  """Whether each image, by its _weights [N, H, W], has its content on a
  background, so that its frame means something: bool [N]."""
  _, height, width = weights.shape
  edge_y = max(1, round(height * EDGE_SHARE))
  edge_x = max(1, round(width * EDGE_SHARE))
  inner = weights[:, edge_y:height - edge_y, edge_x:width - edge_x]
  edge_mean = ((weights.sum(axis=(1, 2)) - inner.sum(axis=(1, 2))) /
               max(1, height * width - inner[0].size))
  return edge_mean < MAX_EDGE_WEIGHT * np.maximum(
      weights.mean(axis=(1, 2)), 1e-6)


def moments(grey: np.ndarray, weights=None) -> Tuple[np.ndarray, ...]:
  """Returns the content's (centre y, centre x, spread y, spread x) of
  float32 [N, H, W] images, in pixels (pixel i covers [i, i + 1)).

  Args:
    grey: float32 [N, H, W] grey images.
    weights: their _weights if at hand; None computes them.

  Returns:
    float32 [N] each.
  """
  n, height, width = grey.shape
  weights = _weights(grey) if weights is None else weights
  total = np.maximum(weights.sum(axis=(1, 2)), 1e-6)
  rows = weights.sum(axis=2) / total[:, None]
  columns = weights.sum(axis=1) / total[:, None]
  ys = np.arange(height, dtype=np.float32) + 0.5
  xs = np.arange(width, dtype=np.float32) + 0.5
  cy, cx = rows @ ys, columns @ xs
  sy = np.sqrt(np.maximum(rows @ (ys * ys) - cy * cy, 0.25))
  sx = np.sqrt(np.maximum(columns @ (xs * xs) - cx * cx, 0.25))
  return cy, cx, sy, sx


def linear(positions: np.ndarray, size: int) -> np.ndarray:
  """[..., K, size] weights of linear interpolation at [..., K] positions
  (in pixel centres' coordinates), zero outside the image."""
  # In place: one [..., K, size] array, not one per step.
  result = positions.astype(np.float32)[..., None] - np.arange(
      size, dtype=np.float32)
  np.abs(result, out=result)
  np.subtract(1.0, result, out=result)
  return np.maximum(result, 0.0, out=result)


def resampling(start: np.ndarray, length: np.ndarray, size: int, out: int,
               samples: int = 1) -> np.ndarray:
  """Returns [P, out, size] weights that resample P spans of an axis.

  Each output pixel is the mean of `samples` linear samples (an area resize
  rather than a pick, when shrinking).

  Args:
    start: [P] where each span starts, in pixels.
    length: [P] each span's length, in pixels: it is [start, start + length).
    size: the axis' length in pixels.
    out: the pixels each span is resampled to.
    samples: linear samples per output pixel.
  """
  steps = (np.arange(out * samples, dtype=np.float32) + 0.5) / (out * samples)
  taken = linear(start[:, None] + length[:, None] * steps - 0.5,
                 size).reshape(len(start), out, samples, size)
  # Added in place: half the time of a reduction over the samples' axis.
  result = taken[:, :, 0].copy()
  for sample in range(1, samples):
    result += taken[:, :, sample]
  if samples > 1:
    result *= np.float32(1 / samples)
  return result


def framed(grey: np.ndarray, content=None) -> np.ndarray:
  """Returns float32 [N, THUMB, THUMB]: each image in its frame.

  Args:
    grey: float32 [N, H, W] grey images.
    content: their _weights if at hand; None computes them.
  """
  _, height, width = grey.shape
  cy, cx, sy, sx = moments(grey, content)
  size = image_signatures.THUMB
  rows = resampling(cy - SPAN * sy, 2 * SPAN * sy, height, size, samples=2)
  columns = resampling(cx - SPAN * sx, 2 * SPAN * sx, width, size, samples=2)
  return (rows @ grey) @ columns.transpose(0, 2, 1)


def details(images: np.ndarray) -> np.ndarray:
  """Returns uint8 [N, h * w * C]: uint8 [N, H, W, C] images at
  detail_shape, by area."""
  count, height, width, channels = images.shape
  small = detail_shape(height, width)
  if small == (height, width):
    return np.ascontiguousarray(images).reshape(count, -1)
  result = np.empty((count, *small, channels), np.uint8)
  for channel in range(channels):
    result[..., channel] = np.rint(image_signatures.resize(
        images[..., channel].astype(np.float32), *small)).clip(0, 255)
  return result.reshape(count, -1)


def grey_details(detail: np.ndarray, shape: Tuple[int, int, int]
                 ) -> np.ndarray:
  """Returns float32 [N, h, w]: uint8 [N, h * w * C] details in grey;
  `shape` is (h, w, C)."""
  return image_signatures.grey(detail.reshape(-1, *shape))


def _resize(size: int, out: int, resampler=Image.Resampling.BILINEAR
            ) -> np.ndarray:
  """[out, size] float32: Pillow's resize of an axis of `size` pixels to
  `out`, as a matrix (its response to each pixel alone, unrounded)."""
  if out == size:
    return np.eye(size, dtype=np.float32)
  impulses = Image.fromarray(np.eye(size, dtype=np.float32), 'F')
  return np.asarray(impulses.resize((out, size), resampler)).T.copy()


def _axis_sizes(size: int, longest: int, out: int) -> Tuple[int, list]:
  """An axis of `size` pixels (the image's longest side `longest`): its
  size at `out` pixels for the longest side, and the sizes it may have
  been saved at, one for each whole size of the longest side."""
  smaller = range(max(2, round(longest * _SHRINKS[0])),
                  min(longest - 1, round(longest * _SHRINKS[1])) + 1)
  return (max(1, round(size * min(1.0, out / longest))),
          [max(1, round(size * small / longest)) for small in smaller])


@functools.lru_cache(maxsize=None)
def _shrinks(size: int, longest: int, out: int
             ) -> Tuple[np.ndarray, np.ndarray]:
  """The axis of an image saved smaller and enlarged again, by each of
  _RESAMPLERS, then resized to `out` pixels for the longest side; and the
  axis only resized: float32 [S, o, size] and [o, size]."""
  out, smaller = _axis_sizes(size, longest, out)
  down = _resize(size, out)
  return np.stack([down @ _resize(small, size, resampler) @
                   _resize(size, small, resampler)
                   for resampler in _RESAMPLERS for small in smaller]), down


def _normalised(values: np.ndarray) -> np.ndarray:
  flat = values.reshape(*values.shape[:-2],
                        values.shape[-2] * values.shape[-1])
  flat = flat - flat.mean(axis=-1, keepdims=True)
  return flat / np.maximum(
      np.sqrt((flat * flat).mean(axis=-1, keepdims=True)), 1e-3)


def _one_way(a: np.ndarray, b: np.ndarray, moments_a, moments_b
             ) -> np.ndarray:
  """The largest pixel difference of B and A warped onto B, best of the
  refinements, in standard deviations; [P].

  Only pairs where B can be cut from A are warped, and only those within
  REFINE_BELOW by their frames alone are refined: rows first with the
  columns as the frames put them, then the columns (18 warps, not 81).
  """
  _, height, width = a.shape
  result = np.full(len(a), np.inf, np.float32)
  inside = np.ones(len(a), bool)
  for axis_number, size in ((0, height), (1, width)):
    inside &= _cut_from(moments_a, moments_b, axis_number, size)

  def warps(axis_number, size, pick, refinements=True):
    # [P, R, size, size]: B's rows (or columns) sampled from A, R refinements.
    centre_a, spread_a = (moments_a[axis_number][pick],
                          moments_a[axis_number + 2][pick])
    centre_b, spread_b = (moments_b[axis_number][pick],
                          moments_b[axis_number + 2][pick])
    stretches, shifts = ((_STRETCHES, _SHIFTS) if refinements else
                         ((0.0,), (0.0,)))
    grid = np.arange(size, dtype=np.float32) + 0.5
    scale = (spread_a / spread_b)[:, None] * (
        1 + np.repeat(np.float32(stretches), len(shifts)))[None]
    shift = np.tile(np.float32(shifts), len(stretches))[None, :, None]
    positions = centre_a[:, None, None] + (
        grid - centre_b[:, None, None]) * scale[..., None] + shift
    return linear(positions - 0.5, size)

  pick = np.flatnonzero(inside)
  rows, columns = warps(0, height, pick, False), warps(1, width, pick, False)
  warped = rows[:, 0] @ a[pick] @ columns[:, 0].transpose(0, 2, 1)
  result[pick] = np.abs(_normalised(warped) - _normalised(b[pick])).max(-1)
  pick = pick[result[pick] < REFINE_BELOW]
  if not len(pick):
    return result
  target = _normalised(b[pick])[:, None]
  rows, columns = warps(0, height, pick), warps(1, width, pick)
  plain = len(_STRETCHES) * len(_SHIFTS) // 2  # No stretch, no shift.
  by_rows = rows @ (a[pick] @ columns[:, plain].transpose(0, 2, 1))[:, None]
  best_row = np.abs(_normalised(by_rows) - target).max(axis=-1).argmin(axis=1)
  picked = np.take_along_axis(rows, best_row[:, None, None, None], 1)
  warped = (picked @ a[pick][:, None]) @ columns.transpose(0, 1, 3, 2)
  result[pick] = np.abs(_normalised(warped) - target).max(axis=-1).min(axis=1)
  return result


def _cut_from(moments_a, moments_b, axis_number: int, size: int
              ) -> np.ndarray:
  """Whether B's frame, warped onto A, lies within A along one axis: B can
  then be a part of A, enlarged. [P] bool."""
  centre_a, spread_a = moments_a[axis_number], moments_a[axis_number + 2]
  centre_b, spread_b = moments_b[axis_number], moments_b[axis_number + 2]
  scale = spread_a / spread_b
  low = centre_a - centre_b * scale
  high = centre_a + (size - centre_b) * scale
  return ((low >= -MAX_OUTSIDE) & (high <= size + MAX_OUTSIDE) &
          (scale <= 1 + _STRETCHES[-1]))


def _same_frame(moments_a, moments_b) -> np.ndarray:
  """Whether two images' frames agree within a pixel and a tenth of their
  spread: bool [P]."""
  same = np.ones(len(moments_a[0]), bool)
  for axis_number in (0, 1):
    spread = np.maximum(moments_a[axis_number + 2], moments_b[axis_number + 2])
    same &= np.abs(moments_a[axis_number] - moments_b[axis_number]) <= 1.0
    same &= np.abs(moments_a[axis_number + 2] - moments_b[axis_number + 2]
                   ) <= 0.1 * spread
  return same


def _shrunk(a: np.ndarray, b: np.ndarray, out: int) -> np.ndarray:
  """The largest pixel difference of B and A saved smaller and enlarged
  again, best of the sizes and resamplers, in B's standard deviations, both
  resized to `out` pixels for the longest side; [P].

  Below full size, A is only centred and scaled as B (saving smaller and
  enlarging again keeps the contrast): cheaper, and a little stricter.
  """
  _, height, width = a.shape
  rows, down_rows = _shrinks(height, max(height, width), out)
  columns, down_columns = _shrinks(width, max(height, width), out)
  target = down_rows @ b @ down_columns.T
  centre = target.mean(axis=(1, 2), keepdims=True)
  spread = np.maximum(target.std(axis=(1, 2), keepdims=True), 1e-3)
  coarse = out < max(height, width)
  a = (a - a.mean(axis=(1, 2), keepdims=True)) / spread if coarse else a
  target = ((target - centre) / spread)[:, None]
  count, out_columns = len(rows), columns.shape[1]
  # Every shrink at once, a block of pairs at a time: the columns by one
  # product, then the rows.
  by_columns = columns.transpose(2, 0, 1).reshape(width, -1)
  step = max(1, _SHRUNK_BLOCK // (count * height * out_columns))
  result = np.empty(len(a), np.float32)
  for start in range(0, len(a), step):
    part = a[start:start + step]
    blurred = rows @ (part.reshape(-1, width) @ by_columns).reshape(
        len(part), height, count, out_columns).transpose(0, 2, 1, 3)
    if not coarse:
      blurred = _normalised(blurred).reshape(blurred.shape)
    blurred -= target[start:start + step]
    result[start:start + step] = np.abs(blurred, out=blurred).reshape(
        len(part), count, -1).max(-1).min(-1)
  return result


def differences(a: np.ndarray, b: np.ndarray
                ) -> Tuple[np.ndarray, np.ndarray]:
  """Returns how far each pair of details is from a copy cropped or shrunk.

  Either image of a pair may be the copy.

  Args:
    a: float32 [P, h, w] grey details (grey_details), one of each pair.
    b: the other of each pair, the same.

  Returns:
    float32 [P] twice, the largest pixel difference in standard deviations:
    after warping one onto the other by their frames (a crop or a resize),
    and after blurring one as saving it smaller and enlarging it again does.
  """
  if not len(a):
    return np.zeros(0, np.float32), np.zeros(0, np.float32)
  moments_a, moments_b = moments(a), moments(b)
  shrunk = np.full(len(a), np.inf, np.float32)
  if min(a.shape[1:]) >= 8:  # Smaller images have no detail to lose.
    # Saving smaller and enlarging again blurs, but moves and scales
    # nothing: only pairs whose frames agree are compared so. Either may be
    # the copy: enlarging by a sharp resampler can leave it the sharper.
    pick = np.flatnonzero(_same_frame(moments_a, moments_b))
    for out in sorted({min(_COARSE, max(a.shape[1:])), max(a.shape[1:])}):
      shrunk[pick] = np.minimum(_shrunk(a[pick], b[pick], out),
                                _shrunk(b[pick], a[pick], out))
      pick = pick[shrunk[pick] < COARSE_BELOW]
  return (np.minimum(_one_way(a, b, moments_a, moments_b),
                     _one_way(b, a, moments_b, moments_a)), shrunk)


class Frames(NamedTuple):
  """What finds the cropped and rescaled copies of N images."""
  phash: np.ndarray      # uint64: the perceptual hash of the framed image
  thumbnail: np.ndarray  # int8 [N, THUMB * THUMB]: the framed thumbnail
  order_key: np.ndarray  # float16 [N, BANDS]: image_signatures.order_keys
  detail: np.ndarray     # uint8 [N, h * w * C]: the image, small
  framed: np.ndarray     # bool: on_background, so it has a frame


def frames(images: np.ndarray) -> Frames:
  """Returns the Frames of uint8 [N, H, W, C] images."""
  detail = details(images)
  # The frame is found on the detail: no finer than it needs to be.
  shape = (*detail_shape(*images.shape[1:3]), images.shape[3])
  grey = grey_details(detail, shape)
  weights = _weights(grey, detail.reshape(-1, *shape[:2]) if shape[2] == 1
                     else None)
  small = framed(grey, weights)
  thumbs = image_signatures.thumbnails(small)
  return Frames(image_signatures.perceptual_hashes(small), thumbs,
                image_signatures.order_keys(thumbs), detail,
                on_background(weights))
