"""Metrics against scikit-learn: average precision (dense and sparse) and class-balanced accuracy.

scikit-learn is a test-only dependency.  Documented differences from scikit-learn:

* no positive label: our AP is NaN (scikit-learn warns and returns 0.0);
* empty input: our CBA is NaN (scikit-learn raises);
* CBA predicts positive iff p > 0.5, so p = 0.5 and p = NaN are negative predictions.
"""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, balanced_accuracy_score

from bayes_concepts.metrics import (average_precision, average_precision_dense, average_precision_sparse,
                                    class_balanced_accuracy, class_balanced_accuracy_kernel,
                                    mean_average_precision)
from bayes_concepts.scenes import pack_bits

SETTINGS = dict(deadline=None, derandomize=True)


def sk_ap(scores, labels) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(average_precision_score(np.asarray(labels, int), np.asarray(scores, np.float64)))


def sk_cba(probs, labels) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "y_pred contains classes not in y_true": that class is ignored
        return float(balanced_accuracy_score(np.asarray(labels, bool), np.asarray(probs) > 0.5))


# --------------------------------------------------------------------------- strategies
@st.composite
def tied_vectors(draw, min_size=1, max_size=60, nonnegative=False, zeros=False):
    """(scores, labels) with few distinct score values (heavy ties) and at least one positive."""
    n = draw(st.integers(min_size, max_size))
    lo = 0.0 if nonnegative else -1e3
    level = st.one_of(st.sampled_from([0.0, 0.5, 1.0, 1e-300, 0.1 + 0.2, 0.3]),
                      st.floats(lo, 1e3, allow_nan=False, allow_infinity=False))
    levels = draw(st.lists(level, min_size=1, max_size=draw(st.integers(1, 6))))
    if zeros:
        levels = [abs(v) for v in levels] + [0.0] * draw(st.integers(1, 4))  # many exact zeros
    scores = np.array(draw(st.lists(st.sampled_from(levels), min_size=n, max_size=n)), np.float64)
    mode = draw(st.sampled_from(["random", "one", "all", "rare"]))
    if mode == "one":
        labels = np.zeros(n, bool)
        labels[draw(st.integers(0, n - 1))] = True
    elif mode == "all":
        labels = np.ones(n, bool)
    else:
        p = 0.5 if mode == "random" else 0.1
        labels = np.array(draw(st.lists(st.booleans() if p == 0.5 else st.sampled_from([True] + [False] * 9),
                                        min_size=n, max_size=n)), bool)
        if not labels.any():
            labels[draw(st.integers(0, n - 1))] = True
    return scores, labels


# ----------------------------------------------------------------------- average precision
@settings(max_examples=1000, **SETTINGS)
@given(tied_vectors())
def test_average_precision_equals_sklearn(vec):
    scores, labels = vec
    assert average_precision(scores, labels) == pytest.approx(sk_ap(scores, labels), abs=1e-12)


def test_average_precision_equals_sklearn_on_many_seeded_vectors():
    """A fixed batch of 1,000 random vectors (so the count does not depend on hypothesis)."""
    rng = np.random.default_rng(20240601)
    for _ in range(1000):
        n = int(rng.integers(1, 120))
        levels = rng.choice([0.0, 0.25, 0.5, 1.0, rng.random(), -rng.random()], size=int(rng.integers(1, 6)))
        scores = rng.choice(levels, size=n)
        labels = rng.random(n) < rng.random()
        if not labels.any():
            labels[rng.integers(n)] = True
        assert average_precision(scores, labels) == pytest.approx(sk_ap(scores, labels), abs=1e-12)


@pytest.mark.parametrize("scores,labels", [
    ([0.3], [1]),                                   # length 1
    ([0.7, 0.7, 0.7, 0.7], [0, 1, 0, 0]),           # all tied, one positive
    ([0.0, 0.0, 0.0], [1, 0, 1]),                   # all tied at 0
    ([0.1, 0.9, 0.4], [1, 1, 1]),                   # all positive
    ([0.5, 0.5], [1, 1]),                           # all positive, all tied
    ([0.9, 0.1, 0.1, 0.1], [0, 0, 0, 1]),           # one positive, tied with negatives
    ([1.0, 0.9, 0.8, 0.7], [1, 0, 0, 0]),           # perfect ranking
    ([1.0, 0.9, 0.8, 0.7], [0, 0, 0, 1]),           # worst ranking
    ([-1.0, -2.0, -2.0, 5.0], [0, 1, 1, 0]),        # negative scores
])
def test_average_precision_edge_cases(scores, labels):
    assert average_precision(scores, labels) == pytest.approx(sk_ap(scores, labels), abs=1e-12)


def test_average_precision_known_values():
    assert average_precision([0.0, 0.0, 0.0, 0.0], [0, 1, 0, 0]) == 0.25  # all tied: positives / n
    assert average_precision([0.3], [1]) == 1.0
    assert average_precision([0.9, 0.5, 0.5], [0, 1, 0]) == pytest.approx(1 / 3)  # ties: one threshold


def test_average_precision_without_positives_is_nan():
    """Documented difference: no positive label gives NaN (scikit-learn warns and gives 0)."""
    assert math.isnan(average_precision([0.1, 0.9], [0, 0]))
    assert math.isnan(average_precision_dense(np.array([0.5]), np.array([False])))
    assert math.isnan(average_precision_sparse(np.zeros(0, np.int64), np.zeros(3), pack_bits(np.zeros(3, bool)),
                                               3, 0))
    assert sk_ap([0.1, 0.9], [0, 0]) == 0.0


def test_average_precision_accepts_lists_ints_and_bools():
    scores = [0.2, 0.8, 0.8, 0.1]
    ref = sk_ap(scores, [1, 0, 1, 0])
    for labels in ([1, 0, 1, 0], np.array([1, 0, 1, 0], np.int8), np.array([True, False, True, False])):
        assert average_precision(scores, labels) == pytest.approx(ref, abs=1e-15)


def sparse_ap(scores, labels, rng):
    """average_precision_sparse over the non-zero scores, listed in a shuffled order (the
    kernels list them in first-touched order, not sorted)."""
    touched = np.flatnonzero(scores).astype(np.int64)
    rng.shuffle(touched)
    return average_precision_sparse(touched, np.asarray(scores, np.float64), pack_bits(labels), len(scores),
                                    int(np.sum(labels)))


@settings(max_examples=400, **SETTINGS)
@given(tied_vectors(max_size=130, nonnegative=True, zeros=True), st.integers(0, 2**32 - 1))
def test_sparse_average_precision_equals_dense(vec, seed):
    scores, labels = vec
    rng = np.random.default_rng(seed)
    assert sparse_ap(scores, labels, rng) == pytest.approx(average_precision(scores, labels), abs=1e-12)


@pytest.mark.parametrize("n", [1, 63, 64, 65, 130])
def test_sparse_average_precision_word_boundaries_and_all_zero(n):
    rng = np.random.default_rng(n)
    labels = rng.random(n) < 0.3
    labels[-1] = True  # a positive in the last (possibly partial) word
    zeros = np.zeros(n)
    assert sparse_ap(zeros, labels, rng) == pytest.approx(labels.sum() / n, abs=1e-15)  # nothing touched
    scores = np.where(rng.random(n) < 0.5, rng.choice([0.25, 0.5], n), 0.0)
    assert sparse_ap(scores, labels, rng) == pytest.approx(sk_ap(scores, labels), abs=1e-12)
    full = rng.choice([0.1, 0.2, 0.3], n)  # every item touched
    assert sparse_ap(full, labels, rng) == pytest.approx(sk_ap(full, labels), abs=1e-12)


# ------------------------------------------------------------------ class-balanced accuracy
probabilities = st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.5, np.nextafter(0.5, 1.0),
                                                                 np.nextafter(0.5, 0.0), 0.0, 1.0]))


@settings(max_examples=500, **SETTINGS)
@given(st.lists(st.tuples(probabilities, st.booleans()), min_size=1, max_size=40))
def test_class_balanced_accuracy_equals_sklearn(rows):
    probs = np.array([p for p, _ in rows])
    labels = np.array([y for _, y in rows])
    assert class_balanced_accuracy(probs, labels) == pytest.approx(sk_cba(probs, labels), abs=1e-12)
    assert class_balanced_accuracy_kernel(probs, labels.astype(np.int8)) == pytest.approx(
        sk_cba(probs, labels), abs=1e-12)


def test_class_balanced_accuracy_edge_cases():
    # threshold: p > 0.5 is positive, p == 0.5 is negative
    assert class_balanced_accuracy([0.5, 0.5], [1, 0]) == 0.5
    assert class_balanced_accuracy([np.nextafter(0.5, 1), 0.5], [1, 0]) == 1.0
    # one class present: the accuracy on that class (as scikit-learn, which ignores absent classes)
    assert class_balanced_accuracy([0.9, 0.2, 0.7], [1, 1, 1]) == pytest.approx(2 / 3)
    assert class_balanced_accuracy([0.9, 0.2], [0, 0]) == 0.5
    assert class_balanced_accuracy([0.9, 0.2, 0.7], [1, 1, 1]) == pytest.approx(sk_cba([0.9, 0.2, 0.7], [1, 1, 1]))
    # NaN probability: "p > 0.5" is false, so it is a negative prediction
    assert class_balanced_accuracy([np.nan, np.nan], [1, 0]) == 0.5
    assert class_balanced_accuracy([np.nan], [0]) == 1.0
    # empty input: NaN (scikit-learn raises)
    assert math.isnan(class_balanced_accuracy([], []))
    with pytest.raises(ValueError):
        balanced_accuracy_score([], [])
    # length 1
    assert class_balanced_accuracy([0.51], [1]) == 1.0
    assert class_balanced_accuracy([0.51], [0]) == 0.0


def test_mean_average_precision_ignores_nan():
    assert mean_average_precision([0.5, np.nan, 1.0]) == 0.75
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(mean_average_precision([np.nan]))
