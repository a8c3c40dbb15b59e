"""Seeded PCFG sampler (numba).

Programs are drawn top-down from the start symbol; a derivation whose
nonterminals go deeper than ``max_depth`` (start symbol at depth 0) is discarded
and redrawn, and so is a program that compares two constants (``2 3 =``,
``red blue =``).  The result is CURI's sampling distribution: the PCFG
conditioned on both constraints.

Work is split into blocks of programs; block ``b`` draws from its own
splitmix64 stream seeded from ``numpy.random.SeedSequence(seed)``, so the result
is identical for any number of threads.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..rng import next_uniform
from .grammar import Grammar, GrammarTables, curi_grammar

PAD = 255
_BLOCK = 8192


@dataclass(frozen=True)
class ProgramSample:
    """Programs as padded token-id rows.

    tokens:  uint8 (n, max_len); entry ``t`` is ``vocabulary[t]``, ``PAD`` (255) pads.
    lengths: int16 (n,) number of tokens.
    log_prob: float64 (n,) PCFG log-probability of each program's derivation.
    depth:   int8 (n,) maximum nonterminal depth of the derivation (start = 0).
    attempts: int64 — derivations drawn in all, rejected ones included.
    vocabulary: tuple of token strings.
    """

    tokens: np.ndarray
    lengths: np.ndarray
    log_prob: np.ndarray
    depth: np.ndarray
    attempts: int
    vocabulary: tuple

    def __len__(self):
        return len(self.lengths)

    def program_string(self, i: int) -> str:
        return " ".join(self.vocabulary[t] for t in self.tokens[i, : self.lengths[i]])

    def strings(self) -> list:
        voc = self.vocabulary
        return [" ".join(voc[t] for t in row[:n]) for row, n in zip(self.tokens.tolist(), self.lengths.tolist())]


@numba.njit(cache=True)
def _compares_constants(row, length, arity, is_const, is_cmp, n_nt, starts):
    """True if some comparison in the postfix token row has two constant operands."""
    top = -1
    for i in range(length):
        t = row[i]
        a = arity[t]
        if a > top + 1:  # the final quantifier over a single BOOL body
            a = top + 1
        if a == 0:
            top += 1
            starts[top] = i
            continue
        if is_cmp[t] and a == 2:
            left, right = starts[top - 1], starts[top]
            if right - left == 1 and i - right == 1 and is_const[row[left]] and is_const[row[right]]:
                return True
        first = starts[top - a + 1]
        top -= a - 1
        starts[top] = first
    return False


@numba.njit(cache=True)
def _sample_block(n, seed, prod_start, prod_cumprob, prod_logp, rhs_start, rhs, n_nt, start_symbol,
                  arity, is_const, is_cmp, max_depth, max_len, out_tokens, out_len, out_logp, out_depth):
    state = np.empty(1, np.uint64)
    state[0] = seed
    sym_stack = np.empty(4 * max_len + 8, np.int32)
    depth_stack = np.empty(4 * max_len + 8, np.int32)
    starts = np.empty(max_len + 1, np.int64)
    attempts = 0
    for k in range(n):
        while True:
            attempts += 1
            top = 0
            sym_stack[0] = start_symbol
            depth_stack[0] = 0
            length = 0
            logp = 0.0
            deepest = 0
            ok = True
            while top >= 0:
                s = sym_stack[top]
                d = depth_stack[top]
                top -= 1
                if s >= n_nt:
                    if length == max_len:
                        ok = False
                        break
                    out_tokens[k, length] = s - n_nt
                    length += 1
                    continue
                if d > max_depth:
                    ok = False
                    break
                if d > deepest:
                    deepest = d
                u = next_uniform(state)
                p = prod_start[s]
                last = prod_start[s + 1] - 1
                while p < last and u >= prod_cumprob[p]:
                    p += 1
                logp += prod_logp[p]
                a, b = rhs_start[p], rhs_start[p + 1]
                if top + (b - a) >= sym_stack.shape[0]:
                    ok = False
                    break
                for r in range(b - 1, a - 1, -1):  # push reversed: leftmost symbol expands first
                    top += 1
                    sym_stack[top] = rhs[r]
                    depth_stack[top] = d + 1
            if not ok:
                continue
            if _compares_constants(out_tokens[k], length, arity, is_const, is_cmp, n_nt, starts):
                continue
            break
        out_len[k] = length
        out_logp[k] = logp
        out_depth[k] = deepest
        for i in range(length, max_len):
            out_tokens[k, i] = 255
    return attempts


@numba.njit(parallel=True, cache=True)
def _sample_blocks(block_sizes, block_seeds, prod_start, prod_cumprob, prod_logp, rhs_start, rhs, n_nt,
                   start_symbol, arity, is_const, is_cmp, max_depth, max_len, out_tokens, out_len,
                   out_logp, out_depth):
    n_blocks = block_sizes.shape[0]
    offsets = np.zeros(n_blocks + 1, np.int64)
    for b in range(n_blocks):
        offsets[b + 1] = offsets[b] + block_sizes[b]
    attempts = np.zeros(n_blocks, np.int64)
    for b in numba.prange(n_blocks):
        lo, hi = offsets[b], offsets[b + 1]
        attempts[b] = _sample_block(hi - lo, block_seeds[b], prod_start, prod_cumprob, prod_logp, rhs_start,
                                    rhs, n_nt, start_symbol, arity, is_const, is_cmp, max_depth, max_len,
                                    out_tokens[lo:hi], out_len[lo:hi], out_logp[lo:hi], out_depth[lo:hi])
    return attempts.sum()


def max_program_length(grammar: Grammar, max_depth: int) -> int:
    """Longest token string a derivation within ``max_depth`` can produce."""
    memo = {}

    def longest(sym, d):
        if not grammar.is_nonterminal(sym):
            return 1
        if d > max_depth:
            return -1
        key = (sym, d)
        if key not in memo:
            best = -1
            for p in grammar.rules(sym):
                parts = [longest(s, d + 1) for s in p.rhs]
                if min(parts) >= 0:
                    best = max(best, sum(parts))
            memo[key] = best
        return memo[key]

    return longest(grammar.start, 0)


def sample_programs(n: int, grammar: Grammar | None = None, seed: int = 0, max_depth: int | None = None,
                    max_len: int | None = None) -> ProgramSample:
    """Draw ``n`` programs (with repetitions) from ``grammar``'s PCFG.

    n: number of programs; seed: int seed; max_depth: maximum nonterminal depth
    (default the grammar's, 6 for CURI).  Returns a :class:`ProgramSample`.
    """
    grammar = grammar or curi_grammar()
    max_depth = grammar.max_depth if max_depth is None else int(max_depth)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if max_depth < 1:
        raise ValueError(f"max_depth must be >= 1, got {max_depth}")
    bound = max_program_length(grammar, max_depth)
    if bound < 0:
        raise ValueError(f"no program of {grammar.source} has a derivation of depth <= {max_depth}")
    max_len = bound if max_len is None else max_len
    t: GrammarTables = grammar.tables
    if len(t.tokens) >= PAD:
        raise ValueError(f"grammar has {len(t.tokens)} tokens; the sampler stores at most {PAD - 1}")
    n_blocks = max(1, -(-n // _BLOCK))
    sizes = np.full(n_blocks, _BLOCK, np.int64)
    sizes[-1] = n - _BLOCK * (n_blocks - 1)
    seeds = np.random.SeedSequence(seed).generate_state(n_blocks, np.uint64)
    tokens = np.empty((n, max_len), np.uint8)
    lengths = np.empty(n, np.int16)
    logp = np.empty(n, np.float64)
    depth = np.empty(n, np.int8)
    attempts = _sample_blocks(sizes, seeds, t.prod_start, t.prod_cumprob, t.prod_logp, t.rhs_start, t.rhs,
                              t.n_nonterminals, t.start_symbol, t.token_arity, t.token_is_constant,
                              t.token_is_comparison, max_depth, max_len, tokens, lengths, logp, depth)
    return ProgramSample(tokens, lengths, logp, depth, int(attempts), t.tokens)
