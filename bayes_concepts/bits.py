"""Packed bitsets: the one module for bit helpers (numba kernels and numpy packing).

A bitset of n items is ``ceil(n/64)`` ``uint64`` words, little-endian: bit j of word w is
item 64·w + j (a concept's signature over scenes, a scene's set of concepts, ...).

* packing: :func:`pack_bits`, :func:`unpack_bits`, :func:`n_words_for`;
* in kernels: :func:`popcount64`, :func:`has_bit`, :func:`pop_lowest_bit` (iterate the set
  bits of a word: ``while word: b, word = pop_lowest_bit(word)``);
* by rank: :func:`nth_set_bits`, :func:`block_counts` + :func:`select_bit`;
* reshaping: :func:`gather_bits` (labels on a subset of items), :func:`transpose_bits`,
  :func:`set_bit_positions` (each row's set bits as a CSR list);
* kernel inputs: :func:`read_only` (one compiled kernel for arrays in memory and mapped files).
"""
from __future__ import annotations

import numba
import numpy as np


def read_only(array) -> np.ndarray:
    """``array`` as a C-contiguous view that cannot be written (no copy when it is C-contiguous).

    The kernels are passed every array of a space that they only read this way.  numba compiles
    a kernel once per type of its arguments, and an array that cannot be written -- a file
    mapped read-only -- is a type of its own: a space built in memory, one loaded and one mapped
    from disk would otherwise each compile the same kernel (about 20 s for the episode sampler
    and 35 s for the oracles' kernel on a 2-core machine) and keep one copy of it per kind in
    numba's cache.
    """
    a = np.ascontiguousarray(array)
    if not a.flags.writeable:
        return a
    view = a.view()
    view.flags.writeable = False
    return view


def n_words_for(n_scenes: int) -> int:
    """Number of ``uint64`` words holding ``n_scenes`` bits: ``ceil(n_scenes / 64)``."""
    return (int(n_scenes) + 63) // 64


def pack_bits(mask) -> np.ndarray:
    """Pack booleans along the last axis into ``uint64`` words.

    ``mask``: bool array of shape ``(..., n_scenes)`` (typically
    ``(rows, n_scenes)``; other dtypes are converted with ``!= 0``).
    Returns a C-contiguous ``uint64`` array of shape ``(..., ceil(n_scenes/64))``:
    bit ``j`` of word ``w`` is ``mask[..., 64*w + j]``; padding bits are 0.
    """
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        mask = mask != 0
    if mask.ndim == 0:
        raise ValueError("pack_bits needs an array with at least one axis")
    n = mask.shape[-1]
    lead = mask.shape[:-1]
    n_words = n_words_for(n)
    if n_words == 0:
        return np.zeros(lead + (0,), dtype=np.uint64)
    packed = np.packbits(mask, axis=-1, bitorder="little")
    if packed.shape[-1] != 8 * n_words:
        padded = np.zeros(lead + (8 * n_words,), dtype=np.uint8)
        padded[..., :packed.shape[-1]] = packed
        packed = padded
    words = np.ascontiguousarray(packed).view("<u8")
    return words.astype(np.uint64, copy=False)  # no copy on little-endian hosts


def unpack_bits(words, n_scenes: int) -> np.ndarray:
    """Inverse of :func:`pack_bits`.

    ``words``: ``uint64`` array of shape ``(..., n_words)`` with
    ``n_words == ceil(n_scenes / 64)``.  Returns a bool array of shape
    ``(..., n_scenes)``; padding bits are ignored.
    """
    words = np.asarray(words)
    if words.dtype != np.uint64:
        raise ValueError(f"unpack_bits needs uint64 words, got dtype {words.dtype}")
    if words.ndim == 0:
        raise ValueError("unpack_bits needs an array with at least one axis")
    n_scenes = int(n_scenes)
    if words.shape[-1] != n_words_for(n_scenes):
        raise ValueError(f"{words.shape[-1]} words cannot hold exactly {n_scenes} bits "
                         f"(expected {n_words_for(n_scenes)} words)")
    lead = words.shape[:-1]
    if n_scenes == 0:
        return np.zeros(lead + (0,), dtype=bool)
    le = np.ascontiguousarray(words.astype("<u8", copy=False))
    as_bytes = le.view(np.uint8)
    bits = np.unpackbits(as_bytes, axis=-1, count=n_scenes, bitorder="little")
    return bits.view(bool)


@numba.njit(cache=True)
def popcount64(v):
    v = v - ((v >> np.uint64(1)) & np.uint64(0x5555555555555555))
    v = (v & np.uint64(0x3333333333333333)) + ((v >> np.uint64(2)) & np.uint64(0x3333333333333333))
    v = (v + (v >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((v * np.uint64(0x0101010101010101)) >> np.uint64(56))


@numba.njit(inline="always")
def count_bits(row):
    """The number of set bits of the packed bitset ``row`` (uint64 (n_words,)), an int64 (never a
    literal: a counter that starts as the constant 0 makes numba compile its callees twice)."""
    n = np.int64(0)
    for w in range(row.shape[0]):
        n += popcount64(row[w])
    return n


@numba.njit(inline="always")
def has_bit(row, i):
    """Bit ``i`` of the packed bitset ``row`` (uint64 (n_words,)), as a uint64 0 or 1."""
    return (row[i >> 6] >> np.uint64(i & 63)) & np.uint64(1)


@numba.njit(inline="always", cache=True)
def nonzero_words(bits, out):
    """Write the indexes of the non-zero words of the packed bitset ``bits`` (uint64 (n_words,)),
    increasing, to the front of ``out`` (int64, at least as long); returns how many there are."""
    n = 0
    for w in range(bits.shape[0]):
        if bits[w]:
            out[n] = w
            n += 1
    return n


@numba.njit(inline="always")
def pop_lowest_bit(word):
    """(index of the lowest set bit of ``word``, ``word`` with that bit cleared); ``word`` != 0."""
    low = word & (~word + np.uint64(1))
    return popcount64(low - np.uint64(1)), word ^ low




@numba.njit(inline="always")
def _select_in_words(row, w_start, w_end, seen, rank):
    """Index of the ``rank``-th set bit of ``row`` (0-based, counted from bit 0) looking only at
    words ``w_start:w_end``, given ``seen`` set bits before ``w_start``; -1 if not there."""
    for w in range(w_start, w_end):
        word = row[w]
        c = popcount64(word)
        if seen + c > rank:
            k = rank - seen
            for b in range(64):
                if (word >> np.uint64(b)) & np.uint64(1):
                    if k == 0:
                        return w * 64 + b
                    k -= 1
        seen += c
    return -1


@numba.njit(parallel=True, cache=True)
def _nth_set_bits(signatures, ranks, n_ranks, out):
    for i in numba.prange(signatures.shape[0]):
        for r in range(n_ranks[i]):
            out[i, r] = _select_in_words(signatures[i], 0, signatures.shape[1], 0, ranks[i, r])


def nth_set_bits(signatures: np.ndarray, ranks: np.ndarray, n_ranks: np.ndarray) -> np.ndarray:
    """Scene index of the ``ranks[i, r]``-th set bit (0-based) of row ``i``, for ``r < n_ranks[i]``.

    signatures: uint64 (n, n_words); ranks: int64 (n, m); n_ranks: int64 (n,).
    Returns int64 (n, m) (entries past ``n_ranks[i]`` are -1).
    """
    out = np.full(ranks.shape, -1, np.int64)
    _nth_set_bits(read_only(signatures), np.ascontiguousarray(ranks, dtype=np.int64),
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
    _gather_bits(read_only(signatures), ids, out)
    return out


@numba.njit(parallel=True, cache=True)
def _transpose_bits(signatures, n_scenes, out):
    n_rows = signatures.shape[0]
    n_blocks = (n_rows + 63) // 64
    for blk in numba.prange(n_blocks):  # each thread owns one output word column
        for h in range(blk * 64, min(n_rows, blk * 64 + 64)):
            bit = np.uint64(1) << np.uint64(h & 63)
            for w in range(signatures.shape[1]):
                word = signatures[h, w]
                while word:
                    b, word = pop_lowest_bit(word)
                    s = w * 64 + b
                    if s < n_scenes:
                        out[s, blk] |= bit


def transpose_bits(signatures: np.ndarray, n_scenes: int) -> np.ndarray:
    """Per-scene concept bitsets: uint64 (n_scenes, ceil(n_rows/64)); bit h of row s is bit s
    of ``signatures[h]``.  signatures: uint64 (n_rows, ceil(n_scenes/64))."""
    out = np.zeros((n_scenes, (len(signatures) + 63) // 64), np.uint64)
    _transpose_bits(read_only(signatures), n_scenes, out)
    return out


@numba.njit(parallel=True, cache=True)
def _set_bit_positions(rows, n_bits, ptr, idx):
    for i in numba.prange(rows.shape[0]):
        k = ptr[i]
        for w in range(rows.shape[1]):
            word = rows[i, w]
            while word:
                b, word = pop_lowest_bit(word)
                j = w * 64 + b
                if j < n_bits:
                    idx[k] = j
                    k += 1


def set_bit_positions(rows: np.ndarray, n_bits: int) -> tuple:
    """Each row's set bits below ``n_bits``, increasing, as CSR ``(ptr, idx)``: int64 (n + 1,)
    and int32 (nnz,); ``idx[ptr[i]:ptr[i+1]]`` is ``np.flatnonzero(unpack_bits(rows[i], n_bits))``.
    rows: uint64 (n, ceil(n_bits/64)).  Padding bits, if any are set, are left out."""
    rows = read_only(np.asarray(rows, np.uint64))
    if rows.ndim != 2 or rows.shape[1] != n_words_for(n_bits):
        raise ValueError(f"set_bit_positions needs uint64 rows of {n_words_for(n_bits)} words, got shape {rows.shape}")
    counts = np.bitwise_count(rows).sum(axis=1, dtype=np.int64)
    if n_bits % 64 and len(rows):  # padding bits of the last word are not positions
        counts -= np.bitwise_count(rows[:, -1] >> np.uint64(n_bits % 64)).astype(np.int64)
    ptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    idx = np.empty(ptr[-1], np.int32)
    _set_bit_positions(rows, int(n_bits), ptr, idx)
    return ptr, idx


@numba.njit(parallel=True, cache=True)
def _block_counts(signatures, block, out):
    for h in numba.prange(signatures.shape[0]):
        total = 0
        for w in range(signatures.shape[1]):
            if w % block == 0:
                out[h, w // block] = total
            total += popcount64(signatures[h, w])
        out[h, out.shape[1] - 1] = total


def block_counts(signatures: np.ndarray, block: int = 64) -> np.ndarray:
    """Cumulative popcounts: int32 (n_rows, ceil(n_words/block) + 1); entry b counts the set
    bits of words ``[0, b*block)`` (the last entry: the whole row).  Lets :func:`select_bit`
    find the r-th set bit by scanning at most ``block`` words."""
    n_words = signatures.shape[1]
    out = np.zeros((len(signatures), -(-n_words // block) + 1), np.int32)
    _block_counts(read_only(signatures), block, out)
    return out


@numba.njit(inline="always")
def block_of_rank(cum, rank):
    """The block holding the ``rank``-th (0-based) set bit of a row with cumulative block
    counts ``cum`` (see :func:`block_counts`): the last b with cum[b] <= rank; -1 if the row
    has no such bit."""
    lo, hi = 0, cum.shape[0] - 1
    if rank >= cum[hi]:
        return -1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if cum[mid] <= rank:
            lo = mid
        else:
            hi = mid
    return lo


@numba.njit(inline="always")
def select_bit(row, cum, block, rank):
    """Scene index of the ``rank``-th (0-based) set bit of packed ``row`` using its
    cumulative block counts ``cum`` (see :func:`block_counts`); -1 if there is none."""
    b = block_of_rank(cum, rank)
    if b < 0:
        return -1
    return _select_in_words(row, b * block, min(row.shape[0], b * block + block), cum[b], rank)


@numba.njit(inline="always")
def select_in_block(words, first_word, seen, rank):
    """Scene index of the ``rank``-th set bit of a row given only its words
    ``first_word:first_word + len(words)`` and the ``seen`` set bits before them; -1 if not there."""
    i = _select_in_words(words, 0, words.shape[0], seen, rank)
    return -1 if i < 0 else first_word * 64 + i
