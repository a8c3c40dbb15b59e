"""Scale-out: one code path in-process and on a Dask LocalCluster, chunked
build stages against their one-shot twins, the on-disk per-scene concept index, block-wise saves."""
from __future__ import annotations

import dataclasses
import io
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bayes_concepts.bits import block_counts, pack_bits, transpose_bits
from bayes_concepts.engine import chunked, index, store
from bayes_concepts.spaces.build import synonym_classes
from bayes_concepts.engine.rows import RowFile
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.engine.test_bank import choose_test_scenes, draw_test_bank
from bayes_concepts.episodes import EpisodeSampler
from bayes_concepts.gap import compute_gap
from bayes_concepts import gap_cells, scale
from bayes_concepts.scale import ScaleError, Scheduler, parse_scheduler
from bayes_concepts.splits import load_splits


def _slow_square(x, delay):
    time.sleep(delay[x])
    return x * x


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster of 2 worker processes (one thread each), closed after this module."""
    with Scheduler("local:2") as sched:
        yield sched


# ------------------------------------------------------------------------------- the scheduler
@pytest.mark.parametrize("spec, kind", [(None, "process"), ("", "process"), ("local:2", "local"),
                                        ("tcp://127.0.0.1:8786", "address"), ("10.0.0.5:8786", "address")])
def test_parse_scheduler(spec, kind):
    assert parse_scheduler(spec)[0] == kind


@pytest.mark.parametrize("spec", ["local", "local:0", "local:x", "tcp://nohost", 3, "http//x"])
def test_bad_scheduler_is_one_line_error(spec):
    with pytest.raises(ScaleError, match="scheduler"):
        parse_scheduler(spec)


def test_map_keeps_chunk_order_in_process_and_on_a_cluster(cluster):
    delay = {i: 0.3 if i % 3 == 0 else 0.0 for i in range(7)}  # early chunks finish last
    local = list(Scheduler().map(_slow_square, range(7), {"delay": delay}))
    remote = list(cluster.map(_slow_square, range(7), {"delay": delay}))
    assert local == remote == [i * i for i in range(7)]


def test_task_errors_reach_the_caller(cluster):
    with pytest.raises(KeyError):
        list(cluster.map(_slow_square, [0, 99], {"delay": {0: 0.0}}))


def test_cluster_needs_a_saved_space(small_space, cluster):
    split = load_splits(small_space, ["concept_iid"])
    with pytest.raises(ScaleError, match="save the space"):
        compute_gap(small_space, split, ("hard",), 10, scheduler=cluster)


# --------------------------------------------------------------------- the build, one code path
def test_build_in_process_and_on_a_cluster_give_the_same_manifest(small_space_dir, cluster, tmp_path, monkeypatch):
    monkeypatch.setattr(chunked, "SCENE_CHUNK", 64 * 13)  # several scene chunks, the last one partial
    built = HypothesisSpace.build(samples=20_000, scenes=5_000, seed=0, scheduler=cluster)
    built.save(tmp_path / "cluster")
    spilled = HypothesisSpace.build(samples=20_000, scenes=5_000, seed=0, spill=True)
    assert isinstance(spilled.signatures, np.memmap)
    spilled.save(tmp_path / "spilled")
    reference = store.manifest_sha256(small_space_dir)  # built in one process, in one chunk
    assert store.manifest_sha256(tmp_path / "cluster") == reference
    assert store.manifest_sha256(tmp_path / "spilled") == reference


def _random_signatures(rng, n_rows, n_scenes, n_distinct):
    distinct = rng.random((n_distinct, n_scenes)) < rng.uniform(0.01, 0.5)
    return pack_bits(distinct[rng.integers(0, n_distinct, n_rows)])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_rows=st.integers(0, 40), n_scenes=st.integers(1, 700),
       n_distinct=st.integers(1, 12), chunk=st.integers(1, 6))
def test_streamed_synonyms_and_test_bank_equal_the_one_shot_ones(seed, n_rows, n_scenes, n_distinct, chunk):
    rng = np.random.default_rng(seed)
    sig = _random_signatures(rng, n_rows, n_scenes, n_distinct)
    counts = np.bitwise_count(sig).sum(axis=1, dtype=np.int64)
    refiner = chunked.SynonymRefiner(n_rows)
    ranks, n_ranks = chunked.draw_ranks(counts, 3, seed)
    cand = np.full(ranks.shape, -1, np.int64)
    seen = np.zeros(n_rows, np.int64)
    for w0, w1, _ in chunked.scene_chunks(n_scenes, 64 * chunk):
        block = np.ascontiguousarray(sig[:, w0:w1])
        refiner.add(block)
        chunked.resolve_ranks(block, 64 * w0, seen, ranks, n_ranks, cand)
        seen += np.bitwise_count(block).sum(axis=1, dtype=np.int64)
    assert np.array_equal(refiner.classes(), synonym_classes(sig))
    ids, drawn_for = choose_test_scenes(cand, n_ranks, counts, 3)
    expected = draw_test_bank(sig, counts, 3, seed)
    assert np.array_equal(ids, expected.scene_ids) and np.array_equal(drawn_for, expected.drawn_for)


def test_refiner_splits_hash_collisions_exactly(monkeypatch):
    rows = np.array([[1, 2], [1, 2], [3, 4], [5, 6], [3, 4]], np.uint64)

    def colliding(block, out):  # every row the same hash: only the exact comparison separates them
        out[:] = 7
    monkeypatch.setattr(chunked, "_row_hashes", colliding)
    refiner = chunked.SynonymRefiner(len(rows))
    refiner.add(rows[:, :1])
    refiner.add(rows[:, 1:])
    assert refiner.classes().tolist() == [0, 0, 1, 2, 1]


@pytest.mark.parametrize("on_disk", [False, True])
def test_signature_sink_round_trip(tmp_path, on_disk):
    rng = np.random.default_rng(1)
    sig = rng.integers(0, 2**63, (9, 11), dtype=np.uint64)
    sink = chunked.SignatureSink(9, 11, tmp_path / "s.npy" if on_disk else None)
    for w0 in (8, 0, 4):  # any order
        sink.write(w0, sig[:, w0: w0 + 4])
    assert np.array_equal(sink.read(3, 10), sig[:, 3:10])
    out = sink.finish()
    assert np.array_equal(out, sig) and isinstance(out, np.memmap) == on_disk
    if on_disk:
        buf = io.BytesIO()
        np.save(buf, sig)
        assert (tmp_path / "s.npy").read_bytes() == buf.getvalue()


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(0, 7), min_size=1, max_size=3),
       dtype=st.sampled_from([np.uint64, np.int8, np.int32, np.int64]), block=st.integers(1, 64))
def test_blockwise_save_writes_what_np_save_writes(shape, dtype, block):
    import tempfile
    from pathlib import Path
    a = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    old = store.SAVE_BLOCK_BYTES
    store.SAVE_BLOCK_BYTES = block
    try:
        with tempfile.TemporaryDirectory() as d:
            store._save_npy(Path(d) / "a.npy", a)
            buf = io.BytesIO()
            np.save(buf, a)
            assert (Path(d) / "a.npy").read_bytes() == buf.getvalue()
    finally:
        store.SAVE_BLOCK_BYTES = old


# ----------------------------------------------------------------------------- the index on disk
def test_on_disk_index_equals_the_in_memory_one(small_space, small_space_dir, monkeypatch):
    monkeypatch.setattr(index, "INDEX_IN_MEMORY_BYTES", 0)
    monkeypatch.setattr(index, "BLOCK_BYTES", 1)  # one block of 64 words at a time
    space = HypothesisSpace.load(small_space_dir)
    rows = space.scene_concepts()
    assert isinstance(rows, RowFile) and (small_space_dir / "index" / "scene_concepts.npy").is_file()
    assert np.array_equal(rows, transpose_bits(np.asarray(small_space.signatures), small_space.n_scenes))
    assert np.array_equal(index.signature_block_counts(space), block_counts(np.asarray(small_space.signatures), 64))
    # the index is the toolkit's own: a forced save over the space still works, and removes it
    dataclasses.replace(small_space).save(small_space_dir, overwrite=True)
    assert not (small_space_dir / "index").exists()


def test_release_pages_keeps_the_values(small_space_dir):
    space = HypothesisSpace.load(small_space_dir)
    before = np.array(space.signatures)
    scale.release_pages(space.signatures, np.ascontiguousarray(space.signatures), None, before)
    assert np.array_equal(space.signatures, before)


# ------------------------------------------------------------------------- the gap, one code path
def test_episode_parts_concatenate_to_the_whole_batch(small_space):
    sampler = EpisodeSampler(small_space)
    split = load_splits(small_space, ["counting"])["counting"]
    whole = sampler.sample(split.test, 50, "hard", seed=3)
    parts = [sampler.sample(split.test, 50, "hard", seed=3, part=p) for p in [(0, 17), (17, 17), (17, 50)]]
    assert gap_cells._concat_episodes(parts) == whole
    with pytest.raises(ValueError, match="part"):
        sampler.sample(split.test, 50, "hard", seed=3, part=(10, 60))


def test_gap_in_process_and_on_a_cluster_are_identical(small_space_dir, cluster, monkeypatch):
    space = HypothesisSpace.load(small_space_dir)
    splits = load_splits(space, ["counting", "binding_color"])
    one_chunk = compute_gap(space, splits, ("hard", "easy"), 120, seed=5)
    monkeypatch.setattr(gap_cells, "GAP_CHUNK", 50)  # three chunks per cell, the last one short
    chunks = compute_gap(space, splits, ("hard", "easy"), 120, seed=5)
    remote = compute_gap(space, splits, ("hard", "easy"), 120, seed=5, scheduler=cluster)
    for ds in (chunks, remote):
        assert ds.identical(one_chunk)


# ------------------------------------------------------------------------------ the command line
@pytest.mark.parametrize("argv", [["gap", "{space}", "--scheduler", "local:0", "--episodes", "5"],
                                  ["space", "build", "{out}", "--samples", "100", "--scheduler", "nohost"]])
def test_bad_scheduler_option_exits_2_with_one_line(argv, small_space_dir, tmp_path, capsys):
    from bayes_concepts.cli import main
    argv = [a.format(space=small_space_dir, out=tmp_path / "new") for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "scheduler" in err and "\n" not in err
    assert not (tmp_path / "new").exists()


def test_cli_gap_scheduler_option(small_space_dir, capsys):
    from bayes_concepts.cli import main
    import json
    outs = []
    for extra in ([], ["--scheduler", "local:1"]):
        assert main(["gap", str(small_space_dir), "--split", "counting", "--negatives", "hard", "--episodes", "40",
                     "--json", *extra]) == 0
        outs.append(json.loads(capsys.readouterr().out)["results"])
    assert outs[0] == outs[1]


def test_spilled_signatures_are_saved_by_a_link_not_a_copy(tmp_path):
    import os
    space = HypothesisSpace.build(samples=5_000, scenes=2_000, seed=1, spill=True)
    space.save(tmp_path / "a")
    saved = tmp_path / "a" / "signatures.npy"
    assert os.stat(saved).st_ino == os.stat(space.signatures.filename).st_ino
    again = HypothesisSpace.load(tmp_path / "a")
    again.save(tmp_path / "b")  # a loaded space's file is never linked: the spaces stay independent
    assert os.stat(tmp_path / "b" / "signatures.npy").st_ino != os.stat(saved).st_ino
    spill_dir = os.path.dirname(space.signatures.filename)
    del space
    import gc
    gc.collect()
    assert not os.path.exists(spill_dir) and HypothesisSpace.load(tmp_path / "a") == again


def test_a_large_build_writes_its_index_once_and_the_save_keeps_it(tmp_path, monkeypatch):
    import os
    monkeypatch.setattr(index, "INDEX_IN_MEMORY_BYTES", 0)
    monkeypatch.setattr(chunked, "SCENE_CHUNK", 64 * 10)
    space = HypothesisSpace.build(samples=5_000, scenes=2_000, seed=1, spill=True)
    built = os.path.join(os.path.dirname(space.signatures.filename), "index", "scene_concepts.npy")
    assert os.path.isfile(built)  # written during the build, from the blocks as they came
    expected = transpose_bits(np.asarray(space.signatures), space.n_scenes)
    assert np.array_equal(space.scene_concepts(), expected)
    assert np.array_equal(index.signature_block_counts(space), block_counts(np.asarray(space.signatures), 64))
    space.save(tmp_path / "s")
    assert os.stat(tmp_path / "s" / "index" / "scene_concepts.npy").st_ino == os.stat(built).st_ino
    loaded = HypothesisSpace.load(tmp_path / "s")
    monkeypatch.setattr(index, "build_index", None)  # a rebuild would fail: the saved index is current
    assert np.array_equal(loaded.scene_concepts(), expected)
    assert np.array_equal(index.signature_block_counts(loaded), block_counts(np.asarray(space.signatures), 64))


def test_other_learners_are_scored_on_the_assembled_episodes(small_space, monkeypatch):
    from bayes_concepts.learners.reference import RandomLearner
    splits = load_splits(small_space, ["counting"])
    learners = {"random": RandomLearner(small_space, seed=0)}
    whole = compute_gap(small_space, splits, ("hard",), 90, seed=2, learners=learners)
    monkeypatch.setattr(gap_cells, "GAP_CHUNK", 40)
    assert compute_gap(small_space, splits, ("hard",), 90, seed=2, learners=learners).identical(whole)
    assert np.isfinite(whole["ap"].sel(learner="random")).all()


def test_spill_directories_of_dead_processes_are_removed(tmp_path):
    import subprocess
    import sys
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    stale = tmp_path / f"{chunked.SPILL_PREFIX}{dead}_x"
    stale.mkdir()
    (stale / "signatures.npy").write_bytes(b"0")
    other = tmp_path / "bayes_concepts_build_notapid"  # not named by a pid: never touched
    other.mkdir()
    mine = chunked.spill_directory(tmp_path)
    assert not stale.exists() and other.exists() and mine.exists()
