"""Pairs of copies among many images, from their compact signatures.

Candidates by perceptual hash, verified on normalised thumbnails; rescaled
copies with alignment.py and windows.py. Why and how: docs/data-checks.md.
"""

import collections
import concurrent.futures
import dataclasses
import os
from typing import Callable, Iterable, Iterator, Tuple, TypeVar

import numpy as np

from components.data_checks import alignment
from components.data_checks import image_signatures
from components.data_checks import windows

BANDS = image_signatures.BANDS
# Each image is compared with the next WINDOW images of a band's order;
# the framed hashes' candidates each cost an alignment (alignment.py), so
# fewer of them.
WINDOW = 24
FRAMED_WINDOW = 16
MAX_HASH_BITS = 8
MAX_DIFFERENCE = 0.5
MAX_FRAMED_DIFFERENCE = 0.8
# The plain hashes' candidates for shrunk copies: blurred, their thumbnails
# differ more, plain and framed.
MAX_SHRUNK_PLAIN_DIFFERENCE = 1.5
MAX_SHRUNK_FRAMED_DIFFERENCE = 1.5
MAX_ALIGNED_DIFFERENCE = 0.5
MAX_SHRUNK_DIFFERENCE = 0.5
_ALIGN_BLOCK = 1024
_BLOCK = 1 << 16
# Images of a band's order read at once (candidates).
_RUN = 1 << 16
# The thumbnails' middle rows, compared first (compare).
_MIDDLE = slice(image_signatures.THUMB * (image_signatures.THUMB // 2 - 2),
                image_signatures.THUMB * (image_signatures.THUMB // 2 + 2))


_Item, _Result = TypeVar('_Item'), TypeVar('_Result')


def on_cores(function: Callable[[_Item], _Result], items: Iterable[_Item]
             ) -> Iterator[_Result]:
  """Yields `function` of each item, in order, computed on a thread per core.

  numpy leaves the GIL in the work these threads do. At most one item a
  core is in flight, so memory holds that many blocks, however many
  `items` yields.
  """
  threads = len(os.sched_getaffinity(0))
  with concurrent.futures.ThreadPoolExecutor(threads) as pool:
    pending = collections.deque()
    for item in items:
      pending.append(pool.submit(function, item))
      if len(pending) >= threads:
        yield pending.popleft().result()
    while pending:
      yield pending.popleft().result()


def popcount(values: np.ndarray) -> np.ndarray:
  """Counts the set bits of each uint64 (int64 [N])."""
  # Bits summed in pairs, then fours, then bytes, which one multiplication
  # adds into the top byte: a third of the time of a table of bytes.
  v = values - ((values >> np.uint64(1)) & np.uint64(0x5555555555555555))
  v = ((v & np.uint64(0x3333333333333333)) +
       ((v >> np.uint64(2)) & np.uint64(0x3333333333333333)))
  v = (v + (v >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
  return ((v * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(
      np.int64)


def _rotate(values: np.ndarray, bits: int) -> np.ndarray:
  if not bits:
    return values
  shift, back = np.uint64(bits), np.uint64(64 - bits)
  return (values >> shift) | (values << back)


def candidates(hashes: np.ndarray, order_keys: np.ndarray,
               usable: np.ndarray, window: int = WINDOW
               ) -> Iterator[Tuple[np.ndarray, np.ndarray, np.ndarray]]:
  """Yields blocks of pairs of `usable` images whose hashes are near.

  Each block is a run of one band's order: its images, and its pairs as
  positions in the run, so that a caller reads each image's thumbnail once
  a block rather than once a pair. A pair may come in several blocks.

  Args:
    hashes: uint64 [N] perceptual hashes; a pair shares one of BANDS bands
      and differs in at most MAX_HASH_BITS bits.
    order_keys: [N, BANDS] keys (image_signatures.order_keys), each of
      which orders the images of a band, so that the window's neighbours
      are alike.
    usable: bool [N], the images that may be paired.
    window: the images of a band's order each is compared with.

  Yields:
    (images, first, second): int64 indices of the run's images, and of the
    pairs' two images in it.
  """
  index = np.flatnonzero(usable)
  band_bits = 64 // BANDS
  lead = np.uint64(64 - band_bits)
  for band in range(BANDS):
    bands = _rotate(hashes[index], band * band_bits) >> lead
    order = index[np.lexsort((order_keys[index, band], bands))]
    for start in range(0, len(order), _RUN):
      images = order[start:start + _RUN + window]
      run_hashes = hashes[images]
      run_bands = _rotate(run_hashes, band * band_bits) >> lead
      starts = min(_RUN, len(images))
      firsts, seconds = [], []
      for step in range(1, min(window + 1, len(images))):
        count = min(starts, len(images) - step)
        same_band = run_bands[step:step + count] == run_bands[:count]
        near = popcount(run_hashes[step:step + count] ^ run_hashes[:count]
                        ) <= MAX_HASH_BITS
        keep = np.flatnonzero(same_band & near)
        firsts.append(keep)
        seconds.append(keep + step)
      if firsts:
        yield images, np.concatenate(firsts), np.concatenate(seconds)


def rows(array: np.ndarray, index: np.ndarray) -> np.ndarray:
  """Returns array[index], read in ascending order: a memmap's pages are
  read once each, in file order."""
  order = np.argsort(index, kind='stable')
  result = np.empty((len(index), *array.shape[1:]), array.dtype)
  result[order] = array[index[order]]
  return result


def _pair_keys(first: np.ndarray, second: np.ndarray, count: int
               ) -> np.ndarray:
  """Each pair as one int64, min * count + max: cheap to deduplicate."""
  return (np.minimum(first, second).astype(np.int64) * count +
          np.maximum(first, second))


def _unique_pairs(keys, count: int) -> Tuple[np.ndarray, np.ndarray]:
  keys = np.unique(np.concatenate(keys)) if keys else np.zeros(0, np.int64)
  return keys // count, keys % count


def compare(thumbs: np.ndarray, first: np.ndarray, second: np.ndarray,
            at_most: float = np.inf) -> np.ndarray:
  """Returns the largest pixel difference of each pair's thumbnails.

  The difference is in standard deviations, exact where it is below
  `at_most`. Given a bound, pairs are compared on the thumbnails' middle
  rows first, where the content is: most differ there by `at_most`
  already, and only the others are read whole.

  Args:
    thumbs: int8 [N, THUMB * THUMB] thumbnails (image_signatures.thumbnails);
      a memmap is fine, read a block at a time.
    first: [P] indices of one image of each pair.
    second: [P] indices of the other.
    at_most: above this, a difference may be any value as large.

  Returns:
    float32 [P].
  """
  bound = at_most * image_signatures.THUMB_SCALE
  difference = np.empty(len(first), np.float32)
  for start in range(0, len(first), _BLOCK):
    a, b = first[start:start + _BLOCK], second[start:start + _BLOCK]
    if np.isinf(bound):  # Every pair is read whole anyway.
      difference[start:start + _BLOCK] = _largest_differences(thumbs, a, b)
      continue
    found = _largest_differences(thumbs, a, b, _MIDDLE)
    whole = np.flatnonzero(found < bound)
    found[whole] = _largest_differences(thumbs, a[whole], b[whole])
    difference[start:start + _BLOCK] = found
  return difference / image_signatures.THUMB_SCALE


def _largest_differences(thumbs: np.ndarray, first: np.ndarray,
                         second: np.ndarray, columns=slice(None)
                         ) -> np.ndarray:
  """uint8 [P]: the largest difference of the pairs' thumbnails' `columns`."""
  # As uint8 (shifted by 128), |a - b| is max - min: no wider copy.
  a = thumbs[first, columns].view(np.uint8) ^ np.uint8(128)
  b = thumbs[second, columns].view(np.uint8) ^ np.uint8(128)
  larger = np.maximum(a, b)
  np.minimum(a, b, out=a)
  larger -= a
  return larger.max(axis=1)


def correlations(thumbs: np.ndarray, first: np.ndarray, second: np.ndarray
                 ) -> np.ndarray:
  """Returns the correlation of the thumbnails of each (verified) pair.

  Args:
    thumbs: int8 [N, THUMB * THUMB] thumbnails.
    first: [P] indices of one image of each pair.
    second: [P] indices of the other.

  Returns:
    float32 [P], from -1 to 1.
  """
  a = thumbs[first].astype(np.float32)
  b = thumbs[second].astype(np.float32)
  return (np.einsum('ij,ij->i', a, b) /
          np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1),
                     1e-6))


@dataclasses.dataclass(frozen=True)
class Pairs:
  """Verified copies, as indices into the signatures, and how alike they are."""
  first: np.ndarray
  second: np.ndarray
  hash_bits: np.ndarray
  difference: np.ndarray
  correlation: np.ndarray
  exact: np.ndarray
  rescaled: np.ndarray  # Found in their frames: cropped or rescaled.

  def __len__(self):
    return len(self.first)


@dataclasses.dataclass(frozen=True)
class Framed:
  """The Frames (alignment.py) of all images: hashes and flags in memory,
  the rest memmaps."""
  phash: np.ndarray
  order_key: np.ndarray
  thumbnail: np.ndarray
  detail: np.ndarray
  detail_shape: Tuple[int, int, int]  # (height, width, channels)
  framed: np.ndarray  # Whether each image has a frame: content on a background.
  split: np.ndarray  # Each image's split: rescaled copies are sought across.
  label: np.ndarray  # Each image's class: crops of photos are sought within.
  # Whether the images are larger than their details (photos): then they
  # are searched for crops by windows too (windows.py).
  reduced: bool = False


def find_copies(digests: np.ndarray, hashes: np.ndarray,
                order_keys: np.ndarray, thumbs: np.ndarray,
                usable: np.ndarray, framed: Framed = None) -> Pairs:
  """Finds the exact, near, and (given `framed`) rescaled copies.

  Exact copies have equal digests. Near copies, among `usable` images only,
  have near hashes and verified thumbnails. Rescaled copies are near in
  their frames. Each pair comes once, with first < second. Candidates are
  verified a block at a time, so only verified pairs are kept.

  Args:
    digests: uint64 [N] digests of the images' bytes.
    hashes: uint64 [N] perceptual hashes.
    order_keys: [N, BANDS] the candidates' order keys.
    thumbs: int8 [N, THUMB * THUMB] thumbnails; a memmap is fine.
    usable: bool [N], the images that may be near copies (not near blank).
    framed: the images' frames; None seeks no rescaled copies.
  """
  count = len(hashes)
  keys = [_pair_keys(*_exact_pairs(digests), count)]
  # The shrunk copies' candidates from these hashes, (pair keys, whether
  # loose): checked on the framed thumbnails after this pass, which reads
  # the plain ones, so that each memmap has the page cache to itself
  # (docs/data-checks.md, "What it costs").
  shrunk = []

  def verify(run):
    images, first, second = run
    return images, first, second, compare(
        rows(thumbs, images), first, second, MAX_SHRUNK_PLAIN_DIFFERENCE)
  for images, first, second, difference in on_cores(
      verify, candidates(hashes, order_keys, usable)):
    first, second = images[first], images[second]
    keep = difference < MAX_DIFFERENCE
    keys.append(_pair_keys(first[keep], second[keep], count))
    if framed is not None:  # A shrunk copy keeps its plain hash.
      first, second, difference = (
          first[~keep], second[~keep], difference[~keep])
      across = _across_framed(framed, first, second)
      shrunk.append((_pair_keys(first[across], second[across], count),
                     difference[across] < MAX_SHRUNK_PLAIN_DIFFERENCE))
  first, second = _unique_pairs(keys, count)
  difference = compare(thumbs, first, second)
  correlation = correlations(thumbs, first, second)
  rescaled = np.zeros(len(first), bool)
  if framed is not None:
    known = _pair_keys(first, second, count)
    more, aligned = _rescaled(framed, usable, known,
                              _shrunk_candidates(framed, shrunk))
    cut, cut_difference = _cut(framed, usable, np.r_[known, more])
    more, aligned = np.r_[more, cut], np.r_[aligned, cut_difference]
    first, second = np.r_[first, more // count], np.r_[second, more % count]
    rescaled = np.r_[rescaled, np.ones(len(more), bool)]
    difference = np.r_[difference, aligned]
    # How alike they are in their frames.
    correlation = np.r_[correlation, correlations(
        framed.thumbnail, more // count, more % count)]
  exact = digests[first] == digests[second]
  return Pairs(first, second,
               popcount(hashes[first] ^ hashes[second]).astype(np.int8),
               np.where(exact, 0.0, difference).astype(np.float32),
               np.where(exact, 1.0, correlation).astype(np.float32),
               exact, rescaled)


def _across_framed(framed: Framed, first: np.ndarray, second: np.ndarray
                   ) -> np.ndarray:
  """bool [P]: whether each pair is across splits and both its images
  framed, from their flags alone (no thumbnail read)."""
  return ((framed.split[first] != framed.split[second]) &
          framed.framed[first] & framed.framed[second])


def _framed_near(framed: Framed, first: np.ndarray, second: np.ndarray,
                 most) -> np.ndarray:
  """The pair keys of the pairs whose framed thumbnails differ by less
  than `most` (a bound, or one a pair)."""
  keep = compare(framed.thumbnail, first, second, np.max(most, initial=0)
                 ) < most
  return _pair_keys(first[keep], second[keep], len(framed.phash))


def _shrunk_candidates(framed: Framed, shrunk: list) -> list:
  """The pair keys of the plain pass's (pair keys, loose) candidates,
  emptying `shrunk` as it goes, whose framed thumbnails differ as a
  rescaled copy's may."""
  found, count = [], len(framed.phash)
  while shrunk:
    pairs, loose = shrunk.pop()
    # Cropped copies as those of the framed hashes; shrunk ones looser.
    found.append(_framed_near(
        framed, pairs // count, pairs % count,
        np.where(loose, MAX_SHRUNK_FRAMED_DIFFERENCE, MAX_FRAMED_DIFFERENCE)))
  return found


def _framed_candidates(framed: Framed, first: np.ndarray, second: np.ndarray
                       ) -> np.ndarray:
  """The pair keys of the candidates across splits, both framed, whose
  framed thumbnails differ by less than MAX_FRAMED_DIFFERENCE."""
  keep = _across_framed(framed, first, second)
  return _framed_near(framed, first[keep], second[keep],
                      MAX_FRAMED_DIFFERENCE)


def _rescaled(framed: Framed, usable: np.ndarray, known: np.ndarray,
              keys: list) -> Tuple[np.ndarray, np.ndarray]:
  """Returns (pair keys, aligned differences) of the rescaled copies that
  are not among the `known` pair keys.

  Candidates come from the framed hashes, and `keys` from the plain ones.
  """
  count = len(framed.phash)
  keys.extend(on_cores(
      lambda run: _framed_candidates(framed, run[0][run[1]], run[0][run[2]]),
      candidates(framed.phash, framed.order_key, usable & framed.framed,
                 FRAMED_WINDOW)))
  keys = np.unique(np.concatenate(keys)) if keys else np.zeros(0, np.int64)
  keys = keys[~np.isin(keys, known)]
  aligned, shrunk = (np.empty(len(keys), np.float32) for _ in range(2))
  starts = range(0, len(keys), _ALIGN_BLOCK)

  def align(start: int) -> Tuple[np.ndarray, np.ndarray]:
    block = keys[start:start + _ALIGN_BLOCK]
    return alignment.differences(_grey(framed, block // count),
                                 _grey(framed, block % count))
  for start, found in zip(starts, on_cores(align, starts)):
    aligned[start:start + _ALIGN_BLOCK], shrunk[start:start + _ALIGN_BLOCK] = (
        found)
  keep = ((aligned < MAX_ALIGNED_DIFFERENCE) |
          (shrunk < MAX_SHRUNK_DIFFERENCE))
  return keys[keep], np.minimum(aligned, shrunk)[keep]


def _grey(framed: Framed, index: np.ndarray) -> np.ndarray:
  """float32 [P, h, w]: the grey details of some images."""
  return alignment.grey_details(framed.detail[index], framed.detail_shape)


def _cut(framed: Framed, usable: np.ndarray, known: np.ndarray
         ) -> Tuple[np.ndarray, np.ndarray]:
  """Returns (pair keys, differences) of the photos cut from one of their
  class in another split (windows.py), not among the `known` pair keys."""
  count = len(framed.phash)
  if not framed.reduced or not usable.any():
    return np.zeros(0, np.int64), np.zeros(0, np.float32)
  pick = np.flatnonzero(usable)
  # Within each class: the search costs pairs of images.
  found = [windows.candidates(lambda index: _grey(framed, index),
                              framed.split, pick[framed.label[pick] == label])
           for label in np.unique(framed.label[pick])]
  copy, original, start = (np.concatenate(parts) for parts in zip(*found))
  keys = _pair_keys(copy, original, count)
  new = ~np.isin(keys, known)
  copy, original, start, keys = copy[new], original[new], start[new], keys[new]
  difference = np.empty(len(keys), np.float32)
  for begin in range(0, len(keys), _ALIGN_BLOCK):
    block = slice(begin, begin + _ALIGN_BLOCK)
    difference[block] = windows.verify(
        *(framed.detail[index].reshape(-1, *framed.detail_shape).astype(
            np.float32) for index in (original[block], copy[block])),
        start[block])
  keep = difference < windows.MAX_CROP_DIFFERENCE
  keys, difference = keys[keep], difference[keep]
  order = np.lexsort((difference, keys))  # Each pair once, at its least.
  keys, difference = keys[order], difference[order]
  first = np.r_[True, keys[1:] != keys[:-1]][:len(keys)]
  return keys[first], difference[first]


def _exact_pairs(digests: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
  """Each image with an equal digest paired with the first of its group."""
  order = np.argsort(digests, kind='stable')
  ordered = digests[order]
  starts = np.r_[True, ordered[1:] != ordered[:-1]]
  group_first = order[np.maximum.accumulate(
      np.where(starts, np.arange(len(order)), 0))]
  copy = ~starts
  first, second = group_first[copy], order[copy]
  return np.minimum(first, second), np.maximum(first, second)
