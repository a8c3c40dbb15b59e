"""Ties as ties, the direct test, and the baseline predictors beside every rung."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata, spearmanr

from bayes_concepts.ladder import format_correlations, ladder_correlations
from bayes_concepts.ranking import (bootstrap_plan, direct_test, is_flat, rank_correlations, rank_series,
                                    singled_out, tie_ranks, tied_pairs)


class Published:
    benchmark, measure = "fake", "value"

    def __init__(self, table):
        self.table = table

    def experiments(self):
        return []

    def models(self):
        return list(self.table)

    def frame(self):
        return pd.DataFrame([{"model": m, "condition": c, "value": v} for m, d in self.table.items()
                             for c, v in d.items()])

    def difficulty(self, model=None, negatives=None, measure=None):
        return pd.DataFrame(self.table).mean(axis=1) if model is None else pd.Series(self.table[model])


def _rows(gaps: dict, ses: dict | float = 0.0) -> list:
    def se(c, lb):
        return ses if isinstance(ses, float) else ses[c][lb]
    return [{"split": c, "negatives": "hard", "episodes": 100, "solved_at": None,
             "rungs": {lb: {"map": 100 - g, "cba": 0, "gap": g, "gap_ci": [g, g], "gap_se": se(c, lb),
                            "cba_gap": g, "cba_gap_ci": [g, g], "empty_share": 0} for lb, g in r.items()}}
            for c, r in gaps.items()]


# ----------------------------------------------------------------------------- tie groups
def _slow_tie_ranks(v, s, z=2.0):
    """The definition, one condition at a time: sort, join the group of the one before when tied
    with that group's lowest member, average positions."""
    order = sorted(range(len(v)), key=lambda i: (v[i], i))
    groups, anchor = [[order[0]]], order[0]
    for i in order[1:]:
        d = abs(v[i] - v[anchor])
        if d == 0 or d < z * np.sqrt(s[i] ** 2 + s[anchor] ** 2):
            groups[-1].append(i)
        else:
            groups.append([i])
            anchor = i
    ranks, pos = np.zeros(len(v)), 1
    for g in groups:
        ranks[g] = np.mean(np.arange(pos, pos + len(g)))
        pos += len(g)
    return ranks


values = st.lists(st.one_of(st.integers(0, 5).map(float), st.floats(0, 100, allow_nan=False)), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(values, st.data())
def test_tie_ranks_equal_the_definition(v, data):
    s = data.draw(st.lists(st.sampled_from([0.0, 0.1, 1.0, 5.0]), min_size=len(v), max_size=len(v)))
    assert np.allclose(tie_ranks(np.array(v), np.array(s)), _slow_tie_ranks(v, s))
    # rows at once = row by row
    rows = np.array([v, v[::-1]])
    srows = np.array([s, s[::-1]])
    both = tie_ranks(rows, srows)
    assert np.allclose(both[0], _slow_tie_ranks(v, s)) and np.allclose(both[1], _slow_tie_ranks(v[::-1], s[::-1]))


@settings(max_examples=100, deadline=None)
@given(values)
def test_exact_values_rank_as_scipy(v):
    assert np.allclose(tie_ranks(np.array(v)), rankdata(v))


def test_corners_one_condition_all_equal_and_flat():
    assert tie_ranks(np.array([3.0])).tolist() == [1.0]
    assert tie_ranks(np.array([2.0, 2.0, 2.0])).tolist() == [2.0, 2.0, 2.0]
    assert is_flat([1.0]) and is_flat([5.0, 5.0]) and not is_flat([5.0, 5.1])
    assert is_flat([5.0, 5.1], [0.1, 0.1])  # 0.1 apart, 2 * sqrt(0.02) = 0.28 allowed
    assert np.isnan(tied_pairs([1.0]))
    assert tied_pairs([0.0, 0.0, 10.0]) == pytest.approx(1 / 3)


def test_swapping_two_tied_conditions_does_not_change_rho():
    gaps = np.array([10.0, 30.0, 30.4, 50.0, 70.0])
    ses = np.array([0.5, 0.5, 0.5, 0.5, 0.5])
    target = np.array([1.0, 2.0, 5.0, 3.0, 4.0])
    rho, _ = rank_correlations(tie_ranks(gaps, ses), tie_ranks(target))
    swapped = gaps.copy()
    swapped[[1, 2]] = swapped[[2, 1]]
    rho2, _ = rank_correlations(tie_ranks(swapped, ses), tie_ranks(target))
    assert rho == rho2
    # without the standard errors the two are ranked apart, and the swap moves rho
    r_exact, _ = rank_correlations(tie_ranks(gaps), tie_ranks(target))
    r_swap, _ = rank_correlations(tie_ranks(swapped), tie_ranks(target))
    assert r_exact != r_swap


def test_the_same_through_ladder_correlations():
    conds = [f"c{i}" for i in range(6)]
    target = {"m": dict(zip(conds, [1.0, 2.0, 6.0, 3.0, 4.0, 5.0]))}
    gaps = [10.0, 30.0, 30.3, 50.0, 70.0, 90.0]
    a = ladder_correlations(_rows({c: {"r": g, "strong": 0.0} for c, g in zip(conds, gaps)}, 0.5), Published(target),
                            n_boot=100)
    gaps[1], gaps[2] = gaps[2], gaps[1]
    b = ladder_correlations(_rows({c: {"r": g, "strong": 0.0} for c, g in zip(conds, gaps)}, 0.5), Published(target),
                            n_boot=100)
    assert a["rungs"]["r"]["mean_model"]["spearman"] == b["rungs"]["r"]["mean_model"]["spearman"]


# ----------------------------------------------------------------------------- noise is not signal
def test_gaps_equal_up_to_noise_are_flat_and_their_interval_covers_zero():
    rng = np.random.default_rng(3)
    conds = [f"c{i}" for i in range(9)]
    se = 0.4
    # as CLOSURE's memoriser once was: 97.02 / 97.04 / 97.06 with standard errors near 0.1
    gaps = 97.0 + rng.uniform(-0.3, 0.3, 9)
    target = rng.normal(size=9)
    corr = ladder_correlations(_rows({c: {"noise": float(g), "strong": 0.0} for c, g in zip(conds, gaps)}, se),
                               Published({"m": dict(zip(conds, target))}), n_boot=500)
    e = corr["rungs"]["noise"]["mean_model"]
    assert e["flat"] and np.isnan(e["spearman"])
    lo, hi = e["spearman_ci"]
    assert lo <= 0 <= hi
    assert "flat" in format_correlations(corr)
    # the same gaps read as exact (no standard errors) would have been ranked
    exact = ladder_correlations(_rows({c: {"noise": float(g), "strong": 0.0} for c, g in zip(conds, gaps)}, 0.0),
                                Published({"m": dict(zip(conds, target))}), n_boot=50)
    assert not exact["rungs"]["noise"]["mean_model"]["flat"]


def test_a_rung_singling_out_one_condition_gets_the_direct_test():
    conds = [f"c{i}" for i in range(7)]
    gaps = [0.0] * 7
    gaps[4] = 97.0  # as CLOSURE's compound rung: one family apart, the rest at 0
    target = {"m": dict(zip(conds, [1.0, 2.0, 3.0, 0.5, 9.0, 4.0, 5.0]))}
    corr = ladder_correlations(_rows({c: {"compound": g, "strong": 0.0} for c, g in zip(conds, gaps)}, 0.3),
                               Published(target), n_boot=200)
    e = corr["rungs"]["compound"]["mean_model"]
    d = e["direct_test"]
    assert d == {"condition": "c4", "side": "hardest", "target_rank": 1, "hit": True, "chance": pytest.approx(1 / 7),
                 "p_value": pytest.approx(1 / 7)}
    assert all(np.isnan(e["spearman_ci"]))  # no interval pinned at 0
    assert "singles out c4" in format_correlations(corr)
    # the models' hardest elsewhere: a miss, its rank said
    target["m"]["c4"] = 3.5
    d = ladder_correlations(_rows({c: {"compound": g, "strong": 0.0} for c, g in zip(conds, gaps)}, 0.3),
                            Published(target), n_boot=50)["rungs"]["compound"]["mean_model"]["direct_test"]
    assert d["hit"] is False and d["target_rank"] == 3 and d["p_value"] == pytest.approx(3 / 7)


def test_singled_out_needs_the_rest_tied_and_the_one_apart():
    assert singled_out([0, 0, 0, 50], [1, 1, 1, 1]) == (3, "hardest")
    assert singled_out([50, 50, 50, 0], [1, 1, 1, 1]) == (3, "easiest")
    assert singled_out([0, 10, 20, 50], [1, 1, 1, 1]) is None  # the rest are not one tie group
    assert singled_out([0, 0, 1, 1.5], [1, 1, 1, 1]) is None   # nothing apart
    assert direct_test([0, 0, 0], [1, 1, 1], [1, 2, 3], ["a", "b", "c"]) is None


# ----------------------------------------------------------------------------- predictors beside rungs
def test_a_rung_equal_to_a_predictor_differs_from_it_by_exactly_zero():
    rng = np.random.default_rng(1)
    conds = [f"c{i}" for i in range(10)]
    x = rng.normal(size=10) * 20 + 50
    target = x + rng.normal(size=10) * 10
    rows = _rows({c: {"memoriser": float(x[i]), "other": float(50 + 20 * rng.normal()), "strong": 0.0}
                  for i, c in enumerate(conds)}, 0.0)
    preds = {c: {"compound_divergence": float(x[i]) / 100, "n_test_concepts": float(i)} for i, c in enumerate(conds)}
    corr = ladder_correlations(rows, Published({"m": dict(zip(conds, target))}), n_boot=300, predictors=preds)
    assert set(corr["predictors"]) == {"compound_divergence", "n_test_concepts", "memoriser"}
    mem = corr["rungs"]["memoriser"]["mean_model"]
    # the memoriser is a predictor too: the same series, the same replicates, difference 0
    assert corr["predictors"]["memoriser"]["mean_model"]["spearman"] == mem["spearman"]
    best = corr["best_predictor"]["mean_model"]
    assert best in ("compound_divergence", "memoriser")  # the two equal-ranked series lead
    assert mem["vs_best"]["difference"] == 0.0 and mem["vs_best"]["difference_ci"] == [0.0, 0.0]
    vs = mem["vs_compound_divergence"]
    assert vs["difference"] == pytest.approx(0.0, abs=1e-12)
    # another rung's difference is its rho minus the best predictor's, with an interval around it
    other = corr["rungs"]["other"]["mean_model"]
    assert other["vs_best"]["difference"] == pytest.approx(other["spearman"] - mem["spearman"])
    lo, hi = other["vs_best"]["difference_ci"]
    assert lo <= other["vs_best"]["difference"] <= hi
    text = format_correlations(corr)
    assert "compound divergence" in text and "best predictor" in text


def test_rank_series_pairs_its_replicates():
    rng = np.random.default_rng(2)
    conds = list("abcdefgh")
    t = rng.normal(size=8)
    got = rank_series({"x": (t, np.zeros(8)), "p:y": (-t, np.zeros(8))}, t, conds, predictors=["p:y"], n_boot=200,
                      seed=0)
    x, y = got["series"]["x"], got["series"]["p:y"]
    assert x["spearman"] == pytest.approx(1.0) and y["spearman"] == pytest.approx(-1.0)
    assert x["vs_best"]["difference"] == pytest.approx(2.0)
    assert got["best_predictor"] == "p:y"


def test_too_few_conditions_print_no_correlation():
    conds = ["a", "b", "c"]
    corr = ladder_correlations(_rows({c: {"r": float(i * 10), "strong": 0.0} for i, c in enumerate(conds)}),
                               Published({"m": dict(zip(conds, [1.0, 2.0, 3.0]))}), n_boot=50)
    assert "too few conditions to rank (n = 3)" in format_correlations(corr)


def test_bootstrap_plan_is_seeded():
    a = bootstrap_plan(5, 10, np.random.default_rng(0))
    b = bootstrap_plan(5, 10, np.random.default_rng(0))
    assert all((x == y).all() for x, y in zip(a, b))
    assert spearmanr([1, 2, 3], [1, 2, 3]).statistic == 1.0


# ----------------------------------------------------------------------------- default rungs that cannot apply
def test_the_default_ladder_on_item_sets_runs_the_rungs_that_apply(tmp_path, capsys):
    from bayes_concepts.spaces.extension_space import ExtensionSpace
    from conftest import run
    rng = np.random.default_rng(0)
    ext = [sorted(rng.choice(400, size=int(rng.integers(15, 40)), replace=False).tolist()) for _ in range(60)]
    ExtensionSpace.from_extensions(ext, [f"c{i}" for i in range(60)], n_items=400).save(tmp_path / "sets")
    spec = tmp_path / "r.toml"
    spec.write_text('name = "r"\nkind = "random"\nfractions = {train = 0.7, test = 0.3}\n')
    status, out, err = run(["ladder", str(tmp_path / "sets"), "--spec", str(spec), "--episodes", "30",
                            "--negatives", "hard", "--published", "none"], capsys)
    assert status == 0, err
    assert "(rung learned_prior skipped:" in out and "this is an extension space" in out
    assert "memoriser" in out and "strong" in out
    # named explicitly, a rung that cannot apply is still refused in one line
    status, out, err = run(["ladder", str(tmp_path / "sets"), "--spec", str(spec), "--rungs", "learned_prior",
                            "strong", "--episodes", "30", "--published", "none"], capsys)
    assert status == 2 and "learned prior" in err
