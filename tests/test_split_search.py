"""Split search: its fast parts against slow twins, a small search end to end, and the spec it
writes made again by ``gap --spec``.

* :class:`SideMasses` (divergences kept by adding and removing a class's masses) equals
  :func:`split_divergence` on random assignments and after random sequences of moves;
* :class:`GapProxy` re-scoring only the episodes a move can change equals re-scoring every one;
* a search meets its constraints and share, keeps synonym classes whole, is reproducible from
  its seed, and its spec file round-trips through ``gap --spec``.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bayes_concepts.divergence import concept_structure, split_divergence
from bayes_concepts.split_search import (GapProxy, SearchError, SideMasses, parse_constraint, search_split,
                                         spec_toml)
from bayes_concepts.splits import Split, make_split, split_stats

from conftest import assert_one_line_error, run


@pytest.fixture(scope="module")
def masses(small_space):
    return SideMasses(small_space, concept_structure(small_space))


def _split_of(space, masses, test_units) -> Split:
    test = np.flatnonzero(test_units[masses.units])
    return Split("s", np.setdiff1d(np.arange(space.n_concepts), test), np.empty(0, np.int64), test, {}, None, "",
                 space.n_concepts)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_side_masses_equal_split_divergence_after_random_moves(small_space, masses, data):
    seed = data.draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    test = rng.random(masses.n_units) < data.draw(st.sampled_from([0.05, 0.2, 0.6]))
    side = masses.side(test)
    for _ in range(data.draw(st.integers(0, 40))):  # moves kept by additions, as the search keeps them
        a = int(rng.integers(masses.n_units))
        b = int(rng.integers(masses.n_units))
        out_u = a if test[a] else -1
        in_u = b if not test[b] and b != a else -1
        side = masses.moved(side, out_u, in_u)
        for u in (out_u, in_u):
            if u >= 0:
                test[u] = ~test[u]
    got = masses.divergences(side)
    want = split_divergence(small_space, _split_of(small_space, masses, test))
    for name in ("atom", "compound"):
        w, g = want[f"{name}_divergence"], got[f"{name}-divergence"]
        assert (np.isnan(w) and np.isnan(g)) or g == pytest.approx(w, abs=1e-9)


@pytest.fixture(scope="module")
def proxy(small_space, masses):
    return GapProxy(small_space, masses.units, masses.n_units, n_episodes=400, seed=5)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_gap_proxy_rescoring_only_what_a_move_changes_equals_rescoring_all(masses, proxy, data):
    assert proxy.local  # the default oracle settings: consistent-only likelihood, weak-empty policy zero
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    test = rng.random(masses.n_units) < 0.2
    value = proxy.reset(test)
    for _ in range(data.draw(st.integers(1, 6))):
        moved = rng.choice(masses.n_units, size=int(rng.integers(1, 3)), replace=False)
        new_test = test.copy()
        new_test[moved] = ~new_test[moved]
        new_value, change = proxy.propose(new_test, moved)
        if rng.random() < 0.6:
            proxy.commit(change)
            test, value = new_test, new_value
    full = proxy.full(test)
    np.testing.assert_allclose(proxy.weak_ap, full, rtol=0, atol=1e-12)
    assert value == pytest.approx(proxy.value(test, full), abs=1e-9)


def test_the_proxy_is_the_gap_of_the_pool_episodes(small_space, masses, proxy):
    """On the pool's test episodes, the proxy is the strong − weak AP of the split's oracles."""
    from bayes_concepts.oracles import strong_and_weak
    from bayes_concepts.split_search import _subset
    test = np.random.default_rng(1).random(masses.n_units) < 0.2
    split = _split_of(small_space, masses, test)
    on_test = test[proxy.unit_of_episode]
    eps = _subset(proxy.pool, np.flatnonzero(on_test))
    strong, weak = strong_and_weak(small_space, split)
    want = 100 * np.mean(strong.evaluate(eps)["ap"] - weak.evaluate(eps)["ap"])
    assert proxy.reset(test) == pytest.approx(want, abs=1e-9)


# ================================================================================ the search
def test_compound_divergence_search_meets_its_constraints_and_is_reproducible(small_space):
    kw = dict(test_share=0.2, share_tolerance=0.02, constraints=["atom-divergence<=0.05"], seed=3,
              iterations=400, budget_s=None)
    r = search_split(small_space, "compound-divergence", **kw)
    assert r.divergences["atom_divergence"] <= 0.05
    assert 0.18 - 1e-9 <= r.test_share <= 0.22 + 1e-9
    d = split_divergence(small_space, r.split)
    assert d["compound_divergence"] == pytest.approx(r.value, abs=1e-9)
    assert split_stats(small_space, r.split)["leakage"] == 0 and len(r.split.val) == 0
    again = search_split(small_space, "compound-divergence", **kw)
    assert again.spec == r.spec and again.value == r.value and r.value > 0


def test_gap_search_improves_on_its_start(small_space):
    r = search_split(small_space, "gap", test_share=0.2, constraints=["atom-divergence<=0.05"], seed=0,
                     iterations=60, budget_s=None, pool_episodes=600, method="greedy")
    first, last = r.history[0], r.history[-1]
    assert last[3] >= first[2] and r.accepted > 0
    assert make_split(small_space, r.spec).concepts_sha256() == r.split.concepts_sha256()


def test_search_cli_writes_a_spec_that_gap_makes_again(small_space_dir, tmp_path, capsys):
    spec = tmp_path / "found.toml"
    status, out, err = run(["splits", "search", small_space_dir, "--objective", "gap", "--constraint",
                            "atom-divergence<=0.05", "--test-share", "0.2", "--iterations", "40", "--pool-episodes",
                            "400", "--episodes", "60", "--seed", "1", "--out", spec], capsys)
    assert status == 0, err
    assert "step" in err or "best:" in err  # progress lines on stderr, plain lines (a log file reads them)
    assert "audit of split 'searched'" in out and "novel arrangements" in out
    text = spec.read_text()
    assert text.startswith("# split search") and "[held_out]" in text
    status, out, err = run(["gap", small_space_dir, "--spec", spec, "--split", "searched", "--episodes", "50",
                            "--negatives", "hard", "--json"], capsys)
    assert status == 0, err
    row = json.loads(out)["results"][0]
    assert row["split"] == "searched" and np.isfinite(row["gap"]["map"])


def test_search_follows_the_episode_shape(small_space, small_space_dir, tmp_path, capsys):
    """The shape reaches the pool, the divergences' weights, the audit and the spec."""
    r = search_split(small_space, "gap", test_share=0.2, constraints=["atom-divergence<=0.2"], seed=2,
                     iterations=20, budget_s=None, pool_episodes=300, method="greedy", episode_shape="3,10,4,6")
    assert r.spec["episodes"] == {"positives": 3, "negatives": 10, "query_positives": 4, "query_negatives": 6}
    d = split_divergence(small_space, r.split, n_positive=3, n_query_positive=4)
    assert r.divergences["atom_divergence"] == pytest.approx(d["atom_divergence"], abs=1e-9)
    m = SideMasses(small_space)
    proxy = GapProxy(small_space, m.units, m.n_units, n_episodes=200, episode_shape="3,10,4,6")
    assert proxy.pool.support_scenes.shape[1] == 13 and proxy.pool.query_scenes.shape[1] == 10
    spec = tmp_path / "shaped.toml"
    status, out, err = run(["splits", "search", small_space_dir, "--objective", "compound-divergence",
                            "--constraint", "atom-divergence<=0.2", "--iterations", "30", "--episodes", "40",
                            "--episode-shape", "3,10", "--out", spec], capsys)
    assert status == 0, err
    assert "episodes: 3+10 support, 3+10 query" in out
    assert make_split(small_space, spec).spec["episodes"]["positives"] == 3
    status, out, err = run(["gap", small_space_dir, "--spec", spec, "--split", "searched", "--episodes", "30",
                            "--negatives", "hard", "--json"], capsys)
    assert status == 0, err
    status, out, err = run(["splits", "search", small_space_dir, "--episode-shape", "0,5", "--out",
                            tmp_path / "bad.toml"], capsys)
    assert_one_line_error(status, err, "--episode-shape")
    assert not (tmp_path / "bad.toml").exists()


def test_constraints_and_options_are_checked():
    assert parse_constraint("atom-divergence<=0.02") == ("atom-divergence", "<=", 0.02)
    assert parse_constraint("compound-divergence >= 0.1") == ("compound-divergence", ">=", 0.1)
    for bad in ("atom<=0.1", "atom-divergence<0.1", "atom-divergence<=2", "atom-divergence<=x"):
        with pytest.raises(SearchError):
            parse_constraint(bad)


def test_bad_search_input_is_one_line(small_space, small_space_dir, tmp_path, capsys):
    with pytest.raises(SearchError, match="objective"):
        search_split(small_space, "hardness", iterations=5)
    with pytest.raises(SearchError, match="test_share"):
        search_split(small_space, "gap", test_share=1.5, iterations=5)
    with pytest.raises(SearchError, match="no split met"):
        search_split(small_space, "compound-divergence", constraints=["atom-divergence<=0.0"], iterations=50,
                     budget_s=None)
    status, out, err = run(["splits", "search", small_space_dir, "--constraint", "atom<=1", "--out",
                            tmp_path / "x.toml"], capsys)
    assert_one_line_error(status, err, "atom<=1")
    assert not (tmp_path / "x.toml").exists()


def test_spec_toml_reads_back(small_space):
    r = search_split(small_space, "compound-divergence", iterations=50, budget_s=None,
                     constraints=["atom-divergence<=0.2"])
    import tomllib
    raw = tomllib.loads(spec_toml(r.spec, ["a comment", "two\nlines"]))
    assert raw["held_out"]["programs"] == r.spec["held_out"]["programs"] and raw["synonym_aware"] is True
