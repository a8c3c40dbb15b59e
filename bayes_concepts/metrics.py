"""Metrics: class-balanced accuracy on the query set, average precision on the test bank.

``average_precision`` follows ``sklearn.metrics.average_precision_score``
exactly, ties included: items with equal scores form one threshold, and
AP = Σ_k (R_k − R_{k−1}) · P_k over the distinct score values in decreasing
order (the tests check it against scikit-learn, which is not a dependency).
"""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def average_precision_dense(scores, labels):
    """AP of ``scores`` (float (n,)) against binary ``labels`` (n,); NaN if no positive."""
    n = scores.shape[0]
    n_pos = 0
    for i in range(n):
        if labels[i]:
            n_pos += 1
    if n_pos == 0:
        return np.nan
    order = np.argsort(-scores, kind="mergesort")
    ap = 0.0
    tp = 0
    seen = 0
    i = 0
    while i < n:
        j = i
        tp_group = 0
        while j < n and scores[order[j]] == scores[order[i]]:
            if labels[order[j]]:
                tp_group += 1
            j += 1
        seen += j - i
        tp += tp_group
        if tp_group:
            ap += (tp / seen) * (tp_group / n_pos)
        i = j
    return ap


@numba.njit(cache=True)
def average_precision_sparse(touched, scores, labels_row, n_items, n_pos):
    """AP when only the items ``touched`` (int (m,)) have non-zero ``scores`` (indexed by item)
    and all other items of the ``n_items`` score 0.  ``labels_row`` is the packed uint64
    label bitset of the items; ``n_pos`` its popcount.

    Only thresholds at which a positive sits add to AP, so it suffices to count, for each
    distinct positive score u, the items scoring >= u: one binary search per item among
    the k distinct positive scores, O(m log k), with no sort of all m scores.
    """
    if n_pos == 0:
        return np.nan
    m = touched.shape[0]
    pv = np.empty(m)
    k = 0
    for i in range(m):
        t = touched[i]
        if (labels_row[t >> 6] >> np.uint64(t & 63)) & np.uint64(1):
            pv[k] = scores[t]
            k += 1
    ap = 0.0
    if k:
        pv = -np.sort(-pv[:k])  # descending
        u = np.empty(k)
        cnt = np.zeros(k, np.int64)
        nu = 0
        for i in range(k):
            if nu == 0 or pv[i] != u[nu - 1]:
                u[nu] = pv[i]
                nu += 1
            cnt[nu - 1] += 1
        hist = np.zeros(nu, np.int64)
        top = u[0]
        for i in range(m):
            x = scores[touched[i]]
            if x < u[nu - 1]:  # below every positive: counts at no threshold
                continue
            if x >= top:
                hist[0] += 1
                continue
            # first j with u[j] <= x (u is descending; u[0] > x >= u[nu - 1]): a search whose
            # steps do not branch on the data, so mispredictions do not pile up over m items
            base = 0
            n = nu
            while n > 1:
                half = n >> 1
                base = base + half if u[base + half - 1] > x else base
                n -= half
            hist[base] += 1
        n_ge = 0
        tp_ge = 0
        for j in range(nu):
            n_ge += hist[j]
            tp_ge += cnt[j]
            ap += (tp_ge / n_ge) * (cnt[j] / n_pos)
    rest = n_pos - k
    if rest > 0:  # the zero-score items form the last threshold, where every item is included
        ap += (n_pos / n_items) * (rest / n_pos)
    return ap


@numba.njit(cache=True)
def class_balanced_accuracy_kernel(probs, labels):
    """Mean of the accuracy on positives and on negatives (classes present only);
    an item is predicted positive iff p > 0.5."""
    n_p = n_n = 0
    ok_p = ok_n = 0
    for i in range(probs.shape[0]):
        pred = probs[i] > 0.5
        if labels[i]:
            n_p += 1
            ok_p += pred
        else:
            n_n += 1
            ok_n += not pred
    if n_p and n_n:
        return 0.5 * (ok_p / n_p + ok_n / n_n)
    if n_p:
        return ok_p / n_p
    if n_n:
        return ok_n / n_n
    return np.nan


def average_precision(scores, labels) -> float:
    """Average precision of ``scores`` for binary ``labels`` (sklearn's definition, ties as one
    threshold).  Returns NaN when there is no positive label."""
    return float(average_precision_dense(np.asarray(scores, np.float64), np.asarray(labels, np.bool_)))


def class_balanced_accuracy(probs, labels) -> float:
    """Class-balanced accuracy of predicting positive iff ``probs > 0.5``."""
    return float(class_balanced_accuracy_kernel(np.asarray(probs, np.float64), np.asarray(labels, np.bool_)))


def mean_average_precision(ap_values) -> float:
    """mAP: the mean of per-episode APs (NaNs, i.e. episodes without positives, ignored)."""
    return float(np.nanmean(np.asarray(ap_values, np.float64)))
