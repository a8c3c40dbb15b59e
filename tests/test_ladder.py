"""The ladder: profiles on the gap's own episodes, summaries, rank correlations and their
pooling, the command line's refusals."""
import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau, spearmanr

from bayes_concepts.gap import compute_gap
from bayes_concepts.ladder import (LadderError, format_ladder, ladder_correlations, ladder_profile, ladder_summary,
                                   parse_rungs, pooled_correlations, rung_spreads)
from bayes_concepts.rungs import RungError
from bayes_concepts.splits import load_splits

from conftest import assert_one_line_error, run

FIXED = ["memoriser", "compound", "atom", "bounded_length", "strong"]


@pytest.fixture(scope="module")
def splits(small_space):
    return load_splits(small_space, ["concept_iid", "counting", "binding_color", "boolean"])


@pytest.fixture(scope="module")
def profile(small_space, splits):
    return ladder_profile(small_space, splits, FIXED, ("hard",), 120, seed=3)


def test_memoriser_and_strong_are_the_gaps_oracles(small_space, splits, profile):
    ds = compute_gap(small_space, splits, ("hard",), 120, seed=3, parts=True)
    for rung, learner in (("memoriser", "weak"), ("strong", "strong"), ("compound", "compound"), ("atom", "atom")):
        np.testing.assert_array_equal(profile["ap"].sel(learner=rung).values, ds["ap"].sel(learner=learner).values)
        np.testing.assert_array_equal(profile["cba"].sel(learner=rung).values, ds["cba"].sel(learner=learner).values)
    assert [str(x) for x in profile.learner.values] == FIXED
    ladder = json.loads(profile.attrs["ladder"])
    assert [r["label"] for r in ladder] == FIXED and all(r["definition"] for r in ladder)


def test_summary_gaps_and_where_solved(profile):
    rows = ladder_summary(profile, n_boot=100)
    assert len(rows) == 4
    for r in rows:
        cell = profile.sel(split=r["split"], negatives="hard")
        strong = 100 * np.nanmean(cell["ap"].sel(learner="strong").values)
        for lb, v in r["rungs"].items():
            mean = 100 * np.nanmean(cell["ap"].sel(learner=lb).values)
            assert v["map"] == pytest.approx(mean)
            d = 100 * (cell["ap"].sel(learner="strong").values - cell["ap"].sel(learner=lb).values)
            assert v["gap"] == pytest.approx(np.nanmean(d))
            assert v["gap_ci"][0] <= v["gap"] + 1e-9 <= v["gap_ci"][1] + 2e-9
        assert r["rungs"]["strong"]["gap"] == 0
        below = [lb for lb in FIXED[:-1] if r["rungs"][lb]["gap"] <= 5.0]
        assert r["solved_at"] == (below[0] if below else None)
        assert strong >= 0
    text = format_ladder(rows)
    assert "solved at" in text and all(lb in text for lb in FIXED)


def test_the_profile_follows_the_rung_order_whatever_the_order_given(small_space):
    specs = parse_rungs(["strong", "atom", "memoriser"], space=small_space)
    assert [n for n, _ in specs] == ["memoriser", "atom", "strong"]


def test_bad_rungs_are_refused(small_space):
    with pytest.raises(RungError, match="unknown rung 'nope'"):
        parse_rungs(["nope"], space=small_space)
    with pytest.raises(RungError, match="takes no knobs"):
        parse_rungs(["memoriser[alpha=2]"], space=small_space)
    with pytest.raises(RungError, match="in brackets"):
        parse_rungs(["memoriser[alpha=2"], space=small_space)


class FakePublished:
    """A stand-in for PublishedResults: difficulty per condition for two models."""

    benchmark, measure, source = "fake", "drop", "test"

    def __init__(self, table: dict):
        self.table = table  # model -> {condition: difficulty}

    def check(self, conditions):
        extra = [c for m in self.table.values() for c in m if c not in conditions]
        if extra:
            raise LadderError(f"published condition {extra[0]!r} is not a split here")

    def models(self):
        return list(self.table)

    def experiments(self):
        return []

    def frame(self):
        return pd.DataFrame([{"model": m, "condition": c, "value": v} for m, d in self.table.items()
                             for c, v in d.items()])

    def difficulty(self, model=None, negatives=None, measure=None):
        if model is None:
            return pd.DataFrame(self.table).mean(axis=1)
        return pd.Series(self.table[model])


def _rows(gaps: dict, se: float = 0.0) -> list:
    """ladder_summary-like rows: condition -> {rung: gap}."""
    return [{"split": c, "negatives": "hard", "episodes": 100, "solved_at": None,
             "rungs": {lb: {"map": 100 - g, "cba": 0, "gap": g, "gap_ci": [g - 1, g + 1], "gap_se": se,
                            "cba_gap": g, "cba_gap_ci": [g - 1, g + 1], "empty_share": 0} for lb, g in r.items()}}
            for c, r in gaps.items()]


def test_correlations_equal_scipy_and_intervals_hold_them():
    rng = np.random.default_rng(0)
    conds = [f"c{i}" for i in range(8)]
    a, b = rng.normal(size=8), rng.normal(size=8)
    rows = _rows({c: {"memoriser": 50 + 10 * a[i], "strong": 0.0} for i, c in enumerate(conds)}, se=0.001)
    pub = FakePublished({"m1": dict(zip(conds, b)), "m2": dict(zip(conds, a + rng.normal(size=8)))})
    corr = ladder_correlations(rows, pub, "hard", n_boot=400, seed=1)
    mean = pd.DataFrame(pub.table).mean(axis=1)
    m = corr["rungs"]["memoriser"]["mean_model"]
    assert m["spearman"] == pytest.approx(spearmanr(a, mean[conds]).statistic)
    assert m["kendall"] == pytest.approx(kendalltau(a, mean[conds]).statistic)
    assert m["spearman_ci"][0] <= m["spearman"] <= m["spearman_ci"][1]
    assert corr["rungs"]["memoriser"]["models"]["m1"]["spearman"] == pytest.approx(spearmanr(a, b).statistic)
    # the strong rung's gap is constant: no rank correlation, said as NaN
    assert np.isnan(corr["rungs"]["strong"]["mean_model"]["spearman"])


def test_vectorised_rank_correlations_equal_scipy_with_ties():
    from bayes_concepts.ranking import rank_correlations, tie_ranks
    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, (200, 7)).astype(float)  # many ties
    y = rng.normal(size=(200, 7)).round(1)
    rho, tau = rank_correlations(tie_ranks(x), tie_ranks(y))
    for b in range(200):
        if np.ptp(x[b]) == 0 or np.ptp(y[b]) == 0:
            assert np.isnan(rho[b]) and np.isnan(tau[b])
            continue
        assert rho[b] == pytest.approx(spearmanr(x[b], y[b]).statistic, abs=1e-12)
        assert tau[b] == pytest.approx(kendalltau(x[b], y[b]).statistic, abs=1e-12)


def test_a_flat_rung_is_not_ranked():
    # every gap within 2 standard errors of every other: flat, whatever the absolute spread
    conds = [f"c{i}" for i in range(6)]
    rows = _rows({c: {"flat": 0.1 * (i == 2), "strong": 0.0} for i, c in enumerate(conds)}, se=0.5)
    corr = ladder_correlations(rows, FakePublished({"m": {c: float(i) for i, c in enumerate(conds)}}), "hard",
                               n_boot=50)
    e = corr["rungs"]["flat"]["mean_model"]
    assert e["flat"] and np.isnan(e["spearman"])


def test_correlation_ranks_only_conditions_both_sides_have():
    rows = _rows({"c0": {"strong": 0.0}, "c1": {"strong": 0.0}, "c2": {"strong": 0.0}})
    corr = ladder_correlations(rows, FakePublished({"m": {"c0": 1, "c1": 3, "c9": 2}}), "hard", n_boot=20)
    assert corr["conditions"] == ["c0", "c1"] and corr["unmatched"] == ["c2"] and corr["unscored"] == ["c9"]


def test_pooling_is_fisher_z_weighted_by_conditions_minus_three():
    def bench(n, sign, seed):
        r = np.random.default_rng(seed)
        x = r.normal(size=n)
        conds = [f"c{i}" for i in range(n)]
        rows = _rows({c: {"memoriser": float(x[i]), "strong": 0.0} for i, c in enumerate(conds)})
        y = sign * x + r.normal(size=n)
        return ladder_correlations(rows, FakePublished({"m": dict(zip(conds, y))}), "hard", n_boot=200, seed=seed)

    per = {"a": bench(9, 1, 1), "b": bench(7, -1, 2), "c": bench(3, 1, 3)}
    out = pooled_correlations(per)["memoriser"]
    ra, rb = (per[k]["rungs"]["memoriser"]["mean_model"]["spearman"] for k in "ab")
    expected = np.tanh((6 * np.arctanh(ra) + 4 * np.arctanh(rb)) / 10)
    assert out["spearman"] == pytest.approx(expected)
    assert out["left_out"] == ["c"] and out["benchmarks"] == ["a", "b"]
    assert out["leave_one_out"]["a"] == pytest.approx(rb)
    assert out["leave_one_out"]["b"] == pytest.approx(ra)


def test_spread_is_max_minus_min():
    rows = _rows({"c0": {"memoriser": 90.0, "atom": 10.0}, "c1": {"memoriser": 97.0, "atom": 60.0}})
    assert rung_spreads(rows) == {"memoriser": pytest.approx(7.0), "atom": pytest.approx(50.0)}


def test_cli_refuses_an_unknown_rung_in_one_line(small_space_dir, capsys):
    status, out, err = run(["ladder", small_space_dir, "--rungs", "memoriser", "oracle9", "--episodes", "10"], capsys)
    assert_one_line_error(status, err, "unknown rung 'oracle9'")


def test_cli_ladder_json(small_space_dir, capsys, tmp_path):
    status, out, err = run(["ladder", small_space_dir, "--split", "counting", "boolean", "--rungs", *FIXED,
                            "--negatives", "hard", "--episodes", "40", "--published", "none", "--json",
                            "--figures", tmp_path / "figs"], capsys)
    assert status == 0, err
    doc = json.loads(out)
    assert [r["split"] for r in doc["results"]] == ["counting", "boolean"]
    assert list(doc["results"][0]["rungs"]) == FIXED
    assert (tmp_path / "figs" / "ladder_hard.png").stat().st_size > 0


@pytest.mark.parametrize("argv, needle", [
    (["--alpha", "0"], "alpha"),
    (["--alpha", "-1"], "alpha"),
    (["--budget", "0"], "--budget"),
    (["--rungs", "sampling[n=0]"], "n "),
    (["--rungs", "learned_prior[alpha=nan]"], "alpha"),
])
def test_cli_refuses_bad_knobs(small_space_dir, capsys, argv, needle):
    status, out, err = run(["ladder", small_space_dir, "--split", "counting", "--episodes", "5", *argv], capsys)
    assert_one_line_error(status, err, needle)


def test_cli_refuses_a_rung_that_cannot_apply(tmp_path, capsys):
    from bayes_concepts.spaces.extension_space import ExtensionSpace
    space = ExtensionSpace.from_extensions(np.eye(12, dtype=bool)[:, :12].repeat(1, 0), [f"c{i}" for i in range(12)])
    space.save(tmp_path / "plain")
    status, out, err = run(["ladder", tmp_path / "plain", "--rungs", "learned_prior", "--episodes", "5"], capsys)
    assert_one_line_error(status, err, "learned_prior", "cannot apply")


@pytest.fixture
def no_work(monkeypatch):
    """Scoring fails the test if reached: refusals come before any work."""
    import bayes_concepts.ladder

    def boom(*a, **k):
        raise AssertionError("work started before the options were checked")
    monkeypatch.setattr(bayes_concepts.ladder, "ladder_profile", boom)


def test_cli_scores_the_common_conditions_and_names_the_published_ones_the_space_lacks(small_space_dir, capsys,
                                                                                       tmp_path):
    """Issue 56, item 2: a published file with a condition the space has no split for no longer
    stops the ladder: the common conditions are ranked and the other one is named."""
    from bayes_concepts import published
    mine = published.load("curi").with_model("mine", {"counting": 40.0, "my_split": 3.0}, table="ours",
                                               allow_new_conditions=True)
    path = mine.write(tmp_path / "mine.toml")
    argv = ["ladder", small_space_dir, "--split", "counting", "boolean", "--rungs", "memoriser", "strong",
            "--negatives", "hard", "--episodes", "5", "--n-boot", "10", "--published", path]
    status, out, err = run(argv, capsys)
    assert status == 0, err
    assert "my_split: no split of" in out and "left out" in out
    assert "2 conditions: too few conditions to rank" in out
    status, out, err = run(argv + ["--json"], capsys)
    doc = json.loads(out)
    assert doc["published"]["not_splits"] == ["my_split"]
    assert doc["correlations"]["hard"]["conditions"] == ["counting", "boolean"]


def test_cli_refuses_published_results_with_no_condition_of_the_space(small_space_dir, capsys, tmp_path, no_work):
    from bayes_concepts import published
    only = published.PublishedResults(
        pd.DataFrame([{"model": "m", "condition": c, "negatives": "", "measure": "map", "value": 50.0,
                       "table": "ours", "experiment": "", "sd": np.nan, "ci95": np.nan, "source": "x"}
                      for c in ("length_3", "length_7")], columns=list(published.COLUMNS)),
        benchmark="mine", measure="map", measures={"map": published.MEASURES["map"]})
    path = only.write(tmp_path / "mine.toml")
    status, out, err = run(["ladder", small_space_dir, "--split", "counting", "--rungs", "memoriser", "strong",
                            "--episodes", "5", "--published", path], capsys)
    assert_one_line_error(status, err, "none of its conditions (length_3, length_7) is a split", "--published none")


def test_cli_names_the_benchmarks_for_an_unknown_published_name(small_space_dir, capsys, no_work):
    from bayes_concepts import published
    status, out, err = run(["ladder", small_space_dir, "--split", "counting", "--rungs", "memoriser", "strong",
                            "--episodes", "5", "--published", "nosuch"], capsys)
    assert_one_line_error(status, err, "--published nosuch", ", ".join(published.benchmarks()), "none")


def test_results_list_only_the_oracles_that_ran(small_space, splits):
    """Issue 42, item 1: without parts the atom and compound oracles are not listed as learners."""
    plain = compute_gap(small_space, {"counting": splits["counting"]}, ("hard",), 10, seed=0)
    assert set(json.loads(plain.attrs["learners"])) == {"strong", "weak"}
    parts = compute_gap(small_space, {"counting": splits["counting"]}, ("hard",), 10, seed=0, parts=True)
    assert set(json.loads(parts.attrs["learners"])) == {"strong", "weak", "atom", "compound"}


def test_gap_parts_figure_keeps_its_legend_and_axes_with_three_splits(small_space, splits):
    """Issue 42, item 4: with 3-4 splits the legend was wider than the figure and squeezed the axes."""
    from matplotlib.figure import Figure

    from bayes_concepts.plots import plot_gap_parts
    three = {k: splits[k] for k in ("concept_iid", "counting", "binding_color")}
    ds = compute_gap(small_space, three, ("hard",), 20, seed=0, parts=True)
    fig = Figure(figsize=(max(6.0, 1.1 * 3 + 2.5), 5.2), layout="constrained")
    ax, _ = plot_gap_parts(ds, "hard", ax=fig.add_subplot())
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    box, legend = fig.bbox, ax.get_legend().get_window_extent(renderer)
    assert box.x0 <= legend.x0 and legend.x1 <= box.x1
    assert ax.get_window_extent(renderer).width > 0.5 * box.width


def test_audit_ladder_adds_its_section_to_the_report(small_space_dir, capsys, tmp_path):
    status, out, err = run(["audit", small_space_dir, "--split", "counting", "--episodes", "30", "--ladder",
                            "--report", tmp_path / "r.md"], capsys)
    assert status == 0, err
    assert "the oracle ladder (hard negatives)" in out and "solved at" in out
    text = (tmp_path / "r.md").read_text()
    assert "## The oracle ladder" in text and "memoriser" in text
    assert (tmp_path / "r_files" / "ladder.png").stat().st_size > 0


def test_the_first_run_announces_its_compilation(tmp_path, monkeypatch, capsys):
    """Issues 42 (item 10) and 44 (item 14): a command that runs the kernels says, on a fresh
    cache, that it compiles them once; with the cache filled it says nothing."""
    from bayes_concepts.cli import _kernels_cached
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    assert not _kernels_cached()
    status, out, err = run(["ladder", tmp_path / "no_space"], capsys)
    assert status == 2 and "compiling the numba kernels once" in err
    status, out, err = run(["explain", "x color? red ="], capsys)
    assert "compiling" not in err
    fake = tmp_path / "cache" / "somewhere" / "kernels.evaluate_episodes-1.py311.nbi"
    fake.parent.mkdir(parents=True)
    fake.write_bytes(b"")
    assert _kernels_cached()
    status, out, err = run(["ladder", tmp_path / "no_space"], capsys)
    assert "compiling" not in err and status == 2
