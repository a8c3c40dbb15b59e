"""Bootstrap resample means: the mean of each resample of a vector, without materialising the
resamples, summed in NumPy's order so that each mean is bit for bit ``x[idx].mean(axis=1)``.

NumPy sums a contiguous float64 row by pairwise summation: rows shorter than 8 one by one;
up to :data:`PAIRWISE_BLOCK` with eight interleaved accumulators; longer rows split in two at
half the length rounded down to a multiple of 8, each half summed the same way.  The mean is
that sum (added to the reduction's initial 0.0) divided by the row length.
:func:`resample_means` follows the same order over ``x[idx[r]]`` read in place, one resample
per thread, instead of gathering ``idx.size`` values first (a paired bootstrap of 5,000
episodes and 1,000 resamples gathers 40 MB per interval).
"""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["PAIRWISE_BLOCK", "pairwise_plan", "resample_means"]

#: The longest run NumPy's pairwise summation adds with its eight accumulators.
PAIRWISE_BLOCK = 128


@numba.njit(inline="always")
def _block_sum(x, idx, lo, n):
    """Σ x[idx[lo:lo+n]] as NumPy sums a run of at most :data:`PAIRWISE_BLOCK` (float64)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += x[idx[i]]
        return res
    r0, r1, r2, r3 = x[idx[lo]], x[idx[lo + 1]], x[idx[lo + 2]], x[idx[lo + 3]]
    r4, r5, r6, r7 = x[idx[lo + 4]], x[idx[lo + 5]], x[idx[lo + 6]], x[idx[lo + 7]]
    i = 8
    stop = n - n % 8
    while i < stop:
        j = lo + i
        r0 += x[idx[j]]
        r1 += x[idx[j + 1]]
        r2 += x[idx[j + 2]]
        r3 += x[idx[j + 3]]
        r4 += x[idx[j + 4]]
        r5 += x[idx[j + 5]]
        r6 += x[idx[j + 6]]
        r7 += x[idx[j + 7]]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += x[idx[lo + i]]
        i += 1
    return res


def pairwise_plan(n: int) -> np.ndarray:
    """NumPy's pairwise summation of ``n`` values as a post-order program, int64 (steps, 2):
    ``(lo, length)`` pushes the sum of a block of at most :data:`PAIRWISE_BLOCK` values,
    ``(-1, 0)`` replaces the top two sums by their sum (the left one first).  (A recursive
    kernel would say the same, but numba's cache does not load recursive functions safely.)"""
    steps = []

    def split(lo, length):
        if length <= PAIRWISE_BLOCK:
            steps.append((lo, length))
            return
        half = length // 2
        half -= half % 8
        split(lo, half)
        split(lo + half, length - half)
        steps.append((-1, 0))

    split(0, int(n))
    return np.array(steps, np.int64).reshape(-1, 2)


@numba.njit(parallel=True, cache=True)
def _resample_means(x, idx, plan, out):
    """out[r] = mean of x[idx[r]]; a row with an index outside ``x`` gets NaN (and is not read)."""
    n = idx.shape[1]
    for r in numba.prange(idx.shape[0]):
        row = idx[r]
        inside = True
        for j in range(n):
            if row[j] < 0 or row[j] >= x.shape[0]:
                inside = False
        if not inside:
            out[r] = np.nan
            continue
        sums = np.empty(plan.shape[0])
        top = 0
        for p in range(plan.shape[0]):
            if plan[p, 0] >= 0:
                sums[top] = _block_sum(x, row, plan[p, 0], plan[p, 1])
                top += 1
            else:
                sums[top - 2] = sums[top - 2] + sums[top - 1]
                top -= 1
        out[r] = (0.0 + sums[0]) / n


def _read_only(a: np.ndarray) -> np.ndarray:
    """``a`` (C-contiguous) as a view that cannot be written: the kernel is compiled once for
    indices kept in memory and indices read from a file (read-only), not once for each.  What
    :func:`bayes_concepts.bits.read_only` does, kept here because the pure helpers do not import
    each other (the layers contract)."""
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def resample_means(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """float64 (k,): the mean of ``x[idx[r]]`` for each row ``r``, equal bit for bit to
    ``x[idx].mean(axis=1)``.  x: float64 (n,); idx: integers (k, m) indices into ``x`` (m >= 1;
    uint16, int32 or int64 are read as they are, other integer types as int64)."""
    x = np.ascontiguousarray(x, np.float64)
    idx = np.asarray(idx)
    if not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"resample_means needs integer indices, got dtype {idx.dtype}")
    if idx.dtype not in (np.uint16, np.int32, np.int64):
        idx = idx.astype(np.int64)
    idx = np.ascontiguousarray(idx)
    if idx.ndim != 2 or idx.shape[1] == 0:
        raise ValueError(f"resample_means needs int indices of shape (k, m) with m >= 1, got {idx.shape}")
    out = np.empty(idx.shape[0])
    _resample_means(_read_only(x), _read_only(idx), pairwise_plan(idx.shape[1]), out)
    if np.isnan(out).any() and ((idx < 0) | (idx >= len(x))).any():
        raise ValueError(f"resample_means: an index lies outside the {len(x)} values")
    return out
