"""Bootstrap resample means against NumPy's own ``x[idx].mean(axis=1)``, bit for bit."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from bayes_concepts.bootstrap import PAIRWISE_BLOCK, resample_means

#: row lengths at the summation's margins: below 8, at the 8-accumulator block's ends, at the
#: first splits and their multiples of 8, and past NumPy's 8,192-element buffer
MARGINS = [1, 2, 7, 8, 9, 15, 16, 17, PAIRWISE_BLOCK - 1, PAIRWISE_BLOCK, PAIRWISE_BLOCK + 1, 2 * PAIRWISE_BLOCK + 8,
           255, 256, 257, 1000, 4999, 5000, 8191, 8192, 8193, 20_001]
FLOATS = st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from([0.0, -0.0, 1e-300, -1e300, 1e300, 100.0]))


def _same_bits(a, b):
    return np.array_equal(np.asarray(a).view(np.int64), np.asarray(b).view(np.int64))


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.sampled_from(MARGINS), st.integers(1, 600)), st.integers(1, 5), st.data())
def test_equals_numpy_mean_of_the_gathered_resamples(m, k, data):
    n = data.draw(st.integers(1, 40), label="values")
    values = data.draw(st.one_of(arrays(np.float64, n, elements=FLOATS),
                                 st.builds(lambda s: np.random.default_rng(s).standard_normal(n)
                                           * 10.0 ** np.random.default_rng(s + 1).integers(-8, 8, n),
                                           st.integers(0, 2**32 - 1))), label="x")
    idx = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed")).integers(0, n, size=(k, m))
    idx = idx.astype(data.draw(st.sampled_from([np.int64, np.int32, np.uint16, np.uint8]), label="dtype"))
    assert _same_bits(resample_means(values, idx), values[idx].mean(axis=1))


@pytest.mark.parametrize("m", MARGINS)
def test_every_margin_on_values_of_many_magnitudes(m):
    rng = np.random.default_rng(m)
    x = rng.standard_normal(m) * 10.0 ** rng.integers(-12, 12, m)
    idx = rng.integers(0, m, size=(3, m))
    assert _same_bits(resample_means(x, idx), x[idx].mean(axis=1))


def test_ties_and_a_constant_vector():
    x = np.full(300, 0.1)
    idx = np.random.default_rng(0).integers(0, 300, size=(4, 300))
    assert _same_bits(resample_means(x, idx), x[idx].mean(axis=1))


@pytest.mark.parametrize("idx", [np.zeros((2, 0), np.int64), np.zeros(3, np.int64), np.array([[0, 5]]),
                                 np.array([[0, -1]], np.int32), np.array([[5]], np.uint16), np.zeros((1, 2))])
def test_refuses_indices_of_the_wrong_shape_or_range(idx):
    with pytest.raises(ValueError):
        resample_means(np.zeros(5), idx)
