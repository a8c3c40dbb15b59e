"""Bit-selection kernels against their obvious NumPy twins."""
import numpy as np
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from bayes_concepts.bits import gather_bits, nth_set_bits
from bayes_concepts.scenes.bank import pack_bits, unpack_bits


@settings(max_examples=60, deadline=None)
@given(arrays(bool, st.tuples(st.integers(1, 6), st.integers(1, 300))), st.data())
def test_gather_bits_equals_fancy_indexing(bits, data):
    ids = np.array(data.draw(st.lists(st.integers(0, bits.shape[1] - 1), max_size=200)), np.int64)
    got = gather_bits(pack_bits(bits), ids)
    assert got.shape == (bits.shape[0], (len(ids) + 63) // 64)
    assert np.array_equal(unpack_bits(got, len(ids)), bits[:, ids])


@settings(max_examples=60, deadline=None)
@given(arrays(bool, st.tuples(st.integers(1, 6), st.integers(1, 300))), st.data())
def test_nth_set_bits_equals_flatnonzero(bits, data):
    counts = bits.sum(1)
    m = 5
    ranks = np.zeros((len(bits), m), np.int64)
    n_ranks = np.minimum(counts, m)
    for i, c in enumerate(counts):
        ranks[i, : n_ranks[i]] = data.draw(st.permutations(range(c)))[: n_ranks[i]] if c else []
    got = nth_set_bits(pack_bits(bits), ranks, n_ranks)
    for i in range(len(bits)):
        where = np.flatnonzero(bits[i])
        assert got[i, : n_ranks[i]].tolist() == where[ranks[i, : n_ranks[i]]].tolist()
        assert (got[i, n_ranks[i]:] == -1).all()
