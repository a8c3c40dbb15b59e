"""Numba kernels that run a compiled bitset plan over a scene bank.

A plan is an int64 array of instructions, one row each::

    op, dst, a, sa, b, sb, n, n2, skip

over a register file of bitset *rows* (one row = the chunk's words).  Rows
``0 .. n_bank_rows-1`` hold the scene bank (copied in per chunk); the rest are
temporaries.  ``row(r)`` below means register-file row ``r``.

====================  ==========================================================
OP_AND/OR/ORNOT/ANDNOT ``dst+i = row(a+i*sa) OP row(b+i*sb)`` for ``i < n``
                       (ORNOT: ``a | ~b``; ANDNOT: ``a & ~b``)
OP_NOT                 ``dst+i = ~row(a+i*sa)``
OP_REDUCE_OR/AND       ``dst+o = OR/AND over k < n2 of row(a + k*sa + o*sb)``, ``o < n``,
                       leaving out ``k == skip`` (``skip == -2``: leaving out ``k == o``)
OP_COUNT               one-hot counters: ``dst + o*(n2+1) + j`` (``j = 0..n2``, ``o < n``) = scenes
                       where exactly ``j`` of the rows ``row(a + k*sa + o*sb)`` (``k < n2``,
                       same leaving-out rule) are set
OP_STORE               ``out[b, chunk words] = row(a)``
====================  ==========================================================

Strides may be 0 (broadcast).  Chunks of scenes are independent, so the result
is the same for any number of threads.
"""
from __future__ import annotations

import numba
import numpy as np

from ..bits import popcount64

OP_AND, OP_OR, OP_ORNOT, OP_ANDNOT, OP_NOT, OP_REDUCE_OR, OP_REDUCE_AND, OP_COUNT, OP_STORE = range(9)
OP_NAMES = ("and", "or", "ornot", "andnot", "not", "reduce_or", "reduce_and", "count", "store")
FIELDS = ("op", "dst", "a", "sa", "b", "sb", "n", "n2", "skip")
ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@numba.njit(cache=True, nogil=True)
def run_plan_chunk(plan, regs, out, w0, nw, counts, last_word=-1, last_mask=ALL_ONES):
    """Execute ``plan`` on a register file ``regs`` (rows, >= nw words) whose bank rows
    are already loaded.  Stored rows go to ``out[:, w0:w0+nw]``, or, if ``out`` has no
    rows, their popcounts are added to ``counts`` (int64, one per output).  Word
    ``last_word`` (global index) of a stored row is ANDed with ``last_mask``, which
    clears the padding bits past the last scene."""
    for p in range(plan.shape[0]):
        op = plan[p, 0]
        dst = plan[p, 1]
        a = plan[p, 2]
        sa = plan[p, 3]
        b = plan[p, 4]
        sb = plan[p, 5]
        n = plan[p, 6]
        if op == OP_AND:
            for i in range(n):
                ra, rb, rd = a + i * sa, b + i * sb, dst + i
                for w in range(nw):
                    regs[rd, w] = regs[ra, w] & regs[rb, w]
        elif op == OP_OR:
            for i in range(n):
                ra, rb, rd = a + i * sa, b + i * sb, dst + i
                for w in range(nw):
                    regs[rd, w] = regs[ra, w] | regs[rb, w]
        elif op == OP_ORNOT:
            for i in range(n):
                ra, rb, rd = a + i * sa, b + i * sb, dst + i
                for w in range(nw):
                    regs[rd, w] = regs[ra, w] | ~regs[rb, w]
        elif op == OP_ANDNOT:
            for i in range(n):
                ra, rb, rd = a + i * sa, b + i * sb, dst + i
                for w in range(nw):
                    regs[rd, w] = regs[ra, w] & ~regs[rb, w]
        elif op == OP_NOT:
            for i in range(n):
                ra, rd = a + i * sa, dst + i
                for w in range(nw):
                    regs[rd, w] = ~regs[ra, w]
        elif op == OP_REDUCE_OR or op == OP_REDUCE_AND:
            n2 = plan[p, 7]
            skip = plan[p, 8]
            is_or = op == OP_REDUCE_OR
            for o in range(n):
                rd = dst + o
                first = True
                for k in range(n2):
                    if k == skip or (skip == -2 and k == o):
                        continue
                    r = a + k * sa + o * sb
                    if first:
                        for w in range(nw):
                            regs[rd, w] = regs[r, w]
                        first = False
                    elif is_or:
                        for w in range(nw):
                            regs[rd, w] |= regs[r, w]
                    else:
                        for w in range(nw):
                            regs[rd, w] &= regs[r, w]
                if first:  # empty reduction
                    fill = np.uint64(0) if is_or else ALL_ONES
                    for w in range(nw):
                        regs[rd, w] = fill
        elif op == OP_COUNT:
            n2 = plan[p, 7]
            skip = plan[p, 8]
            for o in range(n):
                d = dst + o * (n2 + 1)
                for j in range(n2 + 1):
                    fill = ALL_ONES if j == 0 else np.uint64(0)
                    for w in range(nw):
                        regs[d + j, w] = fill
                seen = 0
                for k in range(n2):
                    if k == skip or (skip == -2 and k == o):
                        continue
                    r = a + k * sa + o * sb
                    seen += 1
                    for j in range(seen, 0, -1):
                        for w in range(nw):
                            m = regs[r, w]
                            regs[d + j, w] = (regs[d + j, w] & ~m) | (regs[d + j - 1, w] & m)
                    for w in range(nw):
                        regs[d, w] &= ~regs[r, w]
        elif op == OP_STORE:
            if out.shape[0] > 0:
                for w in range(nw):
                    v = regs[a, w]
                    if w0 + w == last_word:
                        v &= last_mask
                    out[b, w0 + w] = v
            else:
                total = 0
                for w in range(nw):
                    v = regs[a, w]
                    if w0 + w == last_word:
                        v &= last_mask
                    total += popcount64(v)
                counts[b] += total


@numba.njit(parallel=True, cache=True)
def run_plan(plan, bank_rows, n_regs, n_outputs, chunk_words, count_only, n_scenes):
    """Run ``plan`` over all words of ``bank_rows`` (n_bank_rows, n_words) uint64.

    Returns ``(out, counts)``: ``out`` uint64 (n_outputs, n_words) with the stored
    rows (no rows if ``count_only``), ``counts`` int64 (n_outputs,) with their
    popcounts (only if ``count_only``).  Bits past ``n_scenes`` are zero in both.
    Scenes are processed in chunks of ``chunk_words`` words, in parallel; each chunk
    gets its own register file of ``n_regs`` rows.
    """
    n_bank, n_words = bank_rows.shape
    out = np.zeros((0 if count_only else n_outputs, n_words), np.uint64)
    n_chunks = (n_words + chunk_words - 1) // chunk_words
    chunk_counts = np.zeros((n_chunks if count_only else 0, n_outputs), np.int64)
    dummy = np.zeros(0, np.int64)
    tail = n_scenes % 64
    last_mask = ALL_ONES if tail == 0 else (np.uint64(1) << np.uint64(tail)) - np.uint64(1)
    last_word = n_words - 1
    for c in numba.prange(n_chunks):
        w0 = c * chunk_words
        nw = min(chunk_words, n_words - w0)
        regs = np.empty((n_regs, chunk_words), np.uint64)
        for r in range(n_bank):
            for w in range(nw):
                regs[r, w] = bank_rows[r, w0 + w]
        if count_only:
            run_plan_chunk(plan, regs, out, w0, nw, chunk_counts[c], last_word, last_mask)
        else:
            run_plan_chunk(plan, regs, out, w0, nw, dummy, last_word, last_mask)
    counts = np.zeros(n_outputs if count_only else 0, np.int64)
    for c in range(chunk_counts.shape[0]):
        for i in range(n_outputs):
            counts[i] += chunk_counts[c, i]
    return out, counts
