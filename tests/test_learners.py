"""Learners beside the oracles: the scorer, the conformance check, reference learners,
CURI's neural baselines (encoder, poolings, training, model store) and their command line."""
import json
import pickle

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score

from conftest import assert_one_line_error, run

from bayes_concepts.cli import main
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.episodes import EpisodeSampler
from bayes_concepts.gap import cell_seed, compute_gap, format_table, summarise
from bayes_concepts.learners import (LearnerCheckError, LearnerError, NearestPrototype, ProtoNetLearner,
                                     RandomLearner, SchemaLayout, check_learner, evaluate_by_protocol, load_model,
                                     make_learner, read_card, score_learner)
from bayes_concepts.learners.encoders import ObjectSet
from bayes_concepts.learners.poolings import poolings
from bayes_concepts.learners.prototype import episode_logits, prototype_logits
from bayes_concepts.learners.scoring import ap_rows, ap_rows_sorted
from bayes_concepts.learners.training import parse_duration
from bayes_concepts.oracles import OracleSettings, strong_and_weak
from bayes_concepts.results import load_results, save_results
from bayes_concepts.scenes.bank import pack_bits
from bayes_concepts.scenes.schema import Attribute, SceneSchema
from bayes_concepts.splits import curi_splits, load_splits

TINY = dict(embedding_dim=32, encoder_options={"object_dim": 16}, precision="fp32")
TINY_POOLING = {"average": {"hidden": (32, 32)}, "concat": {"hidden": (32, 32)},
                "relnet": {"g_hidden": (32, 32), "g_out": 32, "f_hidden": (32,)},
                "transformer": {"heads": 2, "layers": 1, "feedforward": 32}}


@pytest.fixture(scope="module")
def space(small_space):
    return small_space


@pytest.fixture(scope="module")
def splits(space):
    return curi_splits(space)


@pytest.fixture(scope="module")
def episodes(space, splits):
    return EpisodeSampler(space).sample(splits["concept_iid"].test, 40, "hard", seed=5)


def tiny(space, pooling="relnet", **kw):
    return ProtoNetLearner(space, "schema", pooling, pooling_options=TINY_POOLING[pooling], **{**TINY, **kw})


class BagOfColours:
    """A user-written learner: the share of positive support scenes among those with the
    scene's number of red objects, smoothed; ids only (reads the space's scene codes)."""

    name = "bag_of_colours"

    def __init__(self, space):
        self.space = space

    def _key(self, scenes):
        codes = self.space.scene_codes[np.asarray(list(scenes), np.int64)]
        return (codes[:, :, 0] == 1).sum(1)

    def fit(self, scenes, labels):
        keys, y = self._key(scenes), np.asarray(labels, float)
        self.table_ = {k: (y[keys == k].sum() + 0.5) / ((keys == k).sum() + 1) for k in np.unique(keys)}
        self.default_ = (y.sum() + 0.5) / (len(y) + 1)
        return self

    def predict_proba(self, scenes):
        return np.array([self.table_.get(k, self.default_) for k in self._key(scenes)], float)


# ----------------------------------------------------------------------------- the scorer
def test_compute_gap_oracles_are_the_oracles_own_numbers(space, splits):
    """compute_gap is the scorer with the two oracles: its oracle numbers are bit-identical to
    Oracle.evaluate on the same episodes, with or without other learners beside them."""
    chosen = {k: splits[k] for k in ("concept_iid", "counting")}
    plain = compute_gap(space, chosen, n_episodes=60, seed=4)
    mixed = compute_gap(space, chosen, n_episodes=60, seed=4,
                        learners={"random": RandomLearner(space), "prototype": NearestPrototype(space)})
    sampler = EpisodeSampler(space)
    for name, split in chosen.items():
        strong, weak = strong_and_weak(space, split, OracleSettings())
        for neg in ("hard", "easy"):
            eps = sampler.sample(split.test, 60, neg, seed=cell_seed(4, name, neg), meta={"split": name})
            for learner, oracle in (("strong", strong), ("weak", weak)):
                direct = oracle.evaluate(eps)
                for ds in (plain, mixed):
                    cell = ds.sel(split=name, negatives=neg, learner=learner)
                    for m in ("ap", "cba", "posterior_entropy", "predictive_entropy", "empty"):
                        np.testing.assert_array_equal(cell[m].values, direct[m])
                    np.testing.assert_array_equal(cell["query_pred"].values, direct["query_pred"])
    for v in ("ap", "cba", "empty", "concept", "weak_empty"):
        np.testing.assert_array_equal(plain[v].values, mixed[v].sel(learner=["strong", "weak"]).values
                                      if "learner" in mixed[v].dims else mixed[v].values)


def test_results_keep_every_learner_and_round_trip(space, splits, tmp_path):
    model = tiny(space, "average", name="avg")
    ds = compute_gap(space, {k: splits[k] for k in ("concept_iid", "counting")}, negatives=("hard",),
                     n_episodes=30, seed=1, learners={"random": RandomLearner(space), "avg": {"counting": model}})
    assert ds.learner.values.tolist() == ["strong", "weak", "random", "avg"]
    assert np.isfinite(ds["ap"].sel(learner="random")).all()
    assert np.isnan(ds["ap"].sel(learner="avg", split="concept_iid")).all()
    assert np.isfinite(ds["query_pred"].sel(learner="avg", split="counting")).all()
    info = json.loads(ds.attrs["learners"])
    assert info["strong"] == {"kind": "oracle"} and info["avg"]["counting"]["architecture"] == "schema-average"
    back = load_results(save_results(ds, tmp_path / "r.nc"))
    np.testing.assert_array_equal(back["query_pred"].values, ds["query_pred"].values)
    rows = summarise(ds)
    counting = next(r for r in rows if r["split"] == "counting")
    assert set(counting["learners"]) == {"random", "avg"}
    assert counting["learners"]["avg"]["map"] == pytest.approx(
        100 * float(ds["ap"].sel(learner="avg", split="counting", negatives="hard").mean()))
    assert "random" in format_table(rows) and "avg" in format_table(rows)


def test_learner_names_and_inputs_are_checked(space, splits):
    with pytest.raises(LearnerError, match="oracles"):
        compute_gap(space, {"counting": splits["counting"]}, n_episodes=5, learners={"strong": RandomLearner(space)})
    with pytest.raises(LearnerError, match="fit/predict_proba"):
        compute_gap(space, {"counting": splits["counting"]}, n_episodes=5, learners={"x": object()})
    with pytest.raises(LearnerError, match="not among the splits"):
        compute_gap(space, {"counting": splits["counting"]}, n_episodes=5,
                    learners={"x": {"boolean": RandomLearner(space)}})
    with pytest.raises(LearnerError, match="scene id"):
        RandomLearner(space).fit([0, space.n_scenes], [1, 0])
    with pytest.raises(LearnerError, match="one positive and one negative"):
        NearestPrototype(space).fit([0, 1], [1, 1])
    with pytest.raises(LearnerError, match="unknown pooling 'foo'"):
        make_learner(space, "schema-foo")


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 60).flatmap(lambda n: st.tuples(
    st.lists(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0, -1.0]), min_size=n, max_size=n), min_size=1,
             max_size=4),
    st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=1, max_size=4))))
def test_ap_rows_is_sklearns_average_precision(data):
    scores, labels = data
    m = min(len(scores), len(labels))
    scores, labels = np.array(scores[:m], np.float32), np.array(labels[:m], bool)
    sig = pack_bits(labels)
    n_pos = labels.sum(1).astype(np.int64)
    got = ap_rows(scores, np.arange(m, dtype=np.int64), sig, n_pos)
    for e in range(m):
        if n_pos[e] == 0:
            assert np.isnan(got[e])
        else:
            assert got[e] == pytest.approx(average_precision_score(labels[e], scores[e]), abs=1e-12)
    # the sorted-row kernel of the test-bank scorer gives exactly the same numbers
    fast = ap_rows_sorted(scores, np.sort(scores, axis=1), np.arange(m, dtype=np.int64), sig, n_pos)
    np.testing.assert_array_equal(fast, got)


def test_batch_paths_equal_the_protocol_path(space, episodes):
    """Every learner's fast evaluate() agrees with fit/predict_proba episode by episode."""
    for learner in (NearestPrototype(space), tiny(space, "relnet"), tiny(space, "transformer")):
        fast, slow = score_learner(learner, space, episodes), evaluate_by_protocol(learner, space, episodes)
        np.testing.assert_allclose(fast["query_pred"], slow["query_pred"], rtol=0, atol=1e-6)
        np.testing.assert_allclose(fast["ap"], slow["ap"], rtol=0, atol=1e-6)
        np.testing.assert_array_equal(fast["cba"], slow["cba"])
        np.testing.assert_allclose(fast["predictive_entropy"], slow["predictive_entropy"], atol=1e-6)
    exact = NearestPrototype(space)
    fast, slow = exact.evaluate(episodes), evaluate_by_protocol(exact, space, episodes)
    np.testing.assert_array_equal(fast["ap"], slow["ap"])  # integer arithmetic: ties stay ties


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 2500), e=st.integers(1, 20), d=st.integers(1, 40), seed=st.integers(0, 2**16),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_logit_kernels_are_exact_sums_whatever_the_batch(n, e, d, seed, dtype):
    """The logit kernels give each scene the same value whatever else shares the call, equal
    to the direct formula up to rounding; both kernels agree exactly."""
    rng = np.random.default_rng(seed)
    emb = rng.standard_normal((n, d)).astype(dtype)
    w, b = rng.standard_normal((e, d)).astype(dtype), rng.standard_normal(e).astype(dtype)
    scale = rng.uniform(0.5, 2, e).astype(dtype)
    out = prototype_logits(emb, w, b, scale)
    direct = (emb.astype(np.float64) @ w.astype(np.float64).T + b) / scale
    np.testing.assert_allclose(out, direct.T, rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-4)
    pick = rng.permutation(n)[: max(1, n // 3)]
    np.testing.assert_array_equal(prototype_logits(emb[pick], w[-1:], b[-1:], scale[-1:])[0], out[-1, pick])
    q = emb[: (n // e) * e].reshape(e, n // e, d) if n >= e else emb[None, :, :].repeat(e, 0)
    per_episode = np.stack([prototype_logits(q[i], w[i: i + 1], b[i: i + 1], scale[i: i + 1])[0] for i in range(e)])
    np.testing.assert_array_equal(episode_logits(q, w, b, scale), per_episode)


def test_nearest_prototype_logit_is_the_distance_difference(space, episodes):
    learner = NearestPrototype(space).fit(episodes.support_scenes[0], episodes.support_labels[0])
    f = learner.embed(episodes.support_scenes[0])
    y = episodes.support_labels[0].astype(bool)
    c_p, c_n = f[y].mean(0), f[~y].mean(0)
    q = learner.embed(episodes.query_scenes[0])
    expected = ((q - c_n) ** 2).sum(1) - ((q - c_p) ** 2).sum(1)
    np.testing.assert_allclose(learner.decision_function(episodes.query_scenes[0]), expected, atol=1e-9)


# ------------------------------------------------------------------ conformance and reference
def test_a_user_learner_passes_the_check_and_is_scored(space, splits):
    mine = BagOfColours(space)
    report = check_learner(mine, space, split=splits["counting"])
    assert report["accepts_dicts"] is False and report["batch_method"] is False
    assert "no memory between fits" in report["checks"]
    ds = compute_gap(space, {"counting": splits["counting"]}, negatives=("hard",), n_episodes=40, learners=[mine])
    ap = ds["ap"].sel(learner="bag_of_colours").values
    assert np.isfinite(ap).all() and (ap > 0).all()


@pytest.mark.parametrize("flaw, check", [("returns_none", "fit returns self"), ("memory", "no memory between fits"),
                                         ("above_one", "probabilities"), ("order", "one scene at a time"),
                                         ("shape", "probabilities"), ("mutates", "inputs unchanged")])
def test_the_check_names_what_is_broken(space, flaw, check):
    class Broken(BagOfColours):
        name = "broken"
        calls = 0

        def fit(self, scenes, labels):
            if flaw == "mutates":
                scenes[0] = 0
            super().fit(scenes, labels)
            Broken.calls += 1
            return None if flaw == "returns_none" else self

        def predict_proba(self, scenes):
            p = super().predict_proba(scenes)
            if flaw == "memory":
                p = p * 0.9 ** Broken.calls
            if flaw == "above_one":
                p = p + 1
            if flaw == "order":
                p = p * np.linspace(0.5, 1, len(p))
            if flaw == "shape":
                p = p[:, None]
            return p

    with pytest.raises(LearnerCheckError, match=f"'{check}'"):
        check_learner(Broken(space), space)


def test_reference_and_neural_learners_pass_the_check(space, splits):
    for learner in (RandomLearner(space), NearestPrototype(space), tiny(space, "average"), tiny(space, "concat"),
                    tiny(space, "relnet"), tiny(space, "transformer")):
        report = check_learner(learner, space, split=splits["counting"], atol=1e-6)
        assert report["accepts_dicts"] is True


def test_random_map_is_the_positive_rate(space, splits):
    """Random scores rank the test bank at random: E[AP] = (k-1)/(n-1) + (n-k)/(n-1) H_n/n for k
    positives among n scenes, about the positive rate k/n; CBA is about 1/2."""
    eps = EpisodeSampler(space).sample(splits["concept_iid"].test, 600, "hard", seed=2)
    r = score_learner(RandomLearner(space, seed=7), space, eps)
    n = space.test_bank.n_scenes
    k = np.bitwise_count(space.test_bank.signatures[eps.concept]).sum(1).astype(float)
    h_n = np.sum(1.0 / np.arange(1, n + 1))
    expected = (k - 1) / (n - 1) + (n - k) / (n - 1) * h_n / n
    se = np.std(r["ap"]) / np.sqrt(len(eps))
    assert abs(r["ap"].mean() - expected.mean()) < 4 * se
    assert abs(r["ap"].mean() - (k / n).mean()) < h_n / n + 4 * se
    assert abs(np.mean(r["cba"]) - 0.5) < 0.03


# ----------------------------------------------------------------------------- network parts
def test_schema_layout_follows_the_schema():
    curi = SchemaLayout.from_schema(SceneSchema((
        Attribute("color", ("gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow")),
        Attribute("shape", ("cube", "sphere", "cylinder")), Attribute("material", ("rubber", "metal")),
        Attribute("size", ("small", "large"), ordered=True), Attribute("x", tuple(range(1, 9)), ordered=True),
        Attribute("y", tuple(range(1, 9)), ordered=True))))
    assert curi.n_features == 17 and curi.names[:2] == ("color=gray", "color=red") and curi.names[-2:] == ("x", "y")
    other = SchemaLayout.from_schema(SceneSchema((Attribute("hue", ("a", "b")), Attribute("row", (1, 2, 3, 4))),
                                                 max_objects=3))
    codes = np.array([[[1, 3], [0, 0], [-1, -1]]], np.int8)
    np.testing.assert_array_equal(other.features(codes)[0], [[0, 1, 0.875], [1, 0, 0.125], [-1, -1, -1]])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(counts=st.lists(st.integers(1, 5), min_size=1, max_size=12), seed=st.integers(0, 2**16))
def test_relation_pooling_equals_its_direct_form(counts, seed):
    torch.manual_seed(seed)
    pool = poolings.get("relnet")(8, 5, 16, g_hidden=(12, 12), g_out=12, f_hidden=(12,)).eval()
    f = torch.randn(len(counts), 5, 8)
    mask = torch.arange(5)[None, :] < torch.tensor(counts)[:, None]
    objects = ObjectSet(f, mask)
    with torch.no_grad():
        torch.testing.assert_close(pool.pair_sums(objects), pool.pair_sums_reference(objects), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(pool(objects), pool.forward_reference(objects), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["average", "relnet", "transformer"])
def test_set_poolings_ignore_object_order_and_absent_slots(kind):
    torch.manual_seed(0)
    pool = poolings.get(kind)(8, 5, 16, **{**TINY_POOLING[kind], **({"heads": 2} if kind == "transformer" else {})})
    pool.eval()
    f = torch.randn(6, 5, 8)
    mask = torch.arange(5)[None, :] < torch.tensor([1, 2, 3, 4, 5, 5])[:, None]
    perm = torch.tensor([2, 0, 1, 3, 4])  # permutes the 3 objects of row 2 (and 5's)
    g = f.clone()
    g[2] = f[2, perm]
    g[5] = f[5, torch.tensor([4, 3, 2, 1, 0])]
    g[~mask] = 99.0  # whatever sits in absent slots is ignored
    with torch.no_grad():
        torch.testing.assert_close(pool(ObjectSet(f, mask)), pool(ObjectSet(g, mask)), rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- training
@pytest.fixture(scope="module")
def trained(space, splits, tmp_path_factory):
    out = tmp_path_factory.mktemp("model") / "relnet"
    learner = tiny(space, "relnet", seed=3)
    untrained_map = float(np.nanmean(learner.evaluate(
        EpisodeSampler(space).sample(splits["concept_iid"].val, 200, "hard", seed=0))["ap"]))
    history = learner.train(splits["concept_iid"], max_steps=80, batch_episodes=16, val_every=20, val_episodes=200,
                            chunk_episodes=320, lr=3e-3, out=out, progress=False)
    return learner, history, out, untrained_map


def test_training_reduces_the_loss_and_improves_validation(trained):
    learner, h, out, _ = trained
    curve = h["val_curve"]
    assert [c["step"] for c in curve] == [0, 20, 40, 60, 80]
    assert curve[-1]["train_loss"] < curve[1]["train_loss"]
    assert h["best_val_map"] > curve[0]["val_map"] + 0.02  # curve[0]: the untrained model
    assert h["best_val_map"] == max(c["val_map"] for c in curve)
    assert h["steps"] == 80 and h["episodes"] == 1280 and h["stopped"] == "max_steps"
    assert h["validation_side"] == "val" and h["episodes_per_s"] > 0


def test_the_learner_ends_with_the_best_weights(trained, space, splits):
    learner, h, _, _ = trained
    best = next(c for c in h["val_curve"] if c["step"] == h["best_step"])
    from bayes_concepts.learners.training import stream_seed
    val = EpisodeSampler(space).sample(splits["concept_iid"].val, 200, "hard", seed=stream_seed(3, "val"),
                                       meta={"split": "concept_iid", "side": "val"})
    assert float(np.nanmean(learner.evaluate(val)["ap"])) == pytest.approx(best["val_map"], abs=1e-12)


def test_a_saved_model_reloads_to_identical_predictions_without_unpickling(trained, space, episodes, monkeypatch):
    learner, h, out, _ = trained

    def forbidden(*args, **kwargs):
        raise AssertionError("loading a model must not unpickle")

    for target, attr in ((pickle, "load"), (pickle, "loads"), (pickle, "Unpickler"), (torch, "load")):
        monkeypatch.setattr(target, attr, forbidden)
    again = load_model(out, space)
    assert again.name == learner.name and again.precision == learner.precision
    before, after = learner.evaluate(episodes), again.evaluate(episodes)
    for key in ("ap", "cba", "query_pred"):
        np.testing.assert_array_equal(before[key], after[key])
    learner.fit(episodes.support_scenes[1], episodes.support_labels[1])
    again.fit(episodes.support_scenes[1], episodes.support_labels[1])
    np.testing.assert_array_equal(learner.predict_proba(episodes.query_scenes[1]),
                                  again.predict_proba(episodes.query_scenes[1]))
    card = read_card(out)
    assert card["architecture"]["pooling"]["kind"] == "relnet" and card["seed"] == 3
    assert card["training"]["split"] == "concept_iid" and card["training"]["steps"] == 80
    assert len(card["training"]["val_curve"]) == 5 and card["training"]["wall_s"] > 0
    assert card["space"]["manifest_sha256"] == "unsaved"


def test_damaged_or_foreign_model_directories_are_clear_errors(trained, space, tmp_path):
    _, _, out, _ = trained
    with pytest.raises(LearnerError, match="not a model directory"):
        load_model(tmp_path, space)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "card.json").write_text((out / "card.json").read_text())
    data = bytearray((out / "model.safetensors").read_bytes())
    data[-1] ^= 1
    (bad / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(LearnerError, match="checksum"):
        load_model(bad, space)


def test_resuming_continues_exactly(space, splits, tmp_path):
    common = dict(batch_episodes=8, val_every=4, val_episodes=40, chunk_episodes=40, progress=False, patience=0)
    straight = tiny(space, "average", seed=1)
    straight.train(splits["counting"], max_steps=12, out=tmp_path / "a", **common)
    first = tiny(space, "average", seed=1)
    first.train(splits["counting"], max_steps=6, out=tmp_path / "b", **common)
    with pytest.raises(LearnerError, match="already holds a training run"):
        tiny(space, "average", seed=1).train(splits["counting"], max_steps=12, out=tmp_path / "b", **common)
    resumed = tiny(space, "average", seed=1)
    h = resumed.train(splits["counting"], max_steps=12, out=tmp_path / "b", resume=True, **common)
    assert h["steps"] == 12 and [c["step"] for c in h["val_curve"]] == [0, 4, 6, 8, 12]
    for k, v in straight.model.state_dict().items():
        torch.testing.assert_close(resumed.model.state_dict()[k], v, rtol=0, atol=0)
    with pytest.raises(LearnerError, match="seed"):
        tiny(space, "average", seed=2).train(splits["counting"], max_steps=14, out=tmp_path / "b", resume=True, **common)


def test_concept_loss_trains_a_decoder(space, splits, tmp_path):
    learner = tiny(space, "average", alpha=1.0, decoder_options={"embed_dim": 8, "hidden_dim": 16})
    assert learner.vocabulary[:3] == ["<pad>", "<bos>", "<eos>"] and "exists=" in learner.vocabulary
    h = learner.train(splits["concept_iid"], max_steps=4, batch_episodes=4, val_every=2, val_episodes=20,
                      chunk_episodes=16, out=tmp_path / "m", progress=False)
    assert h["steps"] == 4
    again = load_model(tmp_path / "m", space)
    assert again.alpha == 1.0 and again.vocabulary == learner.vocabulary
    eps = EpisodeSampler(space).sample(splits["concept_iid"].train, 4, "hard", seed=0)
    codes = space.scene_codes
    total, query_loss, concept_loss = again.episode_loss(codes[eps.support_scenes], eps.support_labels,
                                                         codes[eps.query_scenes], eps.query_labels, eps.concept)
    total, query_loss, concept_loss = (float(x.detach()) for x in (total, query_loss, concept_loss))
    assert concept_loss > 0 and total == pytest.approx(query_loss + concept_loss, rel=1e-5)


def test_progress_lines_when_not_a_terminal(space, splits):
    lines = []
    tiny(space, "average").train(splits["counting"], max_steps=3, batch_episodes=4, val_every=2, val_episodes=20,
                                 chunk_episodes=8, progress="auto", log=lines.append)
    assert any("step 2" in line and "val mAP" in line for line in lines)
    assert "stopped (max_steps) after 3 steps" in lines[-1]


def test_durations():
    assert parse_duration("30m") == 1800 and parse_duration("1h30m") == 5400 and parse_duration("90s") == 90
    assert parse_duration(45) == 45 and parse_duration("2h") == 7200
    for bad in ("", "soon", "-5", 0):
        with pytest.raises(LearnerError, match="budget"):
            parse_duration(bad)


# ----------------------------------------------------------------------------- command line
def test_cli_train_then_gap_with_the_model(small_space_dir, tmp_path, capsys):
    out = tmp_path / "avg"
    assert main(["train", str(small_space_dir), "--split", "counting", "--learner", "schema-average", "--steps", "4",
                 "--batch", "4", "--val-every", "2", "--val-episodes", "20", "--precision", "fp32", "--out",
                 str(out)]) == 0
    captured = capsys.readouterr()
    assert "schema-average on counting: 4 steps" in captured.out
    assert "train schema-average on counting: step 2" in captured.err  # plain lines: stderr is not a terminal
    card = read_card(out)
    assert card["space"]["manifest_sha256"] != "unsaved"
    assert main(["gap", str(small_space_dir), "--split", "counting", "--negatives", "hard", "--episodes", "30",
                 "--learner", str(out), "--learner", "random", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    assert set(rows[0]["learners"]) == {"schema-average", "random"}
    assert main(["gap", str(small_space_dir), "--split", "concept_iid", "--episodes", "5", "--learner", str(out)]) == 2
    assert "trained on split 'counting'" in capsys.readouterr().err
    assert main(["train", str(small_space_dir), "--split", "counting", "--learner", "random", "--out",
                 str(tmp_path / "x")]) == 2
    assert "ENCODER-POOLING" in capsys.readouterr().err


def test_plot_comp_gap_draws_models_as_bars(space, splits):
    from bayes_concepts import plots
    ds = compute_gap(space, {k: splits[k] for k in ("counting", "binding_color")}, negatives=("hard",),
                     n_episodes=30, learners={"prototype": NearestPrototype(space)})
    axes, data = plots.plot_comp_gap(ds, "hard", n_boot=20)
    for ax, metric in zip(axes, ("ap", "cba")):
        bars = [p for p in ax.patches if p.get_gid() == f"{metric}:bar:prototype"]
        order = data[(data.metric == metric) & (data.learner == "prototype")].sort_values("order")
        np.testing.assert_allclose([b.get_height() for b in bars], order["mean"])
        np.testing.assert_allclose(order["mean"], [100 * float(ds[metric].sel(split=s, learner="prototype").mean())
                                                   for s in order["split"]])


# ----------------------------------------------------------------------------- models know their space
TINY_TRAIN = ["--steps", "2", "--batch", "4", "--val-every", "2", "--val-episodes", "10", "--precision", "fp32"]
MINE = 'name = "mine"\nkind = "random"\nfractions = {train = 0.7, val = 0.1, test = 0.2}\nseed = %d\n'


@pytest.fixture(scope="module")
def two_spaces(tmp_path_factory):
    """Two tiny demo spaces that differ only in their seed (3 s each), and a schema-average
    model trained for 2 steps on the first one's Concept IID split."""
    root = tmp_path_factory.mktemp("two_spaces")
    for seed in (0, 1):
        assert main(["space", "build", str(root / f"s{seed}"), "--preset", "demo", "--samples", "4000", "--scenes",
                     "2000", "--seed", str(seed), "--quiet"]) == 0
    assert main(["train", str(root / "s0"), "--split", "concept_iid", "--learner", "schema-average", *TINY_TRAIN,
                 "--out", str(root / "m0")]) == 0
    return root


def test_the_card_records_the_space_and_the_splits_concepts(two_spaces):
    card = read_card(two_spaces / "m0")
    space = HypothesisSpace.load(two_spaces / "s0")
    split = load_splits(space, ["concept_iid"])["concept_iid"]
    assert card["training"]["space"]["manifest_sha256"] == space.manifest_sha256() == card["space"]["manifest_sha256"]
    assert card["training"]["space"]["path"] == str((two_spaces / "s0").resolve())
    assert card["training"]["split"] == "concept_iid" and card["training"]["split_sha256"] == split.concepts_sha256()
    other = HypothesisSpace.load(two_spaces / "s1")
    assert load_splits(other, ["concept_iid"])["concept_iid"].concepts_sha256() != split.concepts_sha256()


def test_a_model_scored_on_another_space_is_refused_unless_allowed(two_spaces, capsys):
    s0, s1, m0 = two_spaces / "s0", two_spaces / "s1", two_spaces / "m0"
    gap = ["--split", "concept_iid", "--negatives", "hard", "--episodes", "10", "--learner", m0]
    status, _, err = run(["gap", s1, *gap], capsys)
    h0, h1 = (HypothesisSpace.load(d).manifest_sha256()[:12] for d in (s0, s1))
    assert_one_line_error(status, err, "trained on space", str(s0.resolve()), h0, str(s1.resolve()), h1,
                          "--allow-other-space")
    status, out, err = run(["gap", s1, *gap, "--allow-other-space", "--json"], capsys)
    assert status == 0, err
    entry = json.loads(out)["learners"]["schema-average"]["concept_iid"]
    assert entry["scored_on"]["override"] == "allow_other_space"
    assert entry["scored_on"]["space_check"] == "other" and entry["scored_on"]["split_check"] == "other"
    assert entry["training_space"]["manifest_sha256"][:12] == h0 and entry["steps"] == 2
    assert entry["settings"]["batch_episodes"] == 4 and entry["split_sha256"] != entry["scored_on"]["split_sha256"]
    # on its own space: no override, both checks pass, and the results say so
    status, out, err = run(["gap", s0, *gap, "--json"], capsys)
    assert status == 0, err
    scored = json.loads(out)["learners"]["schema-average"]["concept_iid"]["scored_on"]
    assert scored["space_check"] == scored["split_check"] == "same" and scored["override"] is None


def test_the_api_refuses_another_space_and_another_split_too(two_spaces):
    s0, s1 = (HypothesisSpace.load(two_spaces / d) for d in ("s0", "s1"))
    with pytest.raises(LearnerError, match="trained on space .* allow_other_space=True"):
        load_model(two_spaces / "m0", s1)
    model = load_model(two_spaces / "m0", s1, allow_other_space=True)
    splits = load_splits(s1, ["concept_iid"])
    with pytest.raises(LearnerError, match="trained on space"):  # the API's own check: compute_gap
        compute_gap(s1, splits, ("hard",), 5, learners={"m": {"concept_iid": load_model(two_spaces / "m0", s0)}})
    ds = compute_gap(s1, splits, ("hard",), 5, learners={"m": {"concept_iid": model}})
    assert json.loads(ds.attrs["learners"])["m"]["concept_iid"]["scored_on"]["override"] == "allow_other_space"
    own = load_splits(s0, ["concept_iid", "instance_iid"])
    with pytest.raises(LearnerError, match="trained on split 'concept_iid' .* split 'instance_iid'"):
        compute_gap(s0, own, ("hard",), 5, learners={"m": load_model(two_spaces / "m0", s0)})
    ds = compute_gap(s0, own, ("hard",), 5, learners={"m": load_model(two_spaces / "m0", s0)},
                     allow_other_space=True)
    info = json.loads(ds.attrs["learners"])["m"]
    assert info["concept_iid"]["scored_on"]["override"] is None
    assert info["instance_iid"]["scored_on"]["override"] == "allow_other_space"


def test_a_spec_split_reusing_the_name_with_other_concepts_is_refused(two_spaces, tmp_path, capsys):
    s0 = two_spaces / "s0"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    spec, other = tmp_path / "a" / "mine.toml", tmp_path / "b" / "mine.toml"
    spec.write_text(MINE % 0)
    other.write_text(MINE % 1)
    status, _, err = run(["train", s0, "--spec", spec, "--split", "mine", "--learner", "schema-average", *TINY_TRAIN,
                          "--out", tmp_path / "m"], capsys)
    assert status == 0, err
    gap = ["--split", "mine", "--negatives", "hard", "--episodes", "10", "--learner", tmp_path / "m"]
    status, _, err = run(["gap", s0, "--spec", other, *gap], capsys)
    assert_one_line_error(status, err, "trained on split 'mine'", "another split named 'mine'", "--allow-other-space")
    status, _, err = run(["gap", s0, "--spec", spec, *gap], capsys)
    assert status == 0, err


def test_resuming_on_another_split_of_one_name_is_refused(space, tmp_path):
    common = dict(batch_episodes=4, val_every=2, val_episodes=10, chunk_episodes=8, progress=False)
    tiny(space, "average").train(curi_splits(space)["concept_iid"], max_steps=2, out=tmp_path / "m", **common)
    from bayes_concepts.splits import make_split
    other = make_split(space, {"name": "concept_iid", "kind": "random", "seed": 7,
                               "fractions": {"train": 0.8, "val": 0.05, "test": 0.15}})
    with pytest.raises(LearnerError, match="split_sha256"):
        tiny(space, "average").train(other, max_steps=4, out=tmp_path / "m", resume=True, **common)


@settings(max_examples=25, deadline=None)
@given(counts=st.lists(st.integers(1, 5), min_size=2, max_size=12), seed=st.integers(0, 2**16),
       training=st.booleans())
def test_relation_pooling_with_g_batch_norm_equals_its_direct_form(counts, seed, training):
    """CURI's g with batch norm: packed pair rows (padded to a bucket) and the direct form give
    the same sums, in training mode too, where the statistics must come from the pairs of
    present objects only (padding rows or absent objects would shift them)."""
    torch.manual_seed(seed)
    pool = poolings.get("relnet")(8, 5, 16, g_hidden=(12, 12), g_out=12, f_hidden=(12,), g_norm=True)
    pool.train(training)
    f = torch.randn(len(counts), 5, 8)
    mask = torch.arange(5)[None, :] < torch.tensor(counts)[:, None]
    objects = ObjectSet(f, mask)
    with torch.no_grad():
        torch.testing.assert_close(pool.pair_sums(objects), pool.pair_sums_reference(objects), rtol=1e-4, atol=1e-4)
    assert pool.config()["g_norm"] is True and len(pool.g_norms) == 3


def test_relation_pooling_g_norm_is_a_bool():
    with pytest.raises(LearnerError, match="g_norm"):
        poolings.get("relnet")(8, 5, 16, g_norm="yes")


# ----------------------------------------------------------------------------- training profiles
def test_profiles_resolve_with_explicit_settings_winning():
    from bayes_concepts.learners import resolve_profile, TrainSettings
    train, enc, pool = resolve_profile("cpu", "schema", "relnet")
    assert train == {"profile": "cpu"} and enc == {} and pool == {}  # the cpu profile is TrainSettings' defaults
    train, enc, pool = resolve_profile("curi", "image", "relnet", explicit={"lr": 3e-4, "batch_episodes": None})
    assert train["lr"] == 3e-4 and train["batch_episodes"] == 8 and train["lr_schedule"] == "constant"
    assert enc == {"backbone": "resnet18", "height": 160, "width": 240} and pool == {"g_norm": True}
    settings = TrainSettings(**train)
    assert settings.learning_rate(0, 0.0) == settings.learning_rate(10_000, 1e6) == 3e-4  # constant, no warm-up
    assert resolve_profile("curi", "schema", "average")[2] == {}  # g_norm only for the relation net
    with pytest.raises(LearnerError, match="unknown training profile 'fast'"):
        resolve_profile("fast", "schema", "relnet")


def test_cli_train_profile_curi_is_applied_and_recorded(small_space_dir, tmp_path, capsys):
    out = tmp_path / "curi"
    assert main(["train", str(small_space_dir), "--split", "counting", "--learner", "schema-relnet", "--profile",
                 "curi", "--steps", "2", "--batch", "4", "--val-every", "2", "--val-episodes", "10",
                 "--precision", "fp32", "--out", str(out)]) == 0
    assert "training profile curi" in capsys.readouterr().out
    card = read_card(out)
    settings = card["training"]["settings"]
    assert settings["profile"] == "curi" and settings["lr_schedule"] == "constant" and settings["warmup_steps"] == 0
    assert settings["batch_episodes"] == 4 and settings["lr"] == 1e-3  # explicit --batch wins, lr the profile's
    assert card["architecture"]["pooling"]["config"]["g_norm"] is True
    learner = load_model(out, HypothesisSpace.load(small_space_dir))  # rebuilt with g's batch norm
    assert learner.model.pooling.g_norms is not None
    status, _, err = run(["train", str(small_space_dir), "--split", "counting", "--learner", "schema-relnet",
                          "--profile", "fast", "--steps", "1", "--out", str(tmp_path / "x")], capsys)
    assert status == 2 and "unknown training profile 'fast'" in err
