"""Row files (pread) against the arrays they hold: indexing, the episode sampler's reads and the
oracles' scores are the same whether a space's rows are in memory or read from disk."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bayes_concepts.engine import index, rows
from bayes_concepts.engine.rows import RowFile, row_source
from bayes_concepts.engine.store import SpaceError
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.episodes import EpisodeSampler
from bayes_concepts.gap import compute_gap
from bayes_concepts.oracles import strong_and_weak
from bayes_concepts.splits import load_splits
from conftest import saved_copy


@pytest.fixture(scope="module")
def row_file(tmp_path_factory):
    a = np.random.default_rng(0).integers(0, 2 ** 63, size=(37, 5), dtype=np.uint64)
    path = tmp_path_factory.mktemp("rows") / "a.npy"
    np.save(path, a)
    return a, RowFile(path)


@settings(max_examples=60, deadline=None)
@given(ids=st.lists(st.integers(-37, 36), max_size=20), lo=st.integers(0, 40), hi=st.integers(0, 40))
def test_row_file_indexing_equals_the_array(row_file, ids, lo, hi):
    a, f = row_file
    idx = np.array(ids, np.int64)
    assert np.array_equal(f[idx], a[idx]) and f[idx].shape == a[idx].shape
    assert np.array_equal(f[lo:hi], a[lo:hi])
    assert np.array_equal(f[idx, 2], a[idx, 2]) and np.array_equal(f[lo:hi, 1:4], a[lo:hi, 1:4])
    if ids:
        assert np.array_equal(f[ids[0]], a[ids[0]]) and f[ids[0], -1] == a[ids[0], -1]
        assert np.array_equal(f[idx.reshape(1, -1)], a[idx.reshape(1, -1)])
    assert f.shape == a.shape and f.dtype == a.dtype and len(f) == len(a)


def test_row_file_reads_whole_and_refuses_what_is_not_a_row(row_file):
    a, f = row_file
    assert np.array_equal(np.asarray(f), a)
    with pytest.raises(IndexError):
        f[[37]]
    with pytest.raises(IndexError):
        f[np.array([0.5])]
    with pytest.raises(IndexError):
        f[[0, 1], [2, 3]]


def test_a_failed_read_is_an_error_not_a_row_of_zeros(tmp_path):
    a = np.ones((50, 64), np.uint64)
    path = tmp_path / "a.npy"
    np.save(path, a)
    f = RowFile(path)
    with open(path, "r+b") as fh:  # the file shrinks under the reader
        fh.truncate(path.stat().st_size - 8 * 64 * 10)
    assert np.array_equal(f[[0, 1]], a[:2])
    with pytest.raises(OSError, match="read"):
        f[[45]]


def test_row_source_of_an_array_reads_it_in_memory():
    a = np.arange(12, dtype=np.uint64).reshape(3, 4)
    mem, fd, offset, failures = row_source(a)
    assert fd == -1 and np.array_equal(mem, a) and failures.shape == (1,)


@pytest.fixture(scope="module")
def on_disk(small_space, tmp_path_factory):
    """A saved copy of the small space whose index and signatures are read from disk."""
    return saved_copy(small_space, tmp_path_factory, "on_disk")


@pytest.fixture
def forced_files(monkeypatch):
    monkeypatch.setattr(index, "INDEX_IN_MEMORY_BYTES", 0)
    monkeypatch.setattr(rows, "PREAD_MIN_BYTES", 0)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2 ** 31), negatives=st.sampled_from(["hard", "easy"]),
       mode=st.sampled_from(["union", "alternative"]), scan=st.sampled_from([0.0, 0.5, 2.0]),
       explicit=st.sampled_from([0.0, 1.0]))
def test_episodes_drawn_through_row_files_equal_those_drawn_from_arrays(small_space, on_disk, seed, negatives,
                                                                        mode, scan, explicit):
    from bayes_concepts import episodes
    ids = np.arange(small_space.n_concepts)
    old = (index.INDEX_IN_MEMORY_BYTES, rows.PREAD_MIN_BYTES, episodes.UNION_SCAN, episodes.UNION_EXPLICIT)
    # every union regime: by alternative, scanning the bank, from the union built explicitly
    episodes.UNION_SCAN, episodes.UNION_EXPLICIT = scan, explicit
    try:
        in_memory = EpisodeSampler(small_space).sample(ids, 40, negatives, seed=seed, hard_mode=mode)
        index.INDEX_IN_MEMORY_BYTES, rows.PREAD_MIN_BYTES = 0, 0
        sampler = EpisodeSampler(HypothesisSpace.load(on_disk))
        assert isinstance(sampler.signatures, RowFile) and isinstance(sampler.scene_concepts, RowFile)
        from_files = sampler.sample(ids, 40, negatives, seed=seed, hard_mode=mode)
    finally:
        index.INDEX_IN_MEMORY_BYTES, rows.PREAD_MIN_BYTES, episodes.UNION_SCAN, episodes.UNION_EXPLICIT = old
    for f in ("concept", "support_scenes", "support_labels", "support_source", "support_topup", "query_scenes",
              "query_labels", "query_source", "query_relabelled"):
        assert np.array_equal(getattr(in_memory, f), getattr(from_files, f)), f


@pytest.mark.parametrize("likelihood", ["size", "noisy"])
def test_oracles_score_the_same_from_an_index_on_disk(small_space, on_disk, forced_files, monkeypatch, likelihood):
    from bayes_concepts.oracles import oracle
    from bayes_concepts.oracles.oracle import OracleSettings
    monkeypatch.setattr(oracle, "EVALUATE_SLICE", 7)  # several slices, the last one short
    split = load_splits(small_space, ["counting"])["counting"]
    eps = EpisodeSampler(small_space).sample(split.test, 30, "hard", seed=5)
    loaded = HypothesisSpace.load(on_disk)
    assert isinstance(loaded.scene_concepts(), RowFile)
    st_ = OracleSettings(likelihood=likelihood)
    for a, b in zip(strong_and_weak(small_space, split, st_), strong_and_weak(loaded, split, st_)):
        ra, rb = a.evaluate(eps), b.evaluate(eps)
        for k in ra:
            assert np.array_equal(ra[k], rb[k], equal_nan=True), k


def test_the_gap_is_identical_with_rows_on_disk(small_space, on_disk, forced_files):
    splits = load_splits(small_space, ["counting", "binding_color"])
    whole = compute_gap(small_space, splits, ("hard", "easy"), 60, seed=4)
    loaded = HypothesisSpace.load(on_disk)
    again = compute_gap(loaded, load_splits(loaded, ["counting", "binding_color"]), ("hard", "easy"), 60, seed=4)
    for name in whole.data_vars:
        assert np.array_equal(whole[name].values, again[name].values, equal_nan=True), name


def test_a_row_file_cut_short_is_refused_in_one_line_naming_it(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.ones((50, 64), np.uint64))
    with open(path, "r+b") as fh:  # cut short before it is opened: mapping it would run past its end
        fh.truncate(path.stat().st_size - 8 * 64 * 10)
    with pytest.raises(SpaceError, match=r"a\.npy: cannot be read as a row file \(the header describes"):
        RowFile(path)


def test_an_index_file_cut_short_is_rebuilt_not_mapped_past_its_end(small_space, on_disk, forced_files):
    splits = ["counting"]
    loaded = HypothesisSpace.load(on_disk)
    before = compute_gap(loaded, load_splits(loaded, splits), ("hard",), 40, seed=2)
    f = index.index_directory(loaded) / "scene_concepts.npy"
    with open(f, "r+b") as fh:  # an interrupted copy of the space, say
        fh.truncate(f.stat().st_size // 2)
    again = HypothesisSpace.load(on_disk)
    after = compute_gap(again, load_splits(again, splits), ("hard",), 40, seed=2)
    assert index._whole(f)  # rebuilt whole
    for name in before.data_vars:
        assert np.array_equal(before[name].values, after[name].values, equal_nan=True), name


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 31), batch=st.one_of(st.sampled_from([2, 16]), st.integers(2, 64)),
       scan=st.sampled_from([0.0, 0.5, 1e12]), explicit=st.sampled_from([0.0, 0.002, 0.05, 1.0]),
       read=st.sampled_from(["array", "map", "pread"]))
def test_union_tries_looked_at_ahead_draw_the_episodes_of_one_try_at_a_time(small_space, on_disk, seed, batch,
                                                                           scan, explicit, read):
    """The union's rejection tries (the bank scan, and alternative-weighted) look at their next
    ``SCAN_BATCH`` tries together (their rows read side by side) but take them one at a time
    from the same stream, drawing again after a try that draws a cover: every array of the
    episodes equals that of one try at a time (the slow twin, ``SCAN_BATCH`` 1), with the scan
    always on (``scan`` 0), never on (``1e12``: alternative-weighted only) or by union, the tries
    cut short by a tiny explicit-union budget (mid-batch), and rows read from arrays, through
    the files' mappings or with pread."""
    from bayes_concepts import episodes
    ids = np.arange(small_space.n_concepts)
    old = (index.INDEX_IN_MEMORY_BYTES, rows.PREAD_MIN_BYTES, rows.READ_ROWS, episodes.UNION_SCAN,
           episodes.UNION_EXPLICIT, episodes.SCAN_BATCH)
    episodes.UNION_SCAN, episodes.UNION_EXPLICIT = scan, explicit
    try:
        episodes.SCAN_BATCH = 1
        one_at_a_time = EpisodeSampler(small_space).sample(ids, 60, "hard", seed=seed)
        if read != "array":
            index.INDEX_IN_MEMORY_BYTES, rows.PREAD_MIN_BYTES, rows.READ_ROWS = 0, 0, read
            sampler = EpisodeSampler(HypothesisSpace.load(on_disk))
            assert isinstance(sampler.scene_concepts, RowFile)
        else:
            sampler = EpisodeSampler(small_space)
        episodes.SCAN_BATCH = batch
        looked_ahead = sampler.sample(ids, 60, "hard", seed=seed)
    finally:
        (index.INDEX_IN_MEMORY_BYTES, rows.PREAD_MIN_BYTES, rows.READ_ROWS, episodes.UNION_SCAN,
         episodes.UNION_EXPLICIT, episodes.SCAN_BATCH) = old
    for f in episodes.ARRAY_FIELDS:
        assert np.array_equal(getattr(looked_ahead, f), getattr(one_at_a_time, f)), f
