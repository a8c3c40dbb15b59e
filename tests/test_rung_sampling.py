"""The sampling rungs (``sampling``, ``sampling_learned``) against their definition.

* the brute-force twin: per episode, the learner's numbers equal those of
  ``Oracle(space, drawn_ids, settings)`` fitted on the episode's support with ``fit`` and
  scored with ``predict_proba`` (AP by the toolkit's metric and by scikit-learn's, CBA,
  entropies, emptiness, candidates), over priors x likelihoods x weak-empty policies, hard and
  easy negatives, budgets from 1 draw up, on a CURI space and a CLEVR space; corners are
  steered into with examples (n = 1, nothing drawn fits, tied scores, the true concept not
  drawn) and checked to occur;
* the draws: i.i.d. from the prior (a chi-square test over many one-draw episodes), the
  guide-table search equal to a binary search of the cumulative table, and the same draws
  whatever the batching, parts or thread count;
* n -> infinity (every concept drawn): the strong oracle, episode by episode;
* the learner protocol (``fit`` draws from the learner's own stream) and bad knobs.

AP near ties: scores that are equal sums of different probabilities may come out an ulp
apart in the twin's matrix product and equal in the kernels (or the reverse); AP (ties are
one threshold) then moves by a finite amount.  Where the twin's test-bank scores have a near
tie, the learner's AP must lie in the range AP takes over the orderings / tyings of the
near-tied scenes (``oracle_reference.average_precision_bounds``); elsewhere it is equal to
1e-9.  The same for CBA when a query prediction sits within 1e-9 of 0.5.
"""
from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import numba
import numpy as np
import oracle_reference as R
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare
from sklearn.metrics import average_precision_score

from bayes_concepts.episodes import sampler_for
from bayes_concepts.metrics import average_precision, class_balanced_accuracy
from bayes_concepts.oracles import Fallback, Oracle, OracleSettings, empty_policies
from bayes_concepts.protocols import get_protocol
from bayes_concepts.rungs import RungError, check_rung, rung_learner, rungs, strong_concepts
from bayes_concepts.rungs import sampling_kernels as SK
from bayes_concepts.rungs.sampling import SamplingLearner, stream_key
from bayes_concepts.rng import next_uniform
from bayes_concepts.splits import load_splits

TOL = 1e-9
HSET = dict(deadline=None, derandomize=True)


class Batch:
    """What :meth:`SamplingLearner.draws` reads of a batch of episodes: its length and meta."""

    def __init__(self, n, meta):
        self.n, self.meta = n, meta

    def __len__(self):
        return self.n


class World:
    """A space, one split of it and its episodes' sampler."""

    def __init__(self, space, name, split):
        self.space, self.name, self.split = space, name, split
        self.sampler = sampler_for(space)
        self.strong = strong_concepts(split)

    def episodes(self, n, negatives="hard", seed=0, part=None, name=None):
        return self.sampler.sample(self.split.test, n, negatives, seed=seed, part=part,
                                   meta={"split": name or self.name, "side": "test"})


@pytest.fixture(scope="module")
def worlds(small_space, clevr_space):
    curi = load_splits(small_space, ["concept_iid"])["concept_iid"]
    closure = get_protocol("closure").splits(clevr_space)  # the CLOSURE families the space holds
    name = "compare_mat" if "compare_mat" in closure else next(iter(closure))
    return {"curi": World(small_space, "concept_iid", curi), "clevr": World(clevr_space, name, closure[name])}


def drawable(split, log_w, budget: int = 2_000_000):
    """``(split, n)``: a copy of ``split`` whose strong oracle knows only its heaviest concepts
    under log weights ``log_w`` (float (H,) over ``strong_concepts(split)``), as many as ``n``
    <= ``budget`` draws cover with probability >= 1 - H·e^-40 (each concept's share p gets
    n >= 40 / p draws), and that n."""
    ids = strong_concepts(split)
    order = np.argsort(-log_w, kind="stable")
    keep, n = 1, 40
    for k in range(2, len(order) + 1):
        lw = log_w[order[:k]]
        need = int(math.ceil(40 / np.exp(lw[-1] - np.logaddexp.reduce(lw))))
        if need > budget:
            break
        keep, n = k, need
    narrow = dataclasses.replace(split)
    narrow.strong_concepts = np.sort(ids[order[:keep]])
    return narrow, n


# ====================================================================== the twin
def twin(space, drawn, st_, eps, e, log_weights=None) -> dict:
    """Episode ``e`` through ``Oracle(space, drawn, st_)``'s fit / predict_proba."""
    oracle = Oracle(space, drawn, st_, "twin", log_weights=log_weights)
    oracle.fit(eps.support_scenes[e], eps.support_labels[e], hard=eps.meta["negatives"] == "hard",
               positives_drawn=eps.meta["n_positive"])
    ids, probs = oracle.posterior()
    return {"empty": oracle.empty_, "query": oracle.predict_proba(eps.query_scenes[e]),
            "test": oracle.predict_proba(np.asarray(space.test_bank.scene_ids)), "ids": ids, "probs": probs}


def check_twin(space, learner, eps, log_weights=None) -> dict:
    """Assert ``learner.evaluate(eps)`` equals the twin on every episode; return what occurred."""
    st_ = learner.settings
    out = learner.evaluate(eps)
    drawn = learner.draws(eps)
    seen = {"empty": 0, "not_drawn": 0, "not_drawn_fit": 0, "ties": 0, "one": 0, "episodes": len(eps)}
    assert np.all(out["ap_bound"] == 0)
    for e in range(len(eps)):
        d = drawn[e]
        assert len(d) == out["n_hypotheses"][e] and np.all(np.diff(d) > 0) and np.isin(d, learner.concepts).all()
        assert 1 <= len(d) <= learner.n
        t = twin(space, d, st_, eps, e, log_weights)
        assert out["empty"][e] == t["empty"], e
        np.testing.assert_allclose(out["query_pred"][e], t["query"], rtol=0, atol=TOL)
        # candidates: the drawn concepts that fit (after a refit, those it kept); none for a fixed fallback
        fixed = t["empty"] and st_.weak_empty in ("zero", "prior")
        assert out["n_candidates"][e] == (0 if fixed else len(t["ids"])), e
        # nothing to go on (the zero fallback, or a refit that kept nothing either: in a space with
        # question domains, no drawn concept's domain holds every support scene): every score 0
        if (t["empty"] and st_.weak_empty == "zero") or len(t["ids"]) == 0:
            assert math.isnan(out["posterior_entropy"][e]) and np.all(out["query_pred"][e] == 0)
        else:
            assert out["posterior_entropy"][e] == pytest.approx(R.entropy(t["probs"]), abs=TOL)
        ent = np.mean([R.binary_entropy(p) for p in out["query_pred"][e]])
        assert out["predictive_entropy"][e] == pytest.approx(ent, abs=1e-12)
        labels = eps.query_labels[e]
        assert out["cba"][e] == pytest.approx(class_balanced_accuracy(out["query_pred"][e], labels), abs=1e-15)
        if R.cba_well_conditioned(t["query"]):
            assert out["cba"][e] == pytest.approx(class_balanced_accuracy(t["query"], labels), abs=TOL)
        seen["empty"] += bool(t["empty"])
        seen["not_drawn"] += int(eps.concept[e]) not in set(d.tolist())
        seen["not_drawn_fit"] += int(eps.concept[e]) not in set(d.tolist()) and not t["empty"]
        positive = t["test"][t["test"] > 0]
        seen["ties"] += len(np.unique(positive)) < len(positive)
        seen["one"] += len(d) == 1
        keep = space.test_domain(int(eps.concept[e]))  # the ranking is over the target's domain
        truth = space.test_bank.labels(int(eps.concept[e]))[keep]
        if not truth.any():
            assert math.isnan(out["ap"][e])
            continue
        test = t["test"][keep]
        ap = average_precision(test, truth)
        assert ap == pytest.approx(average_precision_score(truth, test), abs=1e-12)
        if R.ap_well_conditioned(test):
            assert out["ap"][e] == pytest.approx(ap, abs=TOL), e
        else:
            lo, hi = R.average_precision_bounds(test, truth, split_ties=True)
            assert lo - TOL <= out["ap"][e] <= hi + TOL, (e, lo, out["ap"][e], hi)
    return seen


settings_strategy = st.builds(OracleSettings, prior=st.sampled_from(["length", "pcfg", "uniform"]),
                              likelihood=st.sampled_from(["size", "consistent", "noisy"]),
                              weak_empty=st.sampled_from(["zero", "prior", "noisy"]))


@settings(max_examples=30, **HSET)
@given(which=st.sampled_from(["curi", "clevr"]), st_=settings_strategy,
       n=st.sampled_from([1, 2, 7, 40, 300, 5000]), negatives=st.sampled_from(["hard", "easy"]),
       seed=st.integers(0, 2**31 - 1))
@example(which="curi", st_=OracleSettings(weak_empty="zero"), n=1, negatives="hard", seed=1)       # one hypothesis
@example(which="clevr", st_=OracleSettings(weak_empty="prior"), n=3, negatives="hard", seed=2)     # prior fallback
@example(which="clevr", st_=OracleSettings(likelihood="consistent", prior="uniform"), n=300, negatives="easy",
         seed=3)                                                                                     # tied scores
@example(which="curi", st_=OracleSettings(likelihood="consistent", prior="uniform"), n=40, negatives="easy",
         seed=3)                                                                 # the true concept not drawn, yet a fit
@example(which="curi", st_=OracleSettings(likelihood="size", weak_empty="noisy"), n=7, negatives="easy", seed=4)
def test_equals_oracle_over_the_drawn_set(worlds, which, st_, n, negatives, seed):
    w = worlds[which]
    learner = SamplingLearner(w.space, w.split, st_, n=n, seed=seed % 1000)
    check_twin(w.space, learner, w.episodes(10, negatives, seed=seed))


def test_corners_occur(worlds):
    """The examples above do reach the corners they are there for."""
    w = worlds["curi"]
    one = check_twin(w.space, SamplingLearner(w.space, w.split, OracleSettings(), n=1, seed=1),
                     w.episodes(30, "hard", seed=1))
    assert one["one"] == 30 and one["empty"] > 0 and one["not_drawn"] > 0
    uniform = OracleSettings(likelihood="consistent", prior="uniform")
    missed = check_twin(w.space, SamplingLearner(w.space, w.split, uniform, n=40, seed=3),
                        w.episodes(30, "easy", seed=3))
    assert missed["not_drawn_fit"] > 0  # the true concept not drawn, yet some drawn concept fits
    c = worlds["clevr"]
    ties = check_twin(c.space, SamplingLearner(c.space, c.split, uniform, n=300, seed=3),
                      c.episodes(30, "easy", seed=3))
    assert ties["ties"] > 0
    prior = check_twin(c.space, SamplingLearner(c.space, c.split, OracleSettings(weak_empty="prior"), n=3, seed=2),
                       c.episodes(30, "hard", seed=2))
    assert prior["empty"] > 0


# ====================================================================== the draws
def test_guide_search_equals_binary_search():
    rng = np.random.default_rng(0)
    for h in (1, 2, 3, 17, 64, 65, 500):
        w = rng.exponential(size=h) * (rng.random(h) < 0.7)
        w[rng.integers(h)] = 1.0
        if h > 2:
            w[0] = w[-1] = 0.0  # weight 0 at both ends
            w[h // 2] = 1e-300
        cum = np.cumsum(w / w.sum())
        guide = SK.guide_table(cum)
        last = int(np.flatnonzero(w > 0)[-1])
        assert len(guide) == SK.GUIDE_BUCKETS * h
        bounds = np.arange(len(guide) + 1) / len(guide)  # the buckets' edges, and just below them
        u = np.concatenate([rng.random(2000), bounds[:-1], np.nextafter(bounds[1:], 0), [0.0, 1 - 2**-53],
                            cum / cum[-1], np.nextafter(cum / cum[-1], 0)])
        u = u[(u >= 0) & (u < 1)]
        want = np.minimum(np.searchsorted(cum, u * cum[-1], side="right"), last)
        got = np.array([SK._draw(cum, guide, last, x) for x in u])
        assert np.array_equal(got, want), h
        assert np.all(w[got] > 0)


@st.composite
def _weight_tables(draw):
    """Cumulative weight tables with the corners a stop at "every position drawn" must get
    right: weights 0 (at the ends too), weights that round away in the sum (1e-300; also at
    ``last``), ties, a single position, and tables past one 64-bit word."""
    h = draw(st.sampled_from([1, 2, 3, 5, 63, 64, 65, 130]))
    kinds = draw(st.lists(st.sampled_from(["one", "zero", "tiny", "random"]), min_size=h, max_size=h))
    w = np.array([{"one": 1.0, "zero": 0.0, "tiny": 1e-300}.get(k, 0.0) for k in kinds])
    rnd = np.array([k == "random" for k in kinds])
    w[rnd] = draw(st.lists(st.floats(1e-3, 1e3), min_size=int(rnd.sum()), max_size=int(rnd.sum())))
    if not (w >= 1e-3).any():
        w[draw(st.integers(0, h - 1))] = 1.0
    return np.cumsum(w / w.sum()), w


@settings(max_examples=300, **HSET)
@given(table=_weight_tables(), n=st.sampled_from([1, 2, 7, 64, 1_000, 20_000]), key=st.integers(0, 2**64 - 1))
@example(table=(np.cumsum([0.5, 0.5, 1e-300]), np.array([0.5, 0.5, 1e-300])), n=1_000, key=3)  # last rounds away
def test_draws_stopped_when_every_position_is_drawn_are_all_n_draws(table, n, key):
    """Stopping an episode's draws once every position a draw can select is drawn gives the
    distinct positions of all ``n`` draws (the same ``m`` and ``out``), and the stop happens."""
    cum, w = table
    guide = SK.guide_table(cum)
    last = int(np.flatnonzero(w > 0)[-1])
    all_drawn = SK.drawable_positions(cum, last)
    rising = set(np.flatnonzero(np.diff(cum, prepend=0.0) > 0).tolist())
    assert all_drawn == len(rising | {last})  # a uniform rounding to the table's top selects last
    h = len(cum)
    results = []
    for stop in (-1, all_drawn):
        state = SK.episode_stream(np.uint64(key), 0)
        mark, out = np.zeros((h + 63) >> 6, np.uint64), np.full(h, -1, np.int64)
        m = SK.draw_distinct(state, cum, guide, last, n, mark, out, stop)
        assert not mark.any()
        results.append((m, out[:m].copy(), int(state[0])))
    (m_all, out_all, state_all), (m_stop, out_stop, state_stop) = results
    assert m_stop == m_all and np.array_equal(out_stop, out_all)
    assert m_all <= all_drawn and np.all(np.isin(out_all, np.flatnonzero(np.diff(cum, prepend=0.0) > 0)) |
                                         (out_all == last))
    draws = _every_draw(SK.episode_stream(np.uint64(key), 0), cum, guide, last, n)
    assert np.array_equal(out_all, np.unique(draws))
    if m_all == all_drawn:  # stopped right after the draw that completed the set
        first_seen = np.unique(draws, return_index=True)[1]
        stream = SK.episode_stream(np.uint64(key), 0)
        _every_draw(stream, cum, guide, last, int(first_seen.max()) + 1)
        assert state_stop == int(stream[0])
    else:
        assert state_stop == state_all


@numba.njit(cache=True)
def _every_draw(state, cum, guide, last, n):
    """The ``n`` positions drawn one by one (with repeats), in order: the slow twin."""
    out = np.empty(n, np.int64)
    for i in range(n):
        out[i] = SK._draw(cum, guide, last, next_uniform(state))
    return out


def test_draws_follow_the_prior(worlds):
    """One draw per episode over 40,000 episodes: the ids' frequencies against the prior."""
    w = worlds["curi"]
    learner = SamplingLearner(w.space, w.split, OracleSettings(), n=1, seed=5)
    ids = np.concatenate(learner.draws(Batch(40_000, {"split": "x", "side": "test", "negatives": "hard"})))
    assert len(ids) == 40_000
    p = np.exp(learner.log_w)
    counts = np.bincount(np.searchsorted(learner.concepts, ids), minlength=len(p))
    expected = p * len(ids)
    big = expected >= 5  # the concepts expected fewer than 5 times are pooled into one cell
    obs = np.append(counts[big], counts[~big].sum()) if (~big).any() else counts
    exp = np.append(expected[big], expected[~big].sum()) if (~big).any() else expected
    assert chisquare(obs, exp).pvalue > 1e-4


def test_same_draws_whatever_the_batching(worlds):
    w = worlds["clevr"]
    learner = SamplingLearner(w.space, w.split, OracleSettings(), n=200, seed=7)
    whole = w.episodes(50, "hard", seed=11)
    ref = learner.evaluate(whole)
    parts = [w.episodes(50, "hard", seed=11, part=p) for p in ((0, 17), (17, 18), (18, 50))]
    got = [learner.evaluate(p) for p in parts]
    for key in ref:
        assert np.array_equal(np.concatenate([g[key] for g in got]), ref[key], equal_nan=True), key
    again = SamplingLearner(w.space, w.split, OracleSettings(), n=200, seed=7)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = again.evaluate(whole)
    finally:
        numba.set_num_threads(threads)
    for key in ref:
        assert np.array_equal(one[key], ref[key], equal_nan=True), key
    # another seed, split name or kind of negatives: other draws
    base = learner.draws(whole)
    for other in (SamplingLearner(w.space, w.split, OracleSettings(), n=200, seed=8).draws(whole),
                  learner.draws(w.episodes(50, "hard", seed=11, name="renamed")),
                  learner.draws(Batch(len(whole), {**whole.meta, "negatives": "easy"}))):
        assert any(not np.array_equal(a, b) for a, b in zip(base, other))
    assert stream_key(7, "a", "b") == stream_key(7, "a", "b") != stream_key(7, "ab", "")


# ====================================================================== n -> infinity
@pytest.mark.parametrize("prior", ["uniform", "length"])
@pytest.mark.parametrize("which", ["curi", "clevr"])
def test_every_concept_drawn_is_the_strong_oracle(worlds, which, prior):
    """With n large enough that every concept is drawn, the learner is the strong oracle it
    samples from.  (Where the prior leaves concepts too light to be drawn in a feasible n, the
    strong set is narrowed to the heaviest ones, for both.)"""
    w = worlds[which]
    st_ = OracleSettings(prior=prior, likelihood="consistent" if which == "clevr" else "size")
    split, n = drawable(w.split, SamplingLearner(w.space, w.split, st_, n=1).log_w)
    assert len(split.strong_concepts) >= min(len(w.strong), 100)
    learner = rung_learner("sampling", w.space, split, st_, n=n)
    strong = Oracle(w.space, split.strong_concepts, st_, "strong")
    for negatives in ("hard", "easy"):
        eps = w.episodes(12, negatives, seed=21)
        out, ref = learner.evaluate(eps), strong.evaluate(eps)
        assert np.all(out["n_hypotheses"] == len(split.strong_concepts))
        for key in ("ap", "cba", "posterior_entropy", "predictive_entropy"):
            np.testing.assert_allclose(out[key], ref[key], rtol=0, atol=TOL, equal_nan=True)
        np.testing.assert_allclose(out["query_pred"], ref["query_pred"], rtol=0, atol=TOL)
        assert np.array_equal(out["empty"], ref["empty"]) and np.array_equal(out["n_candidates"], ref["n_candidates"])


# ====================================================================== the learner protocol
def test_fit_draws_from_its_own_stream(worlds):
    w = worlds["curi"]
    st_ = OracleSettings(weak_empty="prior")
    eps = w.episodes(4, "hard", seed=2)
    a, b = (SamplingLearner(w.space, w.split, st_, n=20, seed=3) for _ in range(2))
    with pytest.raises(RuntimeError):
        a.predict_proba([0])
    first = []
    for e in range(4):
        a.fit(eps.support_scenes[e], eps.support_labels[e])
        first.append(a.drawn_)
        t = Oracle(w.space, a.drawn_, st_).fit(eps.support_scenes[e], eps.support_labels[e])
        np.testing.assert_allclose(a.predict_proba(eps.query_scenes[e]), t.predict_proba(eps.query_scenes[e]),
                                   rtol=0, atol=TOL)
        assert a.empty_ == t.empty_
        ids, probs = a.posterior()
        assert probs.sum() == pytest.approx(1.0)
    assert any(not np.array_equal(first[0], d) for d in first[1:])  # the stream moves on
    for e in range(4):  # a new learner with the same seed repeats it
        assert np.array_equal(b.fit(eps.support_scenes[e], eps.support_labels[e]).drawn_, first[e])


def test_rungs_are_registered_with_their_knobs(worlds):
    assert {"sampling", "sampling_learned"} <= set(rungs.names())
    assert set(rungs.get("sampling").knobs) == {"n", "seed"}
    assert set(rungs.get("sampling_learned").knobs) == {"n", "seed", "alpha"}
    assert "i.i.d." in rungs.get("sampling").definition
    w = worlds["curi"]
    learner = rung_learner("sampling", w.space, w.split, n=1e3)
    assert learner.n == 1000 and learner.name == "sampling[n=1000]"
    assert rung_learner("sampling", w.space, w.split).n == 1000
    assert check_rung("sampling", w.space, {"n": 10**12, "seed": 2**62}).name == "sampling"  # the largest budget


@pytest.mark.parametrize("rung,knobs,needle", [
    ("sampling", {"n": 0}, "n must be"), ("sampling", {"n": 2.5}, "n must be"), ("sampling", {"n": True}, "n must"),
    ("sampling", {"n": "many"}, "n must"), ("sampling", {"n": float("nan")}, "n must"),
    ("sampling", {"n": 10**13}, "n must"), ("sampling", {"seed": -1}, "seed must"),
    ("sampling", {"seed": 0.5}, "seed must"), ("sampling", {"alpha": 1.0}, "not 'alpha'"),
    ("sampling_learned", {"alpha": 0}, "alpha must"), ("sampling_learned", {"alpha": float("inf")}, "alpha must"),
    ("sampling_learned", {"alpha": "x"}, "alpha must"), ("sampling_learned", {"beta": 1}, "not 'beta'")])
def test_bad_knobs_are_one_line_errors(worlds, rung, knobs, needle):
    w = worlds["curi"]
    with pytest.raises(RungError) as info:
        check_rung(rung, w.space, knobs)
    assert needle in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(RungError):
        rung_learner(rung, w.space, w.split, **knobs)


def test_refuses_what_it_cannot_do(worlds):
    w = worlds["curi"]

    @empty_policies.register("first_concept")
    def first_concept(oracle):
        """all weight on the oracle's first concept"""
        return Fallback.fixed(oracle.concepts[:1], [1.0], 0.0)
    try:
        with pytest.raises(RungError, match="fixed posterior") as info:
            rung_learner("sampling", w.space, w.split, OracleSettings(weak_empty="first_concept"))
        assert "\n" not in str(info.value)
    finally:
        empty_policies.unregister("first_concept")
    nothing = SimpleNamespace(name="nothing", train=np.zeros(0, np.int64), test=np.zeros(0, np.int64))
    with pytest.raises(RungError, match="no concepts"):
        SamplingLearner(w.space, nothing, OracleSettings())


# ====================================================================== sampling_learned (last)
@pytest.mark.parametrize("which,alpha", [("curi", 1.0), ("clevr", 5.0)])
def test_sampling_learned_equals_oracle_with_the_learned_prior(worlds, which, alpha):
    from bayes_concepts.rungs.learned_prior import learned_log_weights
    w = worlds[which]
    st_ = OracleSettings(likelihood="size")
    weights = learned_log_weights(w.space, w.split, alpha, variant="unigram")
    learner = rung_learner("sampling_learned", w.space, w.split, st_, n=60, alpha=alpha, seed=4)
    assert learner.name == f"sampling_learned[alpha={alpha:g},n=60,seed=4]"
    p = np.exp(weights[w.strong] - np.logaddexp.reduce(weights[w.strong]))
    np.testing.assert_allclose(np.exp(learner.log_w), p, rtol=1e-12, atol=1e-300)
    seen = check_twin(w.space, learner, w.episodes(12, "hard", seed=9), log_weights=weights)
    assert seen["episodes"] == 12
    # every concept drawn: the learned_prior rung (over the heaviest concepts, as above)
    narrow, n = drawable(w.split, weights[w.strong])
    big = rung_learner("sampling_learned", w.space, narrow, st_, n=n, alpha=alpha)
    full = rung_learner("learned_prior", w.space, narrow, st_, alpha=alpha)
    for negatives in ("hard", "easy"):
        eps = w.episodes(10, negatives, seed=10)
        out, ref = big.evaluate(eps), full.evaluate(eps)
        assert np.all(out["n_hypotheses"] == len(narrow.strong_concepts))
        for key in ("ap", "cba", "posterior_entropy"):
            np.testing.assert_allclose(out[key], ref[key], rtol=0, atol=TOL, equal_nan=True)
        assert np.array_equal(out["empty"], ref["empty"])
