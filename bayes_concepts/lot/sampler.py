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

import math
from dataclasses import dataclass

import numba
import numpy as np

from ..errors import GrammarError
from ..rng import next_uniform
from .grammar import Grammar, GrammarTables, curi_grammar
from .local_retries import RELEASE_RETRIES, sample_local_blocks, single_constant_productions
from .program import MAX_PROGRAM_TOKENS
from ..params import whole_number

PAD = 255
#: Values of ``sample_programs(retries=...)``: redraw the whole program, or CURI's local retries.
RETRIES = ("whole", "local")
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


# ------------------------------------------------------------- feasibility
# The sampler redraws a derivation that is deeper than max_depth or that compares two
# constants, so a grammar and depth under which every derivation is redrawn would loop
# forever.  The tables below decide up front, for every depth budget, which programs exist.
# A comparison of two constants is exactly the substring (constant, constant, comparison)
# of the postfix tokens (the two constants are then the comparison's operands), so a
# three-state automaton over the tokens tells accepted programs from redrawn ones:
# state = how many constants end the tokens so far (0, 1, 2 or more); a comparison in
# state 2 is the redrawn case.
_REDRAWN = -1


def _step(state: int, is_constant: bool, is_comparison: bool) -> int:
    if is_constant:
        return min(state + 1, 2)
    if is_comparison and state == 2:
        return _REDRAWN
    return 0


def _derivation_tables(grammar: Grammar, max_depth: int, cap: int):
    """Yield, for depth budgets R = 0, 1, ... up to ``max_depth``, a pair of lists over the
    nonterminals (``grammar.tables`` order):

    longest[k]: the longest token string nonterminal k derives when it sits at depth
        ``max_depth - R`` (so its children may go R - 1 levels deeper), capped at ``cap + 1``;
        -1 if it derives nothing within the budget;
    shortest[k]: dict ``entry state -> {exit state: fewest tokens}`` over the derivations
        that contain no comparison of two constants (automaton states as in ``_step``).

    Stops early once the tables stop changing (a fixed point: every larger budget gives the
    same tables)."""
    t = grammar.tables
    n_nt = t.n_nonterminals
    prods = [[t.rhs[t.rhs_start[p]:t.rhs_start[p + 1]].tolist() for p in range(t.prod_start[k], t.prod_start[k + 1])]
             for k in range(n_nt)]
    const = t.token_is_constant.tolist()
    comp = t.token_is_comparison.tolist()
    longest = [-1] * n_nt
    shortest = [{} for _ in range(n_nt)]
    for _ in range(max_depth + 1):
        new_longest, new_shortest = [], []
        for k in range(n_nt):
            best = -1
            reach = {}
            for rhs in prods[k]:
                total = 0
                for sym in rhs:
                    part = longest[sym] if sym < n_nt else 1
                    if part < 0:
                        total = -1
                        break
                    total += part
                if total >= 0:
                    best = max(best, min(total, cap + 1))
                for start in range(3):
                    states = {start: 0}
                    for sym in rhs:
                        nxt = {}
                        for q, length in states.items():
                            if sym < n_nt:
                                moves = shortest[sym].get(q, {}).items()
                            else:
                                q2 = _step(q, const[sym - n_nt], comp[sym - n_nt])
                                moves = () if q2 == _REDRAWN else ((q2, 1),)
                            for q2, extra in moves:
                                if length + extra < nxt.get(q2, math.inf):
                                    nxt[q2] = length + extra
                        states = nxt
                    if states:
                        mine = reach.setdefault(start, {})
                        for q2, length in states.items():
                            if length < mine.get(q2, math.inf):
                                mine[q2] = length
            new_longest.append(best)
            new_shortest.append(reach)
        if new_longest == longest and new_shortest == shortest:
            return
        longest, shortest = new_longest, new_shortest
        yield longest, shortest


def _depth_summary(grammar: Grammar, max_depth: int, cap: int) -> tuple:
    """``(longest, shortest_accepted, first_depth_with_programs)`` for the start symbol at
    ``max_depth``: longest token string (capped at ``cap + 1``; -1 if none), fewest tokens of
    a program the sampler accepts (None if none), and the smallest max_depth (<= the given
    one) whose derivations include an accepted program (None if none)."""
    start = grammar.tables.start_symbol
    longest, shortest, first_ok = -1, None, None
    for depth, (lng, sht) in enumerate(_derivation_tables(grammar, max_depth, cap)):
        ok = sht[start].get(0)
        if ok and first_ok is None:
            first_ok = depth
        longest, shortest = lng[start], (min(ok.values()) if ok else None)
    return longest, shortest, first_ok


def _first_workable_depth(grammar: Grammar, cap: int) -> int | None:
    """The smallest max_depth at which the sampler can produce a program (None: none does;
    the tables reach their fixed point after a few dozen levels at most)."""
    start = grammar.tables.start_symbol
    for depth, (_, sht) in enumerate(_derivation_tables(grammar, 1 << 30, cap)):
        if sht[start].get(0):
            return depth
    return None


def _deepest_within(grammar: Grammar, cap: int, below: int) -> int | None:
    """The largest max_depth < ``below`` whose longest program has at most ``cap`` tokens."""
    start = grammar.tables.start_symbol
    good = None
    for depth, (lng, _) in enumerate(_derivation_tables(grammar, below - 1, cap)):
        if 0 <= lng[start] <= cap:
            good = depth
    return good


def check_max_depth(grammar: Grammar, max_depth: int, max_len: int | None = None) -> int:
    """Check that the sampler can produce programs of ``grammar`` with derivation depth
    <= ``max_depth`` (and at most ``max_len`` tokens), and that none is longer than the
    toolkit handles (:data:`~bayes_concepts.lot.program.MAX_PROGRAM_TOKENS`).

    Returns the longest token string such a derivation yields.  Raises
    :class:`~bayes_concepts.errors.GrammarError` (naming the grammar, the depth and the
    smallest or largest depth that works) instead of letting the sampler redraw forever.
    Computed from the grammar alone (a few table passes per depth level), not by sampling.
    """
    src = grammar.source
    whole_number("max_depth", max_depth, 1, error=GrammarError)
    cap = MAX_PROGRAM_TOKENS
    longest, shortest, _ = _depth_summary(grammar, int(max_depth), cap)
    if shortest is None:
        first = _first_workable_depth(grammar, cap)
        why = ("has no derivation" if longest < 0 else
               "only has derivations that compare two constants (the sampler redraws those)")
        hint = (f"; the smallest max_depth that yields programs is {first}" if first is not None
                else "; no max_depth yields a program (check the grammar's rules)")
        raise GrammarError(f"{src}: max_depth {max_depth}: the grammar {why} within depth {max_depth}{hint}")
    if longest > cap:
        deepest = _deepest_within(grammar, cap, int(max_depth))
        raise GrammarError(f"{src}: max_depth {max_depth}: programs could reach more than {cap} tokens, the most "
                           f"the toolkit handles (bayes_concepts.lot.program.MAX_PROGRAM_TOKENS)"
                           + (f"; use max_depth <= {deepest}" if deepest is not None else ""))
    if max_len is not None and shortest > max_len:
        raise GrammarError(f"{src}: max_len {max_len}: the shortest program the sampler accepts within depth "
                           f"{max_depth} has {shortest} tokens")
    return longest


def sample_programs(n: int, grammar: Grammar | None = None, seed: int = 0, max_depth: int | None = None,
                    max_len: int | None = None, retries: str = "whole") -> ProgramSample:
    """Draw ``n`` programs (with repetitions) from ``grammar``'s PCFG.

    n: number of programs; seed: int seed; max_depth: maximum nonterminal depth
    (default the grammar's, 6 for CURI).  Returns a :class:`ProgramSample`.
    retries: ``"whole"`` (default): a derivation deeper than ``max_depth`` or comparing two
    constants is redrawn from the start symbol (the PCFG conditioned on both);
    ``"local"``: CURI's released sampler (:mod:`bayes_concepts.lot.local_retries`): a failing
    sub-derivation is re-expanded alone, up to 11 times, and ``max_depth`` counts as the
    release counts it (a nonterminal *at* ``max_depth`` fails, so the release's "depth 6"
    is ``retries="whole", max_depth=5``); ``attempts`` then counts start-symbol expansions.
    Raises :class:`~bayes_concepts.errors.GrammarError` at once when no program of the
    grammar can be drawn within ``max_depth`` (see :func:`check_max_depth`).
    """
    grammar = grammar or curi_grammar()
    max_depth = grammar.max_depth if max_depth is None else max_depth
    whole_number("n", n, 0, error=ValueError)
    if retries not in RETRIES:
        raise ValueError(f"retries must be one of {', '.join(map(repr, RETRIES))}, got {retries!r}")
    if retries == "local" and not (isinstance(max_depth, (int, np.integer)) and max_depth >= 2):
        raise ValueError(f"retries='local' needs max_depth >= 2 (the release's counting), got {max_depth!r}")
    # the local sampler's deepest nonterminal sits at max_depth - 1 in the whole sampler's counting
    try:
        bound = check_max_depth(grammar, max_depth - (retries == "local"), max_len)
    except GrammarError as exc:
        if retries != "local":
            raise
        raise GrammarError(f"retries='local', max_depth {max_depth} counts one level more than the whole-program "
                           f"sampler, whose terms follow: {exc}") from None
    max_depth = int(max_depth)
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
    if retries == "local":  # the release's kernel: same blocks and seeds
        attempts = sample_local_blocks(sizes, seeds, t.prod_start, t.prod_cumprob, t.prod_logp, t.rhs_start, t.rhs,
                                       t.n_nonterminals, t.start_symbol, single_constant_productions(t), max_depth,
                                       RELEASE_RETRIES, max_len, tokens, lengths, logp, depth)
    else:
        attempts = _sample_blocks(sizes, seeds, t.prod_start, t.prod_cumprob, t.prod_logp, t.rhs_start, t.rhs,
                                  t.n_nonterminals, t.start_symbol, t.token_arity, t.token_is_constant,
                                  t.token_is_comparison, max_depth, max_len, tokens, lengths, logp, depth)
    return ProgramSample(tokens, lengths, logp, depth, int(attempts), t.tokens)


