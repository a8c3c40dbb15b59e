"""Comp gap, bootstrap, results files, and the gap/splits/episodes/posterior/audit commands."""
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bayes_concepts import gap as gap_module

from bayes_concepts.cli import main
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.gap import compute_gap, paired_bootstrap, summarise
from bayes_concepts.oracles import OracleSettings
from bayes_concepts.results import ResultsError, load_results, save_results
from bayes_concepts.scenes import write_scenes_jsonl
from bayes_concepts.splits import curi_splits


@pytest.fixture(scope="module")
def saved(small_space_dir):
    return small_space_dir


@pytest.fixture(scope="module")
def space(saved):
    return HypothesisSpace.load(saved)


@pytest.fixture(scope="module")
def results(space):
    splits = curi_splits(space)
    return compute_gap(space, {k: splits[k] for k in ("instance_iid", "concept_iid", "binding_color")},
                       n_episodes=300, seed=2)


def test_instance_iid_gap_is_exactly_zero(results):
    cell = results.sel(split="instance_iid")
    for m in ("ap", "cba", "posterior_entropy", "predictive_entropy"):
        np.testing.assert_array_equal(cell[m].sel(learner="strong"), cell[m].sel(learner="weak"))
    rows = {(r["split"], r["negatives"]): r for r in summarise(results)}
    for neg in ("hard", "easy"):
        r = rows[("instance_iid", neg)]
        assert r["gap"]["map"] == 0 and r["gap"]["map_ci"] == [0, 0] and r["weak_empty_share"] == 0


def test_strong_oracle_never_empty_and_beats_weak(results):
    assert not results["empty"].sel(learner="strong").any()
    rows = summarise(results)
    for r in rows:
        assert r["strong"]["map"] >= r["weak"]["map"] - 1e-9
    bc = [r for r in rows if r["split"] == "binding_color" and r["negatives"] == "hard"][0]
    assert bc["gap"]["map"] > 10 and bc["weak_empty_share"] > 0


def test_paired_bootstrap():
    rng = np.random.default_rng(0)
    s, w = rng.random(500), rng.random(500) * 0.5
    mean, lo, hi = paired_bootstrap(s, w, n_boot=2000, seed=1)
    assert mean == pytest.approx(np.mean(s - w))
    assert lo < mean < hi
    se = np.std(s - w, ddof=1) / np.sqrt(500)
    assert hi - lo == pytest.approx(2 * 1.96 * se, rel=0.15)
    assert paired_bootstrap(s, w, n_boot=2000, seed=1) == (mean, lo, hi)


def _bootstrap_one_call_at_a_time(strong, weak, n_boot, seed, level=0.95):
    """paired_bootstrap as it was before the resample indices were kept: drawn in every call."""
    d = np.asarray(strong, np.float64) - np.asarray(weak, np.float64)
    d = d[~np.isnan(d)]
    if len(d) < 2:
        return None
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    block = max(1, 2_000_000 // len(d))
    for lo in range(0, n_boot, block):
        k = min(block, n_boot - lo)
        idx = rng.integers(0, len(d), size=(k, len(d)))
        means[lo: lo + k] = d[idx].mean(axis=1)
    a = (1 - level) / 2
    return float(d.mean()), float(np.quantile(means, a)), float(np.quantile(means, 1 - a))


@settings(max_examples=40, deadline=None)
@given(calls=st.lists(st.tuples(st.sampled_from([2, 17, 2_001]), st.sampled_from([1, 999]),
                                st.sampled_from([0, 2**32 - 1]), st.integers(0, 2**31), st.booleans()),
                      min_size=1, max_size=8),
       cache_bytes=st.sampled_from([0, 8 * 4_000 * 1_000, 64 * 2**20]))
def test_paired_bootstrap_with_kept_indices_is_the_one_drawn_in_every_call(calls, cache_bytes):
    """The kept resample indices give every interval bit for bit as drawing them in each call:
    repeated keys (hits), new keys (misses), sizes over the kept budget, block edges
    (2,000,000 // n not dividing n_boot), NaN pairs that shrink n, and a kept set never written."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gap_module, "RESAMPLE_CACHE_BYTES", cache_bytes)
        mp.setattr(gap_module, "_last_resamples", [None])
        _bootstrap_calls_agree(calls, cache_bytes)


def _bootstrap_calls_agree(calls, cache_bytes):
    for n, n_boot, seed, data_seed, with_nan in calls:
        rng = np.random.default_rng(data_seed)
        strong, weak = rng.random(n + 1), rng.integers(0, 3, n + 1) / 2.0  # ties and a margin of 0
        if with_nan:
            weak[rng.integers(0, n + 1)] = np.nan
        else:
            strong, weak = strong[:n], weak[:n]
        got = paired_bootstrap(strong, weak, n_boot=n_boot, seed=seed)
        assert got == _bootstrap_one_call_at_a_time(strong, weak, n_boot, seed)
    last = gap_module._last_resamples[0]
    if last is not None:
        assert all(not b.flags.writeable for b in last[1])
        assert sum(b.nbytes for b in last[1]) <= cache_bytes


def test_results_round_trip(results, tmp_path):
    path = save_results(results, tmp_path / "r.nc")
    back = load_results(path)
    for v in ("ap", "cba", "posterior_entropy", "predictive_entropy", "empty", "weak_empty", "concept"):
        np.testing.assert_array_equal(back[v].values, results[v].values)
    assert json.loads(back.attrs["oracle_settings"]) == OracleSettings().as_dict()
    assert back.attrs["space_manifest_sha256"] == results.attrs["space_manifest_sha256"] != "unsaved"
    (tmp_path / "bad.nc").write_text("no")
    with pytest.raises(ResultsError, match="bad.nc"):
        load_results(tmp_path / "bad.nc")


def test_cli_gap_json(saved, capsys, tmp_path):
    out = tmp_path / "g.nc"
    assert main(["gap", str(saved), "--split", "counting", "--episodes", "200", "--json", "--out", str(out)]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = doc["results"]
    assert [(r["split"], r["negatives"]) for r in rows] == [("counting", "hard"), ("counting", "easy")]
    for r in rows:
        assert set(r) == {"split", "negatives", "episodes", "strong", "weak", "gap", "weak_empty_share",
                          "posterior_entropy", "predictive_entropy", "ap_tolerance", "ap_bound_max", "topup_share",
                          "topup_negatives"}
        assert r["ap_tolerance"] == 0.0 and r["ap_bound_max"] == 0.0  # the size likelihood: AP exact
        assert set(r["gap"]) == {"map", "map_ci", "cba", "cba_ci"} and r["episodes"] == 200
        assert r["gap"]["map"] == pytest.approx(r["strong"]["map"] - r["weak"]["map"])
    assert load_results(out).sizes["episode"] == 200


def test_cli_splits_episodes_and_show(saved, capsys, tmp_path):
    assert main(["splits", str(saved), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["splits"]
    assert len(doc) == 9 and doc["concept_iid"]["leakage"] == 0
    f = tmp_path / "e.npz"
    assert main(["episodes", str(saved), "--split", "counting", "--negatives", "hard", "--n", "20",
                 "--out", str(f)]) == 0
    capsys.readouterr()
    assert main(["episodes", "show", str(f), "3", "--space", str(saved)]) == 0
    text = capsys.readouterr().out
    assert "concept #" in text and text.count("\n  + scene") == 10
    assert main(["episodes", "show", str(f), "99"]) == 2


def test_cli_posterior(saved, space, capsys, tmp_path):
    h = int(np.flatnonzero(space.counts >= 10)[0])
    pos = np.flatnonzero(space.signature(h))[:5]
    neg = np.flatnonzero(~space.signature(h))[:10]
    support = [dict(space.scene(int(j)), label=1) for j in pos] + [dict(space.scene(int(j)), label=0) for j in neg]
    write_scenes_jsonl(tmp_path / "s.jsonl", support)
    write_scenes_jsonl(tmp_path / "q.jsonl", [space.scene(int(pos[0])), space.scene(int(neg[0]))])
    assert main(["posterior", str(saved), "--support", str(tmp_path / "s.jsonl"), "--query",
                 str(tmp_path / "q.jsonl"), "--split", "concept_iid", "--top", "0", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    strong = doc["strong"]
    assert sum(r["p"] for r in strong["posterior"]) == pytest.approx(1.0)
    assert h in [r["id"] for r in strong["posterior"]]
    assert strong["predictive"][0] == pytest.approx(1.0) and strong["predictive"][1] == pytest.approx(0.0)
    assert "weak" in doc
    write_scenes_jsonl(tmp_path / "nolabel.jsonl", [space.scene(0)])
    assert main(["posterior", str(saved), "--support", str(tmp_path / "nolabel.jsonl")]) == 2
    assert "nolabel.jsonl line 1: label" in capsys.readouterr().err


def test_cli_audit(saved, capsys, tmp_path):
    spec = tmp_path / "mine.toml"
    spec.write_text('name = "no_cubes"\nkind = "held_out"\n[held_out]\ntokens = ["cube"]\n')
    assert main(["audit", str(saved), "--spec", str(spec), "--episodes", "150"]) == 0
    text = capsys.readouterr().out
    assert "audit of split 'no_cubes'" in text and "weak coverage" in text and "most wrong" in text


def test_cli_figures(saved, results, tmp_path, capsys):
    from bayes_concepts.results import save_results
    path = save_results(results, tmp_path / "r.nc")
    assert main(["figures", str(path), "--space", str(saved), "--out", str(tmp_path / "figs")]) == 0
    names = {p.name for p in (tmp_path / "figs").iterdir()}
    for stem in ("comp_gap_hard", "comp_gap_easy", "entropy", "synonym_classes", "scene_properties", "episode_view"):
        assert {f"{stem}.png", f"{stem}.pdf", f"{stem}.csv"} <= names
