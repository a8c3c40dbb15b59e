"""The narrow path's test-bank AP (``kernels.test_bank_ap``) against its slow, obvious twin.

The kernel scores only the scenes some heavy class covers, a word of scenes at a time, after
bounding the positives' smallest score from their cover; the twin scores every scene by adding
each covering class's weight in the posterior's class order (the order the kernel promises),
then computes AP with ties as one threshold in the same arithmetic as ``ap_from_levels``.  The
two must agree bit for bit: the floats decide ties, and ties decide AP.
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st
from sklearn.metrics import average_precision_score

from bayes_concepts.bits import pack_bits, read_only
from bayes_concepts.oracles import kernels as K


def twin_ap(cover, cls_list, weights, labels, dom):
    """AP of the predictive Σ_q weights[q]·cover[t, cls_list[q]] over the scenes of ``dom``."""
    n_pos = int(labels.sum())
    if n_pos == 0:
        return float("nan")
    items = np.flatnonzero(dom)
    scores = {}
    for t in items:
        s = 0.0
        for q, c in enumerate(cls_list):
            if cover[t, c]:
                s += float(weights[q])
        scores[int(t)] = s
    levels = sorted({scores[int(t)] for t in items if labels[t] and scores[int(t)] > 0.0}, reverse=True)
    ap = 0.0
    tp_ge = 0
    for u in levels:
        n_ge = sum(1 for t in items if scores[int(t)] >= u)
        cnt = sum(1 for t in items if labels[t] and scores[int(t)] == u)
        tp_ge += cnt
        ap += (tp_ge / n_ge) * (cnt / n_pos)
    rest = n_pos - tp_ge
    if rest > 0:
        ap += (n_pos / len(items)) * (rest / n_pos)
    return ap


def kernel_ap(cover, cls_list, weights, labels, dom):
    n_test, n_classes = cover.shape
    test_sig = read_only(pack_bits(cover.T))  # one row per class, read-only as the oracles' kernel passes it
    rep = np.arange(n_classes, dtype=np.int64)
    scores, touched = np.zeros(n_test), np.empty(n_test, np.int64)
    packed_dom = K.every_scene() if dom.all() else pack_bits(dom)
    ap = K.test_bank_ap(np.asarray(cls_list, np.int64), np.asarray(weights, np.float64), rep, test_sig,
                        read_only(pack_bits(labels)), int(labels.sum()), n_test, scores, touched, packed_dom)
    assert not scores.any()  # the work array comes back as it went in
    return ap


WEIGHT_KINDS = ("spread", "one_dominant", "ties", "tiny", "zeros")


def draw_weights(rng, n, kind):
    if kind == "one_dominant":
        w = rng.random(n) * 1e-6
        w[rng.integers(n)] = 1.0
    elif kind == "ties":
        w = np.full(n, 1.0 / 7.0)
        w[: n // 3] = 0.1
    elif kind == "tiny":
        w = np.exp(-rng.random(n) * 700.0)  # down to ~1e-304
    elif kind == "zeros":
        w = rng.random(n)
        w[rng.random(n) < 0.4] = 0.0
    else:
        w = rng.random(n) ** 4
    return w / w.sum() if w.sum() > 0 else w


@settings(max_examples=300, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1),
       n_test=st.sampled_from([1, 2, 63, 64, 65, 127, 130, 300]),
       n_classes=st.integers(1, 40),
       density=st.sampled_from([0.0, 0.02, 0.2, 0.6, 1.0]),
       kind=st.sampled_from(WEIGHT_KINDS),
       share=st.sampled_from([0.0, 0.05, 0.3, 1.0]),
       with_domain=st.booleans())
def test_narrow_ap_equals_the_twin_bit_for_bit(seed, n_test, n_classes, density, kind, share, with_domain):
    rng = np.random.default_rng(seed)
    cover = rng.random((n_test, n_classes)) < rng.random(n_classes) * density * 2
    if n_classes > 1 and rng.random() < 0.3:
        cover[:, 0] = True  # a class covering every scene
    labels = rng.random(n_test) < share
    dom = np.ones(n_test, bool)
    if with_domain:
        dom = labels | (rng.random(n_test) < 0.5)  # the positives lie within the domain
    cls_list = rng.permutation(n_classes)[: int(rng.integers(1, n_classes + 1))]
    weights = draw_weights(rng, len(cls_list), kind)
    got = kernel_ap(cover, cls_list, weights, labels, dom)
    want = twin_ap(cover, cls_list, weights, labels, dom)
    if np.isnan(want):
        assert np.isnan(got)
    else:
        assert got == want, (got, want)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n_test=st.sampled_from([1, 64, 65, 200]), n_classes=st.integers(1, 30),
       kind=st.sampled_from(WEIGHT_KINDS), touched_share=st.sampled_from([0.0, 0.1, 0.5, 1.0]))
def test_scores_of_touched_scenes_are_sums_in_class_order(seed, n_test, n_classes, kind, touched_share):
    """Every touched scene's score is the float of adding its covering classes' weights in class
    order (bit for bit), and the touched scenes come out listed in increasing order."""
    rng = np.random.default_rng(seed)
    cover = rng.random((n_test, n_classes)) < rng.random(n_classes)
    cls_list = rng.permutation(n_classes).astype(np.int64)
    weights = draw_weights(rng, n_classes, kind)
    weights[rng.random(n_classes) < 0.5] = 1.0 / 3.0  # many equal weights met in different orders
    chosen = rng.random(n_test) < touched_share
    touched_bits = pack_bits(chosen)
    words = np.flatnonzero(touched_bits).astype(np.int64)
    scores, touched = np.zeros(n_test), np.empty(n_test, np.int64)
    m = K._score_touched_words(cls_list, weights, np.arange(n_classes, dtype=np.int64), pack_bits(cover.T),
                               touched_bits, words, len(words), scores, touched)
    assert touched[:m].tolist() == np.flatnonzero(chosen).tolist()
    for t in range(n_test):
        want = 0.0
        if chosen[t]:
            for q, c in enumerate(cls_list):
                if cover[t, c]:
                    want += float(weights[q])
        assert scores[t] == want and np.signbit(scores[t]) == np.signbit(want), (t, scores[t], want)


def test_the_twin_is_average_precision_where_no_scores_tie():
    """The twin is AP itself: scikit-learn's on the domain's scenes, where distinct weights make
    every covered scene's score distinct."""
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(50):
        cover = rng.random((120, 12)) < 0.3
        labels = rng.random(120) < 0.3
        if not labels.any():
            continue
        cls_list = rng.permutation(12)
        weights = 2.0 ** -np.arange(1, 13)  # every subset sums to a different value
        scores = np.array([sum(weights[q] for q, c in enumerate(cls_list) if cover[t, c]) for t in range(120)])
        ours = twin_ap(cover, cls_list, weights, labels, np.ones(120, bool))
        assert abs(ours - average_precision_score(labels, scores)) < 1e-12
        checked += 1
    assert checked > 40
