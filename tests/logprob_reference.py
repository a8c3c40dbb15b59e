"""The plain inside algorithm over every span and split of one token sequence: the slow twin
that :func:`bayes_concepts.lot.logprob.derivation_log_probs` (spans shared between programs,
splits pruned by the first and last tokens each symbol derives) is compared with, bit for bit.
Frozen copy of ``derivation_log_prob`` as it was before it called the batch."""
from __future__ import annotations

import math
from functools import lru_cache

from bayes_concepts.lot.logprob import _symbol_facts


def derivation_log_prob(tokens: tuple, g) -> tuple:
    """Return ``(log_prob, depth)`` of ``tokens`` under ``g``.

    log_prob: natural log of the total probability of all derivations from the
    start symbol (``-inf`` if the grammar cannot derive the string).
    depth: maximum nonterminal depth of the most probable derivation (start = 0),
    or -1 if there is none.
    """
    tokens = tuple(tokens)
    min_len, first, last = _symbol_facts(g)
    n = len(tokens)

    @lru_cache(maxsize=None)
    def inside(sym, i, j):
        """(total prob, best prob, height of best) for sym deriving tokens[i:j].

        Height counts nonterminal nodes only: a nonterminal with only tokens below
        has height 0, a token -1; so the start symbol's height is the derivation depth."""
        if not g.is_nonterminal(sym):
            return (1.0, 1.0, -1) if j == i + 1 and tokens[i] == sym else (0.0, 0.0, -1)
        if j - i < min_len[sym] or tokens[i] not in first[sym] or tokens[j - 1] not in last[sym]:
            return (0.0, 0.0, -1)
        total, best, best_depth = 0.0, 0.0, -1
        for p in g.rules(sym):
            t, b, d = seq(p.rhs, i, j)
            if t > 0:
                total += p.prob * t
                if p.prob * b > best:
                    best, best_depth = p.prob * b, d + 1
        return (total, best, best_depth)

    @lru_cache(maxsize=None)
    def seq(rhs, i, j):
        """rhs (tuple of symbols) deriving tokens[i:j]: (total, best, depth of best below)."""
        head, rest = rhs[0], rhs[1:]
        if not rest:
            return inside(head, i, j)
        rest_min = sum(min_len.get(s, 1) for s in rest)
        lo = i + min_len.get(head, 1)
        total, best, best_depth = 0.0, 0.0, -1
        for s in range(lo, j - rest_min + 1):
            t1, b1, d1 = inside(head, i, s)
            if t1 == 0:
                continue
            t2, b2, d2 = seq(rest, s, j)
            if t2 == 0:
                continue
            total += t1 * t2
            if b1 * b2 > best:
                best, best_depth = b1 * b2, max(d1, d2)
        return (total, best, best_depth)

    if n == 0:
        return (-math.inf, -1)
    total, _, depth = inside(g.start, 0, n)
    return (math.log(total) if total > 0 else -math.inf, depth if total > 0 else -1)
