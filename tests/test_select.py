"""Bit-selection kernels against their obvious NumPy twins."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from bayes_concepts.bits import gather_bits, nth_set_bits, set_bit_positions
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


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 6), st.integers(0, 300), st.sampled_from(["random", "empty", "full", "padding"]), st.data())
def test_set_bit_positions_equal_nonzero(n_rows, n_bits, fill, data):
    if fill == "random":
        bits = data.draw(arrays(bool, (n_rows, n_bits)))
    else:
        bits = np.full((n_rows, n_bits), fill != "empty")
    rows = pack_bits(bits) if n_bits else np.zeros((n_rows, 0), np.uint64)
    if fill == "padding" and n_bits % 64 and n_rows:  # set padding bits: never positions
        rows[:, -1] |= ~np.uint64((1 << (n_bits % 64)) - 1)
    ptr, idx = set_bit_positions(rows, n_bits)
    assert ptr.dtype == np.int64 and idx.dtype == np.int32 and ptr.shape == (n_rows + 1,) and ptr[0] == 0
    for i in range(n_rows):
        assert idx[ptr[i]: ptr[i + 1]].tolist() == np.flatnonzero(bits[i]).tolist()
    assert ptr[-1] == len(idx) == bits.sum()


@settings(max_examples=40, deadline=None)
@given(arrays(np.uint64, st.tuples(st.integers(0, 5), st.integers(0, 7))), st.sampled_from(["c", "strided", "frozen"]))
def test_read_only_is_a_view_that_cannot_be_written(words, kind):
    """``read_only``: the same values, C-contiguous, not writable; a view of the array (no copy)
    when it is C-contiguous, the array itself when it already cannot be written; the caller's
    array stays writable."""
    from bayes_concepts.bits import read_only
    a = {"c": words, "strided": words[:, ::2], "frozen": words.copy()}[kind]
    if kind == "frozen":
        a.flags.writeable = False
    got = read_only(a)
    assert np.array_equal(got, a) and got.dtype == a.dtype and got.flags.c_contiguous
    assert not got.flags.writeable
    if kind == "frozen":
        assert got is a
    elif a.flags.c_contiguous:
        assert np.shares_memory(got, a) or a.size == 0
        assert a.flags.writeable
    if got.size:
        with pytest.raises(ValueError):
            got[(0,) * got.ndim] = 1
