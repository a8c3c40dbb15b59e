"""Metrics: class-balanced accuracy on the query set, average precision on the test bank.

``average_precision`` follows ``sklearn.metrics.average_precision_score``
exactly, ties included: items with equal scores form one threshold, and
AP = Σ_k (R_k − R_{k−1}) · P_k over the distinct score values in decreasing
order (the tests check it against scikit-learn, which is not a dependency).

It is computed without sorting the scores: the positives' distinct scores are the only
thresholds that add to AP (the *levels*), so AP needs, per level, how many items score at
or above it.  The positives' scores are put in order by a radix sort of their bits
(:func:`descending_levels`), and each item finds its level in a table indexed by the top bits
of its score's key (:func:`level_table`, :func:`level_of`): O(n + P) for n items and P
positives, against O(n log n) for a sort (:func:`average_precision_sorted`, the slow twin the
tests compare it with, keeps the sort).

``average_precision_interval`` bounds that AP when each score is only known to lie in an
interval: the certificate behind the oracles' AP tolerance
(:attr:`bayes_concepts.oracles.OracleSettings.ap_tolerance`).
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic


@numba.njit(cache=True)
def average_precision_sorted(scores, labels):
    """AP of ``scores`` (float (n,)) against binary ``labels`` (n,) by a stable sort of the
    scores, tie group by tie group; NaN if no positive.  The slow twin of
    :func:`average_precision_dense` (the same float: the same terms, summed in the same order)."""
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


#: below this many values :func:`descending_levels` sorts by insertion (a radix sort's
#: passes cost more than a few dozen comparisons)
RADIX_MIN = 48
_SIGN = np.uint64(1) << np.uint64(63)


@intrinsic
def float_bits(typingctx, x):
    """The bits of the float64 ``x`` as a uint64 (a bit cast: no memory, no arithmetic)."""
    if not isinstance(x, types.Float) or x.bitwidth != 64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.uint64))
    return types.uint64(types.float64), codegen


@numba.njit(inline="always")
def order_key(bits):
    """A uint64 that never decreases as the float64 whose bits are ``bits`` grows (IEEE 754:
    a positive float's bits grow with it, a negative's shrink; -0.0 gets 0.0's key: equal
    floats, equal keys)."""
    if bits == _SIGN:
        return _SIGN
    if bits & _SIGN:
        return ~bits
    return bits | _SIGN


@numba.njit(cache=True)
def radix_sort_descending(values):
    """``values`` (float64 (k,), no NaN) sorted in descending order, without comparisons:
    a least-significant-digit radix sort of their :func:`order_key` in 8-bit digits, skipping
    the digits every key shares (scores in [0, 1] share most of the top ones).  Fewer than
    :data:`RADIX_MIN` values are sorted by insertion."""
    k = values.shape[0]
    out = values.copy()
    if k < RADIX_MIN:
        for i in range(1, k):
            x = out[i]
            j = i - 1
            while j >= 0 and out[j] < x:
                out[j + 1] = out[j]
                j -= 1
            out[j + 1] = x
        return out
    bits = values.view(np.uint64)
    keys = np.empty(k, np.uint64)
    for i in range(k):
        keys[i] = ~order_key(bits[i])  # ascending in ~key is descending in value
    tmp = np.empty(k, np.uint64)
    count = np.empty(257, np.int64)
    for p in range(8):
        shift = np.uint64(8 * p)
        count[:] = 0
        for i in range(k):
            count[((keys[i] >> shift) & np.uint64(255)) + np.uint64(1)] += 1
        if count[((keys[0] >> shift) & np.uint64(255)) + np.uint64(1)] == k:
            continue  # every key has this digit
        for d in range(256):
            count[d + 1] += count[d]
        for i in range(k):
            d = (keys[i] >> shift) & np.uint64(255)
            tmp[count[d]] = keys[i]
            count[d] += 1
        keys, tmp = tmp, keys
    sorted_bits = np.empty(k, np.uint64)
    for i in range(k):
        key = ~keys[i]
        sorted_bits[i] = key & ~_SIGN if key & _SIGN else ~key
    return sorted_bits.view(np.float64)


#: :func:`descending_levels` groups equal values in a hash table up to this many distinct ones
GROUPED_MAX_LEVELS = 1024


@numba.njit(inline="always")
def _grouped_levels(values, u, cnt):
    """:func:`descending_levels` by grouping: each distinct value (by :func:`order_key`: equal
    floats, one group) counted in an open-addressing table, then only the distinct values put in
    order.  Writes ``u[:nu]``, ``cnt[:nu]`` and returns nu, or -1 (``u``/``cnt`` then garbage)
    when the values take more than :data:`GROUPED_MAX_LEVELS` distinct ones."""
    k = values.shape[0]
    cap = min(k, GROUPED_MAX_LEVELS)
    n_bits = 4
    while (1 << n_bits) < 2 * cap:
        n_bits += 1
    shift = np.uint64(64 - n_bits)
    mask = np.int64((1 << n_bits) - 1)
    slot = np.zeros(1 << n_bits, np.int32)  # 0: empty; g + 1: group g
    keys = np.empty(cap, np.uint64)
    first = np.empty(cap, np.int64)  # a value of the group, by its index in ``values``
    counts = np.zeros(cap, np.int64)
    d = 0
    for i in range(k):
        key = order_key(float_bits(np.float64(values[i])))
        h = np.int64((key * np.uint64(0x9E3779B97F4A7C15)) >> shift)
        while True:
            s = slot[h]
            if s == 0:
                if d == cap:
                    return -1
                keys[d] = key
                first[d] = i
                slot[h] = d + 1
                counts[d] += 1
                d += 1
                break
            if keys[s - 1] == key:
                counts[s - 1] += 1
                break
            h = (h + np.int64(1)) & mask
    order = np.argsort(keys[:d])
    for j in range(d):
        g = order[d - 1 - j]
        u[j] = values[first[g]]
        cnt[j] = counts[g]
    return d


@numba.njit(cache=True)
def descending_levels(values):
    """``(u, cnt, nu)``: the distinct values of ``values`` (float64 (k,)) in descending order,
    ``u[:nu]``, and how many times each occurs, ``cnt[:nu]`` (int64) -- the levels at which
    an AP has a threshold when ``values`` are the positives' scores.  Put in order by
    :func:`radix_sort_descending` (no comparison sort)."""
    k = values.shape[0]
    u = np.empty(k)
    cnt = np.zeros(k, np.int64)
    if k >= RADIX_MIN:
        nu = _grouped_levels(values, u, cnt)
        if nu >= 0:
            return u, cnt, nu
        cnt[:] = 0
    pv = radix_sort_descending(values)
    nu = 0
    for i in range(k):
        if nu == 0 or pv[i] != u[nu - 1]:
            u[nu] = pv[i]
            nu += 1
        cnt[nu - 1] += 1
    return u, cnt, nu


@numba.njit(cache=True)
def ap_from_levels(hist, cnt, nu, n_pos, n_items):
    """AP from counts per level: ``cnt[j]`` positives score u_j (the positives' distinct
    scores above 0, descending: :func:`descending_levels`), ``hist[j]`` items (positives
    included) score in [u_j, u_{j-1}); the positives not counted score 0 and form the last
    threshold, where all ``n_items`` items are included."""
    ap = 0.0
    n_ge = 0
    tp_ge = 0
    for j in range(nu):
        n_ge += hist[j]
        tp_ge += cnt[j]
        ap += (tp_ge / n_ge) * (cnt[j] / n_pos)
    rest = n_pos - tp_ge
    if rest > 0:
        ap += (n_pos / n_items) * (rest / n_pos)
    return ap


#: up to this many levels the APs search them (:func:`level_search`: a few branch-free steps
#: beat the table's scan, whose branch depends on the data); above, they read the table
TABLE_MIN_LEVELS = 32


@numba.njit(cache=True)
def level_table(u, nu):
    """``(first, lo_key, shift)``: a table that finds an item's level in O(1) on average.

    ``u[:nu]`` are the levels, descending.  An item's key (:func:`order_key` of its bits)
    shifted right by ``shift`` indexes ``first``, of about 4·nu + 16 entries: ``first[q]`` is
    the first level whose key, so shifted, is <= q.  :func:`level_of` scans from there."""
    ub = u[:nu].copy().view(np.uint64)
    lo_key = order_key(ub[nu - 1])
    span = order_key(ub[0]) - lo_key
    shift = np.uint64(0)
    while (span >> shift) > np.uint64(4 * nu + 16):
        shift += np.uint64(1)
    n_keys = int(span >> shift) + 1
    first = np.empty(n_keys, np.int64)
    j = 0
    for q in range(n_keys - 1, -1, -1):
        while j < nu and int((order_key(ub[j]) - lo_key) >> shift) > q:
            j += 1
        first[q] = j
    return first, lo_key, shift


@numba.njit(inline="always")
def level_search(u, nu, x):
    """:func:`level_of` by a search whose steps do not branch on the data: mispredictions do not
    pile up over many items, and a few levels (up to :data:`TABLE_MIN_LEVELS`) take a few steps."""
    if x >= u[0]:
        return 0
    if x < u[nu - 1]:
        return nu
    base = 0
    n = nu
    while n > 1:
        half = n >> 1
        base = base + half if u[base + half - 1] > x else base
        n -= half
    return base


@numba.njit(inline="always")
def level_of(u, nu, first, lo_key, shift, x):
    """The first level j (``u`` descending) with u[j] <= x (a float64), ``nu`` if x is below
    every level; ``first``/``lo_key``/``shift``: :func:`level_table`.
    Levels before ``first[q]`` have a higher key (so are > x), levels from ``first[q - 1]`` on
    a lower one (so are < x): the answer is in [first[q], first[q - 1]], scanned, or searched
    when more than 8 levels share the key."""
    if x >= u[0]:
        return 0
    if x < u[nu - 1]:
        return nu
    q = int((order_key(float_bits(x)) - lo_key) >> shift)
    lo = first[q]
    hi = first[q - 1] if q > 0 else nu
    if hi - lo > 8:
        return lo + first_at_most(u[lo:hi], hi - lo, x)
    j = lo
    while j < hi and u[j] > x:
        j += 1
    return j


@numba.njit(cache=True)
def average_precision_dense(scores, labels):
    """AP of ``scores`` (float64 (n,), C-contiguous, no NaN) against binary ``labels`` (n,);
    NaN if no positive.  No sort of the scores: the positives' distinct scores are the levels
    (:func:`descending_levels`), every item is counted at its level (:func:`level_table`), and
    :func:`ap_from_levels` sums the precisions -- the float :func:`average_precision_sorted`
    returns (the same terms in the same order)."""
    n = scores.shape[0]
    n_pos = 0
    for i in range(n):
        if labels[i]:
            n_pos += 1
    if n_pos == 0:
        return np.nan
    pv = np.empty(n_pos)
    k = 0
    for i in range(n):
        if labels[i]:
            pv[k] = scores[i]
            k += 1
    u, cnt, nu = descending_levels(pv)
    first, lo_key, shift = level_table(u, nu)
    hist = np.zeros(nu + 1, np.int64)
    if nu <= TABLE_MIN_LEVELS:
        for i in range(n):
            hist[level_search(u, nu, np.float64(scores[i]))] += 1
    else:
        for i in range(n):
            hist[level_of(u, nu, first, lo_key, shift, np.float64(scores[i]))] += 1
    return ap_from_levels(hist, cnt, nu, n_pos, n)


@numba.njit(cache=True)
def average_precision_sparse(touched, scores, labels_row, n_items, n_pos):
    """AP when only the items ``touched`` (int (m,)) have non-zero ``scores`` (indexed by item)
    and all other items of the ``n_items`` score 0.  ``labels_row`` is the packed uint64
    label bitset of the items; ``n_pos`` its popcount.

    Only thresholds at which a positive sits add to AP, so it suffices to count, for each
    distinct positive score u, the items scoring >= u: each item's level found in a table
    (:func:`level_table`), O(m + k), with no sort of the m scores.
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
    if k:
        u, cnt, nu = descending_levels(pv[:k])
        first, lo_key, shift = level_table(u, nu)
        hist = np.zeros(nu + 1, np.int64)  # hist[nu]: below every positive, at no threshold
        if nu <= TABLE_MIN_LEVELS:
            for i in range(m):
                hist[level_search(u, nu, np.float64(scores[touched[i]]))] += 1
        else:
            for i in range(m):
                hist[level_of(u, nu, first, lo_key, shift, np.float64(scores[touched[i]]))] += 1
        return ap_from_levels(hist, cnt, nu, n_pos, n_items)
    return ap_from_levels(np.zeros(0, np.int64), np.zeros(0, np.int64), 0, n_pos, n_items)


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
    threshold), without sorting the scores (:func:`average_precision_dense`).  Returns NaN when
    there is no positive label (scikit-learn warns and returns 0 there); a NaN score is a
    ValueError."""
    scores = np.ascontiguousarray(scores, np.float64)
    if np.isnan(scores).any():
        raise ValueError("average_precision: a score is NaN")
    return float(average_precision_dense(scores, np.asarray(labels, np.bool_)))


def class_balanced_accuracy(probs, labels) -> float:
    """Class-balanced accuracy of predicting positive iff ``probs > 0.5``."""
    return float(class_balanced_accuracy_kernel(np.asarray(probs, np.float64), np.asarray(labels, np.bool_)))


def mean_average_precision(ap_values) -> float:
    """mAP: the mean of per-episode APs (NaNs, i.e. episodes without positives, ignored)."""
    return float(np.nanmean(np.asarray(ap_values, np.float64)))


# ------------------------------------------------------------------ AP from score intervals
@numba.njit(cache=True)
def first_at_most(u, nu, x):
    """Index of the first of the descending values ``u[0] > u[1] > ... > u[nu-1]`` that is
    <= ``x``; ``nu`` when ``x`` is below all of them.  A binary search, O(log nu)."""
    if nu == 0 or x < u[nu - 1]:
        return nu
    if x >= u[0]:
        return 0
    lo, hi = 0, nu - 1  # u[lo] > x >= u[hi]
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if u[mid] > x:
            lo = mid
        else:
            hi = mid
    return hi


@numba.njit(cache=True)
def average_precision_interval_dense(lo, hi, labels):
    """``(lower, upper)``: bounds on the AP of every score vector s with lo <= s <= hi (float
    (n,) each, item by item) against binary ``labels`` (n,); NaN, NaN if there is no positive.

    Write AP (scikit-learn's definition, ties as one threshold) as a mean over the positives,
    AP(s) = (1/P) Σ_p f(A_p, B_p) with f(a, b) = a / (a + b), A_p = #{positives q: s_q >= s_p}
    (p included) and B_p = #{negatives n: s_n >= s_p}: the precision at the threshold s_p,
    where every item tied with p is already counted.  f grows with a and falls with b.  For a
    positive p and any s in the box:

    * a positive q with lo_q >= hi_p has s_q >= lo_q >= hi_p >= s_p, so A_p >= A⁻_p = 1 +
      #{q != p: lo_q >= hi_p}; a positive q with s_q >= s_p has hi_q >= s_q >= s_p >= lo_p, so
      A_p <= A⁺_p = #{q: hi_q >= lo_p};
    * likewise B_p >= B⁻_p = #{n: lo_n >= hi_p} and B_p <= B⁺_p = #{n: hi_n >= lo_p}.

    Hence f(A⁻_p, B⁺_p) <= f(A_p, B_p) <= f(A⁺_p, B⁻_p) for every p, and summing over the
    positives, lower <= AP(s) <= upper.  Ties need no care: every count uses >=, as the
    definition does.  With lo = hi both bounds are AP(lo) itself.  With exact positives
    (lo_p = hi_p) the bounds are the AP with every negative at its hi (lower) and at its lo
    (upper), and lowering one negative's score can only drop it from some B_p, which never
    lowers AP.  The same is *not* true of raising a positive once ties are allowed: a
    positive that leaves a tie with another positive, or joins a tie with a negative, can
    lower AP (labels 0 0 0 0 0 1 1 with scores 0.9 ×5, 0.5, 0.5: AP 2/7; the last positive
    raised to 0.6: AP 0.226), so positives at lo against negatives at hi is no lower bound
    when positives are intervals.  That is why A⁻ and A⁺ compare against the other end of
    p's own interval."""
    n = lo.shape[0]
    n_pos = 0
    for i in range(n):
        if labels[i]:
            n_pos += 1
    if n_pos == 0:
        return np.nan, np.nan
    pos_lo = np.empty(n_pos)
    pos_hi = np.empty(n_pos)
    neg_lo = np.empty(n - n_pos)
    neg_hi = np.empty(n - n_pos)
    a = b = 0
    for i in range(n):
        if labels[i]:
            pos_lo[a] = lo[i]
            pos_hi[a] = hi[i]
            a += 1
        else:
            neg_lo[b] = lo[i]
            neg_hi[b] = hi[i]
            b += 1
    pos_lo_sorted = np.sort(pos_lo)
    pos_hi_sorted = np.sort(pos_hi)
    neg_lo_sorted = np.sort(neg_lo)
    neg_hi_sorted = np.sort(neg_hi)
    n_neg = n - n_pos
    lower = 0.0
    upper = 0.0
    for p in range(n_pos):
        # counts of values >= x in a sorted array: its length minus the first index >= x
        a_lo = n_pos - np.searchsorted(pos_lo_sorted, pos_hi[p], side="left")
        if pos_lo[p] < pos_hi[p]:  # p itself is not among them: add it
            a_lo += 1
        a_hi = n_pos - np.searchsorted(pos_hi_sorted, pos_lo[p], side="left")
        b_lo = n_neg - np.searchsorted(neg_lo_sorted, pos_hi[p], side="left")
        b_hi = n_neg - np.searchsorted(neg_hi_sorted, pos_lo[p], side="left")
        lower += a_lo / (a_lo + b_hi)
        upper += a_hi / (a_hi + b_lo)
    return lower / n_pos, upper / n_pos


def average_precision_interval(lo, hi, labels) -> tuple:
    """``(lower, upper)`` bounds on the average precision of any scores s with ``lo <= s <= hi``
    (float (n,) each) for binary ``labels`` (n,) (scikit-learn's definition, ties as one
    threshold; the proof is in :func:`average_precision_interval_dense`).  ``lo == hi`` gives
    the AP of those scores twice (up to float rounding of the sum, ~1e-16).  NaN, NaN when
    there is no positive label; a ``lo`` above its ``hi`` is a ValueError."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    labels = np.asarray(labels, np.bool_)
    if not lo.shape == hi.shape == labels.shape or lo.ndim != 1:
        raise ValueError(f"lo, hi and labels must be 1-d of one length, got shapes {lo.shape}, {hi.shape}, "
                         f"{labels.shape}")
    if np.isnan(lo).any() or np.isnan(hi).any() or (lo > hi).any():
        raise ValueError("every interval needs lo <= hi (and no NaN)")
    lower, upper = average_precision_interval_dense(lo, hi, labels)
    return float(lower), float(upper)
