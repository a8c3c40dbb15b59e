"""PCFG log-probability of a token string: the inside algorithm over token spans.

Works for any grammar file: the probability of a program is the sum over all its
derivations from the start symbol (for CURI's grammar a program has one
derivation).  Spans are pruned by the first/last tokens and minimum lengths each
symbol can derive, so programs of a few dozen tokens parse in milliseconds.
"""
from __future__ import annotations

import math
from functools import lru_cache

from .grammar import Grammar


def _symbol_facts(g: Grammar):
    """For every symbol: minimum derivable length, possible first and last tokens."""
    cached = getattr(g, "_span_facts", None)
    if cached is not None:
        return cached
    nts = g.nonterminals
    min_len = {nt: math.inf for nt in nts}
    first = {nt: set() for nt in nts}
    last = {nt: set() for nt in nts}

    def ml(s):
        return min_len[s] if s in min_len else 1

    def fs(s):
        return first[s] if s in first else {s}

    def ls(s):
        return last[s] if s in last else {s}

    changed = True
    while changed:
        changed = False
        for p in g.productions:
            total = sum(ml(s) for s in p.rhs)
            if total < min_len[p.lhs]:
                min_len[p.lhs] = total
                changed = True
            # nothing derives the empty string, so first/last come from the ends of rhs
            f, l_ = fs(p.rhs[0]), ls(p.rhs[-1])
            if not f <= first[p.lhs]:
                first[p.lhs] |= f
                changed = True
            if not l_ <= last[p.lhs]:
                last[p.lhs] |= l_
                changed = True
    facts = (min_len, first, last)
    g._span_facts = facts
    return facts


def _span_tables(g: Grammar) -> tuple:
    """``(min_len, first, last, rules, facts)``, built once per grammar (kept on it, as
    :func:`_symbol_facts`): :func:`_symbol_facts`; each nonterminal's ``(prob, rhs)`` pairs; each
    right-hand-side symbol's (min length, first tokens, last tokens), a token its own."""
    cached = getattr(g, "_span_tables", None)
    if cached is not None:
        return cached
    min_len, first, last = _symbol_facts(g)
    rules = {nt: tuple((p.prob, p.rhs) for p in g.rules(nt)) for nt in g.nonterminals}
    facts = {s: (min_len.get(s, 1), first.get(s, frozenset((s,))), last.get(s, frozenset((s,))))
             for p in g.productions for s in p.rhs}
    g._span_tables = (min_len, first, last, rules, facts)
    return g._span_tables


def derivation_log_prob(tokens: tuple, g: Grammar) -> tuple:
    """Return ``(log_prob, depth)`` of ``tokens`` under ``g``.

    log_prob: natural log of the total probability of all derivations from the
    start symbol (``-inf`` if the grammar cannot derive the string).
    depth: maximum nonterminal depth of the most probable derivation (start = 0),
    or -1 if there is none.  Height counts nonterminal nodes only: a nonterminal with only
    tokens below has height 0.  :func:`derivation_log_probs` of the one sequence.
    """
    return derivation_log_probs([tokens], g)[0]


def derivation_log_probs(programs, g: Grammar) -> list:
    """``(log_prob, depth)`` of each token sequence of ``programs`` (an iterable of token
    tuples) as :func:`derivation_log_prob` defines them, in order: a list, each pair the one
    the plain inside algorithm over every span and split gives for that sequence alone (bit for
    bit: the same sums in the same order; ``tests/logprob_reference.py`` is that algorithm).

    The inside probabilities are shared between the programs: what a symbol (or the rest of a
    rule's right-hand side) derives from a span depends on the span's tokens only, so a span
    seen in an earlier program (a template's ``y color? gray =`` in each of its fillings) is
    looked up, not parsed again; and a split of a span is tried only where the rule's head can
    end and the rest of the rule can begin (the first and last tokens each symbol derives): the
    splits left out are exactly those whose product is 0, which the sums skip anyway.  CLOSURE's
    and CLEVR's ~13,000 template programs score in about 0.08 of the time of one call each.  The
    memo lives for this call only."""
    min_len, first, last, rules, facts = _span_tables(g)
    rest_min = {}
    inside_memo, seq_memo = {}, {}
    out = []
    for tokens in programs:
        tokens = tuple(tokens)

        def inside(sym, i, j):
            """(total prob, best prob, height of best) for sym deriving tokens[i:j]."""
            if sym not in rules:
                return (1.0, 1.0, -1) if j == i + 1 and tokens[i] == sym else (0.0, 0.0, -1)
            if j - i < min_len[sym] or tokens[i] not in first[sym] or tokens[j - 1] not in last[sym]:
                return (0.0, 0.0, -1)
            key = (sym, tokens[i:j])
            found = inside_memo.get(key)
            if found is not None:
                return found
            total, best, best_depth = 0.0, 0.0, -1
            for prob, rhs in rules[sym]:
                t, b, d = seq(rhs, i, j)
                if t > 0:
                    total += prob * t
                    if prob * b > best:
                        best, best_depth = prob * b, d + 1
            found = inside_memo[key] = (total, best, best_depth)
            return found

        def seq(rhs, i, j):
            """rhs (tuple of symbols) deriving tokens[i:j]: (total, best, depth of best below)."""
            head, rest = rhs[0], rhs[1:]
            if not rest:
                return inside(head, i, j)
            key = (rhs, tokens[i:j])
            found = seq_memo.get(key)
            if found is not None:
                return found
            need = rest_min.get(rest)
            if need is None:
                need = rest_min[rest] = sum(min_len.get(s, 1) for s in rest)
            head_min, head_first, head_last = facts[head]
            rest_first = facts[rest[0]][1]
            total, best, best_depth = 0.0, 0.0, -1
            if tokens[i] in head_first:
                for s in range(i + head_min, j - need + 1):
                    # a split whose head cannot end at s-1, or whose rest cannot start at s, adds 0
                    if tokens[s - 1] not in head_last or tokens[s] not in rest_first:
                        continue
                    t1, b1, d1 = inside(head, i, s)
                    if t1 == 0:
                        continue
                    t2, b2, d2 = seq(rest, s, j)
                    if t2 == 0:
                        continue
                    total += t1 * t2
                    if b1 * b2 > best:
                        best, best_depth = b1 * b2, max(d1, d2)
            found = seq_memo[key] = (total, best, best_depth)
            return found

        if not tokens:
            out.append((-math.inf, -1))
            continue
        total, _, depth = inside(g.start, 0, len(tokens))
        out.append((math.log(total) if total > 0 else -math.inf, depth if total > 0 else -1))
    return out


def derivations(tokens: tuple, g: Grammar, limit: int = 64) -> list:
    """Every derivation of ``tokens`` from the start symbol of ``g``, with the rules it uses.

    Returns a list of ``(log_prob, uses)``, one per derivation (empty if the grammar cannot
    derive the string): ``log_prob`` the natural log of the derivation's probability (the
    log of the sum of the ``exp(log_prob)`` is :func:`derivation_log_prob`'s), ``uses`` a
    tuple of ``(parent, slot, rule)`` triples of ints, one per nonterminal node in
    pre-order: ``rule`` is the index in ``g.productions`` of the production that expands
    the node, ``parent`` that of the production whose right-hand side holds the node (-1
    for the start symbol) and ``slot`` the node's position in that right-hand side (0 for
    the start symbol).  Counting the ``rule`` entries gives the derivation's rule-use
    counts.  More than ``limit`` derivations of one symbol over one span is a ValueError
    (CURI's grammar gives every program one derivation).
    """
    tokens = tuple(tokens)
    min_len, first, last = _symbol_facts(g)
    rule_ids = {}
    for k, p in enumerate(g.productions):
        rule_ids.setdefault(p.lhs, []).append(k)
    n = len(tokens)

    def capped(out):
        if len(out) > limit:
            raise ValueError(f"more than {limit} derivations of one span of {' '.join(tokens)!r}")
        return tuple(out)

    @lru_cache(maxsize=None)
    def trees(sym, i, j):
        """Derivations of sym over tokens[i:j]: tuple of (log_prob, rule, kids); kids a tuple of
        (slot, tree) for the nonterminals of the rule's right-hand side."""
        if j - i < min_len[sym] or tokens[i] not in first[sym] or tokens[j - 1] not in last[sym]:
            return ()
        out = []
        for r in rule_ids[sym]:
            p = g.productions[r]
            lp = math.log(p.prob)
            out.extend((lp + lq, r, kids) for lq, kids in rest(r, 0, i, j))
        return capped(out)

    @lru_cache(maxsize=None)
    def rest(r, k, i, j):
        """Derivations of rhs[k:] of production r over tokens[i:j]: tuple of (log_prob, kids)."""
        rhs = g.productions[r].rhs
        head, tail = rhs[k], rhs[k + 1:]
        nt = g.is_nonterminal(head)
        if not tail:
            if not nt:
                return ((0.0, ()),) if j == i + 1 and tokens[i] == head else ()
            return tuple((t[0], ((k, t),)) for t in trees(head, i, j))
        tail_min = sum(min_len.get(s, 1) for s in tail)
        out = []
        for s in range(i + min_len.get(head, 1), j - tail_min + 1):
            if nt:
                heads = [(t[0], ((k, t),)) for t in trees(head, i, s)]
            else:
                heads = [(0.0, ())] if s == i + 1 and tokens[i] == head else []
            if not heads:
                continue
            for lq, kids in rest(r, k + 1, s, j):
                out.extend((lh + lq, hk + kids) for lh, hk in heads)
        return capped(out)

    def flatten(tree, parent, slot, uses):
        _, r, kids = tree
        uses.append((parent, slot, r))
        for k, child in kids:
            flatten(child, r, k, uses)

    if n == 0:
        return []
    out = []
    for tree in trees(g.start, 0, n):
        uses = []
        flatten(tree, -1, 0, uses)
        out.append((tree[0], tuple(uses)))
    return out
