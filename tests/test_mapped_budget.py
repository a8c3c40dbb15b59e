"""The mapped-page budget (``BAYES_CONCEPTS_MAPPED_RSS``) decides which large row files are read
through their mappings and which with one pread per row: the accounting itself, and the same
episodes and the same gap whatever the budget (nothing mapped, one file, every file)."""
from __future__ import annotations

import gc
import weakref
from contextlib import contextmanager, nullcontext

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from bayes_concepts.engine import index, rows
from bayes_concepts.engine.rows import RowFile, row_source
from bayes_concepts.episodes import EpisodeSampler
from bayes_concepts.gap import compute_gap
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.splits import load_splits
from conftest import saved_copy


@pytest.fixture
def two_files(tmp_path, monkeypatch):
    monkeypatch.setattr(rows, "_MAPPED", weakref.WeakSet())  # row files other tests left open do not count here
    paths = []
    for i in range(2):
        paths.append(tmp_path / f"a{i}.npy")
        np.save(paths[-1], np.arange(37 * 5, dtype=np.uint64).reshape(37, 5) + i)
    return paths


def test_every_row_file_is_mapped_when_no_budget_is_set(two_files, monkeypatch):
    monkeypatch.delenv("BAYES_CONCEPTS_MAPPED_RSS", raising=False)
    a, b = (RowFile(p) for p in two_files)
    assert a.through_mapping() and b.through_mapping() and row_source(b)[1] == -1
    monkeypatch.setattr(rows, "READ_ROWS", "pread")  # the slow twin everywhere, whatever the budget
    assert not a.through_mapping() and row_source(a)[1] == a.fd


def test_a_set_budget_maps_the_files_that_fit_and_preads_the_rest(two_files, monkeypatch):
    size = 37 * 5 * 8
    monkeypatch.setenv("BAYES_CONCEPTS_MAPPED_RSS", str(size + size // 2))  # room for one file, not two
    a, b = (RowFile(p) for p in two_files)
    assert a.nbytes == size
    assert a.through_mapping() and not b.through_mapping()
    assert row_source(a)[1] == -1 and row_source(b)[1] == b.fd  # b: one pread per row
    assert np.array_equal(row_source(a)[0][3], np.load(two_files[0])[3])
    assert rows.mapped_bytes() == size
    assert a.through_mapping() and not b.through_mapping()  # decided once, kept
    a.close()  # a closed file's bytes leave the account: the next file fits
    assert rows.mapped_bytes() == 0
    c = RowFile(two_files[1])
    assert c.through_mapping() and rows.mapped_bytes() == size
    del c
    gc.collect()  # a file no longer referenced leaves the account too
    assert rows.mapped_bytes() == 0
    c = RowFile(two_files[1])
    assert c.through_mapping()
    monkeypatch.setenv("BAYES_CONCEPTS_MAPPED_RSS", "0")
    assert not RowFile(two_files[0]).through_mapping()
    monkeypatch.setenv("BAYES_CONCEPTS_MAPPED_RSS", "1G")
    d = RowFile(two_files[0])
    assert d.through_mapping() and rows.mapped_bytes() == 2 * size


@pytest.fixture(scope="module")
def on_disk(small_space, tmp_path_factory):
    return saved_copy(small_space, tmp_path_factory, "mapped_budget")


#: budgets as the tests name them: unset, nothing mapped, room for the sampler's first file only
#: (its signatures), room for every file
BUDGETS = ("unset", "0", "one", "all")


def _budget_text(budget, space) -> str | None:
    sig = space.signatures.nbytes
    return {"unset": None, "0": "0", "one": str(sig + sig // 2), "all": "1G"}[budget]


@contextmanager
def _row_files_read(budget, space):
    """Within the block, a loaded space's large files are row files, read through their mappings
    or with pread as ``budget`` (one of :data:`BUDGETS`) says."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(index, "INDEX_IN_MEMORY_BYTES", 0)
        mp.setattr(rows, "PREAD_MIN_BYTES", 0)
        mp.setattr(rows, "_MAPPED", weakref.WeakSet())
        text = _budget_text(budget, space)
        if text is None:
            mp.delenv("BAYES_CONCEPTS_MAPPED_RSS", raising=False)
        else:
            mp.setenv("BAYES_CONCEPTS_MAPPED_RSS", text)
        yield


@settings(max_examples=10, deadline=None)
@example(seed=0, negatives="hard", budget="0", n=40)  # every budget at least once, hard negatives at length
@example(seed=0, negatives="hard", budget="one", n=40)
@example(seed=0, negatives="hard", budget="all", n=1)
@example(seed=0, negatives="easy", budget="unset", n=7)
@given(seed=st.integers(0, 2 ** 31), negatives=st.sampled_from(["hard", "easy"]),
       budget=st.sampled_from(BUDGETS), n=st.sampled_from([1, 7, 40]))
def test_episodes_and_gap_are_the_same_whatever_the_budget(small_space, on_disk, seed, negatives, budget, n):
    splits = load_splits(small_space, ["counting", "binding_color"])
    whole = compute_gap(small_space, splits, (negatives,), n, seed=seed)
    ids = splits["counting"].test
    in_memory = EpisodeSampler(small_space).sample(ids, n, negatives, seed=seed)
    with _row_files_read(budget, small_space):
        loaded = HypothesisSpace.load(on_disk)
        sampler = EpisodeSampler(loaded)
        assert isinstance(sampler.signatures, RowFile) and isinstance(sampler.scene_concepts, RowFile)
        from_files = sampler.sample(ids, n, negatives, seed=seed)
        # the budget is applied, not ignored: which files went through their mappings
        mapped = (sampler.signatures.through_mapping(), sampler.scene_concepts.through_mapping())
        assert mapped == {"unset": (True, True), "0": (False, False), "one": (True, False),
                          "all": (True, True)}[budget]
        again = compute_gap(loaded, load_splits(loaded, ["counting", "binding_color"]), (negatives,), n, seed=seed)
    for f in ("concept", "support_scenes", "support_labels", "support_source", "support_topup", "query_scenes",
              "query_labels", "query_source", "query_topup", "query_relabelled"):
        assert np.array_equal(getattr(in_memory, f), getattr(from_files, f)), f
    for name in whole.data_vars:
        assert np.array_equal(whole[name].values, again[name].values, equal_nan=True), name


def test_one_compiled_kernel_serves_a_space_in_memory_loaded_and_read_from_its_files(small_space, on_disk):
    """The arrays the kernels only read are passed read-only whatever their source
    (``bits.read_only``), so the episode sampler and the oracles' kernel compiled for a space in
    memory also serve it loaded, with its large files read through their mappings or with one
    pread per row: numba compiles a kernel once per type of its arguments, and a read-only array
    (a file mapped read-only) is a type of its own, so each kind of space compiled both kernels
    again (about 20 s and 35 s on 2 cores) and kept another copy of each in numba's cache."""
    from bayes_concepts.episodes import _sample_episodes
    from bayes_concepts.oracles.kernels import evaluate_episodes
    kernels = (_sample_episodes, evaluate_episodes)
    compute_gap(small_space, load_splits(small_space, ["counting"]), ("hard",), 3, seed=0)
    compiled = [set(k.signatures) for k in kernels]
    assert all(len(s) >= 1 for s in compiled)
    for budget in (None, "unset", "0", "one"):  # None: loaded as it is; else its large files as row files
        with nullcontext() if budget is None else _row_files_read(budget, small_space):
            loaded = HypothesisSpace.load(on_disk)
            compute_gap(loaded, load_splits(loaded, ["counting"]), ("hard",), 3, seed=0)
        assert [set(k.signatures) for k in kernels] == compiled, budget
