"""Rank statistics for a handful of noisy conditions: ties as ties, a two-level bootstrap,
and the direct test for a predictor that singles out one condition.

A condition's value (a rung's gap, a learner's difficulty) is a mean over episodes with a
standard error; two conditions whose values differ by less than ``z`` standard errors of
their difference (``|v_i − v_j| < z·sqrt(se_i² + se_j²)``, or exactly equal) are **tied**.
Ranks are given to *tie groups*: the values are sorted, and each condition joins the
group of the one before it when it is tied with that group's lowest member (its anchor),
else it starts a new group; every member of a group gets the group's average rank.  So a
swap of two tied conditions' values leaves every rank, and every correlation, unchanged.
A series is **flat** when it has a single tie group.

Spearman's ρ is the Pearson correlation of the group ranks; Kendall's τ-b is computed on
the same ranks.  Intervals come from a two-level bootstrap: conditions resampled with
replacement, each value redrawn from N(value, se) with the same standard normal draws for
every series (common random numbers: two equal series give equal replicates, so their
difference is exactly 0), and the ties recomputed in each replicate.

All functions are pure, over numpy arrays.
"""
from __future__ import annotations

import numpy as np

__all__ = ["TIE_Z", "rank_series", "tie_ranks", "tied_pairs", "is_flat", "singled_out", "rank_correlations",
           "bootstrap_plan", "target_draw_ranks", "bootstrap_correlations", "percentile_interval", "direct_test"]

#: two conditions closer than this many standard errors of their difference are tied
TIE_Z = 2.0


def _as_rows(values, ses):
    v = np.atleast_2d(np.asarray(values, np.float64))
    s = np.zeros_like(v) if ses is None else np.broadcast_to(np.atleast_2d(np.nan_to_num(np.asarray(ses, np.float64))),
                                                              v.shape)
    return v, s


def tie_ranks(values, ses=None, z: float = TIE_Z) -> np.ndarray:
    """Average ranks (1 = smallest) of tie groups, row by row.

    values: float (C,) or (B, C); ses: their standard errors (same shape, or None: exact
    values, tied only when equal).  Returns float64 of the same shape as ``values``."""
    v, s = _as_rows(values, ses)
    b, c = v.shape
    order = np.argsort(v, axis=1, kind="stable")
    vs = np.take_along_axis(v, order, axis=1)
    ss = np.take_along_axis(s, order, axis=1)
    group = np.zeros((b, c), np.int64)
    anchor = np.zeros(b, np.int64)
    rows = np.arange(b)
    for k in range(1, c):
        va, sa = vs[rows, anchor], ss[rows, anchor]
        diff = np.abs(vs[:, k] - va)
        tied = (diff == 0) | (diff < z * np.sqrt(sa * sa + ss[:, k] * ss[:, k]))
        group[:, k] = group[:, k - 1] + (~tied)
        anchor = np.where(tied, anchor, k)
    # average position (1-based) of each group, given back to its members
    pos = np.broadcast_to(np.arange(1, c + 1, dtype=np.float64), (b, c))
    gid = (group + np.arange(b)[:, None] * c).ravel()  # a row's groups numbered apart from other rows'
    sums = np.bincount(gid, weights=pos.ravel(), minlength=b * c)
    counts = np.bincount(gid, minlength=b * c)
    ranks_sorted = (sums[gid] / counts[gid]).reshape(b, c)
    out = np.empty((b, c))
    np.put_along_axis(out, order, ranks_sorted, axis=1)
    return out if np.ndim(values) == 2 else out[0]


def tied_pairs(values, ses=None, z: float = TIE_Z) -> float:
    """The share of condition pairs i < j that are tied (NaN for fewer than 2 conditions)."""
    v, s = _as_rows(values, ses)
    v, s = v[0], s[0]
    c = len(v)
    if c < 2:
        return float("nan")
    i, j = np.triu_indices(c, 1)
    diff = np.abs(v[i] - v[j])
    tied = (diff == 0) | (diff < z * np.sqrt(s[i] ** 2 + s[j] ** 2))
    return float(tied.mean())


def is_flat(values, ses=None, z: float = TIE_Z) -> bool:
    """Whether no two conditions differ by ``z`` standard errors or more (every pair tied)."""
    return len(np.atleast_1d(values)) < 2 or tied_pairs(values, ses, z) == 1.0


def singled_out(values, ses=None, z: float = TIE_Z):
    """``(index, "hardest" | "easiest")`` when the series separates exactly one condition from
    the others, which are all tied with each other, else None.  (The highest value is the
    hardest: values are oriented higher = harder.)"""
    v, s = _as_rows(values, ses)
    v, s = v[0], s[0]
    c = len(v)
    if c < 3:
        return None
    for k in (int(np.argmax(v)), int(np.argmin(v))):
        rest = np.delete(np.arange(c), k)
        if not is_flat(v[rest], s[rest], z):
            continue
        d = np.abs(v[rest] - v[k])
        apart = (d > 0) & (d >= z * np.sqrt(s[rest] ** 2 + s[k] ** 2))
        if apart.all():
            return k, ("hardest" if v[k] > v[rest].max() else "easiest")
    return None


def rank_correlations(x_ranks, y_ranks) -> tuple:
    """Spearman ρ and Kendall τ-b of every row pair of rank arrays (float (B, C) or (C,)):
    float64 (B,) each (or floats for 1-D input); NaN where a row is shorter than 3 or
    constant in either."""
    one = np.ndim(x_ranks) == 1
    x, y = np.atleast_2d(np.asarray(x_ranks, float)), np.atleast_2d(np.asarray(y_ranks, float))
    b, c = x.shape
    if c < 3:
        rho = tau = np.full(b, np.nan)
    else:
        rx, ry = x - x.mean(axis=1, keepdims=True), y - y.mean(axis=1, keepdims=True)
        den = np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = np.where(den > 1e-12, (rx * ry).sum(axis=1) / np.where(den > 1e-12, den, 1), np.nan)
        i, j = np.triu_indices(c, 1)
        sx, sy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
        den = np.sqrt((sx * sx).sum(axis=1) * (sy * sy).sum(axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = np.where(den > 0, (sx * sy).sum(axis=1) / np.where(den > 0, den, 1), np.nan)
        rho, tau = np.clip(rho, -1.0, 1.0), np.clip(tau, -1.0, 1.0)
    return (float(rho[0]), float(tau[0])) if one else (rho, tau)


def bootstrap_plan(n_conditions: int, n_boot: int, rng) -> tuple:
    """The shared draws of a two-level bootstrap: ``(idx, noise)``, int64 (n_boot, C)
    condition indices resampled with replacement and float64 (n_boot, C) standard normals."""
    idx = rng.integers(0, n_conditions, (n_boot, n_conditions))
    return idx, rng.standard_normal((n_boot, n_conditions))


def target_draw_ranks(plan, target, target_ses=None, z: float = TIE_Z) -> np.ndarray:
    """The target's side of :func:`bootstrap_correlations` under ``plan``: its replicates
    redrawn with its own noise (a fixed transform of the plan's) and ranked with ties, float64
    (n_boot, C).  The same for every series ranked against one target under one plan."""
    idx, noise = plan
    t = np.asarray(target, float)
    ts = np.zeros_like(t) if target_ses is None else np.nan_to_num(np.asarray(target_ses, float))
    tdraws = t[idx] + noise[:, ::-1] * ts[idx]  # independent of the series' noise in each replicate
    return tie_ranks(tdraws, ts[idx], z)


def bootstrap_correlations(plan, values, ses, target, target_ses=None, z: float = TIE_Z, target_ranks=None) -> tuple:
    """Replicates of (ρ, τ) of a series against a target under ``plan``
    (:func:`bootstrap_plan`): float64 (n_boot,) each.  Both sides are redrawn from their
    sampling distributions (the target with its own noise, a fixed transform of the
    plan's) and ranked with ties; a replicate in which either side is one tie group is
    0 (no association), not a missing draw.  ``target_ranks``: the target's side already
    ranked (:func:`target_draw_ranks` of the same plan, target and ``z``), None to rank it here."""
    idx, noise = plan
    v, s = np.asarray(values, float), np.nan_to_num(np.asarray(ses, float))
    if target_ranks is None:
        target_ranks = target_draw_ranks(plan, target, target_ses, z)
    draws = v[idx] + noise * s[idx]
    rho, tau = rank_correlations(tie_ranks(draws, s[idx], z), target_ranks)
    return np.nan_to_num(rho), np.nan_to_num(tau)


def percentile_interval(draws, level: float = 0.95) -> list:
    """``[lo, hi]``: the central ``level`` interval of the finite draws (NaN for fewer than 10)."""
    d = np.asarray(draws, float)
    d = d[np.isfinite(d)]
    if len(d) < 10:
        return [float("nan"), float("nan")]
    a = (1 - level) / 2
    return [float(np.quantile(d, a)), float(np.quantile(d, 1 - a))]


def direct_test(values, ses, target, conditions, z: float = TIE_Z):
    """For a series that singles out one condition (:func:`singled_out`): is that condition
    the target's hardest (or easiest)?  Returns None when the series singles out none, else
    ``{"condition", "side", "target_rank"`` (1 = the target's hardest, or easiest for
    ``side == "easiest"``), ``"hit"`` (rank 1), ``"chance"`` (1/C: a condition drawn at random
    is the target's extreme), ``"p_value"`` (rank/C: the chance of a random condition
    ranking at least as extreme)}."""
    found = singled_out(values, ses, z)
    if found is None:
        return None
    k, side = found
    t = np.asarray(target, float)
    c = len(t)
    order = t if side == "easiest" else -t
    rank = int(1 + np.sum(order < order[k]))
    return {"condition": str(conditions[k]), "side": side, "target_rank": rank, "hit": rank == 1,
            "chance": 1.0 / c, "p_value": rank / c}


def _entry(values, ses, target, target_ses, plan, conditions, z, target_ranks=None) -> dict:
    """One series' rank statistics against a target (see :func:`rank_series`)."""
    v = np.asarray(values, float)
    s = np.nan_to_num(np.asarray(ses, float))
    t = np.asarray(target, float)
    n = len(v)
    flat = is_flat(v, s, z)
    direct = None if flat else direct_test(v, s, t, conditions, z)
    if n < 3:
        rho = tau = float("nan")
        brho = btau = np.full(len(plan[0]), np.nan)
    else:
        rho, tau = rank_correlations(tie_ranks(v, s, z), tie_ranks(t, target_ses, z))
        brho, btau = bootstrap_correlations(plan, v, s, t, target_ses, z, target_ranks)
        if flat:  # one tie group ranks nothing: said as flat, not as a number
            rho = tau = float("nan")
    return {"spearman": rho, "spearman_ci": [float("nan")] * 2 if direct else percentile_interval(brho),
            "kendall": tau, "kendall_ci": [float("nan")] * 2 if direct else percentile_interval(btau),
            "n_conditions": n, "flat": bool(flat), "tied_share": tied_pairs(v, s, z), "direct_test": direct,
            "_draws": brho}


def rank_series(series: dict, target, conditions, *, target_ses=None, predictors=(), n_boot: int = 2000,
                seed=0, z: float = TIE_Z, compare_to: str | None = None) -> dict:
    """Rank statistics of several series against one target on the same conditions.

    series: ``{name: (values, ses)}``, float (C,) each (higher = harder); target: float (C,)
    (higher = harder), with ``target_ses`` or exact; conditions: their C names;
    predictors: the names in ``series`` that are the baseline predictors.  Every series gets
    Spearman's ρ and Kendall's τ on tie-group ranks, 95 % intervals from one shared
    two-level bootstrap (:func:`bootstrap_plan`, seeded by ``seed``), the share of tied
    pairs, ``flat`` and, where it singles out one condition, the ``direct_test`` instead of
    an interval.  ``best_predictor``: the predictor with the highest finite ρ; every series
    gets ``vs_best`` (ρ − ρ(best predictor) with the paired bootstrap interval of the
    difference) and, with ``compare_to``, ``vs_<compare_to>`` against that predictor.
    Returns ``{"series": {name: entry}, "best_predictor": name or None}`` (entries keep
    their replicates under ``_draws``)."""
    rng = np.random.default_rng(seed)
    c = len(conditions)
    plan = bootstrap_plan(c, n_boot, rng)
    ranked_target = target_draw_ranks(plan, target, target_ses, z) if c >= 3 else None  # shared by every series
    out = {name: _entry(v, s, target, target_ses, plan, conditions, z, ranked_target)
           for name, (v, s) in series.items()}
    ranked = [p for p in predictors if p in out and np.isfinite(out[p]["spearman"])]
    best = max(ranked, key=lambda p: out[p]["spearman"]) if ranked else None

    def versus(e, other):
        if other is None or not np.isfinite(e["spearman"]):
            return None
        o = out[other]
        if not np.isfinite(o["spearman"]):
            return None
        return {"predictor": other, "difference": float(e["spearman"] - o["spearman"]),
                "difference_ci": percentile_interval(e["_draws"] - o["_draws"])}

    for e in out.values():
        e["vs_best"] = versus(e, best)
        if compare_to is not None:
            e[f"vs_{compare_to}"] = versus(e, compare_to if compare_to in out else None)
    return {"series": out, "best_predictor": best}
