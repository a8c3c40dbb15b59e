"""Tests of bayes_concepts.cogsci: the ideal observer's predictive, the pyro fit, the PPC."""
from __future__ import annotations

import io
import json
import random

import numpy as np
import pytest
import torch
import xarray as xr

from bayes_concepts.cogsci import (CensoredBeta, fit_ideal_observer, log_beta_cdf_small, oracle_predictive,
                                   plot_posterior_predictive_check, posterior_predictive_check, posterior_summary, prepare_observer_data,
                                   simulate_learner)
from bayes_concepts.cogsci.data import concept_bits
from bayes_concepts.cogsci.ppc import GID_OBSERVED, GID_PPC_INTERVAL, GID_PPC_MEAN
from bayes_concepts.episodes import EpisodeSampler
from bayes_concepts.oracles import Oracle, OracleSettings

TRUE_BINARY = {"beta": 0.6, "epsilon": 0.1, "lapse": 0.05}
TRUE_GRADED = {"beta": 0.4, "epsilon": 0.15, "lapse": 0.05, "concentration": 20.0}
NUTS_SMALL = {"num_samples": 300, "warmup_steps": 300, "num_chains": 1}


@pytest.fixture(scope="module")
def space(small_space):
    return small_space


@pytest.fixture(scope="module")
def sampler(space):
    return EpisodeSampler(space)


@pytest.fixture(scope="module")
def binary_fit(space, sampler):
    episodes = sampler.sample(np.arange(space.n_concepts), 200, "hard", seed=100)
    data = prepare_observer_data(space, episodes)
    y = simulate_learner(space, episodes, **TRUE_BINARY, kind="binary", seed=0, data=data)
    ds = fit_ideal_observer(space, episodes, y, kind="binary", seed=0, data=data, **NUTS_SMALL)
    return episodes, data, y, ds


# ----------------------------------------------------------------- the predictive
def test_concept_bits_match_signatures(space):
    scenes = np.array([[0, 7, 4999], [12, 12, 3]])
    bits = concept_bits(space, scenes)
    assert bits.shape == (2, 3, space.n_concepts)
    for h in (0, 5, space.n_concepts - 1):
        assert np.array_equal(bits[..., h], space.signature(h)[scenes])


@pytest.mark.parametrize("negatives", ["hard", "easy"])
def test_predictive_equals_oracle(space, sampler, negatives):
    episodes = sampler.sample(np.arange(space.n_concepts), 40, negatives, seed=7)
    subset = np.arange(0, space.n_concepts, 2)              # a "weak" concept set too
    for concepts in (None, subset):
        ids = np.arange(space.n_concepts) if concepts is None else subset
        for group in (True, False):
            data = prepare_observer_data(space, episodes, concepts, group=group)
            for beta, eps in [(0.2, 0.05), (0.0, 0.3), (1.5, 0.01), (0.7, 0.45)]:
                ours = oracle_predictive(beta, eps, data).numpy()
                oracle = Oracle(space, ids, OracleSettings(prior="length", beta=beta, likelihood="noisy",
                                                           epsilon=eps))
                ref = np.stack([oracle.fit(episodes.support_scenes[e], episodes.support_labels[e],
                                           hard=negatives == "hard").predict_proba(episodes.query_scenes[e])
                                for e in range(len(episodes))])
                np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-6,
                                           err_msg=f"group={group} beta={beta} eps={eps} subset={concepts is not None}")


def test_predictive_batched_parameters(space, sampler):
    episodes = sampler.sample(np.arange(space.n_concepts), 10, "hard", seed=3)
    data = prepare_observer_data(space, episodes)
    betas, epss = torch.tensor([0.1, 0.5, 2.0], dtype=torch.float64), torch.tensor([0.02, 0.2, 0.4],
                                                                                    dtype=torch.float64)
    batched = oracle_predictive(betas, epss, data)
    assert batched.shape == (3, 10, 25)
    for i in range(3):
        torch.testing.assert_close(batched[i], oracle_predictive(float(betas[i]), float(epss[i]), data))


def test_predictive_is_differentiable(space, sampler):
    episodes = sampler.sample(np.arange(space.n_concepts), 6, "hard", seed=4)
    data = prepare_observer_data(space, episodes)
    beta = torch.tensor(0.4, dtype=torch.float64, requires_grad=True)
    eps = torch.tensor(0.1, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda b, e: oracle_predictive(b, e, data), (beta, eps))


def test_pruning_stays_within_its_bound(space, sampler):
    episodes = sampler.sample(np.arange(space.n_concepts), 60, "hard", seed=5)
    exact = prepare_observer_data(space, episodes)
    for d in (1, 3, 6):
        for group in (True, False):
            pruned = prepare_observer_data(space, episodes, group=group, max_extra_mistakes=d)
            assert pruned.n_cells <= exact.n_cells or not group
            assert (pruned.n_kept <= space.n_concepts).all()
            for beta, eps in [(0.2, 0.02), (0.5, 0.1), (1.0, 0.2)]:
                err = np.abs(oracle_predictive(beta, eps, pruned).numpy()
                             - oracle_predictive(beta, eps, exact).numpy()).max(axis=1)
                bound = pruned.pruning_bound(beta, eps)
                assert (err <= bound + 1e-12).all()
    assert not exact.pruning_bound(1.0, 0.4).any()
    assert exact.dropped.sum() == 0 and (exact.n_kept == space.n_concepts).all()


# ----------------------------------------------------------------- pieces of the model
def test_log_beta_cdf_small_matches_scipy():
    from scipy.special import betainc
    a = torch.tensor([0.02, 0.5, 1.0, 3.0, 20.0, 0.5, 40.0], dtype=torch.float64)
    b = torch.tensor([0.5, 19.5, 1.0, 30.0, 0.5, 2000.0, 60.0], dtype=torch.float64)
    for x in (1e-3, 1e-2):
        ref = np.log(betainc(a.numpy(), b.numpy(), x))
        np.testing.assert_allclose(log_beta_cdf_small(x, a, b).numpy(), ref, rtol=1e-9, atol=1e-11)
    d = CensoredBeta(torch.tensor([0.5, 2.0, 3.0]), torch.tensor([19.5, 3.0, 0.7]), censor=1e-3)
    v = torch.tensor([0.0, 0.3, 1.0])
    lp = d.log_prob(v)
    assert torch.isclose(lp[1], torch.distributions.Beta(torch.tensor(2.0), torch.tensor(3.0)).log_prob(v[1]))
    assert np.isclose(lp[0].item(), np.log(betainc(0.5, 19.5, 1e-3)), rtol=1e-6)
    assert np.isclose(lp[2].item(), np.log(betainc(0.7, 3.0, 1e-3)), rtol=1e-6)


def test_simulate_learner(space, sampler):
    episodes = sampler.sample(np.arange(space.n_concepts), 50, "hard", seed=6)
    y = simulate_learner(space, episodes, 0.3, 0.05, seed=1)
    assert y.shape == episodes.query_scenes.shape and set(np.unique(y)) <= {0.0, 1.0}
    assert np.array_equal(y, simulate_learner(space, episodes, 0.3, 0.05, seed=1))
    # a near-noiseless observer mostly agrees with the true labels
    assert (y == episodes.query_labels).mean() > 0.85
    coin = simulate_learner(space, episodes, 0.3, 0.05, lapse=1.0, seed=2)
    assert abs(coin.mean() - 0.5) < 0.05
    g = simulate_learner(space, episodes, 0.3, 0.05, kind="graded", seed=1, concentration=30.0)
    assert ((g >= 0) & (g <= 1)).all() and len(np.unique(g)) > 100
    with pytest.raises(ValueError):
        simulate_learner(space, episodes, 0.3, 0.6)


def test_posterior_summary_intervals():
    rng = np.random.default_rng(0)
    x = rng.exponential(1.0, size=(2, 4000))
    ds = xr.Dataset({"beta": (("chain", "draw"), x)})
    s = posterior_summary(ds, prob=0.9)["beta"]
    lo, hi = np.quantile(x.ravel(), [0.05, 0.95])
    assert np.isclose(s["eti_low"], lo) and np.isclose(s["eti_high"], hi)
    assert s["hdi_high"] - s["hdi_low"] < hi - lo            # skewed: HDI is shorter
    inside = ((x >= s["hdi_low"]) & (x <= s["hdi_high"])).mean()
    assert 0.9 <= inside < 0.902
    assert s["hdi_low"] < 0.01                               # exponential: HDI starts near 0
    assert (s["low"], s["high"]) == (s["hdi_low"], s["hdi_high"])
    e = posterior_summary(ds, prob=0.9, interval="eti")["beta"]
    assert (e["low"], e["high"]) == (s["eti_low"], s["eti_high"])
    assert np.isclose(s["mean"], x.mean())


def test_fit_rejects_bad_responses(space, sampler):
    episodes = sampler.sample(np.arange(space.n_concepts), 5, "hard", seed=8)
    with pytest.raises(ValueError, match="shape"):
        fit_ideal_observer(space, episodes, np.zeros((5, 24)))
    with pytest.raises(ValueError, match="0 or 1"):
        fit_ideal_observer(space, episodes, np.full((5, 25), 0.5), kind="binary")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        fit_ideal_observer(space, episodes, np.full((5, 25), 1.5), kind="graded")
    with pytest.raises(ValueError, match="kind"):
        fit_ideal_observer(space, episodes, np.zeros((5, 25)), kind="ordinal")


def test_fit_is_reproducible_and_leaves_global_rng_alone(space, sampler):
    episodes = sampler.sample(np.arange(space.n_concepts), 30, "hard", seed=9)
    data = prepare_observer_data(space, episodes)
    y = simulate_learner(space, episodes, 0.5, 0.1, 0.05, seed=3, data=data)
    y[0, :5] = np.nan                                        # missing responses are allowed
    torch.manual_seed(123)
    np.random.seed(123)
    random.seed(123)
    states = (torch.get_rng_state(), np.random.get_state()[1].copy(), random.getstate())
    threads = torch.get_num_threads()
    kw = dict(num_samples=20, warmup_steps=30, seed=11, data=data)
    a = fit_ideal_observer(space, episodes, y, **kw)
    b = fit_ideal_observer(space, episodes, y, **kw)
    assert torch.equal(torch.get_rng_state(), states[0])
    assert np.array_equal(np.random.get_state()[1], states[1]) and random.getstate() == states[2]
    assert torch.get_num_threads() == threads
    for ds in (a, b):
        del ds.attrs["sampling_seconds"]                     # wall-clock time, the only difference
    xr.testing.assert_identical(a, b)
    assert a.attrs["n_observations"] == y.size - 5
    c = fit_ideal_observer(space, episodes, y, **{**kw, "seed": 12, "num_chains": 2})
    assert dict(c.sizes) == {"chain": 2, "draw": 20}
    assert len(json.loads(c.attrs["chain_seeds"])) == 2
    assert not np.array_equal(c["beta"].values[0], c["beta"].values[1])


# ----------------------------------------------------------------- parameter recovery
def _check_recovery(ds, truth, prob=0.9):
    summary = posterior_summary(ds, prob=prob)
    report = {k: (truth[k], round(summary[k]["low"], 4), round(summary[k]["high"], 4)) for k in truth}
    print("recovery (true, 90% HDI):", report)
    for name, true in truth.items():
        assert summary[name]["low"] <= true <= summary[name]["high"], (name, report)
    return summary


def test_binary_parameter_recovery(binary_fit):
    episodes, data, y, ds = binary_fit
    assert dict(ds.sizes) == {"chain": 1, "draw": NUTS_SMALL["num_samples"]}
    assert set(ds.data_vars) == {"beta", "epsilon", "lapse"}
    assert ds.attrs["kind"] == "binary" and ds.attrs["seed"] == 0
    s = _check_recovery(ds, TRUE_BINARY)
    assert s["epsilon"]["high"] - s["epsilon"]["low"] < 0.1  # informative, not just the prior
    assert s["lapse"]["high"] - s["lapse"]["low"] < 0.05
    assert ds.attrs["divergences"] <= 3


def test_graded_parameter_recovery(space, sampler):
    # the seed was validated on alternative-mode episodes (coverage over 10 seeds: 33/40 intervals)
    episodes = sampler.sample(np.arange(space.n_concepts), 100, "hard", seed=102, hard_mode="alternative")
    data = prepare_observer_data(space, episodes)
    truth = dict(TRUE_GRADED)
    y = simulate_learner(space, episodes, truth["beta"], truth["epsilon"], truth["lapse"], kind="graded",
                         concentration=truth["concentration"], seed=2, data=data)
    ds = fit_ideal_observer(space, episodes, y, kind="graded", seed=2, data=data, **NUTS_SMALL)
    assert "concentration" in ds and ds.attrs["n_censored"] > 0   # responses at 0/1 are censored
    _check_recovery(ds, truth)


def test_result_roundtrips_through_netcdf(binary_fit, tmp_path):
    ds = binary_fit[3]
    path = tmp_path / "posterior.nc"
    ds.to_netcdf(path)
    back = xr.load_dataset(path)
    xr.testing.assert_identical(back, ds)
    assert json.loads(back.attrs["priors"])["lapse_b"] == 9.0


# ----------------------------------------------------------------- posterior predictive check
def test_posterior_predictive_check(space, binary_fit):
    episodes, data, y, ds = binary_fit
    ax, df = plot_posterior_predictive_check(ds, space, episodes, y, data=data, max_draws=100)
    assert list(df.columns) == ["bin_low", "bin_high", "n", "predicted", "observed", "ppc_mean", "ppc_low",
                                "ppc_high", "inside"]
    assert df["n"].sum() == y.size and len(df) >= 4
    assert (df["ppc_low"] <= df["ppc_mean"]).all() and (df["ppc_mean"] <= df["ppc_high"]).all()
    assert df["inside"].mean() >= 0.6                        # data simulated from the model fit well
    lines = {ln.get_gid(): ln for ln in ax.get_lines()}
    np.testing.assert_array_equal(lines[GID_OBSERVED].get_xdata(), df["predicted"].to_numpy())
    np.testing.assert_array_equal(lines[GID_OBSERVED].get_ydata(), df["observed"].to_numpy())
    np.testing.assert_array_equal(lines[GID_PPC_MEAN].get_ydata(), df["ppc_mean"].to_numpy())
    (intervals,) = [c for c in ax.collections if c.get_gid() == GID_PPC_INTERVAL]
    segs = np.array([s for s in intervals.get_segments()])
    np.testing.assert_allclose(segs[:, 0, 0], df["predicted"])
    np.testing.assert_allclose(segs[:, 1, 0], df["predicted"])
    np.testing.assert_allclose(segs[:, 0, 1], df["ppc_low"])
    np.testing.assert_allclose(segs[:, 1, 1], df["ppc_high"])
    buf = io.BytesIO()
    ax.figure.savefig(buf, format="png")
    assert buf.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"
    # same table when the data are rebuilt from the result's attrs, and seeded
    again = posterior_predictive_check(ds, space, episodes, y, max_draws=100)
    assert again.equals(df)
    # the binned observed rates are plain means of the responses
    assert np.isclose((df["observed"] * df["n"]).sum() / df["n"].sum(), y.mean())


def test_ppc_graded_and_missing(space, sampler):
    episodes = sampler.sample(np.arange(space.n_concepts), 20, "hard", seed=12)
    data = prepare_observer_data(space, episodes)
    y = simulate_learner(space, episodes, 0.3, 0.1, 0.05, kind="graded", seed=0, data=data)
    y[:2] = np.nan
    ds = xr.Dataset({k: (("chain", "draw"), np.full((1, 8), v)) for k, v in
                     {"beta": 0.3, "epsilon": 0.1, "lapse": 0.05, "concentration": 20.0}.items()},
                    attrs={"kind": "graded", "concepts": "all", "grouped": 1, "max_extra_mistakes": -1})
    ax, df = plot_posterior_predictive_check(ds, space, episodes, y, n_bins=5)
    assert df["n"].sum() == np.isfinite(y).sum()
    assert "graded" in ax.get_title()


def test_concept_subset_is_recorded(space, sampler):
    episodes = sampler.sample(np.arange(space.n_concepts), 10, "hard", seed=13)
    subset = np.arange(0, space.n_concepts, 3)
    y = simulate_learner(space, episodes, 0.3, 0.1, seed=0, concepts=subset)
    ds = fit_ideal_observer(space, episodes, y, num_samples=5, warmup_steps=5, concepts=subset)
    from bayes_concepts.cogsci import concepts_from_attrs
    assert np.array_equal(concepts_from_attrs(ds), subset)
    assert ds.attrs["n_concepts"] == len(subset)


def test_observer_data_shapes(space, sampler):
    episodes = sampler.sample(np.arange(space.n_concepts), 12, "hard", seed=14)
    grouped = prepare_observer_data(space, episodes)
    flat = prepare_observer_data(space, episodes, group=False)
    assert flat.frac.shape == (12, space.n_concepts, 25)
    assert grouped.frac.shape[0] == 12 and grouped.n_cells < space.n_concepts
    # every cell's count adds up to the whole concept set, per episode
    counts = torch.exp(grouped.log_count).sum(dim=1)
    assert torch.allclose(counts, torch.full((12,), float(space.n_concepts), dtype=torch.float64))
    assert (grouped.min_mistakes == 0).all()                 # the true concept is in the set


def test_ppc_draws_into_a_given_axes(space, sampler):
    from matplotlib.figure import Figure
    episodes = sampler.sample(np.arange(space.n_concepts), 10, "hard", seed=15)
    data = prepare_observer_data(space, episodes)
    y = simulate_learner(space, episodes, 0.3, 0.1, 0.05, seed=0, data=data)
    ds = xr.Dataset({k: (("chain", "draw"), np.full((1, 6), v)) for k, v in
                     {"beta": 0.3, "epsilon": 0.1, "lapse": 0.05}.items()},
                    attrs={"kind": "binary", "concepts": "all", "grouped": 1, "max_extra_mistakes": -1})
    fig = Figure()
    given = fig.add_subplot()
    ax, df = plot_posterior_predictive_check(ds, space, episodes, y, n_bins=4, data=data, ax=given)
    assert ax is given and fig.axes == [given]
    lines = {ln.get_gid(): ln for ln in ax.get_lines()}
    np.testing.assert_array_equal(lines[GID_OBSERVED].get_ydata(), df["observed"].to_numpy())
    assert df.equals(posterior_predictive_check(ds, space, episodes, y, n_bins=4, data=data))
