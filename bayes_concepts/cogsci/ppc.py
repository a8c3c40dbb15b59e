"""Posterior predictive check of a fitted ideal observer (matplotlib, Agg canvas).

Responses are binned by the posterior-mean response probability r̄(u) (equal-width bins
on [0, 1]); per bin we compare the observed mean response with the distribution of the
same statistic over replicated data sets, one per posterior draw (binary: Bernoulli(r_s),
graded: Beta(r_s·κ_s, (1 - r_s)·κ_s), r_s = λ_s/2 + (1 - λ_s)·p_{β_s, ε_s}).  A
well-fitting model has the observed points inside the intervals and close to the diagonal.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .data import ObserverData, oracle_predictive, prepare_observer_data
from .model import concepts_from_attrs, response_probability

#: gids of the plotted artists (the test suite finds them by these)
GID_OBSERVED, GID_PPC_MEAN, GID_PPC_INTERVAL = "observed", "ppc_mean", "ppc_interval"


def _draws(ds, max_draws, seed):
    stacked = {v: np.asarray(ds[v].values, np.float64).reshape(-1) for v in ds.data_vars
               if set(ds[v].dims) == {"chain", "draw"}}
    n = len(stacked["beta"])
    idx = np.arange(n)
    if max_draws is not None and n > max_draws:
        idx = np.sort(np.random.default_rng(seed).choice(n, size=max_draws, replace=False))
    return {k: v[idx] for k, v in stacked.items()}


def response_probabilities(ds, data: ObserverData, max_draws: int | None = 200, seed: int = 0,
                           batch: int = 16) -> np.ndarray:
    """(S, E, Q) response probabilities r_s(u) for (up to ``max_draws``) posterior draws."""
    d = _draws(ds, max_draws, seed)
    out = []
    with torch.no_grad():
        for i in range(0, len(d["beta"]), batch):
            sl = slice(i, i + batch)
            p = oracle_predictive(torch.as_tensor(d["beta"][sl]), torch.as_tensor(d["epsilon"][sl]), data)
            out.append(response_probability(p, torch.as_tensor(d["lapse"][sl])).numpy())
    return np.concatenate(out)


def posterior_predictive_check(ds, space, episodes, responses, *, n_bins: int = 10, prob: float = 0.9,
                               max_draws: int | None = 200, seed: int = 0,
                               data: ObserverData | None = None) -> pd.DataFrame:
    """Observed vs posterior-predictive response rates, binned by predicted probability.

    ds: the result of :func:`~bayes_concepts.cogsci.fit_ideal_observer` (its attrs give the
    response kind and the concept set); responses: the (E, Q) responses it was fitted to
    (NaN = missing); max_draws: posterior draws used (a seeded subsample); prob: width of
    the predictive intervals.  Returns a DataFrame, one row per non-empty bin: ``bin_low``,
    ``bin_high``, ``n`` (responses), ``predicted`` (mean r̄ in the bin), ``observed`` (mean
    response), ``ppc_mean``, ``ppc_low``, ``ppc_high`` (mean and ``prob`` equal-tailed
    interval of the replicated bin means), ``inside``; ``attrs`` hold the kind, ``prob``,
    the draws, bins, seed and the number of responses.  :func:`plot_posterior_predictive_check`
    draws it.
    """
    kind = ds.attrs.get("kind", "binary")
    if data is None:
        mx = int(ds.attrs.get("max_extra_mistakes", -1))
        data = prepare_observer_data(space, episodes, concepts_from_attrs(ds), group=bool(ds.attrs.get("grouped", 1)),
                                     max_extra_mistakes=None if mx < 0 else mx)
    y = np.asarray(responses, np.float64)
    if y.shape != (data.n_episodes, data.n_query):
        raise ValueError(f"responses have shape {y.shape}, expected {(data.n_episodes, data.n_query)}")
    seen = ~np.isnan(y)
    r = response_probabilities(ds, data, max_draws=max_draws, seed=seed)        # (S, E, Q)
    r_obs = r[:, seen]                                                           # (S, N)
    r_bar = r_obs.mean(axis=0)
    y_obs = y[seen]
    rng = np.random.default_rng(seed)
    if kind == "binary":
        rep = (rng.random(r_obs.shape) < r_obs).astype(np.float64)
    else:
        kappa = _draws(ds, max_draws, seed)["concentration"][:, None]
        rep = rng.beta(r_obs * kappa, (1.0 - r_obs) * kappa)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    which = np.clip(np.digitize(r_bar, edges[1:-1]), 0, n_bins - 1)
    rows = []
    lo_q, hi_q = (1 - prob) / 2, (1 + prob) / 2
    for b in range(n_bins):
        sel = which == b
        if not sel.any():
            continue
        stat = rep[:, sel].mean(axis=1)                                          # (S,)
        low, high = np.quantile(stat, [lo_q, hi_q])
        obs = float(y_obs[sel].mean())
        rows.append({"bin_low": edges[b], "bin_high": edges[b + 1], "n": int(sel.sum()),
                     "predicted": float(r_bar[sel].mean()), "observed": obs, "ppc_mean": float(stat.mean()),
                     "ppc_low": float(low), "ppc_high": float(high), "inside": bool(low <= obs <= high)})
    df = pd.DataFrame(rows)
    df.attrs.update({"kind": kind, "prob": prob, "n_draws": int(r.shape[0]), "n_bins": n_bins, "seed": seed,
                     "n_responses": int(seen.sum())})
    return df


def plot_posterior_predictive_check(ds, space, episodes, responses, *, n_bins: int = 10, prob: float = 0.9,
                                    max_draws: int | None = 200, seed: int = 0, data: ObserverData | None = None,
                                    ax=None, figsize=(5.0, 4.5)) -> tuple:
    """Draw :func:`posterior_predictive_check` (same arguments) on ``ax`` (a new figure of
    ``figsize`` inches, no pyplot, when None): the identity line, the predictive intervals
    and means, and the observed rates, each at the bin's ``predicted`` x.  Returns
    ``(ax, DataFrame)``: the axes and exactly the numbers drawn."""
    df = posterior_predictive_check(ds, space, episodes, responses, n_bins=n_bins, prob=prob, max_draws=max_draws,
                                    seed=seed, data=data)
    kind = df.attrs["kind"]
    if ax is None:
        fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], ls=":", color="0.6", lw=1, label="identity")
    iv = ax.vlines(df["predicted"], df["ppc_low"], df["ppc_high"], color="C0", lw=3, alpha=0.4,
                   label=f"posterior predictive {prob:.0%} interval")
    iv.set_gid(GID_PPC_INTERVAL)
    (mean_line,) = ax.plot(df["predicted"], df["ppc_mean"], ls="none", marker="_", ms=12, mew=2, color="C0",
                           label="posterior predictive mean")
    mean_line.set_gid(GID_PPC_MEAN)
    (obs_line,) = ax.plot(df["predicted"], df["observed"], ls="none", marker="o", color="C3",
                          label="observed")
    obs_line.set_gid(GID_OBSERVED)
    ax.set(xlim=(0, 1), ylim=(-0.02, 1.02), xlabel="predicted response probability (posterior mean)",
           ylabel="response rate" if kind == "binary" else "mean graded response",
           title=f"Posterior predictive check ({kind}, {df.attrs['n_responses']:,} responses)")
    ax.legend(loc="upper left", fontsize="small", frameon=False)
    return ax, df
