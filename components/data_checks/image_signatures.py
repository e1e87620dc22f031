"""Compact per-image signatures, computed on batches of images at once.

A pixel digest, a perceptual hash, a normalised thumbnail with the keys
that order it among its look-alikes, and the scores issues.py judges.
Why and how: docs/data-checks.md.
"""

import functools
import hashlib
from typing import NamedTuple

import numpy as np
from scipy import fft

HASH_SIZE = 8
HASH_INPUT = 32
THUMB = 16
THUMB_SCALE = 16
# The perceptual hash's bands (matching.py), each with an order key of its
# own: the smoothed thumbnail projected on a fixed random direction.
BANDS = 4
ORDER_KEY_SMOOTHING = 2  # Thumbnail pixels a side averaged into one.
ORDER_KEY_SEED = 0
# Brightness percentiles of an image (of 0..255): its dark and bright ends.
LOW_PERCENTILE, HIGH_PERCENTILE = 1, 99
SCORE_FIELDS = ('mean', 'low', 'high', 'spread', 'sharpness')
SCORE_DTYPE = np.dtype([(name, np.float32) for name in SCORE_FIELDS])
# Sharpness is measured on images at most this size (area-resized), so a
# large photo costs no more than a small one.
SHARPNESS_SIZE = 64


@functools.lru_cache(maxsize=None)
def area_matrix(source: int, target: int) -> np.ndarray:
  """Returns [target, source] weights of an area resize.

  Each target pixel is the mean of the source pixels it covers, or the
  nearest pixel when `target` > `source`.
  """
  edges = np.linspace(0, source, target + 1)
  weights = np.zeros((target, source), np.float32)
  for t in range(target):
    low, high = edges[t], edges[t + 1]
    for s in range(int(np.floor(low)), min(int(np.ceil(high)), source)):
      weights[t, s] = min(high, s + 1) - max(low, s)
  return weights / weights.sum(axis=1, keepdims=True)


def grey(images: np.ndarray) -> np.ndarray:
  """Converts uint8 [N, H, W, C] to float32 [N, H, W] luma (ITU-R 601)."""
  if images.shape[-1] == 1:
    return images[..., 0].astype(np.float32)
  # Channel by channel: a fifth of the time of a matrix product with [3].
  result = images[..., 0] * np.float32(0.299)
  result += images[..., 1] * np.float32(0.587)
  result += images[..., 2] * np.float32(0.114)
  return result


def resize(images: np.ndarray, height: int, width: int) -> np.ndarray:
  """Resizes float32 [N, H, W] to [N, height, width] by area weights.

  Args:
    images: float32 [N, H, W].
    height: the rows wanted; more than H repeats the nearest pixel.
    width: the columns wanted, likewise.
  """
  rows = area_matrix(images.shape[1], height)
  columns = area_matrix(images.shape[2], width)
  return rows @ images @ columns.T


@functools.lru_cache(maxsize=None)
def _low_frequencies(source: int) -> np.ndarray:
  """[HASH_SIZE, source]: area-resize to HASH_INPUT, then the first
  HASH_SIZE rows of the DCT-II (orthonormal), as one matrix."""
  dct = fft.dct(np.eye(HASH_INPUT, dtype=np.float64), norm='ortho', axis=0)
  return (dct[:HASH_SIZE] @ area_matrix(source, HASH_INPUT)).astype(
      np.float32)


def perceptual_hashes(grey_images: np.ndarray) -> np.ndarray:
  """Returns the uint64 [N] DCT hashes of float32 [N, H, W] images."""
  rows = _low_frequencies(grey_images.shape[1])
  columns = _low_frequencies(grey_images.shape[2])
  low = (rows @ grey_images @ columns.T).reshape(len(grey_images), -1)
  bits = low > np.median(low, axis=1, keepdims=True)
  return pack_bits(bits)


def pack_bits(bits: np.ndarray) -> np.ndarray:
  """Packs bool [N, 64] into uint64 [N], bit 0 first."""
  return np.packbits(bits, axis=1, bitorder='little').view('<u8')[:, 0]


@functools.lru_cache(maxsize=None)
def _order_directions() -> np.ndarray:
  """[THUMB * THUMB, BANDS]: unit random directions, each constant over
  ORDER_KEY_SMOOTHING x ORDER_KEY_SMOOTHING blocks of the thumbnail."""
  side = THUMB // ORDER_KEY_SMOOTHING
  coarse = np.random.default_rng(ORDER_KEY_SEED).standard_normal(
      (side, side, BANDS))
  fine = np.repeat(np.repeat(coarse, ORDER_KEY_SMOOTHING, axis=0),
                   ORDER_KEY_SMOOTHING, axis=1).reshape(-1, BANDS)
  return (fine / np.linalg.norm(fine, axis=0)).astype(np.float32)


def order_keys(thumbs: np.ndarray) -> np.ndarray:
  """Returns the float16 [N, BANDS] order keys of int8 thumbnails.

  Each key is a projection of the thumbnail, smoothed: near copies get
  near keys, and a small shift of the content moves them little.
  """
  return (thumbs.astype(np.float32) @ _order_directions()).astype(np.float16)


def digests(images: np.ndarray) -> np.ndarray:
  """Returns 8 bytes of BLAKE2b of each uint8 [N, ...] image, as uint64 [N]."""
  flat = np.ascontiguousarray(images).reshape(len(images), -1)
  return np.frombuffer(b''.join(
      hashlib.blake2b(row, digest_size=8).digest() for row in flat),
                       '<u8').copy()


def thumbnails(small: np.ndarray) -> np.ndarray:
  """Normalises float32 [N, THUMB, THUMB] to int8 [N, THUMB * THUMB]."""
  values = small.reshape(len(small), -1)
  values = values - values.mean(axis=1, keepdims=True)
  std = np.sqrt((values * values).mean(axis=1, keepdims=True))
  values *= THUMB_SCALE / np.maximum(std, 1e-3)
  return np.rint(values).clip(-127, 127).astype(np.int8)


def scores(grey_images: np.ndarray, small: np.ndarray) -> np.ndarray:
  """Returns the SCORE_DTYPE [N] scores of images and their thumbnails.

  The brightness percentiles are the thumbnail's: a few odd pixels do not
  make an image dark or bright. A partition finds them, where a sort costs
  ten times as much.
  Sharpness is the variance of the Laplacian over the variance of the
  pixels, so that contrast alone does not make an image look sharp.

  Args:
    grey_images: float32 [N, H, W].
    small: float32 [N, THUMB, THUMB], their thumbnails.
  """
  n, height, width = grey_images.shape
  result = np.empty(n, SCORE_DTYPE)
  small = small.reshape(n, -1)
  result['mean'] = small.mean(axis=1)
  last = small.shape[1] - 1
  low, high = (round(last * LOW_PERCENTILE / 100),
               round(last * HIGH_PERCENTILE / 100))
  ordered = np.partition(small, (low, high), axis=1)
  result['low'] = ordered[:, low]
  result['high'] = ordered[:, high]
  result['spread'] = result['high'] - result['low']
  if max(height, width) > SHARPNESS_SIZE:
    scale = SHARPNESS_SIZE / max(height, width)
    grey_images = resize(grey_images, max(1, round(height * scale)),
                         max(1, round(width * scale)))
  result['sharpness'] = sharpness(grey_images)
  return result


def sharpness(grey_images: np.ndarray) -> np.ndarray:
  """[N]: the variance of the Laplacian of float32 [N, H, W] images over
  the variance of their pixels."""
  return (_variances(_laplacian(grey_images)) /
          np.maximum(_variances(grey_images), 1.0))


def _variances(values: np.ndarray) -> np.ndarray:
  """The variance of each of [N, ...], from its sums: no [N, ...]
  temporary of the deviations."""
  flat = values.reshape(len(values), int(np.prod(values.shape[1:])))
  mean = flat.mean(axis=1)
  return np.maximum(np.einsum('ij,ij->i', flat, flat) / flat.shape[1]
                    - mean * mean, 0.0)


def _laplacian(grey_images: np.ndarray) -> np.ndarray:
  """The 4-neighbour Laplacian of the inner pixels of each of [N, H, W]."""
  g = grey_images
  if min(g.shape[1:]) < 3:
    return np.zeros((len(g), 1), np.float32)
  # In place, into one array: no temporary per term.
  result = g[:, :-2, 1:-1] + g[:, 2:, 1:-1]
  result += g[:, 1:-1, :-2]
  result += g[:, 1:-1, 2:]
  result -= 4 * g[:, 1:-1, 1:-1]
  return result


class Signatures(NamedTuple):
  """The signatures of N images, as arrays of one entry per image."""
  digest: np.ndarray     # uint64
  phash: np.ndarray      # uint64
  thumbnail: np.ndarray  # int8 [N, THUMB * THUMB]
  order_key: np.ndarray  # float16 [N, BANDS]
  scores: np.ndarray     # SCORE_DTYPE


def compute(images: np.ndarray) -> Signatures:
  """Returns the Signatures of uint8 [N, H, W, C] images."""
  grey_images = grey(images)
  small = resize(grey_images, THUMB, THUMB)
  thumbs = thumbnails(small)
  return Signatures(digests(images), perceptual_hashes(grey_images), thumbs,
                    order_keys(thumbs), scores(grey_images, small))
