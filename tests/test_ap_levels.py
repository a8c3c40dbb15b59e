"""AP by level (no sort of the scores) against scikit-learn's ``average_precision_score`` and
against the sorted slow twin: ties, all-equal scores, one positive, none, large sizes."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.metrics import average_precision_score

from bayes_concepts.bits import pack_bits, read_only
from bayes_concepts.metrics import (average_precision, average_precision_dense, average_precision_sorted,
                                    average_precision_sparse, descending_levels, radix_sort_descending)
from bayes_concepts.oracles.kernels import average_precision_every_score
from conftest import EVERYWHERE


def sk(scores, labels):
    return float(average_precision_score(np.asarray(labels, int), np.asarray(scores, np.float64)))


# few distinct values steer the draws into ties; the float grid adds extremes, signs and -0.0
GRID = st.sampled_from([0.0, -0.0, 1.0, 0.5, 0.25, 1e-300, -1e-300, 5e-324, 1e300, -3.5, 0.1 + 0.2, 0.3])


@st.composite
def scored(draw, max_size=400):
    n = draw(st.integers(1, max_size))
    labels = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    how = draw(st.sampled_from(["grid", "few", "any", "equal"]))
    if how == "grid":
        scores = draw(st.lists(GRID, min_size=n, max_size=n))
    elif how == "few":
        levels = draw(st.lists(st.floats(0, 1), min_size=1, max_size=4))
        scores = [levels[i] for i in draw(st.lists(st.integers(0, len(levels) - 1), min_size=n, max_size=n))]
    elif how == "equal":
        scores = [draw(st.floats(-1e6, 1e6))] * n
    else:
        scores = draw(st.lists(st.floats(-1e300, 1e300), min_size=n, max_size=n))
    return np.array(scores, np.float64), labels


@settings(max_examples=400, deadline=None)
@given(scored())
def test_ap_by_level_is_the_sorted_float_and_scikit_learns_value(case):
    scores, labels = case
    if not labels.any():
        assert math.isnan(average_precision(scores, labels))
        return
    by_level = average_precision_dense(scores, labels)
    assert by_level == average_precision_sorted(scores, labels)  # bit for bit
    assert by_level == pytest.approx(sk(scores, labels), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e300, 1e300) | GRID, max_size=300))
def test_radix_sort_orders_like_a_sort(values):
    v = np.array(values, np.float64)
    got = radix_sort_descending(v)
    assert np.array_equal(got, -np.sort(-v))
    u, cnt, nu = descending_levels(v)
    assert cnt[:nu].sum() == len(v) and np.all(np.diff(u[:nu]) < 0)


def test_all_equal_scores_one_positive_and_none():
    assert average_precision(np.full(10, 0.7), np.eye(10, dtype=bool)[3]) == 0.1  # one threshold: P/n
    assert average_precision([0.2, 0.9, 0.4], [0, 1, 0]) == 1.0
    assert average_precision([0.2, 0.9, 0.4], [1, 0, 0]) == pytest.approx(1 / 3)
    # no positive: NaN (scikit-learn warns and returns 0.0 there)
    assert math.isnan(average_precision([0.5, 0.5], [0, 0]))
    with pytest.raises(ValueError, match="NaN"):
        average_precision([0.5, np.nan], [1, 0])


@pytest.mark.parametrize("n,share", [(1_000_000, 0.001), (200_000, 0.3), (60_879, 0.05)])
def test_the_largest_sizes(n, share):
    rng = np.random.default_rng(n)
    scores = np.round(rng.random(n) ** 6, 5)  # many ties among many levels
    labels = rng.random(n) < share
    assert average_precision_dense(scores, labels) == average_precision_sorted(scores, labels)
    assert average_precision_dense(scores, labels) == pytest.approx(sk(scores, labels), abs=1e-10)
    # the sparse AP (items scoring 0 left out) and the kernels' every-score AP: the same float
    scores[scores < 1e-4] = 0.0
    truth = read_only(pack_bits(labels))  # as the oracles' kernel passes the labels, and an empty domain
    touched = np.flatnonzero(scores)
    sparse = average_precision_sparse(touched, scores, truth, n, int(labels.sum()))
    assert sparse == average_precision_every_score(scores, truth, EVERYWHERE)
    assert sparse == pytest.approx(sk(scores, labels), abs=1e-10)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), k=st.sampled_from([47, 48, 49, 200, 2000, 3000]),
       distinct=st.sampled_from([1, 2, 5, 136, 1023, 1024, 1025, 2500]), with_zeros=st.booleans())
def test_descending_levels_equal_the_sorted_unique_values_and_counts(seed, k, distinct, with_zeros):
    """Grouped in a hash table (up to GROUPED_MAX_LEVELS distinct values), by the radix sort
    beyond, or by insertion below RADIX_MIN: each is numpy's sorted unique values and counts,
    with 0.0 and -0.0 one level."""
    from bayes_concepts.metrics import GROUPED_MAX_LEVELS, RADIX_MIN
    assert RADIX_MIN == 48 and GROUPED_MAX_LEVELS == 1024  # the sizes drawn straddle both
    rng = np.random.default_rng(seed)
    pool = rng.random(distinct) ** 3
    v = pool[rng.integers(0, distinct, k)]
    if with_zeros:
        v[rng.random(k) < 0.1] = 0.0
        v[rng.random(k) < 0.1] = -0.0
    u, cnt, nu = descending_levels(v)
    want, counts = np.unique(v, return_counts=True)  # 0.0 and -0.0 compare equal: one value
    assert nu == len(want)
    assert np.array_equal(u[:nu], want[::-1]) and np.array_equal(cnt[:nu], counts[::-1])
