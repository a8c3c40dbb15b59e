"""Finding set bits by rank in packed signatures (numba)."""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _popcount64(v):
    v = v - ((v >> np.uint64(1)) & np.uint64(0x5555555555555555))
    v = (v & np.uint64(0x3333333333333333)) + ((v >> np.uint64(2)) & np.uint64(0x3333333333333333))
    v = (v + (v >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((v * np.uint64(0x0101010101010101)) >> np.uint64(56))


@numba.njit(parallel=True, cache=True)
def _nth_set_bits(signatures, ranks, n_ranks, out):
    for i in numba.prange(signatures.shape[0]):
        for r in range(n_ranks[i]):
            target = ranks[i, r]
            seen = 0
            for w in range(signatures.shape[1]):
                word = signatures[i, w]
                c = _popcount64(word)
                if seen + c > target:
                    k = target - seen
                    for b in range(64):
                        if (word >> np.uint64(b)) & np.uint64(1):
                            if k == 0:
                                out[i, r] = w * 64 + b
                                break
                            k -= 1
                    break
                seen += c


def nth_set_bits(signatures: np.ndarray, ranks: np.ndarray, n_ranks: np.ndarray) -> np.ndarray:
    """Scene index of the ``ranks[i, r]``-th set bit (0-based) of row ``i``, for ``r < n_ranks[i]``.

    signatures: uint64 (n, n_words); ranks: int64 (n, m); n_ranks: int64 (n,).
    Returns int64 (n, m) (entries past ``n_ranks[i]`` are -1).
    """
    out = np.full(ranks.shape, -1, np.int64)
    _nth_set_bits(np.ascontiguousarray(signatures), np.ascontiguousarray(ranks, dtype=np.int64),
                  np.ascontiguousarray(n_ranks, dtype=np.int64), out)
    return out


@numba.njit(parallel=True, cache=True)
def _gather_bits(signatures, scene_ids, out):
    for i in numba.prange(signatures.shape[0]):
        for t in range(scene_ids.shape[0]):
            s = scene_ids[t]
            bit = (signatures[i, s >> 6] >> np.uint64(s & 63)) & np.uint64(1)
            out[i, t >> 6] |= bit << np.uint64(t & 63)


def gather_bits(signatures: np.ndarray, scene_ids: np.ndarray) -> np.ndarray:
    """Packed labels of every row of ``signatures`` on the given scenes.

    signatures: uint64 (n, n_words); scene_ids: int (T,) scene indices.
    Returns uint64 (n, ceil(T/64)); bit t of the result is bit ``scene_ids[t]`` of the row.
    """
    ids = np.ascontiguousarray(scene_ids, dtype=np.int64)
    out = np.zeros((len(signatures), (len(ids) + 63) // 64), np.uint64)
    _gather_bits(np.ascontiguousarray(signatures), ids, out)
    return out
