"""Split search on a ladder objective (the gap of any rung), and the split found written back
out as pair files for pair spaces."""
from pathlib import Path

import numpy as np
import pytest

from bayes_concepts.suites.pairs import (PairsLayoutError, pair_space, read_pairs_layout, split_pairs, unseen_pairs_spec,
                                  write_pair_files)
from bayes_concepts.split_search import GapProxy, SearchError, SideMasses, objective_rung, search_split
from bayes_concepts.splits import make_split

from conftest import assert_one_line_error, run

FIXTURE = Path(__file__).parent / "fixtures" / "pairs"


@pytest.fixture(scope="module")
def pairs():
    layout = read_pairs_layout(FIXTURE / "items.tsv", FIXTURE)
    return layout, pair_space(layout)


def test_objective_names():
    assert objective_rung("gap") == ("memoriser", {})
    assert objective_rung("gap:atom") == ("atom", {})
    assert objective_rung("compound-divergence") is None
    for bad, needle in (("gapp", "objective must be"), ("gap:nope", "unknown rung"), ("gap:strong", "gap to itself"),
                        ("gap:memoriser[alpha=1]", "takes no knobs")):
        with pytest.raises(SearchError, match=needle):
            objective_rung(bad)


def test_a_rung_proxy_equals_its_slow_twin_and_the_memoriser_is_the_gap(small_space):
    masses = SideMasses(small_space)
    rng = np.random.default_rng(0)
    test = rng.random(masses.n_units) < 0.2
    weak = GapProxy(small_space, masses.units, masses.n_units, 300, seed=1)
    mem = GapProxy(small_space, masses.units, masses.n_units, 300, seed=1, rung="memoriser")
    atom = GapProxy(small_space, masses.units, masses.n_units, 300, seed=1, rung="atom")
    assert not atom.local and mem.local
    assert weak.reset(test) == pytest.approx(mem.reset(test))
    value = atom.reset(test)
    # the slow twin: the atom oracle of the split, scored on the pool episodes directly
    from bayes_concepts.rungs import rung_learner
    from bayes_concepts.splits import Split
    train = np.flatnonzero(~test[masses.units])
    split = Split("t", train, np.zeros(0, np.int64), np.flatnonzero(test[masses.units]), {},
                  n_concepts=small_space.n_concepts)
    ap = rung_learner("atom", small_space, split).evaluate(atom.pool)["ap"]
    on_test = test[atom.unit_of_episode]
    assert value == pytest.approx(100 * np.mean(atom.strong_ap[on_test] - ap[on_test]))
    # a learner that recombines seen atoms does at least as well as the memoriser on this pool here
    assert value <= weak.reset(test) + 1e-9


def test_search_on_a_rung_runs_and_its_spec_makes_the_split(small_space):
    res = search_split(small_space, "gap:compound", test_share=0.2, share_tolerance=0.05, constraints=(),
                       iterations=15, budget_s=None, pool_episodes=200, seed=2)
    assert res.objective == "gap:compound" and np.isfinite(res.value)
    again = make_split(small_space, res.spec)
    assert again.concepts_sha256() == res.split.concepts_sha256()


def test_pair_files_round_trip(pairs, tmp_path):
    layout, space = pairs
    split = make_split(space, unseen_pairs_spec(space, layout.pairs["train"]))
    written = write_pair_files(space, split, tmp_path / "out")
    assert [p.name for p, _ in written] == ["train_pairs.txt", "test_pairs.txt"]
    sides = split_pairs(space, split)
    for path, n in written:
        lines = path.read_text().splitlines()
        assert len(lines) == n
        assert [tuple(x.split(" ")) for x in lines] == sides[path.name.split("_")[0]]
    assert {tuple(p) for p in sides["train"]} == {tuple(p) for p in layout.pairs["train"]}
    with pytest.raises(PairsLayoutError, match="already exists"):
        write_pair_files(space, split, tmp_path / "out")


def test_pair_files_need_a_pair_space(small_space, tmp_path):
    split = make_split(small_space, {"name": "x", "kind": "held_out", "held_out": {"programs": [small_space.programs[0]]}})
    with pytest.raises(PairsLayoutError, match="need a pair space"):
        write_pair_files(small_space, split, tmp_path)


def test_cli_refuses_a_bad_objective(small_space_dir, capsys, tmp_path):
    status, out, err = run(["splits", "search", small_space_dir, "--objective", "gap:oracle9", "--out",
                            tmp_path / "x.toml"], capsys)
    assert_one_line_error(status, err, "unknown rung 'oracle9'")
    assert not (tmp_path / "x.toml").exists()


def test_cli_search_writes_pair_files(tmp_path, capsys):
    from bayes_concepts.suites.pairs import build_pair_space
    build_pair_space(tmp_path / "space", FIXTURE / "items.tsv", FIXTURE)
    status, out, err = run(["splits", "search", tmp_path / "space", "--objective", "gap:atom", "--constraint",
                            "atom-divergence<=1", "--iterations", "5", "--pool-episodes", "100", "--episodes", "20",
                            "--test-share", "0.3", "--share-tolerance", "0.2", "--out", tmp_path / "found.toml",
                            "--pairs-out", tmp_path / "pairs"], capsys)
    assert status == 0, err
    assert "pair files written" in out
    train = (tmp_path / "pairs" / "train_pairs.txt").read_text().split("\n")
    assert train[-1] == "" and len(train) > 1 and all(len(x.split(" ")) == 2 for x in train[:-1])
    status, out, err = run(["splits", "search", tmp_path / "space", "--iterations", "2", "--out", tmp_path / "b.toml",
                            "--pairs-out", tmp_path / "pairs"], capsys)
    assert_one_line_error(status, err, "already exists")
