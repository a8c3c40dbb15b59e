"""Numba kernels of the Bayesian oracles, batched over episodes.

For one episode and one oracle Ω (a concept set given as a bitset ``omega``):

1. candidates: for a likelihood that is 0 after any mistake (``size``, ``consistent``),
   the concepts of Ω that label every support scene right: an AND over the positives'
   per-scene concept bitsets and an AND-NOT over the negatives' (``scene_concepts``
   rows); otherwise (``noisy``) every concept of Ω with its mistakes on positives and
   on negatives;
2. log posterior = log prior + the likelihood's tabulated log terms (:mod:`.likelihoods`),
   normalised by log-sum-exp;
3. predictive p(y=1 | u) = Σ_h p(h | D)·h(u) on the query scenes (CBA, entropy) and
   on the test bank (AP; only scenes some candidate covers get a non-zero score).  In a space
   with question domains, the target's ranking is over the test-bank scenes in its domain:
   a scene outside it is no item of the episode's AP (neither positive nor negative).

Episodes are independent: ``prange`` over them gives the same numbers for any
number of threads.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from ..bits import count_bits, has_bit, nonzero_words, pop_lowest_bit, popcount64, read_only
from ..engine.test_bank import N_LANES
from ..metrics import (ap_from_levels, average_precision_sparse, class_balanced_accuracy_kernel,
                       descending_levels, first_at_most, level_of, level_search, level_table, TABLE_MIN_LEVELS)

#: noisy posteriors drop concepts whose weight is below exp(-PRUNE) times the largest:
#: their total share is < n_concepts * e^-50 (< 1e-17 for 10^5 concepts).
PRUNE = 50.0


def no_outside() -> np.ndarray:
    """The ``outside`` table of :func:`episode_candidates` of a space without question
    domains: uint64 (0, 1)."""
    return np.zeros((0, 1), np.uint64)


def no_test_domains() -> tuple:
    """``(test_domains, domain_row)`` of a space without question domains (:class:`TestBankTables`):
    uint64 (0, 1) and int64 (0,)."""
    return np.zeros((0, 1), np.uint64), np.zeros(0, np.int64)


# cache=True on an inline kernel: its callers inline it (and cache themselves); the cache is for
# the compiled function of its own that a call from Python (the tests' bit-for-bit checks) makes
@numba.njit(inline="always", cache=True)
def every_scene() -> np.ndarray:
    """The ``dom`` of a target defined on every test-bank scene (no question domain): uint64 (0,)."""
    return np.zeros(0, np.uint64)


@numba.njit(inline="always")
def in_domain(dom, t):
    """Whether test scene ``t`` is in the target's domain ``dom`` (a packed bitset over the test
    bank, uint64 (ceil(T/64),); length 0: every scene is)."""
    return dom.shape[0] == 0 or has_bit(dom, t) != 0


@numba.njit(inline="always")
def domain_size(dom, n_test):
    """The number of test scenes in ``dom`` (``n_test`` when it has length 0: every scene)."""
    return np.int64(n_test) if dom.shape[0] == 0 else count_bits(dom)


@numba.njit(inline="always")
def _drop_outside(dom, touched, m, scores, mark):
    """Keep in ``touched[:m]`` (order kept) only the scenes of the target's domain ``dom``; the
    others' ``scores`` are set to 0 and their ``mark`` cleared (as for a scene never touched).
    Returns how many are kept.  A target's ranking is over its domain: a scene outside it is no
    item of its AP at all (not a negative), and with it gone from ``touched`` and the item count
    :func:`domain_size`, :func:`~bayes_concepts.metrics.average_precision_sparse` computes
    exactly the AP of the domain's scenes alone."""
    if dom.shape[0] == 0:
        return m
    k = 0
    for i in range(m):
        t = touched[i]
        if has_bit(dom, t):
            touched[k] = t
            k += 1
        else:
            scores[t] = 0.0
            mark[t] = False
    return k


@numba.njit(inline="always")
def _term(table, h, wp, wn):
    """Entry (h, wp, wn) of a likelihood table whose axes may have length 1 (broadcast)."""
    return table[h if table.shape[0] > 1 else 0, wp if table.shape[1] > 1 else 0, wn if table.shape[2] > 1 else 0]


@numba.njit(inline="always")
def query_score(row, ids, probs, n):
    """Σ_i probs[i]·[concept ids[i] is true on a scene] for i < n, capped at 1: the predictive
    of a posterior (ids, probs) on the scene whose concept bitset is ``row`` (uint64 words)."""
    s = 0.0
    for i in range(n):
        if has_bit(row, ids[i]):
            s += probs[i]
    return min(s, 1.0)


@numba.njit(inline="always")
def wide_query_scores(rows, query, ids, probs, n, dense_p, cand, out):
    """``out[j]`` = the predictive of a posterior (ids, probs; n candidates) on query scene
    ``query[j]``, walking the scene's concept bitset ``rows[query[j]]`` against the candidates'
    bitset instead of every candidate (many candidates).  ``dense_p`` (float64 (H,)) and ``cand``
    (uint64 (words,)) are zero work arrays, zero again on return."""
    for i in range(n):
        dense_p[ids[i]] = probs[i]
        cand[ids[i] >> 6] |= np.uint64(1) << np.uint64(ids[i] & 63)
    for j in range(len(query)):
        row = rows[query[j]]
        s = 0.0
        for w in range(cand.shape[0]):
            word = row[w] & cand[w]
            while word:
                b, word = pop_lowest_bit(word)
                s += dense_p[w * 64 + b]
        out[j] = min(s, 1.0)
    for i in range(n):
        dense_p[ids[i]] = 0.0
        cand[ids[i] >> 6] = 0


@numba.njit(inline="always")
def mark_light_classes(weights, u, light):
    """Set ``light[q]`` for the lightest classes whose weights (float64 (C,)) together stay
    below ``u``, the smallest non-zero score of a positive or any lower bound on it: summed in
    increasing order, they can change no ranking above ``u``, so their scenes need not be
    scored."""
    order = np.argsort(weights)
    acc = 0.0
    for k in range(weights.shape[0]):
        q = order[k]
        if acc + weights[q] < u * (1.0 - 1e-9):
            acc += weights[q]
            light[q] = True
        else:
            break


@numba.njit(inline="always")
def _add_bits(counter, x):
    """Add the 0/1 digits of the word ``x`` to the bit-sliced counters ``counter`` (ripple carry)."""
    j = 0
    while x and j < counter.shape[0]:
        carry = counter[j] & x
        counter[j] ^= x
        x = carry
        j += 1


@numba.njit(inline="always")
def _unpack_counts(cp, cn, nb, wp64, wn64):
    """The counts of the 64 concepts of a word from their bit-sliced counters ``cp``/``cn``
    (``nb`` digits): ``wp64[b]``/``wn64[b]`` for concept b, all 64 at once (the loop over b
    has no branch, so it runs as vector shifts)."""
    for b in range(64):
        wp64[b] = 0
        wn64[b] = 0
    for j in range(nb):
        x = cp[j]
        y = cn[j]
        for b in range(64):
            wp64[b] |= ((x >> np.uint64(b)) & np.uint64(1)) << np.uint64(j)
            wn64[b] |= ((y >> np.uint64(b)) & np.uint64(1)) << np.uint64(j)


@numba.njit(cache=True)
def episode_candidates(support, labels, scene_concepts, omega, log_prior, first, second, consistent_only, ids,
                       logw, outside):
    """Fill ``ids``/``logw`` with the candidate concepts and their unnormalised log posterior
    ``(log_prior + first) + second`` (see :mod:`.likelihoods` for the tables); return how many.

    consistent_only: only concepts that label every support scene right are candidates, found
    by AND/AND-NOT over the support's per-scene concept bitsets; otherwise every concept of
    ``omega`` is scored by its mistakes (wp on positives, wn on negatives) and those below
    exp(-PRUNE) of the best are dropped.  A concept whose weight is 0 (log -inf: prior 0, or
    likelihood 0) is never a candidate; with none left the support fits no concept.

    outside: uint64 (rows, Hw) aligned with ``scene_concepts`` (bit h of row s: scene s is
    outside concept h's domain), or (0, Hw) when every concept is defined on every scene: a
    concept can have produced a labelled scene only in its domain (likelihood 0 otherwise)."""
    hw = omega.shape[0]
    k = support.shape[0]
    n = 0
    domains = outside.shape[0] > 0
    if consistent_only:
        for w in range(hw):
            word = omega[w]
            # a support scene's row and its domain bits together, stopping once no concept of the
            # word is left (the positives come first and leave few): the same AND in any order
            for i in range(k):
                row = scene_concepts[support[i]]
                if labels[i]:
                    word &= row[w]
                else:
                    word &= ~row[w]
                if domains:
                    word &= ~outside[support[i], w]
                if word == 0:
                    break
            while word:
                b, word = pop_lowest_bit(word)
                h = w * 64 + b
                lw = (log_prior[h] + _term(first, h, 0, 0)) + _term(second, h, 0, 0)
                if lw > -np.inf:  # a concept of prior or likelihood 0 is no candidate
                    ids[n] = h
                    logw[n] = lw
                    n += 1
        return n
    best = -np.inf
    # mistakes of 64 concepts at a time, as bit-sliced counters: bit j of cp[j] (cn[j]) for
    # concept b of the word is bit j of its count of missed positives (false positives)
    nb = 1
    while (1 << nb) <= k:
        nb += 1
    cp = np.zeros(nb, np.uint64)
    cn = np.zeros(nb, np.uint64)
    wp64 = np.zeros(64, np.uint64)
    wn64 = np.zeros(64, np.uint64)
    for w in range(hw):
        word = omega[w]
        if domains:
            for i in range(k):
                word &= ~outside[support[i], w]
                if word == 0:
                    break
        if word == 0:
            continue
        for j in range(nb):
            cp[j] = 0
            cn[j] = 0
        for i in range(k):
            row = scene_concepts[support[i], w]
            if labels[i]:
                _add_bits(cp, ~row & word)
            else:
                _add_bits(cn, row & word)
        _unpack_counts(cp, cn, nb, wp64, wn64)
        while word:
            b, word = pop_lowest_bit(word)
            h = w * 64 + b
            wp = np.int64(wp64[b])
            wn = np.int64(wn64[b])
            lw = (log_prior[h] + _term(first, h, wp, wn)) + _term(second, h, wp, wn)
            ids[n] = h
            logw[n] = lw
            if lw > best:
                best = lw
            n += 1
    if best == -np.inf:
        return 0
    m = 0
    for i in range(n):
        if logw[i] >= best - PRUNE and logw[i] > -np.inf:
            ids[m] = ids[i]
            logw[m] = logw[i]
            m += 1
    return m


@numba.njit(cache=True)
def normalise(logw, n, probs):
    """probs[:n] = softmax(logw[:n]); returns the posterior entropy (nats)."""
    best = -np.inf
    for i in range(n):
        if logw[i] > best:
            best = logw[i]
    total = 0.0
    for i in range(n):
        total += np.exp(logw[i] - best)
    log_z = best + np.log(total)
    ent = 0.0
    for i in range(n):
        lp = logw[i] - log_z
        p = np.exp(lp)
        probs[i] = p
        if p > 0:
            ent -= p * lp
    return ent


@numba.njit(inline="always")
def _binary_entropy(p):
    if p <= 0.0 or p >= 1.0:
        return 0.0
    return -(p * np.log(p) + (1.0 - p) * np.log(1.0 - p))


@numba.njit(cache=True)
def test_bank_ap(cls_list, cls_weight, class_rep, test_sig, truth, n_pos, n_test, scores, touched, dom):
    """AP on the test bank of the predictive Σ_c w_c·c(t) over synonym classes ``cls_list``
    (weights ``cls_weight``; class c's test-bank labels are row ``class_rep[c]`` of the packed
    ``test_sig``), against the packed labels ``truth`` (``n_pos`` set bits).

    Exact, but lazy: let u be the smallest non-zero score of a positive.  A scene covered
    only by "light" classes, whose weights add up to less than u, scores below every
    positive, so it counts at no threshold where a positive sits and can be left out.  The
    light classes are found against a lower bound on u (:func:`_positive_score_floor`); only
    the scenes some heavy class covers are scored (:func:`narrow_scores`), every class's weight
    added in ``cls_list`` order, so ties come out as in a full computation.  ``scores`` (zero on
    entry and on exit) and ``touched`` are work arrays of length n_test.  ``dom``: the target's
    question domain over the test bank (packed; length 0: every scene, :func:`every_scene`):
    the ranking is over its scenes only (the positives lie within it).
    """
    if n_pos == 0:
        return np.nan
    m = narrow_scores(cls_list, cls_weight, class_rep, test_sig, truth, dom, scores, touched)
    if m < 0:  # no positive scores above 0: all of them sit at the last threshold
        return n_pos / domain_size(dom, n_test)
    ap = average_precision_sparse(touched[:m], scores, truth, domain_size(dom, n_test), n_pos)
    for i in range(m):
        scores[touched[i]] = 0.0
    return ap


@numba.njit(inline="always")
def narrow_scores(cls_list, cls_weight, class_rep, test_sig, truth, dom, scores, touched):
    """The scores :func:`test_bank_ap` ranks: every scene of ``dom`` that a heavy class covers
    gets its score in ``scores`` and is listed in ``touched`` (in increasing order); returns
    how many, or -1 when no positive scores above 0 (nothing is then written)."""
    n_cls = cls_list.shape[0]
    floor = _positive_score_floor(cls_weight, cls_list, class_rep, test_sig, truth)[0]
    if floor == np.inf:
        return -1
    light = np.zeros(n_cls, np.bool_)
    mark_light_classes(cls_weight, floor, light)
    tw = truth.shape[0]
    touched_bits = np.zeros(tw, np.uint64)  # the scenes some heavy class covers, word by word
    for q in range(n_cls):
        if not light[q]:
            row = test_sig[class_rep[cls_list[q]]]
            for w in range(tw):
                touched_bits[w] |= row[w]
    if dom.shape[0]:
        for w in range(tw):
            touched_bits[w] &= dom[w]
    words = np.empty(tw, np.int64)
    n_words = nonzero_words(touched_bits, words)
    return _score_touched_words(cls_list, cls_weight, class_rep, test_sig, touched_bits, words, n_words, scores,
                                touched)


@numba.njit(inline="always", cache=True)
def _score_touched_words(cls_list, cls_weight, class_rep, test_sig, touched_bits, words, n_words, scores, touched):
    """Score every scene set in ``touched_bits`` (packed, its non-zero words ``words[:n_words]``):
    ``scores[t]`` = Σ_q cls_weight[q]·[t in class q], summed in ``cls_list`` order, and list the
    scenes in ``touched`` (increasing); returns how many.

    A word of scenes at a time: each class's word of that row is read once, and every scene of
    the word adds the class's weight times its bit, without a branch.  Adding 0.0 leaves a sum
    >= 0 exactly as it was, so each score is the float of adding only the classes that cover
    it, in class order, as a scatter over the classes' scenes gives."""
    n_cls = cls_list.shape[0]
    rows = np.empty(n_cls, np.int64)  # each class's row of ``test_sig``
    for q in range(n_cls):
        rows[q] = class_rep[cls_list[q]]
    pos = np.empty(64, np.uint64)
    acc = np.empty(64)
    m = 0
    for j in range(n_words):
        w = words[j]
        x = touched_bits[w]
        k = 0
        while x:
            b, x = pop_lowest_bit(x)
            pos[k] = b
            acc[k] = 0.0
            k += 1
        for q in range(n_cls):
            r = test_sig[rows[q], w]
            if r:
                wq = cls_weight[q]
                for i in range(k):
                    acc[i] += wq * np.float64((r >> pos[i]) & np.uint64(1))
        for i in range(k):
            t = w * 64 + np.int64(pos[i])
            scores[t] = acc[i]
            touched[m] = t
            m += 1
    return m


@numba.njit(inline="always")
def _positive_score_floor(cls_weight, cls_list, class_rep, test_sig, truth):
    """``(floor, rows_read)``: a lower bound on the smallest non-zero score of a positive (inf
    when none scores above 0), from word operations alone, and how many class rows it read.
    A positive scores at least the weight of the heaviest class covering it (adding weights
    >= 0 never lowers a float sum), so the bound is the least such weight over the positives
    some class of weight > 0 covers."""
    n_cls = cls_list.shape[0]
    tw = truth.shape[0]
    left = np.zeros(tw, np.uint64)  # the positives some weighted class covers ...
    rows_read = 0
    for q in range(n_cls):
        if cls_weight[q] > 0.0:
            rows_read += 1
            row = test_sig[class_rep[cls_list[q]]]
            for w in range(tw):
                left[w] |= row[w] & truth[w]
    n_left = count_bits(left)
    floor = np.inf
    order = np.argsort(cls_weight)
    for k in range(n_cls - 1, -1, -1):  # ... each given the heaviest class that covers it
        if n_left == 0:
            break
        q = order[k]
        row = test_sig[class_rep[cls_list[q]]]
        rows_read += 1
        newly = 0
        for w in range(tw):
            x = row[w] & left[w]
            if x:
                newly += popcount64(x)
                left[w] ^= x
        if newly:
            n_left -= newly
            floor = cls_weight[q]
    return floor, rows_read


if N_LANES != 4:  # scene_score is written out for four lanes
    raise ImportError(f"scene_score sums 4 lanes, the test bank splits rows into {N_LANES}")


@numba.njit(inline="always", cache=True)
def scene_score(lane_ptr, lane_cls, t, class_w):
    """Σ class_w[c] over the classes c of test scene t, in a fixed order: four running sums,
    sum j over the scene's classes with c % 4 == j in ascending order (its lane j, see
    :func:`~bayes_concepts.engine.test_bank.scene_class_lanes`), added as (s0 + s1) + (s2 + s3).
    Four sums keep four additions in flight.  A class of weight 0 adds exactly nothing, so the
    float depends only on which weighted classes cover the scene: scenes those cover alike get
    equal scores (ties stay ties)."""
    p0 = lane_ptr[N_LANES * t]
    p1 = lane_ptr[N_LANES * t + 1]
    p2 = lane_ptr[N_LANES * t + 2]
    p3 = lane_ptr[N_LANES * t + 3]
    end = lane_ptr[N_LANES * t + 4]
    n = min(p1 - p0, p2 - p1, p3 - p2, end - p3)
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    for i in range(n):
        s0 += class_w[lane_cls[p0 + i]]
        s1 += class_w[lane_cls[p1 + i]]
        s2 += class_w[lane_cls[p2 + i]]
        s3 += class_w[lane_cls[p3 + i]]
    for r in range(p0 + n, p1):
        s0 += class_w[lane_cls[r]]
    for r in range(p1 + n, p2):
        s1 += class_w[lane_cls[r]]
    for r in range(p2 + n, p3):
        s2 += class_w[lane_cls[r]]
    for r in range(p3 + n, end):
        s3 += class_w[lane_cls[r]]
    return (s0 + s1) + (s2 + s3)


#: weight buckets of the wide AP: class weights in [2^-(b+1), 2^-b) share bucket b
N_BUCKETS = 1100
#: the wide AP's score for positives that provably outrank every negative (scores are <= 1)
SAFE_SCORE = 4.0


@numba.njit(cache=True)
def _positive_floor(truth, scores):
    """min over the positives of ``scores`` (the positives are the set bits of ``truth``)."""
    u = np.inf
    for w in range(truth.shape[0]):
        word = truth[w]
        while word:
            b, word = pop_lowest_bit(word)
            sc = scores[w * 64 + b]
            if sc < u:
                u = sc
    return u


@numba.njit(inline="always")
def _add_row8(acc, weights, c):
    """``acc`` (8 floats) plus the 8 weights of class ``c`` (``weights[8c:8c + 8]``), elementwise."""
    o = np.uint64(c) * np.uint64(8)
    return (acc[0] + weights[o], acc[1] + weights[o + np.uint64(1)], acc[2] + weights[o + np.uint64(2)],
            acc[3] + weights[o + np.uint64(3)], acc[4] + weights[o + np.uint64(4)],
            acc[5] + weights[o + np.uint64(5)], acc[6] + weights[o + np.uint64(6)],
            acc[7] + weights[o + np.uint64(7)])


@numba.njit(inline="always", cache=True)
def score_rows8(lane_ptr, lane_cls, n_test, weights, out):
    """The :func:`scene_score` of every test scene under 8 posteriors at once: ``weights``
    float64 (C·8,), class c's weight under posterior j at ``8c + j``; ``out`` float64 (8,
    n_test) gets, bit for bit, what ``scene_score(lane_ptr, lane_cls, t, w_j)`` returns
    (each lane summed in the same order, the four lanes added as (s0 + s1) + (s2 + s3)).
    One pass over the rows serves 8 episodes, and the 8 sums of a class are one vector add
    when the compiler vectorizes them (:func:`score_deferred`)."""
    z = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for t in range(n_test):
        p0 = lane_ptr[N_LANES * t]
        p1 = lane_ptr[N_LANES * t + 1]
        p2 = lane_ptr[N_LANES * t + 2]
        p3 = lane_ptr[N_LANES * t + 3]
        end = lane_ptr[N_LANES * t + 4]
        n = min(p1 - p0, p2 - p1, p3 - p2, end - p3)
        a0 = z
        a1 = z
        a2 = z
        a3 = z
        for i in range(n):  # four lanes at once: four chains of additions in flight
            a0 = _add_row8(a0, weights, lane_cls[p0 + i])
            a1 = _add_row8(a1, weights, lane_cls[p1 + i])
            a2 = _add_row8(a2, weights, lane_cls[p2 + i])
            a3 = _add_row8(a3, weights, lane_cls[p3 + i])
        for r in range(p0 + n, p1):
            a0 = _add_row8(a0, weights, lane_cls[r])
        for r in range(p1 + n, p2):
            a1 = _add_row8(a1, weights, lane_cls[r])
        for r in range(p2 + n, p3):
            a2 = _add_row8(a2, weights, lane_cls[r])
        for r in range(p3 + n, end):
            a3 = _add_row8(a3, weights, lane_cls[r])
        out[0, t] = (a0[0] + a1[0]) + (a2[0] + a3[0])
        out[1, t] = (a0[1] + a1[1]) + (a2[1] + a3[1])
        out[2, t] = (a0[2] + a1[2]) + (a2[2] + a3[2])
        out[3, t] = (a0[3] + a1[3]) + (a2[3] + a3[3])
        out[4, t] = (a0[4] + a1[4]) + (a2[4] + a3[4])
        out[5, t] = (a0[5] + a1[5]) + (a2[5] + a3[5])
        out[6, t] = (a0[6] + a1[6]) + (a2[6] + a3[6])
        out[7, t] = (a0[7] + a1[7]) + (a2[7] + a3[7])


@numba.njit(inline="always")
def _add_row8_at(acc, weights, o):
    """``acc`` (8 floats) plus ``weights[o:o + 8]``, elementwise (``o`` a uint64 offset)."""
    return (acc[0] + weights[o], acc[1] + weights[o + np.uint64(1)], acc[2] + weights[o + np.uint64(2)],
            acc[3] + weights[o + np.uint64(3)], acc[4] + weights[o + np.uint64(4)],
            acc[5] + weights[o + np.uint64(5)], acc[6] + weights[o + np.uint64(6)],
            acc[7] + weights[o + np.uint64(7)])


@numba.njit(inline="always")
def _finish8(out, j0, t, a0, a1, a2, a3):
    for j in range(8):
        out[j0 + j, t] = (a0[j] + a1[j]) + (a2[j] + a3[j])


@numba.njit(inline="always", cache=True)
def score_rows16(lane_ptr, lane_cls, n_test, weights, out):
    """:func:`score_rows8` for 16 posteriors at once: ``weights`` float64 (C·16,), class c's
    weight under posterior j at ``16c + j`` (two cache lines side by side); ``out`` float64 (16,
    n_test) gets, bit for bit, each posterior's :func:`scene_score` (every sum in the same
    order).  One pass over the rows serves 16 episodes: a class id read once fetches two
    adjacent lines, so a pair costs about what it costs for 8 while serving twice as many."""
    z = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    sixteen = np.uint64(16)
    eight = np.uint64(8)
    for t in range(n_test):
        p0 = lane_ptr[N_LANES * t]
        p1 = lane_ptr[N_LANES * t + 1]
        p2 = lane_ptr[N_LANES * t + 2]
        p3 = lane_ptr[N_LANES * t + 3]
        end = lane_ptr[N_LANES * t + 4]
        n = min(p1 - p0, p2 - p1, p3 - p2, end - p3)
        a0 = a1 = a2 = a3 = z
        b0 = b1 = b2 = b3 = z
        for i in range(n):
            o0 = np.uint64(lane_cls[p0 + i]) * sixteen
            o1 = np.uint64(lane_cls[p1 + i]) * sixteen
            o2 = np.uint64(lane_cls[p2 + i]) * sixteen
            o3 = np.uint64(lane_cls[p3 + i]) * sixteen
            a0 = _add_row8_at(a0, weights, o0)
            b0 = _add_row8_at(b0, weights, o0 + eight)
            a1 = _add_row8_at(a1, weights, o1)
            b1 = _add_row8_at(b1, weights, o1 + eight)
            a2 = _add_row8_at(a2, weights, o2)
            b2 = _add_row8_at(b2, weights, o2 + eight)
            a3 = _add_row8_at(a3, weights, o3)
            b3 = _add_row8_at(b3, weights, o3 + eight)
        for r in range(p0 + n, p1):
            o = np.uint64(lane_cls[r]) * sixteen
            a0 = _add_row8_at(a0, weights, o)
            b0 = _add_row8_at(b0, weights, o + eight)
        for r in range(p1 + n, p2):
            o = np.uint64(lane_cls[r]) * sixteen
            a1 = _add_row8_at(a1, weights, o)
            b1 = _add_row8_at(b1, weights, o + eight)
        for r in range(p2 + n, p3):
            o = np.uint64(lane_cls[r]) * sixteen
            a2 = _add_row8_at(a2, weights, o)
            b2 = _add_row8_at(b2, weights, o + eight)
        for r in range(p3 + n, end):
            o = np.uint64(lane_cls[r]) * sixteen
            a3 = _add_row8_at(a3, weights, o)
            b3 = _add_row8_at(b3, weights, o + eight)
        _finish8(out, 0, t, a0, a1, a2, a3)
        _finish8(out, 8, t, b0, b1, b2, b3)


@numba.njit(cache=True)
def average_precision_every_score(scores, truth, dom=None):
    """:func:`~bayes_concepts.metrics.average_precision_sparse` of every item of ``scores``
    (float64 (n,); the items scoring 0 being the ones it is not given) against the packed
    labels ``truth`` (uint64 words), the same float: the same levels, counts and sums, each
    item's level found in the table of :func:`~bayes_concepts.metrics.level_table` -- no sort
    of the scores, the cost that matters once every test scene has a score.  ``dom``: the
    target's domain (packed; None or length 0: every item): only its items are ranked."""
    if dom is None:
        d = every_scene()
    else:
        d = dom
    n = scores.shape[0]
    n_items = domain_size(d, n)
    n_pos = count_bits(truth)
    if n_pos == 0:
        return np.nan
    pv = np.empty(n_pos)
    k = 0
    for w in range(truth.shape[0]):
        word = truth[w]
        while word:
            b, word = pop_lowest_bit(word)
            x = scores[w * 64 + b]
            if x > 0.0:
                pv[k] = x
                k += 1
    if k:
        u, cnt, nu = descending_levels(pv[:k])
        first, lo_key, shift = level_table(u, nu)
        hist = np.zeros(nu + 1, np.int64)  # hist[nu]: below every positive (0 included)
        if d.shape[0] > 0:  # a question domain: its items only
            for t in range(n):
                if has_bit(d, t):
                    hist[level_search(u, nu, scores[t]) if nu <= TABLE_MIN_LEVELS
                         else level_of(u, nu, first, lo_key, shift, scores[t])] += 1
        elif nu <= TABLE_MIN_LEVELS:
            for t in range(n):
                hist[level_search(u, nu, scores[t])] += 1
        else:
            for t in range(n):
                hist[level_of(u, nu, first, lo_key, shift, scores[t])] += 1
        return ap_from_levels(hist, cnt, nu, n_pos, n_items)
    return ap_from_levels(np.zeros(0, np.int64), np.zeros(0, np.int64), 0, n_pos, n_items)


@numba.njit(inline="always")
def target_domain(test_domains, domain_row, concept, everywhere):
    """The test-bank domain of ``concept`` (a row of ``test_domains``, uint64 (D, Tw)), or
    ``everywhere`` (length 0: every scene) when it has none: ``domain_row`` int64 (H,) gives each
    concept's row (-1: none), or has length 0 when no concept has a domain."""
    if domain_row.shape[0] == 0:
        return everywhere
    r = domain_row[concept]
    if r < 0:
        return everywhere
    return test_domains[r]


@numba.njit(parallel=True, cache=True)
def _score_deferred(class_w, deferred, lane_ptr, lane_cls, n_test, test_sig, true_concept, out_ap, test_domains,
                    domain_row):
    n_cls = class_w.shape[1]
    n_batches = (deferred.shape[0] + DEFER_BATCH - 1) // DEFER_BATCH
    for k in numba.prange(n_batches):
        lo = k * DEFER_BATCH
        hi = min(lo + DEFER_BATCH, deferred.shape[0])
        weights = np.zeros(n_cls * DEFER_BATCH)
        for j in range(hi - lo):
            row = class_w[deferred[lo + j]]
            for c in range(n_cls):
                weights[c * DEFER_BATCH + j] = row[c]
        scores = np.empty((DEFER_BATCH, n_test))
        score_rows16(lane_ptr, lane_cls, n_test, weights, scores)
        everywhere = np.zeros(0, np.uint64)
        for j in range(hi - lo):
            e = deferred[lo + j]
            out_ap[e] = average_precision_every_score(
                scores[j], test_sig[true_concept[e]],
                target_domain(test_domains, domain_row, true_concept[e], everywhere))


def score_deferred(class_w, deferred, lane_ptr, lane_cls, n_test, test_sig, true_concept, out_ap,
                   test_domains=None, domain_row=None):
    """Fill ``out_ap[e]`` for the episodes ``deferred`` (int64 (D,)) that
    :func:`evaluate_episodes` left (AP :data:`DEFERRED`: too wide to prune), from their class
    weights ``class_w[e]`` (float64 (E, C), dense by class id): every test scene's
    :func:`scene_score`, :data:`DEFER_BATCH` episodes per pass over the rows
    (:func:`score_rows16`), then the exact AP, as :func:`test_bank_ap_wide` computes it when it
    scores every scene.  ``test_sig``/``true_concept`` as for :func:`evaluate_episodes`
    (``test_sig`` is passed on read-only, as :class:`TestBankTables` holds it, so every caller
    shares one compiled kernel); ``test_domains``/``domain_row``: the targets' question domains
    (:class:`TestBankTables`; None: every concept is defined on every scene).

    The kernel is compiled with LLVM's SLP vectorizer on (numba leaves it off by default):
    it turns the 8 additions of a class into one vector add, about 6x faster per episode than
    summing one episode's rows.  It only packs independent additions into vectors, so the
    floats are those of the scalar code (the tests compare them bit for bit)."""
    if len(deferred) == 0:
        return
    from numba.core import config
    old = config.SLP_VECTORIZE
    config.SLP_VECTORIZE = 1  # read by the compiler when it builds this kernel (a cached one is loaded as is)
    try:
        if domain_row is None:
            test_domains, domain_row = no_test_domains()
        _score_deferred(class_w, np.asarray(deferred, np.int64), lane_ptr, lane_cls, n_test, read_only(test_sig),
                        true_concept, out_ap, test_domains, domain_row)
    finally:
        config.SLP_VECTORIZE = old


@numba.njit(cache=True)
def _count_above(scores, n_test, level):
    """How many of the ``n_test`` scores are >= ``level`` (a branch-free count)."""
    n = 0
    for t in range(n_test):
        n += scores[t] >= level
    return n


#: the cost of spreading a class-scene pair (a scattered add) against summing it in a scene's
#: row with :func:`scene_score`, as the wide AP's decisions weigh them.  A bare pass over the
#: 28.8 million pairs of CURI's test bank measures ~1.5 (33 ms against 22 ms on x86), but
#: spreading also puts off deferring an episode too wide to prune; of 2, 3, 5 and 8, 5 scored the
#: paper space's noisy episodes fastest (2 and 3 cost ~50 % more on Binding (colour))
SCATTER_COST = 5.0
#: the share of the cost of scoring every scene that the wide AP spends spreading classes while
#: it cannot yet prune (some positive untouched, or the weight left above the positives' floor)
SPECULATIVE_SHARE = 0.25
#: the same share when episodes too wide to prune are deferred and scored ROW_BATCH at a time
#: (:func:`score_deferred`), which makes scoring every scene several times cheaper
DEFERRED_SPECULATIVE_SHARE = 0.05
#: a scene is pruned only below FLOOR_MARGIN times the positives' floor: the rounding of a
#: score's sum never reaches 1e-9 relative, so a pruned scene is below every positive
FLOOR_MARGIN = 1.0 - 1e-9
#: the AP of an episode left for :func:`score_deferred` (an AP is never negative)
DEFERRED = -1.0
#: posteriors whose test-bank rows one pass of :func:`score_rows8` sums together
ROW_BATCH = 8
#: episodes whose test-bank rows one pass of :func:`score_deferred` sums together
#: (:func:`score_rows16`): their class weights, C·16 floats (1.3 MB for CURI's 10,484 classes),
#: stay in L2, and a pair's two adjacent lines cost about one line's gather -- 2.1x faster per
#: episode than 8 at a time (one thread, side by side on the paper space; 32 would leave L2)
DEFER_BATCH = 16


@numba.njit(inline="always")
def _spread_bucket(b, order, start, class_w, cls_ptr, cls_idx, scores):
    """Add the weight of every class of bucket ``b`` (classes ``order[start[b]:start[b + 1]]``) to
    the scores of its test scenes.  Only the scattered add: which scenes were met is read off
    the scores afterwards (:func:`_list_touched`), a met scene's score being > 0 since every
    weight spread is; bookkeeping per pair here would double the cost of a pair."""
    for j in range(start[b], start[b + 1]):
        c = order[j]
        wq = class_w[c]
        for i in range(cls_ptr[c], cls_ptr[c + 1]):
            scores[cls_idx[i]] += wq


@numba.njit(inline="always")
def _unmet_positive(truth, scores, w0):
    """The first word of ``truth`` from ``w0`` on that holds a positive still scoring 0 (not met
    by any class spread), or ``truth.shape[0]`` if none.  Scores only grow, so a search can
    resume at the word where the last one stopped: all searches of an episode read each
    positive about once."""
    for w in range(w0, truth.shape[0]):
        word = truth[w]
        while word:
            b, word = pop_lowest_bit(word)
            if scores[w * 64 + b] == 0.0:
                return w
    return truth.shape[0]


@numba.njit(cache=True)
def _list_touched(scores, n_test, mark, touched):
    """List in ``touched`` (ascending) and mark in ``mark`` the scenes scoring above 0 (those
    some spread class covers); returns how many."""
    m = 0
    for t in range(n_test):
        hit = scores[t] != 0.0
        touched[m] = t
        mark[t] = hit
        m += hit
    return m


@numba.njit(cache=True)
def _spread_until_prunable(order, start, ext, rest, class_w, cls_ptr, cls_idx, truth, n_pos, n_test, n_pairs,
                           scores, speculative_share):
    """Step 1 of :func:`test_bank_ap_wide` and :func:`test_bank_ap_certified` (the same
    decisions for both): spread the buckets of :func:`_bucket_classes` (``order``, ``start``,
    ``ext``, ``rest``) heaviest first into ``scores`` until either spreading the next bucket
    would cost more than summing the rows of the negatives still in doubt (once prunable), or
    the speculative budget is spent before anything can be pruned.

    Returns ``(score_all, unmet, u_lb, r, nxt)``: whether the budget ran out (the episode is too
    wide to prune); whether some positive still scores 0; the positives' floor (valid when
    none does); the weight not spread; the first bucket not spread (N_BUCKETS: none left), so
    the class-scene pairs spread are ``ext[:nxt].sum()``."""
    pairs_per_scene = n_pairs / max(n_test, 1)
    budget = speculative_share * n_pairs / SCATTER_COST  # pairs spread before pruning
    margin = FLOOR_MARGIN
    spread = 0
    first_unmet = 0  # the first word of truth with a positive not yet met (truth.shape[0]: none)
    u_lb = 0.0
    r = rest[0]
    prunable = False
    nxt = 0
    while nxt < N_BUCKETS and start[nxt + 1] == start[nxt]:
        nxt += 1
    while nxt < N_BUCKETS:
        b = nxt
        if not prunable and spread + ext[b] > budget:
            return True, first_unmet < truth.shape[0], u_lb, r, b
        spread += ext[b]
        _spread_bucket(b, order, start, class_w, cls_ptr, cls_idx, scores)
        r = rest[b + 1]
        nxt = b + 1
        while nxt < N_BUCKETS and start[nxt + 1] == start[nxt]:
            nxt += 1
        first_unmet = _unmet_positive(truth, scores, first_unmet)
        if first_unmet < truth.shape[0]:
            continue
        u_lb = _positive_floor(truth, scores)
        prunable = r < u_lb * margin
        if not prunable:
            continue
        # the positives are always in doubt; spreading more can only clear negatives
        n_doubt = _count_above(scores, n_test, u_lb * margin - r) - n_pos
        if nxt == N_BUCKETS or ext[nxt] * SCATTER_COST >= n_doubt * pairs_per_scene:
            break
    return False, first_unmet < truth.shape[0], u_lb, r, nxt


@numba.njit(cache=True)
def _score_every_scene(scene_ptr, scene_cls, class_w, n_test, scores, touched):
    """Every test scene's :func:`scene_score` into ``scores`` (all 0 on entry), listing those
    above 0 in ``touched``; returns how many.  For posteriors too wide to prune."""
    keep = 0
    for t in range(n_test):
        sc = scene_score(scene_ptr, scene_cls, t, class_w)
        if sc > 0.0:
            scores[t] = sc
            touched[keep] = t
            keep += 1
    return keep


@numba.njit(cache=True)
def test_bank_ap_wide(cls_list, class_w, cls_ptr, cls_idx, scene_ptr, scene_cls, truth, n_pos, n_test, scores,
                      mark, touched, speculative_share=SPECULATIVE_SHARE, defer=False, dom=None):
    """AP on the test bank of the predictive Σ_c w_c·c(t), for posteriors spread over many
    classes (the ``noisy`` likelihood).  Exact, with the work bounded by what can matter.

    ``class_w`` is the weight of every class (dense, by class id; 0 off ``cls_list``);
    ``cls_ptr``/``cls_idx`` the test scenes of each class and ``scene_ptr``/``scene_cls`` the
    classes of each test scene (CSR, both ways).  A scene's score is always its
    :func:`scene_score` (so equal rows give equal floats) -- but only for the scenes that can
    matter:

    1. the classes are bucketed by weight (bucket b: [2^-(b+1), 2^-b)) and spread bucket by
       bucket, heaviest first, into partial scores H_t; R is the weight of the buckets not yet
       spread, so every scene's score lies in [H_t, H_t + R];
    2. with u_lb the smallest H of a positive (a lower bound on every positive's score), a
       scene with H_t + R < u_lb scores below every positive: it counts at no threshold where
       a positive sits and is left out (scored 0, with the scenes no class touched);
    3. spreading stops once R < u_lb and the next bucket would cost more than summing the
       rows of the negatives still in doubt; those negatives get their exact scores, and so
       do the positives -- except that with no negative in doubt AP is 1, and a positive
       whose lower bound H_p is above v, the highest exact score of a negative, outranks every
       negative: its precision is 1 at its own threshold whatever its exact score (and whatever
       it ties with), so it is scored :data:`SAFE_SCORE`, above everything, which gives the
       same AP;
    4. while nothing can be pruned yet (a positive untouched, or R >= u_lb), spreading may
       cost at most ``speculative_share`` (default :data:`SPECULATIVE_SHARE`) of scoring every
       scene; past that (a posterior spread so wide that the positives' floor is near 0),
       every scene is scored from its row -- or, with ``defer``, nothing more is done here and
       :data:`DEFERRED` is returned: the caller scores such episodes together
       (:func:`score_deferred`, the same floats and the same AP).

    The choice of where to stop changes the work, never the AP (up to the float rounding of
    adding the same precisions in a different grouping, ~1e-16).

    ``dom``: the target's question domain over the test bank (packed; None or length 0: every
    scene): the ranking is over its scenes only; a scene outside it is dropped like a pruned
    one, and the items at the last threshold are the domain's.
    """
    if dom is None:
        d = every_scene()
    else:
        d = dom
    if n_pos == 0:
        return np.nan
    order, start, ext, rest, _, _ = _bucket_classes(cls_list, class_w, cls_ptr)
    margin = FLOOR_MARGIN
    score_all, untouched_pos, u_lb, r, _ = _spread_until_prunable(
        order, start, ext, rest, class_w, cls_ptr, cls_idx, truth, n_pos, n_test, scene_ptr[scene_ptr.shape[0] - 1],
        scores, speculative_share)
    if score_all:  # the posterior is too wide to prune: score every scene from its row
        scores[:n_test] = 0.0
        if defer:
            return DEFERRED
        keep = _score_every_scene(scene_ptr, scene_cls, class_w, n_test, scores, touched)
        keep = _drop_outside(d, touched, keep, scores, mark)
        separated = False
    else:
        m = _list_touched(scores, n_test, mark, touched)
        if untouched_pos:  # every bucket was spread and some positive scores 0: all in doubt
            u_lb = 0.0
            r = 0.0
        level = u_lb * margin - r
        # keep the scenes in doubt (every positive is); the rest score below every positive
        keep = 0
        n_neg = 0
        for i in range(m):
            t = touched[i]
            if scores[t] >= level and in_domain(d, t):
                touched[keep] = t
                keep += 1
                if not has_bit(truth, t):
                    n_neg += 1
            else:
                mark[t] = False
                scores[t] = 0.0
        separated = n_neg == 0 and not untouched_pos  # (and every positive scored above 0)
        if not separated:
            # exact scores of the negatives in doubt; v: the highest
            v = 0.0
            for i in range(keep):
                t = touched[i]
                if not has_bit(truth, t):
                    scores[t] = scene_score(scene_ptr, scene_cls, t, class_w)
                    v = max(v, scores[t])
            # a positive whose lower bound is above v outranks every negative: it adds 1/n_pos
            # to AP whatever its exact score, and so does it with the score SAFE_SCORE above all
            for i in range(keep):
                t = touched[i]
                if has_bit(truth, t):
                    if not untouched_pos and scores[t] * margin > v:
                        scores[t] = SAFE_SCORE
                    else:
                        scores[t] = scene_score(scene_ptr, scene_cls, t, class_w)
    ap = 1.0 if separated else average_precision_sparse(touched[:keep], scores, truth, domain_size(d, n_test), n_pos)
    for i in range(keep):
        scores[touched[i]] = 0.0
        mark[touched[i]] = False
    return ap


#: relative slack around a partial sum of class weights: a scene's score summed in another
#: order differs by far less (n·2^-53 relative for n non-negative terms), so H·(1 - slack) and
#: (H + rest)·(1 + slack) enclose the float that :func:`scene_score` returns
ROUND_SLACK = 1e-9


@numba.njit(cache=True)
def _bucket_classes(cls_list, class_w, cls_ptr):
    """The classes of positive weight in buckets by weight (bucket b: [2^-(b+1), 2^-b), the
    last one everything lighter): ``(order, start, ext, rest, mass, count)``: class ids bucket
    by bucket, each bucket's first index in ``order`` (N_BUCKETS + 1,), the test scenes each
    bucket's classes cover (N_BUCKETS,), the weight of buckets >= b (N_BUCKETS + 1,; summed
    smallest first), each bucket's weight and its number of classes (N_BUCKETS,)."""
    n_cls = cls_list.shape[0]
    bucket = np.empty(n_cls, np.int64)
    start = np.zeros(N_BUCKETS + 1, np.int64)
    mass = np.zeros(N_BUCKETS)
    ext = np.zeros(N_BUCKETS, np.int64)
    for q in range(n_cls):
        c = cls_list[q]
        wq = class_w[c]
        if wq > 0.0:
            b = min(max(-math.frexp(wq)[1], 0), N_BUCKETS - 1)
            mass[b] += wq
            ext[b] += cls_ptr[c + 1] - cls_ptr[c]
            start[b + 1] += 1
        else:
            b = -1
        bucket[q] = b
    count = start[1:].copy()
    for b in range(N_BUCKETS):
        start[b + 1] += start[b]
    fill = start[:N_BUCKETS].copy()
    order = np.empty(start[N_BUCKETS], np.int64)
    for q in range(n_cls):
        if bucket[q] >= 0:
            order[fill[bucket[q]]] = cls_list[q]
            fill[bucket[q]] += 1
    rest = np.zeros(N_BUCKETS + 1)
    for b in range(N_BUCKETS - 1, -1, -1):
        rest[b] = rest[b + 1] + mass[b]
    return order, start, ext, rest, mass, count


@numba.njit(cache=True)
def _rest_caps(mass, count, first, rest, max_deg):
    """cap[d] (d = 0..max_deg): an upper bound on the summed weight of any d classes of the
    buckets >= ``first`` (the ones not spread), and never above ``rest``, their total.

    A bucket b holds ``count[b]`` classes, each lighter than 2^-b, together ``mass[b]``: j of
    them weigh at most min(mass[b], j·2^-b), which grows by 2^-b per class up to
    ceil(mass[b]·2^b) classes and not at all after; filling the d places bucket by bucket,
    heaviest first, each with the classes that still add, maximises the sum of these concave
    pieces, so no d classes weigh more."""
    cap = np.zeros(max_deg + 1)
    d = 0
    total = 0.0
    for b in range(first, N_BUCKETS):
        if count[b] == 0 or d >= max_deg:
            continue
        top = math.ldexp(1.0, -b)
        useful = min(count[b], int(math.ceil(mass[b] / top)))
        for j in range(1, useful + 1):
            if d >= max_deg:
                break
            d += 1
            cap[d] = min(total + min(mass[b], j * top), rest)
        total += min(mass[b], useful * top)
    for j in range(d + 1, max_deg + 1):
        cap[j] = min(total, rest)
    return cap


@numba.njit(cache=True)
def ap_bounds_from_levels(cnt, nu, zero_level, hist_lo, hist_hi, n_pos, n_test):
    """``(lower, upper)``: the AP with exact positive scores and every negative at the top
    (lower) or bottom (upper) of its score interval.

    The positives' distinct scores are u_0 > ... > u_{nu-1} with ``cnt[j]`` positives at u_j
    (u_{nu-1} = 0 when ``zero_level``); ``hist_hi[j]`` (``hist_lo[j]``) counts the negatives
    whose interval's top (bottom) lies in [u_j, u_{j-1}), index nu: below u_{nu-1}.  Summed
    level by level as :func:`~bayes_concepts.metrics.average_precision_sparse` sums, so with
    ``hist_lo == hist_hi`` both are the float it returns."""
    lower = 0.0
    upper = 0.0
    tp = 0
    n_lo = 0
    n_hi = 0
    for j in range(nu):
        tp += cnt[j]
        n_lo += hist_lo[j]
        n_hi += hist_hi[j]
        if zero_level and j == nu - 1:  # every item scores >= 0: the last threshold holds them all
            x = (n_pos / n_test) * (cnt[j] / n_pos)
            lower += x
            upper += x
        else:
            lower += (tp / (tp + n_hi)) * (cnt[j] / n_pos)
            upper += (tp / (tp + n_lo)) * (cnt[j] / n_pos)
    return lower, upper


@numba.njit(cache=True)
def _half_width(lower, upper, nu):
    """Half the width of [lower, upper], plus the float rounding of summing nu precisions in
    another grouping (each sum is off by at most ~nu·2^-53); 0 when the two are one float."""
    if upper <= lower:
        return 0.0
    return 0.5 * (upper - lower) + (nu + 2) * 4.5e-16


@numba.njit(inline="always")
def _degree(scene_ptr, t):
    """The number of classes test scene ``t`` belongs to (its row's length)."""
    return scene_ptr[N_LANES * t + N_LANES] - scene_ptr[N_LANES * t]


@numba.njit(cache=True)
def max_degree(scene_ptr):
    """The most classes any test scene belongs to (``scene_ptr``: the lane pointers of
    :func:`scene_score`)."""
    out = 0
    for t in range((scene_ptr.shape[0] - 1) // N_LANES):
        out = max(out, _degree(scene_ptr, t))
    return out


#: steps per power of two of the key that finds a score's level (:func:`_level`)
KEY_STEPS = 64


@numba.njit(inline="always")
def _key(x):
    """A whole number that never decreases as x > 0 grows (:data:`KEY_STEPS` per power of two)."""
    m, e = math.frexp(x)
    return e * KEY_STEPS + int((m - 0.5) * (2 * KEY_STEPS))


@numba.njit(cache=True)
def _level_table(u, n_levels):
    """``(first, k_bot)``: first[k - k_bot] is the first level j < n_levels with key(u_j) <= k,
    for every key k from k_bot = key(u[n_levels - 1]) to key(u[0]) (u descending, > 0)."""
    k_bot = _key(u[n_levels - 1])
    k_top = _key(u[0])
    first = np.empty(k_top - k_bot + 1, np.int64)
    j = 0
    for k in range(k_top, k_bot - 1, -1):
        while j < n_levels and _key(u[j]) > k:
            j += 1
        first[k - k_bot] = j
    return first, k_bot


@numba.njit(inline="always")
def _level(u, n_levels, first, k_bot, x):
    """For x >= 0: the first level j with u_j <= x, as
    :func:`~bayes_concepts.metrics.first_at_most` finds it (n_levels: below every level
    above 0), by the key of x and a scan of the few levels that share it."""
    if x >= u[0]:
        return 0
    if x < u[n_levels - 1]:
        return n_levels
    k = _key(x) - k_bot
    j = first[k]
    end = first[k - 1] if k > 0 else n_levels
    if end - j > 8:
        return j + first_at_most(u[j:end], end - j, x)
    while j < end and u[j] > x:
        j += 1
    return j


@numba.njit(cache=True)
def test_bank_ap_certified(cls_list, class_w, cls_ptr, cls_idx, scene_ptr, scene_cls, truth, n_pos, n_test,
                           tolerance, max_deg, scores, mark, touched, tops, queue, stats,
                           speculative_share=SPECULATIVE_SHARE, defer=False, dom=None):
    """AP on the test bank of the predictive Σ_c w_c·c(t) to within ``tolerance``, with a
    certificate: returns ``(ap, bound)`` with |ap - exact AP| <= bound <= tolerance, where the
    exact AP is that of every scene scored by :func:`scene_score` (what
    :func:`test_bank_ap_wide` returns).  Arguments as for :func:`test_bank_ap_wide`;
    ``max_deg``: :func:`max_degree` of ``scene_ptr``; work arrays ``tops`` float64 (n_test,)
    (zero on entry; restored) and
    ``queue`` int64 (3, n_test); ``stats`` int64 (3,) is
    incremented by the class-scene pairs spread, the rows summed with :func:`scene_score` and
    the bounds evaluated (the work done).

    1. classes are spread bucket by bucket, heaviest first, into partial scores H_t, where
       :func:`test_bank_ap_wide` would spread them; with R the weight not spread, a negative's
       exact score lies in [H_t, H_t + min(R, cap_t)], cap_t the most that as many unspread
       classes as cover the scene in all (its degree) can weigh (:func:`_rest_caps`; a scene no
       class touched: [0, min(R, cap_t)]), both ends widened by :data:`ROUND_SLACK` for the
       rounding of sums.  (The degree rather than the classes still unspread: counting the
       spread ones costs a second scattered write per pair spread, ~15 % of the time, and
       narrows the bound by ~5 %.)
       A posterior so wide that :func:`test_bank_ap_wide` gives up spreading (its speculative
       budget spent before anything can be pruned) is scored from every scene's row, in
       order, exactly as that function does (bound 0): the weight left then lies above most
       positives' scores (measured on CURI-scale posteriors: ~0.1 against positives down to
       1e-4), so nearly every negative's interval holds hundreds of levels and would need its
       row anyway.  With ``defer``, such an episode returns ``(DEFERRED, 0.0)`` instead, for
       the caller to score with others (:func:`score_deferred`: the same exact AP);
    2. the positives get their exact scores, except those whose lower bound is above every
       negative's upper bound: such a positive has precision 1 at its own threshold whatever
       its exact score, and so has every positive above it, so moving it above everything
       (:data:`SAFE_SCORE`, as in :func:`test_bank_ap_wide`) changes no precision.  The
       positives' distinct scores are the levels u_0 > u_1 > ... at which AP has a threshold;
    3. the certificate (:func:`~bayes_concepts.metrics.average_precision_interval_dense` has
       the proof): with exact positives, AP lies between the AP with every negative at the top
       of its interval and the AP with every negative at the bottom
       (:func:`ap_bounds_from_levels`); ``ap`` is their midpoint and ``bound`` half their
       distance, plus the rounding of the two sums (~1e-16 per level);
    4. while bound > tolerance, negatives in doubt (an interval holding some level) get their
       exact scores, level by level from the top: those whose interval reaches u_0 first, then
       those whose top lies in [u_1, u_0), and so on.  A negative moves the precision at a
       level of rank n by ~1/n, so the highest levels shrink the bound most per row summed.
       They go in batches (each batch's rows summed in scene order, which halves the cost of
       rows far apart in memory), the bound evaluated after each (batches sized so that
       evaluating it costs ~1/10 of the rows), until it is <= tolerance.  Once every negative
       in doubt has its exact score the two ends meet: ``bound`` is 0 and ``ap`` the exact AP
       (up to how :func:`test_bank_ap_wide` groups its own sum, ~1e-16).

    ``scores``/``mark``/``tops`` are restored on exit.  ``dom``: the target's question domain
    over the test bank (packed; None or length 0: every scene): only its scenes are items of
    the ranking, so only its negatives get intervals and counts.
    """
    if dom is None:
        d = every_scene()
    else:
        d = dom
    if n_pos == 0:
        return np.nan, 0.0
    n_items = domain_size(d, n_test)
    order, start, ext, rest, mass, count = _bucket_classes(cls_list, class_w, cls_ptr)
    up = 1.0 + ROUND_SLACK
    down = 1.0 - ROUND_SLACK
    # 1. spread as test_bank_ap_wide does (the same decisions)
    score_all, _, _, r, nxt = _spread_until_prunable(
        order, start, ext, rest, class_w, cls_ptr, cls_idx, truth, n_pos, n_test, scene_ptr[scene_ptr.shape[0] - 1],
        scores, speculative_share)
    stats[0] += ext[:nxt].sum()
    if score_all:
        # too wide to prune (see 1. above): every scene from its row, as test_bank_ap_wide does
        scores[:n_test] = 0.0
        if defer:
            return DEFERRED, 0.0
        keep = _score_every_scene(scene_ptr, scene_cls, class_w, n_test, scores, touched)
        keep = _drop_outside(d, touched, keep, scores, mark)
        stats[1] += n_test
        ap = average_precision_sparse(touched[:keep], scores, truth, n_items, n_pos)
        for i in range(keep):
            scores[touched[i]] = 0.0
        return ap, 0.0
    m = _list_touched(scores, n_test, mark, touched)
    cap = _rest_caps(mass, count, nxt, r, max_deg)
    # the touched negatives' upper bounds (into ``tops``) and v_hi, the highest upper bound of
    # a negative (a scene no class touched scores at most untouched_top); with many touched,
    # the scenes are walked in order, for the memory's sake
    in_order = m > n_test // 4
    untouched_top = cap[max_deg] * up
    v_hi = 0.0
    n_touched_neg = 0
    for i in range(n_test if in_order else m):
        t = i if in_order else touched[i]
        if not mark[t] or has_bit(truth, t) or not in_domain(d, t):
            continue
        hi = (scores[t] + cap[_degree(scene_ptr, t)]) * up
        tops[t] = hi
        v_hi = max(v_hi, hi)
        n_touched_neg += 1
    n_untouched = (n_items - n_pos) - n_touched_neg  # the domain's negatives no class touched
    if n_untouched > 0:
        v_hi = max(v_hi, untouched_top)
    # 2. the positives: exact, or SAFE_SCORE above every negative
    pv = np.empty(n_pos)
    k = 0
    for w in range(truth.shape[0]):
        word = truth[w]
        while word:
            b, word = pop_lowest_bit(word)
            t = w * 64 + b
            if mark[t] and scores[t] * down > v_hi:
                pv[k] = SAFE_SCORE
            else:
                pv[k] = scene_score(scene_ptr, scene_cls, t, class_w)
                stats[1] += 1
            k += 1
    u, cnt, nu = descending_levels(pv)
    zero_level = u[nu - 1] == 0.0
    n_levels = nu - 1 if zero_level else nu  # levels above 0; n_levels: the zero level or below all
    if n_levels == 0:  # every positive scores 0: all sit at the last threshold, with every item
        for i in range(m):
            t = touched[i]
            scores[t] = 0.0
            mark[t] = False
            tops[t] = 0.0
        return (n_pos / n_items) * (n_pos / n_pos), 0.0
    first, k_bot = _level_table(u, n_levels)
    # 3. the negatives' intervals as counts per level; those in doubt queued (queue[0]: scene,
    # [1]: the level of its interval's bottom, [2]: of its top)
    hist_lo = np.zeros(nu + 1, np.int64)
    hist_hi = np.zeros(nu + 1, np.int64)
    group_start = np.zeros(nu + 2, np.int64)
    n_queued = 0
    u_floor = u[n_levels - 1]
    for i in range(n_test if in_order else m):
        t = i if in_order else touched[i]
        if not mark[t] or has_bit(truth, t) or not in_domain(d, t):
            continue
        hi = tops[t]
        tops[t] = 0.0
        if hi < u_floor:  # below every level above 0 (so is its bottom)
            hist_lo[n_levels] += 1
            hist_hi[n_levels] += 1
            continue
        z = _level(u, n_levels, first, k_bot, hi)
        a = _level(u, n_levels, first, k_bot, scores[t] * down)
        hist_lo[a] += 1
        hist_hi[z] += 1
        if z < a:
            queue[0, n_queued] = t
            queue[1, n_queued] = a
            queue[2, n_queued] = z
            n_queued += 1
            group_start[z + 1] += 1
    if n_untouched > 0:  # their intervals: [0, their cap]
        if untouched_top >= u_floor:  # some may reach a level: each by its own cap
            for t in range(n_test):
                if mark[t] or has_bit(truth, t) or not in_domain(d, t):
                    continue
                z = _level(u, n_levels, first, k_bot, cap[_degree(scene_ptr, t)] * up)
                hist_lo[n_levels] += 1
                hist_hi[z] += 1
                if z < n_levels:
                    queue[0, n_queued] = t
                    queue[1, n_queued] = n_levels
                    queue[2, n_queued] = z
                    n_queued += 1
                    group_start[z + 1] += 1
        else:
            hist_lo[n_levels] += n_untouched
            hist_hi[n_levels] += n_untouched
    lower, upper = ap_bounds_from_levels(cnt, nu, zero_level, hist_lo, hist_hi, n_pos, n_items)
    stats[2] += 1
    bound = _half_width(lower, upper, nu)
    # 4. exact scores for the negatives in doubt, from the highest level down, until bound <= tolerance
    if bound > tolerance:
        for g in range(nu + 1):
            group_start[g + 1] += group_start[g]
        fill = group_start[: nu + 1].copy()
        ordered = np.empty((2, n_queued), np.int64)
        for i in range(n_queued):
            z = queue[2, i]
            ordered[0, fill[z]] = queue[0, i]
            ordered[1, fill[z]] = queue[1, i]
            fill[z] += 1
        # a bound costs ~9 ns per level, a row ~3 ns per class it sums (measured on x86): one
        # bound per 35·nu/pairs_per_scene rows keeps the bounds at ~1/10 of the rows' cost
        pairs_per_scene = scene_ptr[scene_ptr.shape[0] - 1] / max(n_test, 1)
        every = max(16, int(35.0 * nu / max(pairs_per_scene, 1.0)))
        # the queue in batches of ``every`` scenes, in level order; each batch's rows are summed
        # in scene order (rows far apart in memory cost ~2x as much in queue order)
        group_of = np.empty(n_queued, np.int64)
        for g in range(n_levels):
            group_of[group_start[g]:group_start[g + 1]] = g
        for lo in range(0, n_queued, every):
            hi_end = min(lo + every, n_queued)
            batch = np.argsort(ordered[0, lo:hi_end])
            for i in range(batch.shape[0]):
                q = lo + batch[i]
                t = ordered[0, q]
                s = scene_score(scene_ptr, scene_cls, t, class_w)
                if not mark[t]:
                    mark[t] = True
                    touched[m] = t
                    m += 1
                scores[t] = s
                hist_lo[ordered[1, q]] -= 1
                hist_hi[group_of[q]] -= 1
                z = _level(u, n_levels, first, k_bot, s)
                hist_lo[z] += 1
                hist_hi[z] += 1
            stats[1] += hi_end - lo
            lower, upper = ap_bounds_from_levels(cnt, nu, zero_level, hist_lo, hist_hi, n_pos, n_items)
            stats[2] += 1
            bound = _half_width(lower, upper, nu)
            if bound <= tolerance:
                break
    for i in range(m):
        t = touched[i]
        scores[t] = 0.0
        mark[t] = False
    if bound == 0.0:
        return lower, 0.0
    return 0.5 * (lower + upper), bound


@numba.njit(inline="always")
def add_class_weights(ids, probs, n, classes, class_w, class_list):
    """Add each candidate's posterior weight ``probs[i]`` (i < n) to its synonym class's entry of
    ``class_w`` (float64 (C,), zero on entry for the classes not yet listed), listing each class
    reached for the first time in ``class_list``; returns how many are listed.  A weight that
    underflowed to 0 adds nothing and lists nothing (a listed class must weigh > 0: it marks
    the scenes it covers)."""
    n_cls = 0
    for i in range(n):
        if probs[i] == 0.0:
            continue
        c = classes[ids[i]]
        if class_w[c] == 0.0:
            class_list[n_cls] = c
            n_cls += 1
        class_w[c] += probs[i]
    return n_cls


class EpisodeArrays(NamedTuple):
    """A batch of E episodes as the kernels read it."""

    support: np.ndarray  #: int64 (E, K) support scene ids (rows of the oracle's ``scene_concepts``)
    support_labels: np.ndarray  #: int8 (E, K) 0/1
    query: np.ndarray  #: int64 (E, Kq) query scene ids
    query_labels: np.ndarray  #: int8 (E, Kq) 0/1
    true_concept: np.ndarray  #: int64 (E,) the concept each episode was drawn for


class LikelihoodTables(NamedTuple):
    """A likelihood's tabulated log terms (:func:`~.likelihoods.likelihood_tables`)."""

    first: np.ndarray  #: float64 (H or 1, K + 1 or 1, K + 1 or 1)
    second: np.ndarray  #: float64, the same axes
    consistent_only: bool  #: 0 after any mistake: only consistent concepts are candidates


class OracleTables(NamedTuple):
    """What one oracle conditions with: its concepts, prior, likelihood and weak-empty policy."""

    scene_concepts: np.ndarray  #: uint64 (scenes, Hw): bit h of row s, concept h true on scene s
    omega: np.ndarray  #: uint64 (Hw,) the oracle's concepts as a bitset
    log_prior: np.ndarray  #: float64 (H,) normalised over omega, -inf off it
    likelihood: LikelihoodTables
    refit: bool  #: when no concept fits: condition again with ``refit_likelihood``
    refit_likelihood: LikelihoodTables
    fixed_scene_scores: np.ndarray  #: float64 (scenes,) the fixed predictive when not ``refit``
    fixed_test_scores: np.ndarray  #: float64 (T,) the same on the test bank
    fixed_entropy: float  #: its posterior entropy (nats)
    outside: np.ndarray  #: uint64 (scenes, Hw) rows as ``scene_concepts``: scene outside concept h's domain; (0, Hw): none


class TestBankTables(NamedTuple):
    """The test bank as the kernels read it (:meth:`SpaceIndex.test_bank_index` and
    :meth:`SpaceIndex.test_bank_scene_classes`)."""

    signatures: np.ndarray  #: uint64 (H, Tw) test-bank labels of every concept
    n_test: int  #: T, test-bank scenes
    classes: np.ndarray  #: int64 (H,) synonym class of each concept
    cls_ptr: np.ndarray  #: int64 (C + 1,) CSR: the test scenes of each class ...
    cls_idx: np.ndarray  #: int32 (pairs,) ... their ids
    class_rep: np.ndarray  #: int64 (C,) a concept of each class
    scene_ptr: np.ndarray  #: int64 (4T + 1,) lane pointers of each scene's classes (:func:`scene_score`)
    scene_cls: np.ndarray  #: uint16 (pairs,) the classes, lane by lane
    test_domains: np.ndarray  #: uint64 (D, Tw) the test-bank domains of the concepts that have one ((0, 1): none)
    domain_row: np.ndarray  #: int64 (H,) each concept's row of ``test_domains``, -1: every scene ((0,): none has one)


class EvaluateOptions(NamedTuple):
    """How :func:`evaluate_episodes` scores spread posteriors."""

    allow_wide: bool  #: False forces the path made for few candidates (benchmarks)
    ap_tolerance: float  #: > 0: certified AP to within it; 0: exact
    defer: bool  #: leave episodes too wide to prune for :func:`score_deferred`
    speculative_share: float  #: see :func:`test_bank_ap_wide`


class EpisodeResults(NamedTuple):
    """Where :func:`evaluate_episodes` writes: float64 (E,) arrays unless said."""

    ap: np.ndarray
    ap_bound: np.ndarray
    cba: np.ndarray
    posterior_entropy: np.ndarray
    predictive_entropy: np.ndarray
    empty: np.ndarray  #: bool (E,)
    n_candidates: np.ndarray  #: int64 (E,)
    query_pred: np.ndarray  #: float64 (E, Kq)


@numba.njit(parallel=True, cache=True)
def evaluate_episodes(episodes, oracle, bank, options, out, defer_w):
    """Score every episode with one oracle; see the module docstring.

    episodes: :class:`EpisodeArrays`; oracle: :class:`OracleTables` (the likelihood's tables:
    :mod:`.likelihoods`); bank: :class:`TestBankTables` (``scene_ptr``/``scene_cls`` are used
    when the posterior spreads over many concepts, i.e. for likelihoods that are not
    consistent-only, see :func:`test_bank_ap_wide`); options: :class:`EvaluateOptions`
    (``allow_wide`` False forces the narrow path, for benchmarks); out: :class:`EpisodeResults`.

    When no concept fits the support (``out.empty``): if ``oracle.refit``, condition again with
    ``oracle.refit_likelihood``; otherwise use the fixed predictive ``fixed_scene_scores`` (per
    scene of the bank), ``fixed_test_scores`` (per test-bank scene) with posterior entropy
    ``fixed_entropy``.  ``ap_tolerance`` > 0: the AP of a spread posterior is computed to within
    it, with a certificate (:func:`test_bank_ap_certified`); 0: exactly
    (:func:`test_bank_ap_wide`).  ``out.ap_bound`` gets each episode's certified bound on
    |AP - exact AP| (0 where AP is exact).  ``defer``: leave the episodes too wide to prune (AP
    :data:`DEFERRED`) with their class weights in their row of ``defer_w`` (float64 (E, C),
    zeros on entry), for :func:`score_deferred`; otherwise they are scored here (``defer_w``
    unused).

    The records are unpacked into locals first, so the loop compiles to the code the
    positional arguments gave (``benchmarks/roofline.py records`` times the two side by side).
    """
    support, support_labels, query, query_labels, true_concept = episodes
    scene_concepts, omega, log_prior = oracle.scene_concepts, oracle.omega, oracle.log_prior
    first, second, consistent_only = oracle.likelihood
    refit, (refit_first, refit_second, refit_consistent_only) = oracle.refit, oracle.refit_likelihood
    fixed_scene_scores, fixed_test_scores = oracle.fixed_scene_scores, oracle.fixed_test_scores
    fixed_entropy = oracle.fixed_entropy
    outside = oracle.outside
    test_sig, n_test, classes, cls_ptr, cls_idx, class_rep, scene_ptr, scene_cls, test_domains, domain_row = bank
    allow_wide, ap_tolerance, defer, speculative_share = options
    out_ap, out_ap_bound, out_cba, out_post_ent, out_pred_ent, out_empty, out_n_candidates, out_query_pred = out
    n_ep = support.shape[0]
    n_concepts = log_prior.shape[0]
    n_chunks = min(n_ep, 64)
    certify = allow_wide and ap_tolerance > 0.0  # spread posteriors' AP to a tolerance
    max_deg = max_degree(scene_ptr) if certify else 0
    for chunk in numba.prange(n_chunks):
        ids = np.empty(n_concepts, np.int64)
        logw = np.empty(n_concepts)
        probs = np.empty(n_concepts)
        class_w = np.zeros(cls_ptr.shape[0] - 1)
        class_list = np.empty(cls_ptr.shape[0] - 1, np.int64)
        cls_weight = np.empty(cls_ptr.shape[0] - 1)
        scores = np.zeros(n_test)
        mark = np.zeros(n_test, np.bool_)
        touched = np.empty(n_test, np.int64)
        n_certify = n_test if certify else 1  # the certified AP's work arrays, when it runs
        tops = np.zeros(n_certify)
        queue = np.empty((3, n_certify), np.int64)
        stats = np.zeros(3, np.int64)
        dense_p = np.zeros(n_concepts)
        cand = np.zeros(omega.shape[0], np.uint64)
        everywhere = np.zeros(0, np.uint64)
        for e in range(chunk * n_ep // n_chunks, (chunk + 1) * n_ep // n_chunks):
            n = episode_candidates(support[e], support_labels[e], scene_concepts, omega, log_prior, first, second,
                                   consistent_only, ids, logw, outside)
            empty = n == 0
            out_empty[e] = empty
            if empty and refit:
                n = episode_candidates(support[e], support_labels[e], scene_concepts, omega, log_prior, refit_first,
                                       refit_second, refit_consistent_only, ids, logw, outside)
            out_n_candidates[e] = n
            out_ap_bound[e] = 0.0
            kq = query.shape[1]
            qpred = out_query_pred[e]
            truth = test_sig[true_concept[e]]
            n_pos = count_bits(truth)
            dom = target_domain(test_domains, domain_row, true_concept[e], everywhere)  # the ranking's scenes
            if empty and not refit:
                for j in range(kq):
                    qpred[j] = min(fixed_scene_scores[query[e, j]], 1.0)
                out_post_ent[e] = fixed_entropy
                m = 0
                for t in range(n_test):
                    if fixed_test_scores[t] > 0 and in_domain(dom, t):
                        touched[m] = t
                        m += 1
                out_ap[e] = average_precision_sparse(touched[:m], fixed_test_scores, truth, domain_size(dom, n_test),
                                                     n_pos)
            elif n == 0:  # the refit found nothing either: every score 0
                for j in range(kq):
                    qpred[j] = 0.0
                out_post_ent[e] = np.nan
                out_ap[e] = n_pos / domain_size(dom, n_test) if n_pos else np.nan
            else:
                out_post_ent[e] = normalise(logw, n, probs)
                wide = allow_wide and not (refit_consistent_only if empty and refit else consistent_only)
                if wide:  # many candidates: walk each query scene's concepts instead
                    wide_query_scores(scene_concepts, query[e], ids, probs, n, dense_p, cand, qpred)
                else:
                    for j in range(kq):
                        qpred[j] = query_score(scene_concepts[query[e, j]], ids, probs, n)
                # synonyms share their test-bank labels: add up each class's weight, then spread it
                n_cls = add_class_weights(ids, probs, n, classes, class_w, class_list)
                if wide:
                    if certify:
                        out_ap[e], out_ap_bound[e] = test_bank_ap_certified(
                            class_list[:n_cls], class_w, cls_ptr, cls_idx, scene_ptr, scene_cls, truth, n_pos, n_test,
                            ap_tolerance, max_deg, scores, mark, touched, tops, queue, stats, speculative_share,
                            defer, dom)
                    else:
                        out_ap[e] = test_bank_ap_wide(class_list[:n_cls], class_w, cls_ptr, cls_idx, scene_ptr,
                                                      scene_cls, truth, n_pos, n_test, scores, mark, touched,
                                                      speculative_share, defer, dom)
                    if out_ap[e] == DEFERRED:  # its class weights wait for score_deferred
                        for q in range(n_cls):
                            defer_w[e, class_list[q]] = class_w[class_list[q]]
                    for q in range(n_cls):
                        class_w[class_list[q]] = 0.0
                else:
                    for q in range(n_cls):
                        cls_weight[q] = class_w[class_list[q]]
                        class_w[class_list[q]] = 0.0
                    out_ap[e] = test_bank_ap(class_list[:n_cls], cls_weight[:n_cls], class_rep, test_sig, truth,
                                             n_pos, n_test, scores, touched, dom)
            out_cba[e] = class_balanced_accuracy_kernel(qpred, query_labels[e])
            ent = 0.0
            for j in range(kq):
                ent += _binary_entropy(qpred[j])
            out_pred_ent[e] = ent / kq
