"""The sampler of CURI's release: local retries (``sample_programs(..., retries="local")``).

CURI's released hypothesis generator expands a derivation recursively and repairs
failures where they happen instead of redrawing the whole program.
In our terms, with the start symbol at depth 0 and every nonterminal one level below
its parent:

* a nonterminal at depth ``max_depth`` fails, whatever production it would take (even
  one made of terminals only: the release counts every grammar symbol as a level), so
  the deepest nonterminal of a program sits at depth ``max_depth - 1`` -- the release's
  "depth 6" is our whole-program sampler's ``max_depth=5``;
* a node whose nonterminal children all derived a single constant (``red blue =``,
  ``2 3 >``) fails once its children are done;
* a failed child is expanded again on its own, at the same depth, up to ``retries`` (11)
  more times, keeping its left siblings; after that the failure passes to the parent,
  which is then expanded again by *its* parent, and so on;
* a failure of the start symbol redraws the program (counted in ``attempts``).

The log-probability of a program is that of its final derivation.  Because a child is
retried until it succeeds, a production is not penalised for children that are likely
to fail, so the result is *not* the PCFG conditioned on the constraints (what the
whole-program sampler draws): deep productions (``and``) are more frequent and a
sample has more distinct programs.

:func:`sample_local_blocks` is the numba kernel (an explicit stack of frames, one per
level); :func:`sample_local_slow` is its recursive twin, written like the release's
expander, which draws the same random numbers in the same order (tests compare them).
"""
from __future__ import annotations

import numba
import numpy as np

from ..rng import next_uniform

#: Re-expansions of a failed child before the failure passes to its parent (the release's
#: ``num_trials > 10`` test allows 11).
RELEASE_RETRIES = 11


def single_constant_productions(tables) -> np.ndarray:
    """bool (n_productions,): the production's terminal tokens are exactly one constant.

    Such a production makes its node count as a constant for its parent's check (the
    release names a node by the terminal tokens of its production)."""
    n_nt = tables.n_nonterminals
    out = np.zeros(len(tables.prod_logp), bool)
    for p in range(len(out)):
        terms = [s - n_nt for s in tables.rhs[tables.rhs_start[p]:tables.rhs_start[p + 1]] if s >= n_nt]
        out[p] = len(terms) == 1 and bool(tables.token_is_constant[terms[0]])
    return out


@numba.njit(cache=True)
def _choose(state, s, prod_start, prod_cumprob):
    u = next_uniform(state)
    p = prod_start[s]
    last = prod_start[s + 1] - 1
    while p < last and u >= prod_cumprob[p]:
        p += 1
    return p


@numba.njit(cache=True)
def _local_block(n, seed, prod_start, prod_cumprob, prod_logp, rhs_start, rhs, n_nt, start_symbol, single_const,
                 max_depth, retries, max_len, out_tokens, out_len, out_logp, out_depth):
    """Draw ``n`` programs into the ``out_*`` rows; returns the start-symbol expansions made."""
    state = np.empty(1, np.uint64)
    state[0] = seed
    levels = max_depth + 1
    f_prod = np.empty(levels, np.int64)     # production chosen at this level
    f_pos = np.empty(levels, np.int64)      # next rhs position to expand
    f_tries = np.empty(levels, np.int64)    # re-expansions spent on the current child
    f_len0 = np.empty(levels, np.int64)     # tokens before this node (rollback point)
    f_logp0 = np.empty(levels, np.float64)
    f_kids = np.empty(levels, np.int64)     # nonterminal children done
    f_const = np.empty(levels, np.int64)    # ... of which derived a single constant
    f_deep = np.empty(levels, np.int64)     # deepest nonterminal of the finished subtrees
    attempts = 0
    for k in range(n):
        while True:
            attempts += 1
            length = 0
            logp = 0.0
            top = 0
            sym = start_symbol
            failed = False
            opening = True
            done = False
            while True:
                if opening:  # expand `sym` at level `top`
                    opening = False
                    f_len0[top] = length
                    f_logp0[top] = logp
                    if top >= max_depth:  # the maximum depth fails, whatever the production
                        failed = True
                    else:
                        p = _choose(state, sym, prod_start, prod_cumprob)
                        logp += prod_logp[p]
                        f_prod[top] = p
                        f_pos[top] = rhs_start[p]
                        f_tries[top] = 0
                        f_kids[top] = 0
                        f_const[top] = 0
                        f_deep[top] = top
                if failed:
                    length = f_len0[top]
                    logp = f_logp0[top]
                    if top == 0:
                        break
                    top -= 1
                    if f_tries[top] >= retries:
                        continue  # the parent fails in turn
                    f_tries[top] += 1
                    failed = False
                    sym = rhs[f_pos[top]]
                    top += 1
                    opening = True
                    continue
                p = f_prod[top]
                pos = f_pos[top]
                if pos < rhs_start[p + 1]:
                    s = rhs[pos]
                    if s >= n_nt:
                        if length >= max_len:
                            failed = True
                            continue
                        out_tokens[k, length] = s - n_nt
                        length += 1
                        f_pos[top] = pos + 1
                        continue
                    sym = s
                    top += 1
                    opening = True
                    continue
                if f_kids[top] > 0 and f_const[top] == f_kids[top]:
                    failed = True
                    continue
                if top == 0:
                    done = True
                    break
                deep = f_deep[top]
                is_const = single_const[p]
                top -= 1
                f_kids[top] += 1
                if is_const:
                    f_const[top] += 1
                if deep > f_deep[top]:
                    f_deep[top] = deep
                f_pos[top] += 1
                f_tries[top] = 0
            if done:
                break
        out_len[k] = length
        out_logp[k] = logp
        out_depth[k] = f_deep[0]
        for i in range(length, max_len):
            out_tokens[k, i] = 255
    return attempts


@numba.njit(parallel=True, cache=True)
def sample_local_blocks(block_sizes, block_seeds, prod_start, prod_cumprob, prod_logp, rhs_start, rhs, n_nt,
                        start_symbol, single_const, max_depth, retries, max_len, out_tokens, out_len, out_logp,
                        out_depth):
    """Fill ``out_*`` block by block (block ``b`` from ``block_seeds[b]``); returns the
    start-symbol expansions made in all (failed ones included).

    out_tokens uint8 (n, max_len) (255 pads), out_len int16 (n,), out_logp float64 (n,),
    out_depth int8 (n,): deepest nonterminal (start = 0)."""
    n_blocks = block_sizes.shape[0]
    offsets = np.zeros(n_blocks + 1, np.int64)
    for b in range(n_blocks):
        offsets[b + 1] = offsets[b] + block_sizes[b]
    attempts = np.zeros(n_blocks, np.int64)
    for b in numba.prange(n_blocks):
        lo, hi = offsets[b], offsets[b + 1]
        attempts[b] = _local_block(hi - lo, block_seeds[b], prod_start, prod_cumprob, prod_logp, rhs_start, rhs,
                                   n_nt, start_symbol, single_const, max_depth, retries, max_len,
                                   out_tokens[lo:hi], out_len[lo:hi], out_logp[lo:hi], out_depth[lo:hi])
    return attempts.sum()


# ------------------------------------------------------------------ the slow twin
_MASK = (1 << 64) - 1


def _uniform_py(state: list) -> float:
    """splitmix64 in plain Python: the same numbers as :func:`bayes_concepts.rng.next_uniform`."""
    state[0] = (state[0] + 0x9E3779B97F4A7C15) & _MASK
    z = state[0]
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    z ^= z >> 31
    return (z >> 11) * (1.0 / 9007199254740992.0)


def sample_local_slow(n: int, tables, seed: int, max_depth: int, retries: int = RELEASE_RETRIES) -> list:
    """``n`` programs as ``(token ids, log_prob, depth)`` tuples, drawn from one random stream
    seeded ``seed`` by a recursive expander shaped like the release's (the executable
    specification of :func:`sample_local_blocks`; one block only)."""
    n_nt = tables.n_nonterminals
    single_const = single_constant_productions(tables)
    cum = tables.prod_cumprob
    state = [int(seed)]

    logp = [0.0]  # running log-probability in expansion order (as the kernel sums it)

    def expand(sym, depth):
        """-> (tokens, deepest, single_constant), or None (failed; the log-probability is
        rolled back)."""
        saved = logp[0]
        if depth >= max_depth:
            return None
        u = _uniform_py(state)
        p = int(tables.prod_start[sym])
        last = int(tables.prod_start[sym + 1]) - 1
        while p < last and u >= cum[p]:
            p += 1
        logp[0] += float(tables.prod_logp[p])
        tokens, deepest, kids, consts = [], depth, 0, 0
        for s in tables.rhs[tables.rhs_start[p]:tables.rhs_start[p + 1]].tolist():
            if s >= n_nt:
                tokens.append(s - n_nt)
                continue
            child = expand(s, depth + 1)
            tries = 0
            while child is None:
                if tries >= retries:
                    logp[0] = saved
                    return None
                child = expand(s, depth + 1)
                tries += 1
            tokens += child[0]
            deepest = max(deepest, child[1])
            kids += 1
            consts += child[2]
        if kids and consts == kids:
            logp[0] = saved
            return None
        return tokens, deepest, bool(single_const[p])

    out = []
    while len(out) < n:
        logp[0] = 0.0
        got = expand(tables.start_symbol, 0)
        if got is not None:
            out.append((got[0], logp[0], got[1]))
    return out
