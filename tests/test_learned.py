"""Did a learner learn?  The check (validation mAP interval above the random learner's), the
card's record, and the ladder: a learner that did not learn gets no gap and no rho; one that
learned still gets its numbers."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bayes_concepts import published
from bayes_concepts.ladder import format_correlations, format_ladder, ladder_correlations, ladder_profile, \
    ladder_summary
from bayes_concepts.learners import NearestPrototype, ProtoNetLearner, RandomLearner
from bayes_concepts.learners.learned import did_learn, learned_check, mean_ci
from bayes_concepts.splits import load_splits

from conftest import run

SPLITS = ["concept_iid", "counting", "binding_color", "boolean", "extrinsic", "intrinsic"]


def _slow_interval(v):
    v = [x for x in v if np.isfinite(x)]
    n = len(v)
    m = sum(v) / n
    sd = (sum((x - m) ** 2 for x in v) / (n - 1)) ** 0.5 if n > 1 else 0.0
    return m - 1.96 * sd / n ** 0.5, m + 1.96 * sd / n ** 0.5


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 100), min_size=1, max_size=40), st.lists(st.floats(0, 100), min_size=1, max_size=40),
       st.floats(-5, 60))
def test_learned_is_no_overlap_of_the_intervals(model, rnd, shift):
    model = [min(100.0, x + shift) for x in model]
    got = learned_check(model, rnd)
    lo_m, _ = _slow_interval(model)
    _, hi_r = _slow_interval(rnd)
    # rounding to 4 decimals in the record: only a margin wider than that is decided
    if abs(lo_m - hi_r) > 1e-3:
        assert got["learned"] == (lo_m > hi_r)
    assert did_learn(got) == got["learned"] and did_learn({"validation": got}) == got["learned"]


def test_equal_numbers_did_not_learn_and_no_record_is_none():
    v = np.linspace(0, 10, 50)
    assert learned_check(v, v)["learned"] is False
    assert learned_check(v + 50, v)["learned"] is True
    assert did_learn({}) is None and did_learn(None) is None
    assert mean_ci([np.nan])["n"] == 0 and learned_check([np.nan], v)["learned"] is False


class _Marked:
    """A learner (random or prototype scores) whose info() carries a validation record."""

    def __init__(self, inner, learned: bool):
        self.inner, self.name = inner, inner.name
        base = np.linspace(1, 5, 60)
        self.record = learned_check(base + (40 if learned else 0), base)

    def fit(self, scenes, labels):
        self.inner.fit(scenes, labels)
        return self

    def predict_proba(self, scenes):
        return self.inner.predict_proba(scenes)

    def info(self):
        return {"kind": "test", "validation": self.record}


@pytest.fixture(scope="module")
def marked(small_space):
    splits = load_splits(small_space, SPLITS)
    models = {"noise": {s: _Marked(RandomLearner(small_space, seed=1), False) for s in splits},
              "proto": {s: _Marked(NearestPrototype(small_space), True) for s in splits}}
    return splits, models


def test_ladder_prints_no_gap_and_no_rho_for_a_learner_that_did_not_learn(small_space, marked):
    splits, models = marked
    ds = ladder_profile(small_space, splits, ["memoriser", "strong"], ("hard",), 30, seed=1, models=models)
    rows = ladder_summary(ds, n_boot=50)
    assert all(r["models"]["noise"]["learned"] is False and r["models"]["proto"]["learned"] is True for r in rows)
    table = format_ladder(rows)
    assert "did not learn" in table and "noise on counting: did not learn (validation mAP" in table
    corr = ladder_correlations(rows, published.load("curi"), "hard", n_boot=100)
    assert "noise" not in corr["rungs"] and "noise" in corr["not_learned"]
    assert corr["learners"] == ["proto"] and "spearman" in corr["rungs"]["proto"]["mean_model"]
    text = format_correlations(corr, "CURI models")
    assert "noise: did not learn" in text and "no ρ" in text
    proto = [line for line in text.splitlines() if line.strip().startswith("proto")]
    assert len(proto) == 1 and ("ρ" in proto[0] or "flat" in proto[0] or "singles out" in proto[0])


def test_cli_ladder_learner_did_not_learn_gets_no_rho(small_space_dir, marked, monkeypatch, capsys):
    import bayes_concepts.learners as learners
    from bayes_concepts.spaces import load_space
    space = load_space(small_space_dir)

    def fake(space_, splits, specs, seed=0, allow_other_space=False):
        return {"noise": {s: _Marked(RandomLearner(space_, seed=1), False) for s in splits},
                "proto": {s: _Marked(NearestPrototype(space_), True) for s in splits}}
    monkeypatch.setattr(learners, "learners_for_gap", fake)
    status, out, err = run(["ladder", small_space_dir, "--split", *SPLITS, "--rungs", "memoriser", "strong",
                            "--episodes", "20", "--n-boot", "100", "--learner", "random"], capsys)
    assert status == 0, err
    assert "noise: did not learn" in out and "no ρ" in out
    lines = [line for line in out.splitlines() if line.strip().startswith(("noise ", "proto "))]
    assert lines and all(not line.strip().startswith("noise ") or "ρ" not in line for line in lines)
    assert space.n_concepts > 0


def test_a_trained_model_card_records_its_validation_against_random(small_space, tmp_path):
    from bayes_concepts.learners import read_card
    split = load_splits(small_space, ["counting"])["counting"]
    learner = ProtoNetLearner(small_space, "schema", "average", embedding_dim=8,
                              encoder_options={"object_dim": 8, "hidden_ratio": 1})
    learner.train(split, max_steps=2, batch_episodes=4, chunk_episodes=8, val_every=1, val_episodes=20,
                  threads=1, progress=False, out=tmp_path / "m")
    card = read_card(tmp_path / "m")
    rec = card["validation"]
    assert rec["episodes"] == 20 and {"map", "cba", "random_map", "random_cba", "learned"} <= set(rec)
    above = rec["map"]["ci95"][0] > rec["random_map"]["ci95"][1]
    assert rec["learned"] == (above and rec["best_step"] > 0)  # weights kept from step 0 are the untrained net's
    assert rec.get("untrained", False) == (rec["best_step"] == 0)
    assert learner.info()["validation"] == rec


def test_a_grid_net_records_its_validation_accuracy_against_a_random_guess():
    from bayes_concepts.suites.conceptworld.baselines import QUICK_SETTINGS, experiment_data, train_grid_net
    data = experiment_data("productivity", seed=0, settings=QUICK_SETTINGS)
    _, record = train_grid_net("mlp", data, seed=0, settings=QUICK_SETTINGS)
    rec = record["validation"]
    assert rec["episodes"] == record["n_val"] and isinstance(rec["learned"], bool)
    assert rec["learned"] == (rec["map"]["ci95"][0] > rec["random_map"]["ci95"][1])


def test_gap_marks_a_learner_that_did_not_learn(small_space, marked):
    from bayes_concepts.gap import compute_gap, format_table, summarise
    splits, _ = marked
    one = {"counting": splits["counting"]}
    ds = compute_gap(small_space, one, ("hard",), 20, seed=1,
                     learners={"noise": _Marked(RandomLearner(small_space, seed=1), False),
                               "proto": _Marked(NearestPrototype(small_space), True)})
    rows = summarise(ds, n_boot=50)
    got = rows[0]["learners"]
    assert got["noise"]["learned"] is False and got["proto"]["learned"] is True
    text = format_table(rows)
    assert "did not learn" in text
