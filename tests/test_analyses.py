"""The analysis scripts (analyses/): each runs through main([...]) on a small saved space."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from analyses import negatives_effect, prior_sensitivity, reproduce_curi, synonyms  # noqa: E402
from analyses import _common  # noqa: E402
from bayes_concepts.engine.interpreter import evaluate  # noqa: E402
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace  # noqa: E402
from bayes_concepts.gap import compute_gap  # noqa: E402
from bayes_concepts.results import load_results  # noqa: E402
from bayes_concepts.splits import curi_splits  # noqa: E402
from bayes_concepts.synonyms import STATUS_ORDER  # noqa: E402

EPISODES = 100


@pytest.fixture(scope="module")
def space_dir(small_space_dir):
    return small_space_dir


@pytest.fixture(scope="module")
def space(space_dir):
    return HypothesisSpace.load(space_dir)


def args(space_dir, out, *extra):
    return ["--space", str(space_dir), "--episodes", str(EPISODES), "--seed", "0", "--boot", "200",
            "--out", str(out), "--quiet", *map(str, extra)]


def assert_files(out: Path, *names):
    for n in names:
        p = out / n
        assert p.exists() and p.stat().st_size > 0, f"missing output {p}"


# ------------------------------------------------------------------ reproduce_curi
@pytest.fixture(scope="module")
def reproduced(space_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce")
    return reproduce_curi.main(args(space_dir, out, "--no-space-figures")), out


def test_reproduce_curi_outputs_and_table(reproduced, space):
    table, out = reproduced
    assert_files(out, "comp_gap.md", "comp_gap.csv", "reference_checks.csv", "results.nc",
                 "comp_gap_hard.png", "comp_gap_hard.pdf", "comp_gap_easy.png", "reference_points.png",
                 "reference_points.pdf")
    assert len(table) == 18 and set(table.negatives) == {"hard", "easy"}
    assert set(table.split) == set(curi_splits(space))
    assert load_results(out / "results.nc").sizes["episode"] == EPISODES
    # Instance IID: gap exactly 0, interval [0, 0], in both metrics and with both negatives
    iid = table[table.split == "instance_iid"]
    for key in ("map", "cba"):
        assert (iid[f"{key}_gap"] == 0).all() and (iid[f"{key}_gap_lo"] == 0).all() and (iid[f"{key}_gap_hi"] == 0).all()
    # published reference values sit beside ours (hard negatives only)
    hard = table[table.negatives == "hard"].set_index("split")
    assert hard.loc["counting", "published_map_gap"] == 34.4 and hard.loc["binding_color", "published_cba_gap"] == 34.0
    assert table[table.negatives == "easy"].published_map_gap.isna().all()
    # the CSV holds the same table; the markdown has both tables
    csv = pd.read_csv(out / "comp_gap.csv")
    np.testing.assert_allclose(csv["map_gap"], table["map_gap"])
    md = (out / "comp_gap.md").read_text()
    assert "## Hard negatives" in md and "## Reference checks" in md


def test_reproduce_curi_reference_checks(reproduced):
    table, out = reproduced
    checks = pd.read_csv(out / "reference_checks.csv")
    assert len(checks) == 11
    iid = checks[checks.check.str.contains("Instance IID") & (checks.kind == "value")]
    assert len(iid) == 2 and iid.holds.all() and (iid.ours == 0).all()
    # ordering claims are recomputed from the table
    hard = table[table.negatives == "hard"].set_index("split")
    others = [s for s in hard.index if s not in ("binding_color", "binding_shape")]
    expect = hard.loc[["binding_color", "binding_shape"], "map_gap"].min() > hard.loc[others, "map_gap"].max()
    row = checks[checks.check.str.startswith("Binding splits have the largest mAP")].iloc[0]
    assert bool(row.holds) == bool(expect)
    smallest = checks[checks.check.str.startswith("Instance IID has the smallest")]
    assert len(smallest) == 2 and smallest.holds.all()
    change = checks[checks.check.str.startswith("mean change")].iloc[0]
    assert change.published == -5.5 and change.ours_lo <= change.ours <= change.ours_hi


def test_reproduce_curi_split_sizes(reproduced, space):
    _, out = reproduced
    sizes = pd.read_csv(out / "split_sizes.csv").set_index("split")
    assert set(sizes.index) == set(curi_splits(space)) and (sizes.protocol == "curi-release").all()
    assert (sizes.concepts == space.n_concepts).all()
    np.testing.assert_allclose(sizes.test_share_pct, 100 * sizes.test / space.n_concepts)
    held = sizes.drop(index=["instance_iid", "concept_iid"])
    assert (held.train + held.val + held.test == space.n_concepts).all() and (held.val == held.dropped).all()
    assert held.release_test_share_pct["counting"] == pytest.approx(100 * 47 / 14_929)
    assert sizes.release_test.isna()[["instance_iid", "concept_iid"]].all()
    np.testing.assert_allclose(held.relative_difference_pct,
                               100 * (held.test_share_pct / held.release_test_share_pct - 1))
    assert (held.within_tolerance == (held.relative_difference_pct.abs() <= 25)).all()
    assert "## Split sizes" in (out / "comp_gap.md").read_text()


def test_reproduce_curi_reuse(reproduced, space_dir, tmp_path, monkeypatch):
    from bayes_concepts.protocols import Protocol
    table, out = reproduced

    def boom(*a, **k):
        raise AssertionError("computed although saved results match")

    monkeypatch.setattr(Protocol, "compute_gap", boom)
    again = reproduce_curi.main(args(space_dir, tmp_path / "again", "--no-space-figures", "--reuse", out))
    pd.testing.assert_frame_equal(table, again)
    other = args(space_dir, tmp_path / "other", "--no-space-figures", "--reuse", out)
    other[other.index("--episodes") + 1] = str(EPISODES + 1)  # a different run: computed, not reused
    with pytest.raises(AssertionError, match="computed although"):
        reproduce_curi.main(other)


def test_reproduce_curi_shrink_effects():
    ci = {"map_change_lo": 0.0, "map_change_hi": 0.0}
    diff = pd.DataFrame([
        {"difference": "a", "split": "s1", "negatives": "hard", "map_change": 2.0, **ci},
        {"difference": "a", "split": "s1", "negatives": "easy", "map_change": -1.0, **ci},
        {"difference": "a", "split": "s2", "negatives": "hard", "map_change": 0.0, "map_change_lo": -3.92,
         "map_change_hi": 3.92},
        {"difference": "a", "split": "s2", "negatives": "easy", "map_change": 6.0, **ci},
        {"difference": "query negatives: x", "split": "s1", "negatives": "hard", "map_change": 3.0, **ci},
        {"difference": "hard only", "split": "s1", "negatives": "hard", "map_change": 3.0, **ci},
        {"difference": "same", "split": "s1", "negatives": "both", "map_change": np.nan, "note": "no change"}])
    got = reproduce_curi.shrink_effects(diff, n_splits=3).set_index("difference")
    assert list(got.index) == ["a", "query negatives: x"]  # hard-only runs whose easy cells could change: left out
    assert got.loc["a", "shrink_change"] == pytest.approx((-1 - 2 + 6 - 0) / 3)
    assert got.loc["a", "shrink_change_hi"] - got.loc["a", "shrink_change"] == pytest.approx(1.96 * 2 / 3)  # se 2
    assert got.loc["query negatives: x", "shrink_change"] == pytest.approx(-1.0)


def test_reproduce_curi_isolate(space_dir, space, tmp_path):
    out = tmp_path / "iso"
    reproduce_curi.main(["--space", str(space_dir), "--episodes", "40", "--boot", "50", "--out", str(out), "--quiet",
                         "--no-space-figures", "--protocols", "curi-release", "--isolate",
                         "--release-check-episodes", "5"])
    diff = pd.read_csv(out / "differences.csv")
    for what in ("prior:", "likelihood:", "query negatives:", "strong oracle:", "Counting:", "Complexity:", "val:",
                 "weak posterior:", "AP pool:"):
        assert diff.difference.str.startswith(what).any(), what
    ran = diff[diff.map_change.notna()]
    assert (ran.map_change_lo <= ran.map_change + 1e-9).all() and (ran.map_change <= ran.map_change_hi + 1e-9).all()
    np.testing.assert_allclose(ran.map_change, ran.variant_map_gap - ran.release_map_gap, atol=1e-9)
    shrink = pd.read_csv(out / "shrink_effects.csv")
    assert shrink.difference.str.startswith("prior: sampler").any()
    md = (out / "comp_gap.md").read_text()
    assert "one difference at a time" in md and "easy-negative shrink" in md and "## Split sizes" in md


# ---------------------------------------------------------------- negatives_effect
def test_negatives_effect(space_dir, tmp_path):
    out = tmp_path / "neg"
    df = negatives_effect.main(args(space_dir, out))
    assert_files(out, "negatives_effect.md", "negatives_effect.csv", "negatives_effect.png",
                 "negatives_effect.pdf", "results.nc")
    per = df[df.n_splits == 1]
    assert len(per) == 9
    # the change is easy − hard, inside its (unpaired bootstrap) interval; Instance IID changes by 0
    for key in ("map", "cba"):
        np.testing.assert_allclose(per[f"{key}_change"], per[f"{key}_gap_easy"] - per[f"{key}_gap_hard"], atol=1e-9)
        assert (per[f"{key}_change_lo"] <= per[f"{key}_change"] + 1e-9).all()
        assert (per[f"{key}_change"] <= per[f"{key}_change_hi"] + 1e-9).all()
    iid = per[per.split == "instance_iid"].iloc[0]
    assert iid.map_change == 0 and iid.map_change_lo == 0 and iid.map_change_hi == 0
    avg = df[df.split == negatives_effect.AVERAGE_ALL].iloc[0]
    assert avg.map_change == pytest.approx(per.map_change.mean())
    assert avg.map_change_lo <= avg.map_change <= avg.map_change_hi
    assert "-5.5" in (out / "negatives_effect.md").read_text()
    # reusing the saved results gives the same table
    again = negatives_effect.main(args(space_dir, tmp_path / "neg2", "--results", out / "results.nc"))
    pd.testing.assert_frame_equal(df, again)


# ------------------------------------------------------------------------ synonyms
@pytest.fixture(scope="module")
def synonym_run(space_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("synonyms")
    df = synonyms.main(args(space_dir, out, "--check-scenes", 20_000, "--verify-proofs"))
    return df, out


def test_synonyms_outputs(synonym_run, space):
    df, out = synonym_run
    assert_files(out, "synonyms.md", "synonyms.csv", "synonym_members.csv", "synonym_status.png",
                 "synonym_status.pdf")
    classes = np.asarray(space.synonym_classes)
    multi = {c for c in np.unique(classes) if (classes == c).sum() >= 2}
    assert set(df["class"]) == multi
    assert set(df.status) <= set(STATUS_ORDER)
    md = (out / "synonyms.md").read_text()
    assert "Proof/check-bank contradictions: 0 " in md  # every proof agrees with every check scene
    assert "lower bound" in md


def test_synonyms_finds_commutations_equivalent(synonym_run, space):
    df, out = synonym_run
    members = pd.read_csv(out / "synonym_members.csv")
    prop = df[df.status == "propositional"]
    assert len(prop)
    # some propositional class holds two orderings of the same tokens (a commutation)
    found = False
    for c in prop["class"]:
        progs = members[members["class"] == c].program.tolist()
        found |= any(sorted(a.split()) == sorted(b.split()) and a != b for a in progs for b in progs)
    assert found
    assert prop.propositional.all() and (prop.groups_propositional == 1).all()


def test_synonyms_reports_empirical_classes_with_a_counterexample(synonym_run, space):
    df, out = synonym_run
    refuted = df[df.status == "empirical (refuted)"]
    assert len(refuted) > 0
    assert not refuted.domain.any() and (refuted.groups_check_bank > 1).all()
    for _, r in refuted.iterrows():
        cex = json.loads(r.counterexample)
        a, b = cex["first"], cex["second"]
        # same signature on the space's scene bank ...
        assert space.synonym_class(a) == space.synonym_class(b)
        # ... yet the reference interpreter separates them on the reported scene
        assert evaluate(space.programs[a], cex["scene"], space.grammar) != evaluate(space.programs[b], cex["scene"],
                                                                                    space.grammar)


# --------------------------------------------------------------- prior_sensitivity
def test_prior_sensitivity(space_dir, space, tmp_path):
    out = tmp_path / "prior"
    df = prior_sensitivity.main(args(space_dir, out))
    assert_files(out, "prior_sensitivity.md", "prior_sensitivity.csv", "gap_vs_beta.png", "gap_vs_beta.pdf",
                 "gap_vs_beta_per_split.png", "gap_by_prior.png", "gap_by_prior.pdf", "results_length_beta0.2.nc")
    betas = df[df.sweep == "beta"]
    assert sorted(set(betas.beta)) == [0.0, 0.1, 0.2, 0.5, 1.0]
    assert set(df[df.sweep == "prior"].prior) == {"length", "pcfg", "uniform"}
    # the β = 0.2 rows are exactly compute_gap with the default settings
    ref = _common.gap_frame(compute_gap(space, curi_splits(space), ("hard",), EPISODES, seed=0), 200, 0)
    got = betas[betas.beta == 0.2].set_index("split").loc[ref.split]
    for col in ("strong_map", "weak_map", "map_gap", "map_gap_lo", "map_gap_hi", "strong_cba", "weak_cba", "cba_gap",
                "cba_gap_lo", "cba_gap_hi", "weak_empty_pct"):
        np.testing.assert_array_equal(got[col].to_numpy(), ref[col].to_numpy(), err_msg=col)
    assert (got.map_change == 0).all() and (got.cba_change == 0).all()
    # uniform and length β = 0 are the same prior
    u = df[(df.sweep == "prior") & (df.prior == "uniform")].set_index("split").sort_index()
    b0 = betas[betas.beta == 0].set_index("split").sort_index()
    np.testing.assert_allclose(u.map_gap, b0.map_gap)
    np.testing.assert_allclose(u.cba_gap, b0.cba_gap)


# ----------------------------------------------------------------------- plumbing
def test_missing_space_is_an_error(tmp_path):
    with pytest.raises(SystemExit):
        reproduce_curi.main(["--space", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o"), "--quiet"])


def test_scripts_run_from_the_command_line():
    r = subprocess.run([sys.executable, str(ROOT / "analyses" / "synonyms.py"), "--help"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "--check-scenes" in r.stdout


def test_markdown_table():
    t = _common.markdown_table(pd.DataFrame({"a": ["x|y"], "b": [1.234], "c": [True]}), digits=2)
    assert t.splitlines() == ["| a | b | c |", "|---|---:|---|", "| x\\|y | 1.23 | yes |"]
