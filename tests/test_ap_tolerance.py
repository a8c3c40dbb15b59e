"""AP to a stated tolerance: the certificate and the oracles' use of it.

* :func:`bayes_concepts.metrics.average_precision_interval` bounds scikit-learn's AP of every
  score vector inside the given intervals, ties included;
* lowering a negative never lowers AP; raising a positive never does while all scores are
  distinct, but can once ties are allowed (why the certificate never puts positives at the
  bottom of their intervals and calls that a lower bound);
* the certified test-bank AP kernel: |AP - exact AP| <= bound <= T for T in {1e-2, 1e-3,
  1e-4} on random posteriors of the shared small space, and the exact path (T = 0) is
  scikit-learn's AP of every scene's score;
* OracleSettings, results and the command line: defaults per likelihood, what is recorded,
  one-line errors, an explicit tolerance with an exact-only likelihood applied (every bound 0).
"""
import json

import numba
import numpy as np
import pytest
from conftest import EVERYWHERE, assert_one_line_error, run
from hypothesis import given, settings, strategies as st
from sklearn.metrics import average_precision_score

from bayes_concepts.bits import read_only, unpack_bits
from bayes_concepts.gap import compute_gap, format_table, summarise
from bayes_concepts.metrics import average_precision_interval
from bayes_concepts.oracles import OracleSettings, strong_and_weak
from bayes_concepts.oracles import kernels as K
from bayes_concepts.oracles.oracle import DEFAULT_AP_TOLERANCE
from bayes_concepts.episodes import EpisodeSampler
from bayes_concepts.splits import load_splits

HSET = dict(deadline=None, derandomize=True)
GRID = np.array([0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 1.0])  # few values: many ties


def sk_ap(labels, scores) -> float:
    return float(average_precision_score(labels, scores))


# ------------------------------------------------------------------ the certificate itself
@settings(max_examples=150, **HSET)
@given(n=st.integers(1, 25), seed=st.integers(0, 2**32 - 1))
def test_interval_bounds_hold_for_every_score_in_the_box(n, seed):
    """Intervals on a grid of few values (so scores tie often, inside and across intervals);
    scores drawn inside them, some at the ends: lower <= AP <= upper."""
    rng = np.random.default_rng(seed)
    labels = rng.random(n) < rng.uniform(0.1, 0.9)
    labels[rng.integers(n)] = True
    lo_i = rng.integers(0, len(GRID), n)
    hi_i = np.minimum(lo_i + rng.integers(0, 4, n) * (rng.random(n) < 0.7), len(GRID) - 1)
    lower, upper = average_precision_interval(GRID[lo_i], GRID[hi_i], labels)
    assert 0.0 <= lower <= upper <= 1.0
    for _ in range(6):
        s = GRID[rng.integers(lo_i, hi_i + 1)]
        assert lower - 1e-12 <= sk_ap(labels, s) <= upper + 1e-12
    for end in (GRID[lo_i], GRID[hi_i]):
        assert lower - 1e-12 <= sk_ap(labels, end) <= upper + 1e-12
    exact = average_precision_interval(GRID[lo_i], GRID[lo_i], labels)  # points: AP itself
    assert exact == pytest.approx((sk_ap(labels, GRID[lo_i]),) * 2, abs=1e-12)


def test_interval_bounds_reject_bad_input():
    with pytest.raises(ValueError, match="lo <= hi"):
        average_precision_interval([0.5], [0.4], [True])
    with pytest.raises(ValueError, match="one length"):
        average_precision_interval([0.5, 0.1], [0.6], [True])
    assert all(np.isnan(average_precision_interval([0.1, 0.2], [0.3, 0.4], [False, False])))


@settings(max_examples=200, **HSET)
@given(n=st.integers(2, 25), seed=st.integers(0, 2**32 - 1))
def test_lowering_a_negative_never_lowers_ap(n, seed):
    """Ties included: a negative only ever drops out of the counts above a positive."""
    rng = np.random.default_rng(seed)
    labels = rng.random(n) < 0.5
    labels[0], labels[1] = True, False
    s = GRID[rng.integers(0, len(GRID), n)]
    k = rng.choice(np.flatnonzero(~labels))
    lowered = s.copy()
    lowered[k] = GRID[rng.integers(0, np.searchsorted(GRID, s[k]) + 1)]
    assert sk_ap(labels, lowered) >= sk_ap(labels, s) - 1e-12


@settings(max_examples=200, **HSET)
@given(n=st.integers(2, 25), seed=st.integers(0, 2**32 - 1))
def test_raising_a_positive_never_lowers_ap_without_ties(n, seed):
    rng = np.random.default_rng(seed)
    labels = rng.random(n) < 0.5
    labels[0] = True
    s = rng.permutation(n) / n  # distinct
    q = rng.choice(np.flatnonzero(labels))
    raised = s.copy()
    raised[q] = s[q] + rng.uniform(0, 1.2) + 0.5 / n ** 2  # not equal to any score (they are multiples of 1/n)
    assert sk_ap(labels, raised) >= sk_ap(labels, s) - 1e-12


@pytest.mark.parametrize("labels, before, after", [
    # leaves a tie with another positive: its own threshold now has fewer positives
    ([0, 0, 0, 0, 0, 1, 1], [0.9] * 5 + [0.5, 0.5], [0.9] * 5 + [0.6, 0.5]),
    # joins a tie with a negative above a run of positives
    ([0, 1, 0, 1, 1, 1, 1], [0.0, 0.3, 0.5, 0.3, 0.3, 0.2, 0.1], [0.0, 0.3, 0.5, 0.3, 0.3, 0.5, 0.1]),
])
def test_raising_a_positive_can_lower_ap_with_ties(labels, before, after):
    """Why "positives at their lower ends, negatives at their upper ends" is no lower bound:
    the box [before, after] holds ``after``, whose AP is below that configuration's.  The
    certificate's bounds still hold."""
    labels = np.array(labels, bool)
    before, after = np.array(before), np.array(after)
    assert sk_ap(labels, after) < sk_ap(labels, before) - 0.01
    lo, hi = np.minimum(before, after), np.maximum(before, after)
    configuration = np.where(labels, lo, hi)
    assert sk_ap(labels, after) < sk_ap(labels, configuration)
    lower, upper = average_precision_interval(lo, hi, labels)
    assert lower <= sk_ap(labels, after) <= upper and lower <= sk_ap(labels, before) <= upper


# ------------------------------------------------------------------ the test-bank kernel
@numba.njit(cache=True)
def _lane_sums(member, class_w, out):
    for t in range(member.shape[0]):
        lanes = np.zeros(4)
        for c in range(member.shape[1]):
            if member[t, c]:
                lanes[c % 4] += class_w[c]
        out[t] = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])


def full_scores(space, class_w):
    """Slow twin of :func:`~bayes_concepts.oracles.kernels.scene_score` for every test scene, from
    the unpacked labels: class c's weight added to running sum c % 4 in ascending order, the sums
    added as (s0 + s1) + (s2 + s3) -- the float computation the kernels promise, so ties are the same ties."""
    n_test = space.test_bank.n_scenes
    member = unpack_bits(np.asarray(space.test_bank.signatures)[space.class_representatives()], n_test).T
    out = np.zeros(n_test)
    _lane_sums(np.ascontiguousarray(member), class_w, out)
    return out


@pytest.fixture(scope="module")
def bank(small_space):
    ptr, idx = small_space.test_bank_index()
    lane_ptr, lane_cls = small_space.test_bank_scene_classes()
    n_test = small_space.test_bank.n_scenes
    work = dict(scores=np.zeros(n_test), mark=np.zeros(n_test, bool), touched=np.empty(n_test, np.int64),
                tops=np.zeros(n_test), queue=np.empty((3, n_test), np.int64))
    return dict(ptr=ptr, idx=idx, lane_ptr=lane_ptr, lane_cls=lane_cls, n_test=n_test, work=work,
                max_deg=K.max_degree(lane_ptr))


def random_posterior(space, rng, n_active, spread, tie_share, boost):
    """Class weights (dense, summing to 1) over ``n_active`` random classes, usually including the
    true concept's; ``boost`` multiplies the true class's weight (a peaked posterior)."""
    n_cls = len(space.class_representatives())
    truth_concept = int(rng.integers(space.n_concepts))
    active = rng.choice(n_cls, size=min(n_active, n_cls), replace=False)
    if rng.random() < 0.8:
        active = np.union1d(active, [space.synonym_classes[truth_concept]])
    w = np.exp(-spread * rng.random(len(active)))
    w[rng.random(len(active)) < tie_share] = w[0]
    w[active == space.synonym_classes[truth_concept]] *= boost
    class_w = np.zeros(n_cls)
    class_w[active] = w / w.sum()
    return truth_concept, rng.permutation(active).astype(np.int64), class_w


@settings(max_examples=60, **HSET)
@given(seed=st.integers(0, 2**32 - 1), n_active=st.integers(1, 400), spread=st.floats(0.0, 40.0),
       tie_share=st.floats(0.0, 0.8), boost=st.sampled_from([1.0, 30.0, 1e4]),
       speculative_share=st.sampled_from([0.0, 0.25, 1e9]))
def test_certified_ap_is_within_its_bound_and_the_tolerance(small_space, bank, seed, n_active, spread, tie_share,
                                                              boost, speculative_share):
    """|certified AP - exact AP| <= bound <= T for T in {1e-2, 1e-3, 1e-4} (and a tolerance so
    small that everything in doubt gets its exact score); the exact path (T = 0) is
    scikit-learn's AP of every scene's score.  ``speculative_share`` 0 gives up spreading at
    once (the exact rows of every scene), 1e9 never does."""
    space = small_space
    rng = np.random.default_rng(seed)
    concept, cls_list, class_w = random_posterior(space, rng, n_active, spread, tie_share, boost)
    truth = read_only(space.test_bank.signatures[concept])
    n_pos = int(np.bitwise_count(truth).sum())
    b, w = bank, bank["work"]
    args = (cls_list, class_w, b["ptr"], b["idx"], b["lane_ptr"], b["lane_cls"], truth, n_pos, b["n_test"])
    exact = K.test_bank_ap_wide(*args, w["scores"], w["mark"], w["touched"], speculative_share, False, EVERYWHERE)
    expected = sk_ap(unpack_bits(truth, b["n_test"]), full_scores(space, class_w))
    assert abs(exact - expected) < 1e-12
    for tol in (1e-2, 1e-3, 1e-4, 1e-15):
        stats = np.zeros(3, np.int64)
        ap, bound = K.test_bank_ap_certified(*args, tol, b["max_deg"], w["scores"], w["mark"], w["touched"],
                                             w["tops"], w["queue"], stats, speculative_share, False, EVERYWHERE)
        assert 0.0 <= bound <= tol
        assert abs(ap - expected) <= bound + 1e-12, (tol, ap, expected, bound)
        assert not w["scores"].any() and not w["mark"].any() and not w["tops"].any()
        assert stats[1] <= b["n_test"]  # rows summed: each scene's at most once


# ---------------------------------------------------------------------- settings, oracles
def test_settings_resolve_the_tolerance_by_likelihood():
    assert OracleSettings().tolerance == 0.0 and OracleSettings(likelihood="consistent").tolerance == 0.0
    noisy = OracleSettings(likelihood="noisy")
    assert noisy.tolerance == DEFAULT_AP_TOLERANCE == 1e-4 and noisy.as_dict()["ap_tolerance"] == 1e-4
    assert OracleSettings(likelihood="noisy", ap_tolerance=0).tolerance == 0.0
    assert OracleSettings(likelihood="size", ap_tolerance=1e-3).as_dict()["ap_tolerance"] == 1e-3
    from dataclasses import replace
    assert replace(OracleSettings(), likelihood="noisy").tolerance == 1e-4  # follows the likelihood
    assert OracleSettings(**noisy.as_dict()) == OracleSettings(likelihood="noisy", ap_tolerance=1e-4)


@pytest.mark.parametrize("bad", [-1, -1e-9, 1.5, float("nan"), float("inf"), True, "0.1"])
def test_settings_refuse_a_bad_tolerance(bad):
    with pytest.raises(ValueError, match="ap_tolerance"):
        OracleSettings(likelihood="noisy", ap_tolerance=bad)


@pytest.fixture(scope="module")
def episodes(small_space):
    split = load_splits(small_space, ["counting"])["counting"]
    return split, EpisodeSampler(small_space).sample(split.test, 40, "hard", seed=3)


def test_oracles_certify_each_episode(small_space, episodes):
    """The oracles at T against the same oracles at T = 0, episode by episode."""
    split, eps = episodes
    exact = [o.evaluate(eps) for o in strong_and_weak(small_space, split, OracleSettings(likelihood="noisy",
                                                                                          ap_tolerance=0))]
    assert all(not r["ap_bound"].any() for r in exact)
    for tol in (1e-2, 1e-3, 1e-4):
        st_ = OracleSettings(likelihood="noisy", ap_tolerance=tol)
        for r0, o in zip(exact, strong_and_weak(small_space, split, st_)):
            r = o.evaluate(eps)
            assert np.all((r["ap_bound"] >= 0) & (r["ap_bound"] <= tol))
            assert np.all(np.abs(r["ap"] - r0["ap"]) <= r["ap_bound"] + 1e-12)
            for key in ("cba", "posterior_entropy", "predictive_entropy", "query_pred", "empty"):
                assert np.array_equal(r[key], r0[key], equal_nan=True), key  # only AP is certified


@pytest.mark.parametrize("tol", [0.0, 1e-3])
@pytest.mark.parametrize("weak_empty", ["zero", "noisy"])
def test_deferring_wide_episodes_changes_no_number(small_space, tol, weak_empty, monkeypatch):
    """Episodes too wide to prune scored ROW_BATCH at a time after the others (the default)
    against each scored where it stands, with spreading giving up at the same point: every
    output equal, AP and bound included; some episodes are deferred, so the batch path runs."""
    split = load_splits(small_space, ["concept_iid"])["concept_iid"]
    eps = EpisodeSampler(small_space).sample(split.test, 60, "easy", seed=5)
    st_ = OracleSettings(likelihood="noisy", ap_tolerance=tol, weak_empty=weak_empty, epsilon=0.3)
    deferred = []
    score_deferred = K.score_deferred
    monkeypatch.setattr(K, "score_deferred", lambda w, d, *rest: (deferred.append(len(d)), score_deferred(w, d, *rest)))
    # where spreading gives up changes AP by float grouping (~1e-16): the same place for both
    monkeypatch.setattr(K, "SPECULATIVE_SHARE", K.DEFERRED_SPECULATIVE_SHARE)
    for o in strong_and_weak(small_space, split, st_):
        deferred.clear()
        batched, alone = o.evaluate(eps), o.evaluate(eps, defer=False)
        assert sum(deferred) > 0
        for key in batched:
            assert np.array_equal(batched[key], alone[key], equal_nan=True), key
        assert not (batched["ap"] == K.DEFERRED).any()


def test_exact_only_likelihood_applies_a_tolerance_trivially(small_space, episodes):
    """size with a tolerance: every AP exact (bound 0), the numbers of T = 0."""
    split, eps = episodes
    for a, b in zip(strong_and_weak(small_space, split, OracleSettings(ap_tolerance=1e-2)),
                    strong_and_weak(small_space, split, OracleSettings())):
        ra, rb = a.evaluate(eps), b.evaluate(eps)
        assert not ra["ap_bound"].any() and np.array_equal(ra["ap"], rb["ap"], equal_nan=True)


def test_results_record_the_tolerance_and_the_bounds(small_space):
    splits = load_splits(small_space, ["counting"])
    ds = compute_gap(small_space, splits, ("hard",), 25, OracleSettings(likelihood="noisy"), seed=1)
    assert ds["ap_bound"].dims == ds["ap"].dims and ds["ap_bound"].shape == ds["ap"].shape
    assert ds.attrs["ap_tolerance"] == 1e-4 and json.loads(ds.attrs["oracle_settings"])["ap_tolerance"] == 1e-4
    assert float(ds["ap_bound"].max()) <= 1e-4
    rows = summarise(ds)
    assert rows[0]["ap_tolerance"] == 1e-4 and rows[0]["ap_bound_max"] == float(ds["ap_bound"].max())
    assert "AP within 0.0001 of the exact AP in every episode" in format_table(rows)
    exact = compute_gap(small_space, splits, ("hard",), 25, OracleSettings(likelihood="noisy", ap_tolerance=0),
                        seed=1)
    assert exact.attrs["ap_tolerance"] == 0.0 and not exact["ap_bound"].any()
    assert "AP within" not in format_table(summarise(exact))
    assert np.all(np.abs(ds["ap"] - exact["ap"]) <= ds["ap_bound"] + 1e-12)


# ----------------------------------------------------------------------------- command line
GAP = ["--split", "counting", "--negatives", "hard", "--episodes", "5"]


@pytest.mark.parametrize("value", ["-1", "2", "nan"])
def test_cli_bad_tolerance_is_one_line(small_space_dir, capsys, value):
    status, _, err = run(["gap", small_space_dir, *GAP, "--likelihood", "noisy", "--ap-tolerance", value], capsys)
    assert_one_line_error(status, err, "--ap-tolerance")
    status, _, err = run(["audit", small_space_dir, "--split", "counting", "--episodes", "5",
                          "--ap-tolerance", value], capsys)
    assert_one_line_error(status, err, "--ap-tolerance")


def test_cli_tolerance_is_applied_and_recorded(small_space_dir, capsys):
    status, out, _ = run(["gap", small_space_dir, *GAP, "--likelihood", "noisy", "--ap-tolerance", "0.01",
                          "--json"], capsys)
    assert status == 0
    data = json.loads(out)
    assert data["settings"]["ap_tolerance"] == 0.01 and data["ap_tolerance"] == 0.01
    assert all(0 <= r["ap_bound_max"] <= 0.01 for r in data["results"])
    # an exact-only likelihood: the tolerance is applied (recorded, every bound 0), not ignored
    status, out, _ = run(["gap", small_space_dir, *GAP, "--likelihood", "size", "--ap-tolerance", "0.01",
                          "--json"], capsys)
    data = json.loads(out)
    assert status == 0 and data["settings"]["ap_tolerance"] == 0.01
    assert all(r["ap_bound_max"] == 0.0 for r in data["results"])
    status, out, _ = run(["gap", small_space_dir, *GAP, "--likelihood", "noisy"], capsys)
    assert status == 0 and "AP within 0.0001 of the exact AP" in out and '"ap_tolerance": 0.0001' in out
    status, out, _ = run(["audit", small_space_dir, "--split", "counting", "--episodes", "5", "--likelihood",
                          "noisy", "--ap-tolerance", "0.001"], capsys)
    assert status == 0 and "AP within 0.001 of the exact AP" in out


def test_the_certificate_stops_early_somewhere(small_space, bank):
    """Not a vacuous pass: on spread posteriors a loose tolerance stops with a bound above 0 and
    fewer rows summed than a tolerance that resolves everything in doubt."""
    rng = np.random.default_rng(11)
    b, w = bank, bank["work"]
    early = 0
    for _ in range(40):
        concept, cls_list, class_w = random_posterior(small_space, rng, 300, 8.0, 0.0, 30.0)
        truth = read_only(small_space.test_bank.signatures[concept])
        args = (cls_list, class_w, b["ptr"], b["idx"], b["lane_ptr"], b["lane_cls"], truth,
                int(np.bitwise_count(truth).sum()), b["n_test"])
        rows = []
        for tol in (1e-2, 1e-15):
            stats = np.zeros(3, np.int64)
            _, bound = K.test_bank_ap_certified(*args, tol, b["max_deg"], w["scores"], w["mark"], w["touched"],
                                                w["tops"], w["queue"], stats, 1e9, False, EVERYWHERE)
            rows.append((stats[1], bound))
        early += rows[0][1] > 0 and rows[0][0] < rows[1][0]
    assert early >= 5, early
