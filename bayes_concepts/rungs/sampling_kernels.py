"""Numba kernels of the sampling rungs (:mod:`bayes_concepts.rungs.sampling`).

Small functions over arrays, composed by :func:`evaluate_sampled`, which scores a batch of
episodes in parallel (``prange`` over chunks of episodes; each episode has its own random
stream, so the numbers do not depend on the thread count or on how episodes are chunked):

1. :func:`episode_stream`: the splitmix64 state of episode ``index`` of a cell, from the
   cell's 64-bit key;
2. :func:`draw_distinct`: ``n`` positions drawn i.i.d. from a cumulative weight table (the
   first entry above a uniform times the total, found from a guide table in O(1) steps on
   average: the same position a binary search finds), marked in a bitset and read back ascending: the distinct draws;
3. the drawn concepts as an oracle's concept set (a bitset over concept ids) with the prior
   renormalised over them; the candidates, posterior and scores are then computed by the
   oracles' own kernels (:mod:`bayes_concepts.oracles.kernels`: support fit by AND/AND-NOT
   over per-scene concept bitsets, posterior by log-sum-exp, test-bank AP from synonym-class
   weights), so that an episode's numbers are those of an oracle over its drawn set.
"""
from __future__ import annotations

import numba
import numpy as np

from ..bits import count_bits, pop_lowest_bit
from ..metrics import class_balanced_accuracy_kernel
from ..oracles import kernels as K
from ..rng import next_u64, next_uniform

#: splitmix64's increment: episode i of a cell starts from the mixed value of key + (i + 1)·GOLDEN
GOLDEN = np.uint64(0x9E3779B97F4A7C15)

#: what an episode does when no drawn concept fits its support (the weak-empty policy's kind)
ZERO, PRIOR, REFIT = 0, 1, 2


@numba.njit(cache=True)
def episode_stream(key, index):
    """The random state (uint64 (1,)) of episode ``index`` (int >= 0) of the cell whose key is
    ``key`` (uint64): splitmix64's output mixing ``key + (index + 1)·GOLDEN``, a bijection of
    the index, so distinct episodes start from distinct states."""
    state = np.empty(1, np.uint64)
    state[0] = key + np.uint64(index) * GOLDEN
    state[0] = next_u64(state)
    return state


#: guide-table buckets per position of the cumulative table: with one, a draw walked ~2 steps
#: whose count the branch predictor could not guess (12.4 ns a draw on CLEVR's 8,459 concepts);
#: with four, most buckets hold no boundary and the walk stops at once (6.9 ns; 8: 5.7 ns, with
#: twice the table: 64 bytes a position)
GUIDE_BUCKETS = 4


@numba.njit(cache=True)
def guide_table(cum):
    """int64 (GUIDE_BUCKETS·H,): guide[b] = the first position j with cum[j] > (b / M)·cum[-1],
    for the M = GUIDE_BUCKETS·H buckets of equal prior mass (Chen and Asau's indexed search): a
    draw starts its search at its bucket's entry and walks at most a few steps (a bucket holds
    1/GUIDE_BUCKETS positions on average, plus the one it starts in)."""
    h = cum.shape[0]
    m = h * GUIDE_BUCKETS
    total = cum[h - 1]
    guide = np.empty(m, np.int64)
    j = 0
    for b in range(m):
        x = (b / m) * total
        while j < h - 1 and cum[j] <= x:
            j += 1
        guide[b] = j
    return guide


@numba.njit(inline="always", cache=True)
def _draw(cum, guide, last, u):
    """The position a uniform ``u`` in [0, 1) selects: the first j with cum[j] > u·cum[-1]
    (what a binary search of the cumulative table returns), found from the guide table's
    entry for u's bucket by walking down then up (exact whatever the rounding of the bucket);
    a u that rounds to the very top of the table selects ``last``."""
    h = cum.shape[0]
    m = guide.shape[0]
    x = u * cum[h - 1]
    b = min(np.int64(u * m), m - 1)
    j = guide[b]
    while j > 0 and cum[j - 1] > x:
        j -= 1
    while j < h and cum[j] <= x:
        j += 1
    return j if j <= last else last


def drawable_positions(cum, last: int) -> int:
    """How many positions of the cumulative table ``cum`` (float64 (H,)) a draw can select
    (:func:`_draw`): those where the table rises (cum[j] > cum[j-1], cum[-1] read as 0; a
    position whose weight rounds away in the sum is never the first entry above a uniform's
    point), and ``last``, which a uniform rounding to the top of the table selects even when
    its own weight rounded away."""
    cum = np.asarray(cum, np.float64)
    rises = np.diff(cum, prepend=0.0) > 0
    return int(np.count_nonzero(rises)) + (0 if rises[last] else 1)


@numba.njit(cache=True)
def draw_distinct(state, cum, guide, last, n, mark, out, all_drawn=-1):
    """Draw ``n`` positions i.i.d. with P(j) = (cum[j] - cum[j-1]) / cum[-1] and write the
    distinct ones, ascending, to ``out[:m]``; returns m.

    state: uint64 (1,) splitmix64 state (advanced: n uniforms of 53 bits, one per draw, or
    fewer with ``all_drawn``); cum: float64 (H,) cumulative weights (a position of weight 0 is
    never drawn); guide: int64 (GUIDE_BUCKETS·H,) its :func:`guide_table`; last: the last position of weight
    > 0; mark: uint64 (ceil(H/64),) all 0 on entry and on exit; out: int64 (H,) or longer.
    all_drawn: :func:`drawable_positions` of ``cum`` and ``last``: the draws stop once that many distinct
    positions are drawn (the rest could only draw them again, so the distinct set is that of all
    ``n`` draws; the state is then not advanced past them: only for a stream used for nothing
    else); -1 (default) always makes the ``n`` draws."""
    if all_drawn < 0 or all_drawn > n:  # fewer draws than positions: they cannot all be drawn
        for _ in range(n):
            j = _draw(cum, guide, last, next_uniform(state))
            mark[j >> 6] |= np.uint64(1) << np.uint64(j & 63)
    else:
        drawn = 0
        for _ in range(n):
            j = _draw(cum, guide, last, next_uniform(state))
            word = mark[j >> 6]
            marked = word | (np.uint64(1) << np.uint64(j & 63))
            mark[j >> 6] = marked
            drawn += marked != word  # counted without a branch: whether a draw is new is a coin flip
            if drawn == all_drawn:
                break
    m = 0
    for w in range(mark.shape[0]):
        word = mark[w]
        mark[w] = 0
        while word:
            b, word = pop_lowest_bit(word)
            out[m] = w * 64 + b
            m += 1
    return m


@numba.njit(cache=True)
def draw_ids(state, cum, guide, last, n, concepts):
    """The distinct concept ids (int64 (m,), ascending) of ``n`` i.i.d. draws from the table
    ``cum`` over ``concepts`` (int64 (H,), ascending): :func:`draw_distinct`, then ids."""
    mark = np.zeros((cum.shape[0] + 63) >> 6, np.uint64)
    pos = np.empty(cum.shape[0], np.int64)
    m = draw_distinct(state, cum, guide, last, n, mark, pos)
    ids = np.empty(m, np.int64)
    for i in range(m):
        ids[i] = concepts[pos[i]]
    return ids


@numba.njit(parallel=True, cache=True)
def episode_draws(key, first_index, n_episodes, cum, guide, last, n, concepts, ptr, ids, all_drawn=-1):
    """Every episode's distinct drawn ids as CSR: ``ids[ptr[e]:ptr[e+1]]`` (ascending) for
    episode e < n_episodes (global index ``first_index + e``).  ptr: int64 (E+1,) with ptr[0]
    = 0, filled here; ids: int64 (E·min(n, H),) or longer; all_drawn: as
    :func:`draw_distinct` (each episode's stream is its own).  What :func:`evaluate_sampled`
    draws, for inspection and tests."""
    h = cum.shape[0]
    width = min(n, h)
    counts = np.zeros(n_episodes, np.int64)
    for e in numba.prange(n_episodes):
        state = episode_stream(key, first_index + e)
        mark = np.zeros((h + 63) >> 6, np.uint64)
        pos = np.empty(h, np.int64)
        m = draw_distinct(state, cum, guide, last, n, mark, pos, all_drawn)
        for i in range(m):
            ids[e * width + i] = concepts[pos[i]]
        counts[e] = m
    # compact the fixed-width rows into CSR, in order
    at = 0
    for e in range(n_episodes):
        for i in range(counts[e]):
            ids[at + i] = ids[e * width + i]
        at += counts[e]
        ptr[e + 1] = at


@numba.njit(inline="always")
def _renormalised_prior(pos, m, log_w, concepts, omega, log_prior):
    """Set the drawn concepts (positions ``pos[:m]``) in ``omega`` and their log prior
    renormalised over them, log_w[j] - log Σ_drawn exp(log_w), in ``log_prior`` (by id)."""
    best = -np.inf
    for i in range(m):
        if log_w[pos[i]] > best:
            best = log_w[pos[i]]
    total = 0.0
    for i in range(m):
        total += np.exp(log_w[pos[i]] - best)
    log_z = best + np.log(total)
    for i in range(m):
        h = concepts[pos[i]]
        omega[h >> 6] |= np.uint64(1) << np.uint64(h & 63)
        log_prior[h] = log_w[pos[i]] - log_z


@numba.njit(parallel=True, cache=True)
def evaluate_sampled(key, first_index, n, cum, guide, last, log_w, concepts, support, support_labels, query,
                     query_labels, true_concept, scene_concepts, outside, first, second, consistent_only, policy,
                     refit_first,
                     refit_second, refit_consistent_only, test_sig, n_test, classes, n_classes, class_rep,
                     test_domains, domain_row,
                     out_ap, out_cba, out_post_ent, out_pred_ent, out_empty, out_n_candidates, out_n_hypotheses,
                     out_query_pred, all_drawn=-1):
    """Score every episode with the sampling learner.

    key: uint64, the cell's key; first_index: the global index of episode 0 (episode e uses
    :func:`episode_stream` of ``first_index + e``); n: draws per episode; cum: float64 (H,)
    cumulative prior weights over ``concepts`` (int64 (H,), ascending ids: the strong
    oracle's); guide: its :func:`guide_table`; last: the last position of weight > 0; log_w:
    float64 (H,) the same prior as log weights (any constant offset).  support/query: int64
    (E, K)/(E, Kq) row numbers of ``scene_concepts`` (uint64 (rows, ceil(n_concepts/64)));
    *_labels: int8; true_concept: int (E,).  outside: uint64 (rows, ceil(n_concepts/64)) aligned with
    ``scene_concepts`` (bit h of row s: scene s is outside concept h's question domain), or
    (0, 1) in a space without domains (:func:`~bayes_concepts.oracles.kernels.episode_candidates`:
    a drawn concept outside whose domain a support scene lies is no candidate, as in the
    oracles).  first/second/consistent_only: the likelihood's tables
    (:mod:`bayes_concepts.oracles.likelihoods`).  policy: :data:`ZERO` (all scores 0),
    :data:`PRIOR` (the prior predictive over the drawn set) or :data:`REFIT` (condition again
    with the refit_* tables) when no drawn concept fits the support.  test_sig: uint64
    (n_concepts, ceil(T/64)); classes: int (n_concepts,) synonym classes, ``n_classes`` of them;
    class_rep: a concept per class; test_domains/domain_row:
    the targets' question domains over the test bank
    (:class:`~bayes_concepts.oracles.kernels.TestBankTables`): a target's ranking is over its domain.

    Outputs (E,): out_ap (exact AP on the test bank), out_cba, out_post_ent,
    out_pred_ent (nats), out_empty (no drawn concept fits), out_n_candidates (drawn
    concepts that fit; after the refit, those the refit kept), out_n_hypotheses (distinct
    concepts drawn); out_query_pred (E, Kq).  all_drawn: as :func:`draw_distinct` (each
    episode's stream is its own and used for its draws only)."""
    n_ep = support.shape[0]
    n_concepts = classes.shape[0]
    h = cum.shape[0]
    width = min(n, h)
    hw = (n_concepts + 63) >> 6
    n_chunks = min(n_ep, 64)
    kq = query.shape[1]
    for chunk in numba.prange(n_chunks):
        mark = np.zeros((h + 63) >> 6, np.uint64)
        pos = np.empty(h, np.int64)
        omega = np.zeros(hw, np.uint64)
        log_prior = np.full(n_concepts, -np.inf)
        ids = np.empty(width, np.int64)
        logw = np.empty(width)
        probs = np.empty(width)
        class_w = np.zeros(n_classes)
        class_list = np.empty(n_classes, np.int64)
        cls_weight = np.empty(n_classes)
        scores = np.zeros(n_test)
        touched = np.empty(n_test, np.int64)
        everywhere = np.zeros(0, np.uint64)
        for e in range(chunk * n_ep // n_chunks, (chunk + 1) * n_ep // n_chunks):
            state = episode_stream(key, first_index + e)
            m = draw_distinct(state, cum, guide, last, n, mark, pos, all_drawn)
            out_n_hypotheses[e] = m
            _renormalised_prior(pos, m, log_w, concepts, omega, log_prior)
            c = K.episode_candidates(support[e], support_labels[e], scene_concepts, omega, log_prior, first, second,
                                     consistent_only, ids, logw, outside)
            empty = c == 0
            out_empty[e] = empty
            ent = np.nan
            if empty and policy == REFIT:
                c = K.episode_candidates(support[e], support_labels[e], scene_concepts, omega, log_prior,
                                         refit_first, refit_second, refit_consistent_only, ids, logw, outside)
            out_n_candidates[e] = c
            if empty and policy == PRIOR:  # the prior over the drawn set, in id order
                for i in range(m):
                    ids[i] = concepts[pos[i]]
                    logw[i] = log_prior[ids[i]]
                c = m
            truth = test_sig[true_concept[e]]
            n_pos = count_bits(truth)
            dom = K.target_domain(test_domains, domain_row, true_concept[e], everywhere)
            qpred = out_query_pred[e]
            if c == 0:  # nothing to go on: every score 0 (ties at the last threshold)
                for j in range(kq):
                    qpred[j] = 0.0
                out_ap[e] = n_pos / K.domain_size(dom, n_test) if n_pos else np.nan
            else:
                ent = K.normalise(logw, c, probs)
                for j in range(kq):
                    qpred[j] = K.query_score(scene_concepts[query[e, j]], ids, probs, c)
                # synonyms share their test-bank labels: each class's weight, then its scenes
                n_cls = K.add_class_weights(ids, probs, c, classes, class_w, class_list)
                for q in range(n_cls):
                    cls_weight[q] = class_w[class_list[q]]
                    class_w[class_list[q]] = 0.0
                out_ap[e] = K.test_bank_ap(class_list[:n_cls], cls_weight[:n_cls], class_rep, test_sig, truth,
                                           n_pos, n_test, scores, touched, dom)
            out_post_ent[e] = ent
            out_cba[e] = class_balanced_accuracy_kernel(qpred, query_labels[e])
            h_sum = 0.0
            for j in range(kq):
                p = qpred[j]
                if 0.0 < p < 1.0:
                    h_sum -= p * np.log(p) + (1.0 - p) * np.log(1.0 - p)
            out_pred_ent[e] = h_sum / kq
            for i in range(m):  # leave the concept set empty for the next episode
                omega[concepts[pos[i]] >> 6] = 0
