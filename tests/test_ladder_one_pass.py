"""The ladder scores each distinct rung once: rungs that coincide on a split (one concept set,
one prior) get the numbers of the first, bit for bit the numbers each rung scored alone gives
(the slow twin); the learned prior's derivations are kept in the space's index folder and read
back equal; the mapped-pages budget is read from the environment or refused in one line."""
from __future__ import annotations

import numpy as np
import pytest

from bayes_concepts.engine.index import cached_arrays
from bayes_concepts.ladder import ladder_profile, parse_rungs
from bayes_concepts.learners import scoring
from bayes_concepts.learners.scoring import score_learner, score_learners
from bayes_concepts.oracles import Oracle, OracleSettings, strong_and_weak
from bayes_concepts.rungs import rung_label, rung_learner
from bayes_concepts.scale import ScaleError, mapped_rss_budget
from bayes_concepts.splits import load_splits

from conftest import assert_one_line_error, run

VARS = ("ap", "cba", "posterior_entropy", "predictive_entropy", "empty", "query_pred")


@pytest.fixture(scope="module")
def splits(small_space):
    return load_splits(small_space, ["concept_iid", "counting", "binding_color", "complexity"])


def test_oracles_with_one_concept_set_and_prior_share_a_key_and_others_do_not(small_space, splits):
    split = splits["concept_iid"]
    strong, weak = strong_and_weak(small_space, split)
    again = Oracle(small_space, np.union1d(split.train, split.test), OracleSettings(), "another name")
    assert strong.scoring_key() == again.scoring_key()
    assert strong.scoring_key() != weak.scoring_key()
    assert strong.scoring_key() != Oracle(small_space, strong.concepts, OracleSettings(beta=0.3)).scoring_key()
    other_prior = rung_learner("learned_prior", small_space, split, OracleSettings(), alpha=1.0)
    assert np.array_equal(other_prior.concepts, strong.concepts) and other_prior.scoring_key() != strong.scoring_key()


def test_coinciding_learners_are_scored_once_with_the_numbers_each_gives_alone(small_space, splits, monkeypatch):
    from bayes_concepts.gap_cells import draw_cell
    split = splits["concept_iid"]
    eps = draw_cell(small_space, "concept_iid", split, 150, "hard", 5, None, "union")
    strong, weak = strong_and_weak(small_space, split)
    learners = {"strong": strong, "weak": weak,
                "strong again": Oracle(small_space, strong.concepts, OracleSettings(), "x"),
                "weak again": Oracle(small_space, weak.concepts, OracleSettings(), "y")}
    calls = []
    real = scoring.score_learner
    monkeypatch.setattr(scoring, "score_learner", lambda lr, *a, **k: calls.append(lr) or real(lr, *a, **k))
    shared = score_learners(small_space, eps, learners)
    assert len(calls) == 2  # two distinct oracles
    for name, learner in learners.items():
        alone = score_learner(learner, small_space, eps, name)
        for v in (*VARS, "ap_bound"):
            np.testing.assert_array_equal(shared[name][v], alone[v], err_msg=f"{name}: {v}")
    shared["strong again"]["ap"][0] = -1.0  # a copy, not the same array
    assert shared["strong"]["ap"][0] != -1.0


def test_the_ladder_equals_every_rung_scored_alone_on_the_same_episodes(small_space, splits):
    specs = parse_rungs(None, [1.0, 100.0], None, small_space)
    ds = ladder_profile(small_space, splits, specs, ("hard", "easy"), 80, seed=2)
    from bayes_concepts.gap import cell_seed
    from bayes_concepts.gap_cells import draw_cell
    shared = 0
    for name, split in splits.items():
        strong = rung_learner("strong", small_space, split, OracleSettings())
        keys = {}
        for neg in ("hard", "easy"):
            eps = draw_cell(small_space, name, split, 80, neg, cell_seed(2, name, neg), None, "union")
            for rung, knobs in specs:
                label = rung_label(rung, knobs)
                learner = rung_learner(rung, small_space, split, OracleSettings(), **knobs)
                alone = score_learner(learner, small_space, eps, label)
                if neg == "hard" and hasattr(learner, "scoring_key"):
                    keys.setdefault(learner.scoring_key(), []).append(label)
                for v in VARS:
                    got = ds[v].sel(split=name, negatives=neg, learner=label).values
                    np.testing.assert_array_equal(got, alone[v], err_msg=f"{name} {neg} {label}: {v}")
        shared += sum(len(v) - 1 for v in keys.values())
        assert strong.scoring_key() in keys
    assert shared > 0  # some rungs coincided on these splits, and were copied


def test_derivations_are_kept_in_the_index_folder_and_read_back_equal(small_space_dir, tmp_path):
    import shutil
    from bayes_concepts.rungs import learned_prior as lp
    from bayes_concepts.spaces import load_space
    folder = tmp_path / "space"
    shutil.copytree(small_space_dir, folder)
    fresh = lp._build_derivations(load_space(folder))
    first = lp._derivation_tables(load_space(folder))
    kept = folder / "index" / "learned_prior_derivations.npz"
    assert kept.is_file()
    again = lp._derivation_tables(load_space(folder))  # a new process's view: read from the file
    for tables in (first, again):
        for f in ("row_concept", "row_share", "col_context", "col_rule", "theta0", "lhs_of"):
            a, b = getattr(tables, f), getattr(fresh, f)
            assert a.dtype == b.dtype and np.array_equal(a, b), f
        assert tables.contexts == fresh.contexts
        for f in ("uses", "ctx_uses"):
            assert getattr(tables, f).shape == getattr(fresh, f).shape and (getattr(tables, f) != getattr(fresh, f)).nnz == 0


def test_cached_arrays_rebuild_a_stale_or_damaged_file(small_space_dir, tmp_path):
    import shutil
    from bayes_concepts.spaces import load_space
    folder = tmp_path / "space"
    shutil.copytree(small_space_dir, folder)
    space = load_space(folder)
    built = []

    def build():
        built.append(1)
        return {"x": np.arange(5, dtype=np.int32)}
    assert np.array_equal(cached_arrays(space, "t", build)["x"], np.arange(5))
    assert np.array_equal(cached_arrays(space, "t", build)["x"], np.arange(5)) and len(built) == 1
    cached_arrays(space, "t", build, version=2)  # another version: built again
    assert len(built) == 2
    (folder / "index" / "t.npz").write_bytes(b"not a zip")
    assert np.array_equal(cached_arrays(space, "t", build, version=2)["x"], np.arange(5)) and len(built) == 3
    assert not list((folder / "index").glob(".t.*"))  # no temporary file left


@pytest.mark.parametrize("text, expected", [("1G", 1 << 30), ("512M", 512 << 20), ("2GiB", 2 << 30), ("4096", 4096),
                                            ("", 6 << 30), ("0", 0)])
def test_the_mapped_pages_budget_reads_sizes(text, expected):
    assert mapped_rss_budget(text) == expected


@pytest.mark.parametrize("text", ["lots", "-1G", "1T", "nan"])
def test_a_bad_mapped_pages_budget_is_one_line(text):
    with pytest.raises(ScaleError, match="BAYES_CONCEPTS_MAPPED_RSS"):
        mapped_rss_budget(text)


def test_the_cli_refuses_a_bad_mapped_pages_budget_before_any_work(small_space_dir, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("BAYES_CONCEPTS_MAPPED_RSS", "lots")
    out = tmp_path / "gap.nc"
    status, _, err = run(["gap", str(small_space_dir), "--split", "counting", "--episodes", "5", "--out", str(out)],
                         capsys)
    assert_one_line_error(status, err, "BAYES_CONCEPTS_MAPPED_RSS")
    assert not out.exists()
