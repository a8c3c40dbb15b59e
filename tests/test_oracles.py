"""The Bayesian-oracle kernels against the slow reference in ``oracle_reference.py``.

Every prior x likelihood x weak-empty policy, hard and easy negatives, weak oracles over
random concept subsets (so that episodes with no consistent concept occur), on two small
spaces.  Plus the learner protocol (``fit`` / ``predict_proba``), thread independence and
Instance IID's zero gap.

Two outputs can be ill-conditioned and are then checked differently:

* AP, when test-bank scores are (near-)tied in a way rounding can change -- equal sums of
  the probabilities of *different* concepts (common under uniform / pcfg priors and for
  the prior predictive), which may come out an ulp apart in one implementation and equal
  in the other, or scores the kernels' exp(-50) pruning of noisy posteriors can move.  AP
  (ties = one threshold) then jumps by a finite amount, and the kernel's AP must lie in the
  range AP takes over every ordering / tying of the near-tied items
  (``oracle_reference.average_precision_bounds``, itself checked by brute force below).
  Everywhere else AP is compared to 1e-9, widened by the episode's certified bound where a
  spread posterior's AP is computed to an AP tolerance (the noisy likelihood's default);
* CBA, when a query prediction is within 1e-9 of the 0.5 threshold; the kernel's CBA is
  then checked against its own query predictions (which are checked to 1e-9).
"""
import itertools
import math

import numba
import numpy as np
import oracle_reference as R
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.episodes import Episodes, EpisodeSampler
from bayes_concepts.oracles import (Oracle, OracleSettings,
                                    strong_and_weak)
from bayes_concepts.oracles import kernels as K
from bayes_concepts.splits import default_splits_dir, make_split

TOL = 1e-9
HSET = dict(deadline=None, derandomize=True)
# the built-ins, which the brute-force reference implements (extensions registered by other
# modules, e.g. bayes_concepts.protocols, are tested where they are defined)
PRIORS, LIKELIHOODS, EMPTY_POLICIES = ("length", "pcfg", "uniform"), ("size", "consistent", "noisy"), ("zero", "prior", "noisy")
COMBOS = list(itertools.product(PRIORS, LIKELIHOODS, EMPTY_POLICIES))


class World:
    """A small space with its reference form, an episode sampler and its usable concepts."""

    def __init__(self, space: HypothesisSpace):
        self.space = space
        self.ref = R.RefSpace.from_space(space)
        self.sampler = EpisodeSampler(space)
        self.usable = np.flatnonzero(space.counts >= 10)

    def __repr__(self):
        return f"World({self.space!r})"


@pytest.fixture(scope="module")
def worlds():
    # not the shared small space: the kernels are compared with the reference on two builds (seeds 11, 12)
    out = []
    for seed in (11, 12):
        out.append(World(HypothesisSpace.build(samples=20_000, scenes=5_000, seed=seed, progress=False)))
    return out


@pytest.fixture(scope="module")
def world(worlds):
    return worlds[0]


def random_omega(space, rng, frac):
    omega = np.flatnonzero(rng.random(space.n_concepts) < frac)
    return omega if len(omega) else rng.choice(space.n_concepts, 1)


def ref_settings(st_: OracleSettings) -> dict:
    return dict(prior=st_.prior, beta=st_.beta, likelihood=st_.likelihood, epsilon=st_.epsilon,
                weak_empty=st_.weak_empty)


def check_against_reference(w: World, omega, eps, st_: OracleSettings) -> dict:
    """Assert ``Oracle.evaluate`` equals the reference on every episode; return counts."""
    oracle = Oracle(w.space, omega, st_)
    out = oracle.evaluate(eps)
    ref = R.evaluate_episodes(w.ref, omega, eps, **ref_settings(st_))
    n = len(eps)
    assert np.array_equal(out["empty"], ref["empty"])
    qp = out["query_pred"]
    assert qp.shape == ref["query_pred"].shape
    assert np.all((qp >= 0) & (qp <= 1))
    np.testing.assert_allclose(qp, ref["query_pred"], rtol=0, atol=TOL)
    np.testing.assert_allclose(out["posterior_entropy"], ref["posterior_entropy"], rtol=0, atol=TOL)
    np.testing.assert_allclose(out["predictive_entropy"], ref["predictive_entropy"], rtol=0, atol=TOL)
    # n_candidates: the consistent concepts (the noisy posterior's count is after pruning)
    exact = (st_.likelihood != "noisy") & ~(ref["empty"] & (st_.weak_empty == "noisy"))
    assert np.array_equal(out["n_candidates"][exact], ref["n_candidates"][exact])
    if st_.weak_empty == "zero":
        assert np.all(np.isnan(out["posterior_entropy"][out["empty"]]))
        assert np.all(qp[out["empty"]] == 0)
    # the kernels prune noisy posteriors at exp(-50) of the best weight: test-bank scores may
    # then be lower by up to |omega|·e^-50 (the reference does not prune)
    noisy_path = (st_.likelihood == "noisy") | (ref["empty"] & (st_.weak_empty == "noisy"))
    ill_ap = ill_ap_posterior = ill_cba = 0
    for e in range(n):
        # CBA: always consistent with the kernel's own predictions; equal to the reference's
        # when no prediction sits on the 0.5 threshold
        assert out["cba"][e] == pytest.approx(R.class_balanced_accuracy(qp[e], eps.query_labels[e]), abs=1e-15)
        if R.cba_well_conditioned(ref["query_pred"][e]):
            assert out["cba"][e] == pytest.approx(ref["cba"][e], abs=TOL)
        else:
            ill_cba += 1
        # AP: equal to the reference's when no two test-bank scores are near-tied; else
        # within the range AP takes over the ways rounding may order / tie them
        truth = w.ref.test_labels(int(eps.concept[e]))
        assert np.array_equal(truth, w.space.test_bank.labels(int(eps.concept[e])))
        abs_tol = len(omega) * math.exp(-K.PRUNE) if noisy_path[e] else 0.0
        # the AP of a spread posterior is certified to the settings' AP tolerance: within its bound
        bound = out["ap_bound"][e]
        assert 0.0 <= bound <= st_.tolerance and (bound == 0.0 or noisy_path[e])
        if ref["ties_robust"][e] and R.ap_well_conditioned(ref["test_pred"][e], abs_tol=abs_tol):
            assert out["ap"][e] == pytest.approx(ref["ap"][e], abs=TOL + bound)
        else:
            ill_ap += 1
            ill_ap_posterior += not out["empty"][e]
            lo, hi = R.average_precision_bounds(ref["test_pred"][e], truth, abs_tol=abs_tol, split_ties=True)
            assert lo - TOL - bound <= out["ap"][e] <= hi + TOL + bound, (e, lo, out["ap"][e], hi, ref["ap"][e])
    return {"empty": int(out["empty"].sum()), "n": n, "ill_ap": ill_ap, "ill_ap_posterior": ill_ap_posterior,
            "ill_cba": ill_cba}


# ============================================================ kernels == reference
@pytest.mark.parametrize("negatives", ["hard", "easy"])
@pytest.mark.parametrize("prior,likelihood,weak_empty", COMBOS)
def test_kernels_equal_reference_fixed(worlds, prior, likelihood, weak_empty, negatives):
    """Every combination on a fixed weak oracle (a third of the concepts: empty and
    non-empty episodes both occur for the size / consistent likelihoods) and on the oracle
    of every concept (many candidates per episode)."""
    w = worlds[0]
    eps = w.sampler.sample(w.usable, 12, negatives, seed=5)
    st_ = OracleSettings(prior=prior, likelihood=likelihood, weak_empty=weak_empty)
    c = check_against_reference(w, random_omega(w.space, np.random.default_rng(7), 0.3), eps, st_)
    if likelihood != "noisy":
        assert 0 < c["empty"] < c["n"], c
    else:
        assert c["empty"] == 0
    assert c["ill_cba"] <= c["n"] // 4, c
    if likelihood != "noisy":  # most posterior APs are compared to 1e-9 off the noisy path
        assert c["ill_ap_posterior"] <= c["n"] // 4, c
    c = check_against_reference(w, np.arange(w.space.n_concepts), eps, st_)
    assert c["empty"] == 0  # the episode's concept is always a candidate
    if likelihood != "noisy":
        assert c["ill_ap_posterior"] <= c["n"] // 2, c


@pytest.mark.parametrize("negatives", ["hard", "easy"])
@pytest.mark.parametrize("prior,likelihood,weak_empty", COMBOS)
@settings(max_examples=2, **HSET)
@given(which=st.integers(0, 1), seed=st.integers(0, 2**31 - 1),
       frac=st.sampled_from([0.05, 0.2, 0.5, 1.0]), n_positive=st.sampled_from([3, 5]),
       n_negative=st.sampled_from([6, 20]), beta=st.sampled_from([0.0, 0.2, 0.9]),
       epsilon=st.floats(0.01, 0.45))
def test_kernels_equal_reference_random(worlds, prior, likelihood, weak_empty, negatives, which, seed, frac,
                                        n_positive, n_negative, beta, epsilon):
    w = worlds[which]
    rng = np.random.default_rng(seed)
    omega = random_omega(w.space, rng, frac)
    eps = w.sampler.sample(w.usable, 10, negatives, seed=seed, n_positive=n_positive, n_negative=n_negative)
    st_ = OracleSettings(prior=prior, beta=beta, likelihood=likelihood, epsilon=epsilon, weak_empty=weak_empty)
    check_against_reference(w, omega, eps, st_)


@pytest.mark.parametrize("likelihood", ["size", "consistent"])
def test_hard_support_override(world, likelihood):
    """``evaluate(episodes, hard_support=False)`` scores hard episodes as if easy."""
    eps = world.sampler.sample(world.usable, 12, "hard", seed=9)
    omega = np.arange(world.space.n_concepts)
    st_ = OracleSettings(likelihood=likelihood)
    out = Oracle(world.space, omega, st_).evaluate(eps, hard_support=False)
    easy = Episodes(**{f: getattr(eps, f) for f in Episodes.__dataclass_fields__ if f != "meta"},
                    meta=dict(eps.meta, negatives="easy"))
    ref = R.evaluate_episodes(world.ref, omega, easy, **ref_settings(st_))
    np.testing.assert_allclose(out["query_pred"], ref["query_pred"], rtol=0, atol=TOL)
    np.testing.assert_allclose(out["posterior_entropy"], ref["posterior_entropy"], rtol=0, atol=TOL)


@settings(max_examples=80, **HSET)
@given(n=st.integers(1, 40), seed=st.integers(0, 2**31 - 1))
def test_reference_ap_bounds_cover_every_perturbation(n, seed):
    """The reference's AP range for near-tied scores contains the AP of random rounding-size
    perturbations (reorderings and re-tyings inside each near-tie cluster)."""
    rng = np.random.default_rng(seed)
    base = rng.choice([0.0, 0.1, 0.3, 0.7], n)
    scores = base * (1 + rng.choice([0.0, 1e-15, -1e-15, 2e-15], n))  # near-ties around each level
    labels = rng.random(n) < 0.4
    labels[rng.integers(n)] = True
    values = np.unique(scores)
    lo, hi = R.average_precision_bounds(scores, labels)
    for jitter in [values, np.round(values, 12)] + [values * (1 + rng.choice([0.0, 1e-15, -1e-15, 3e-15],
                                                                              len(values))) for _ in range(8)]:
        # a perturbation of each distinct value (exact ties stay ties): reorders / merges near-ties
        ap = R.average_precision(jitter[np.searchsorted(values, scores)], labels)
        assert lo - 1e-12 <= ap <= hi + 1e-12
    lo, hi = R.average_precision_bounds(scores, labels, split_ties=True)
    for _ in range(8):  # a perturbation of each item (ties may split), zeros left alone
        ap = R.average_precision(scores * (1 + rng.choice([0.0, 1e-15, -1e-15, 3e-15], n)), labels)
        assert lo - 1e-12 <= ap <= hi + 1e-12
    if R.ap_well_conditioned(scores):  # no near-ties: the range is the one AP
        assert R.average_precision_bounds(scores, labels) == pytest.approx(
            (R.average_precision(scores, labels),) * 2, abs=1e-12)


# ===================================================================== learner protocol
settings_strategy = st.builds(OracleSettings, prior=st.sampled_from(PRIORS), beta=st.sampled_from([0.0, 0.2, 1.0]),
                              likelihood=st.sampled_from(list(LIKELIHOODS)),
                              epsilon=st.floats(0.01, 0.45), weak_empty=st.sampled_from(list(EMPTY_POLICIES)))


@settings(max_examples=25, **HSET)
@given(st_=settings_strategy, seed=st.integers(0, 2**31 - 1), frac=st.sampled_from([0.1, 0.4, 1.0]),
       negatives=st.sampled_from(["hard", "easy"]))
def test_fit_posterior_sums_to_one_and_matches_reference(world, st_, seed, frac, negatives):
    rng = np.random.default_rng(seed)
    omega = random_omega(world.space, rng, frac)
    oracle = Oracle(world.space, omega, st_)
    eps = world.sampler.sample(world.usable, 6, negatives, seed=seed)
    probe = rng.integers(0, world.space.n_scenes, 40)
    for e in range(len(eps)):
        support, labels = eps.support_scenes[e], eps.support_labels[e]
        ids, probs = oracle.fit(support, labels, hard=negatives == "hard").posterior()
        r_ids, r_probs, r_empty = R.posterior(world.ref, omega, support, labels, prior=st_.prior, beta=st_.beta,
                                              likelihood=st_.likelihood, epsilon=st_.epsilon,
                                              hard=negatives == "hard")  # positive slots = positive labels
        assert oracle.empty_ == r_empty
        pred = oracle.predict_proba(probe)
        assert np.all((pred >= 0) & (pred <= 1))
        if r_empty and st_.weak_empty == "zero":
            assert len(ids) == 0 and np.all(pred == 0)
            continue
        assert np.isin(ids, omega).all() and len(np.unique(ids)) == len(ids)
        assert probs.sum() == pytest.approx(1.0, abs=1e-12)
        if st_.weak_empty == "prior" and r_empty:
            r_ids = np.asarray(omega)
            r_probs = np.exp(list(R.log_prior(world.ref, omega, st_.prior, st_.beta).values()))
        else:
            assert np.all(np.diff(probs) <= 0)  # most probable first
        full = dict(zip(r_ids.tolist(), r_probs.tolist()))
        got = dict(zip(ids.tolist(), probs.tolist()))
        # the kernels prune noisy posteriors at exp(-50) relative weight: what is left out is negligible
        assert set(got) <= set(full)
        assert sum(full[h] for h in set(full) - set(got)) < 1e-12
        assert max(abs(got.get(h, 0.0) - p) for h, p in full.items()) < TOL
        np.testing.assert_allclose(pred, R.predictive(world.ref, r_ids, r_probs, probe), rtol=0, atol=TOL)


def fit_vs_evaluate(world, st_, omega, eps, episodes) -> list:
    """(episode, what, difference) for every disagreement between the learner protocol
    (``fit`` + ``predict_proba`` with scene ids) and ``evaluate`` on the same episodes."""
    oracle = Oracle(world.space, omega, st_)
    out = oracle.evaluate(eps)
    bad = []
    for e in episodes:
        oracle.fit(eps.support_scenes[e], eps.support_labels[e], hard=eps.meta["negatives"] == "hard",
                   positives_drawn=eps.meta["n_positive"])
        pred = oracle.predict_proba(eps.query_scenes[e])
        if oracle.empty_ != out["empty"][e]:
            bad.append((e, "empty", 1.0))
        ids, probs = oracle.posterior()
        if len(ids) and not oracle.empty_:
            d = abs(R.entropy(probs) - out["posterior_entropy"][e])
            if d > 1e-12:
                bad.append((e, "posterior_entropy", d))
        d = float(np.max(np.abs(pred - out["query_pred"][e])))
        if d > 1e-12:
            bad.append((e, "query_pred", d))
    return bad


@settings(max_examples=20, **HSET)
@given(st_=settings_strategy, seed=st.integers(0, 2**31 - 1), frac=st.sampled_from([0.1, 0.4, 1.0]),
       negatives=st.sampled_from(["hard", "easy"]))
def test_fit_predict_agree_with_evaluate(world, st_, seed, frac, negatives):
    """Same episode through the learner protocol and through ``evaluate``.  Easy episodes
    whose support has relabelled positives are left to the next test."""
    omega = random_omega(world.space, np.random.default_rng(seed), frac)
    eps = world.sampler.sample(world.usable, 12, negatives, seed=seed)
    plain = np.flatnonzero(~eps.support_relabelled.any(1))
    assert fit_vs_evaluate(world, st_, omega, eps, plain) == []


@pytest.mark.parametrize("likelihood", ["size", "consistent", "noisy"])
def test_fit_agrees_with_evaluate_on_relabelled_easy_support(world, likelihood):
    """On an easy episode a uniformly drawn negative that satisfies the concept is relabelled
    positive; it keeps the easy-negative likelihood 1/N in ``evaluate`` (positive slots from
    ``meta['n_positive']``).  ``fit(..., positives_drawn=n_positive)`` must do the same
    (regression: before ``positives_drawn`` existed, ``fit`` charged it 1/|ext h| and the
    query predictive differed by up to ~0.1 under ``size``).  Without ``positives_drawn``,
    ``fit`` counts the positive labels, as documented."""
    eps = world.sampler.sample(world.usable, 60, "easy", seed=3)
    relabelled = np.flatnonzero(eps.support_relabelled.any(1))
    assert len(relabelled) > 5
    st_ = OracleSettings(likelihood=likelihood)
    omega = np.arange(world.space.n_concepts)
    bad = fit_vs_evaluate(world, st_, omega, eps, relabelled)
    worst = max((d for _, what, d in bad if what == "query_pred"), default=0.0)
    assert bad == [], (f"{len({e for e, *_ in bad})} of {len(relabelled)} episodes differ; "
                       f"worst query predictive difference {worst:.3g}")
    oracle = Oracle(world.space, omega, st_)
    for e in relabelled[:5]:
        support, labels = eps.support_scenes[e], eps.support_labels[e]
        ids, probs = oracle.fit(support, labels, hard=False).posterior()
        r_ids, r_probs, _ = R.posterior(world.ref, omega, support, labels, likelihood=likelihood, hard=False,
                                        n_pos_slots=int(labels.sum()))
        assert max(abs(p - dict(zip(ids.tolist(), probs.tolist())).get(h, 0.0))
                   for h, p in zip(r_ids.tolist(), r_probs.tolist())) < TOL


def test_fit_with_scene_dicts_equals_fit_with_ids(world):
    rng = np.random.default_rng(4)
    omega = random_omega(world.space, rng, 0.5)
    eps = world.sampler.sample(world.usable, 4, "hard", seed=4)
    for st_ in (OracleSettings(), OracleSettings(likelihood="noisy", prior="pcfg")):
        oracle = Oracle(world.space, omega, st_)
        for e in range(len(eps)):
            support, labels, query = eps.support_scenes[e], eps.support_labels[e], eps.query_scenes[e]
            ids_a, probs_a = oracle.fit(support.tolist(), labels).posterior()
            pred_a = oracle.predict_proba(query)
            ids_b, probs_b = oracle.fit([world.space.scene(int(j)) for j in support], labels).posterior()
            pred_b = oracle.predict_proba([world.space.scene(int(j)) for j in query])
            pred_c = oracle.predict_proba(query)
            assert np.array_equal(ids_a, ids_b) and np.array_equal(probs_a, probs_b)
            assert np.array_equal(pred_a, pred_b) and np.array_equal(pred_a, pred_c)


def test_fit_before_predict_raises(world):
    with pytest.raises(RuntimeError):
        Oracle(world.space, [0, 1]).predict_proba([0])


# ==================================================================== edge behaviour
def crafted_episode(concept, support, support_labels, query, query_labels, negatives="hard", n_positive=None):
    k, kq = len(support), len(query)
    n_positive = int(np.sum(support_labels)) if n_positive is None else n_positive
    z = lambda m, dt, v=0: np.full((1, m), v, dt)  # noqa: E731
    return Episodes(concept=np.array([concept], np.int32),
                    support_scenes=np.array([support], np.int64), support_labels=np.array([support_labels], np.int8),
                    support_source=z(k, np.int32, -1), support_topup=z(k, bool), support_relabelled=z(k, bool),
                    query_scenes=np.array([query], np.int64), query_labels=np.array([query_labels], np.int8),
                    query_source=z(kq, np.int32, -1), query_topup=z(kq, bool), query_relabelled=z(kq, bool),
                    meta={"negatives": negatives, "n_positive": n_positive})


def test_prior_policy_query_predictive_is_clipped(world):
    """With ``weak_empty='prior'`` the query predictive of an empty-posterior episode is the
    prior predictive, clipped at 1 like the posterior branch and ``Oracle.predict_proba``
    (regression: kernels.py's ``evaluate_episodes`` once copied it unclipped).  m concepts with
    a uniform prior have probabilities exp(-log m) whose float sum may exceed 1 by an ulp --
    whether it does depends on m and on the platform's exp and log -- so a scene all m cover
    is tried for every m from 2 to 12: its predictive must lie in [1 - 1e-12, 1] (the prior
    mass of its concepts, 1 up to rounding: tolerance 1e-12), never above 1, whichever way
    each sum rounds."""
    space = world.space
    sc = space.scene_concepts()
    counts = np.bitwise_count(sc).sum(1)
    s = int(np.argmax(counts))
    covering = np.flatnonzero(np.unpackbits(sc[s].view(np.uint8), bitorder="little")[: space.n_concepts])
    assert len(covering) >= 6, len(covering)
    other = int(np.flatnonzero(counts == 0)[0]) if (counts == 0).any() else (s + 1) % space.n_scenes
    for m in range(2, min(len(covering), 12) + 1):
        omega = covering[:m]
        # support: the shared scene labelled negative, so no concept of omega fits
        eps = crafted_episode(int(omega[0]), [s], [0], [s, other], [1, 0], n_positive=0)
        out = Oracle(space, omega, OracleSettings(prior="uniform", likelihood="consistent",
                                                  weak_empty="prior")).evaluate(eps)
        assert out["empty"][0]
        assert 1.0 - 1e-12 <= out["query_pred"][0, 0] <= 1.0, (m, repr(out["query_pred"][0, 0]))


def test_zero_probability_candidates_do_not_change_ap(world):
    """A candidate whose posterior probability underflows to exactly 0 (here a long concept
    under a length prior with a large beta) adds nothing to the test-bank scores: the AP is
    the reference's (scikit-learn on the full scores).  Regression: kernels.py's
    ``evaluate_episodes`` once gave such a candidate a synonym-class entry of weight 0
    (``class_w[c] == 0.0`` doubling as the "first seen" test), so ``test_bank_ap`` marked the
    class's test-bank scenes "touched" with score 0 and ``average_precision_sparse``, which
    assumes touched items score > 0, ranked those positives among the touched items only."""
    space, S = world.space, world.ref.S
    T = space.test_bank.label_matrix()
    lengths = space.lengths.astype(int)
    pair = None
    for a in range(space.n_concepts):  # a short concept a and a longer b, both true on >= 5 scenes,
        ok = ((lengths - lengths[a] >= 4) & ((S & S[a]).sum(1) >= 5)  # b has test-bank positives outside a
              & (T & ~T[a]).any(1) & (T.sum(1) >= T[a].sum()))
        if ok.any():
            pair = (a, int(np.flatnonzero(ok)[0]))
            break
    assert pair is not None
    a, b = pair
    support = np.flatnonzero(S[a] & S[b])[:5]
    query = np.concatenate([np.flatnonzero(S[b])[:3], np.flatnonzero(~S[b])[:3]])
    eps = crafted_episode(b, support, [1] * 5, query, [1, 1, 1, 0, 0, 0], negatives="easy")
    st_ = OracleSettings(prior="length", beta=800.0 / (lengths[b] - lengths[a]) + 1.0, likelihood="consistent")
    ref = R.evaluate_episodes(world.ref, [a, b], eps, **ref_settings(st_))
    assert ref["posterior"][0][1].tolist() == [1.0, 0.0]  # p(b | D) underflows to exactly 0
    out = Oracle(space, [a, b], st_).evaluate(eps)
    np.testing.assert_allclose(out["query_pred"], ref["query_pred"], rtol=0, atol=TOL)
    assert out["ap"][0] == pytest.approx(ref["ap"][0], abs=TOL)


def test_empty_concept_set_is_always_empty(world):
    eps = world.sampler.sample(world.usable, 5, "hard", seed=1)
    out = Oracle(world.space, [], OracleSettings()).evaluate(eps)
    assert out["empty"].all() and np.all(out["query_pred"] == 0) and np.isnan(out["posterior_entropy"]).all()
    t = world.space.test_bank.n_scenes
    expected = [world.space.test_bank.labels(int(c)).sum() / t for c in eps.concept]
    np.testing.assert_allclose(out["ap"], expected, rtol=0, atol=1e-15)  # all scores tied at 0


# ======================================================================= determinism
def test_results_identical_for_one_and_two_threads(world):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has fewer than 2 threads here")
    eps = world.sampler.sample(world.usable, 200, "hard", seed=21)
    omega = random_omega(world.space, np.random.default_rng(2), 0.4)
    before = numba.get_num_threads()
    results = {}
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            results[threads] = [Oracle(world.space, omega, OracleSettings(likelihood=lik, weak_empty=pol)
                                       ).evaluate(eps)
                                for lik, pol in (("size", "zero"), ("consistent", "prior"), ("noisy", "zero"),
                                                 ("size", "noisy"))]
    finally:
        numba.set_num_threads(before)
    for a, b in zip(results[1], results[2]):
        assert a.keys() == b.keys()
        for k in a:
            assert np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f"), k


# ======================================================================== Instance IID
@pytest.mark.parametrize("negatives", ["hard", "easy"])
@pytest.mark.parametrize("st_", [OracleSettings(), OracleSettings(prior="pcfg", likelihood="noisy"),
                                 OracleSettings(prior="uniform", likelihood="consistent", weak_empty="prior")])
def test_instance_iid_strong_equals_weak(world, negatives, st_):
    split = make_split(world.space, default_splits_dir() / "instance_iid.toml")
    everything = np.arange(world.space.n_concepts)
    assert np.array_equal(split.train, everything) and np.array_equal(split.test, everything)
    strong, weak = strong_and_weak(world.space, split, st_)
    assert np.array_equal(strong.concepts, weak.concepts)
    eps = world.sampler.sample(split.test, 150, negatives, seed=8)
    a, b = strong.evaluate(eps), weak.evaluate(eps)
    for k in a:
        assert np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f"), k
    assert not a["empty"].any()  # the episode's own concept is in the strong = weak oracle
    for m in ("ap", "cba"):
        assert np.nanmean(a[m]) - np.nanmean(b[m]) == 0.0
        assert np.all(a[m] - b[m] == 0.0)
