"""Rows read through a file's mapping (no system call per row) against rows read with one
pread each: the same episodes, the same oracle results, and a mapping's pages can be released."""
from __future__ import annotations

import numpy as np
import pytest

from bayes_concepts.engine import index, rows
from bayes_concepts.engine.rows import RowFile, row_source
from bayes_concepts.episodes import EpisodeSampler
from bayes_concepts.oracles import OracleSettings, strong_and_weak
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.splits import load_splits
from conftest import saved_copy


@pytest.fixture(scope="module")
def on_disk(small_space, tmp_path_factory):
    return saved_copy(small_space, tmp_path_factory, "mapped_reads")


@pytest.fixture
def files(monkeypatch):
    monkeypatch.setattr(index, "INDEX_IN_MEMORY_BYTES", 0)
    monkeypatch.setattr(rows, "PREAD_MIN_BYTES", 0)


def test_row_source_of_a_row_file_is_its_mapping_or_its_descriptor(tmp_path, monkeypatch):
    a = np.arange(40, dtype=np.uint64).reshape(8, 5)
    np.save(tmp_path / "a.npy", a)
    f = RowFile(tmp_path / "a.npy")
    monkeypatch.setattr(rows, "READ_ROWS", "map")
    mem, fd, _, failures = row_source(f)
    assert fd == -1 and np.array_equal(mem, a) and not mem.flags.writeable and failures is f.failures
    f.release()  # the pages go, the mapping stays usable
    assert np.array_equal(f.mapped()[3], a[3])
    monkeypatch.setattr(rows, "READ_ROWS", "pread")
    mem, fd, offset, _ = row_source(f)
    assert fd == f.fd and mem.shape == (0, 5) and offset == f.offset


@pytest.mark.parametrize("negatives", ["hard", "easy"])
def test_mapped_and_pread_rows_give_the_same_episodes_and_scores(small_space, on_disk, files, monkeypatch,
                                                                 negatives):
    loaded = HypothesisSpace.load(on_disk)
    sampler = EpisodeSampler(loaded)
    assert isinstance(sampler.scene_concepts, RowFile) and isinstance(sampler.signatures, RowFile)
    split = load_splits(loaded, ["counting"])["counting"]
    got = {}
    for mode in ("pread", "map"):
        monkeypatch.setattr(rows, "READ_ROWS", mode)
        eps = sampler.sample(split.test, 50, negatives, seed=11)
        res = [o.evaluate(eps) for lik in ("size", "noisy")
               for o in strong_and_weak(loaded, split, OracleSettings(likelihood=lik))]
        got[mode] = (eps, res)
    sampler.release_pages()
    (ea, ra), (eb, rb) = got["pread"], got["map"]
    for f in ("support_scenes", "support_labels", "query_scenes", "query_labels", "support_source"):
        assert np.array_equal(getattr(ea, f), getattr(eb, f)), f
    for a, b in zip(ra, rb):
        for k in a:
            assert np.array_equal(a[k], b[k], equal_nan=True), k
