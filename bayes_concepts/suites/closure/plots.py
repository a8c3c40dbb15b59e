"""CLOSURE's figure: the ideal observers' comp gap of its test families beside the accuracy
drops CLOSURE (Bahdanau et al. 2019) reports for its models.

>>> ax, data = plot_closure_families(ds_closure)                      # doctest: +SKIP

``plot_closure_families``
    CLOSURE's test families: the ideal observers' mAP comp gap against the accuracy drops
    CLOSURE reports for its models, with Spearman's rank correlation of the two.

Registered in :data:`bayes_concepts.plots.figures` as ``closure_families``:
:func:`~bayes_concepts.plots.write_figures` draws it for results of protocol ``closure`` or
``closure-baselines``.
"""
from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd

from ...gap import paired_bootstrap
from ...plots.registry import figures
from ...protocols import protocols
from .protocols import ClosureProtocol
from .reported import Reported, load_reported

__all__ = ["plot_closure_families"]

#: one marker per reported model, in the order of ``Reported.models``
_MODEL_MARKERS = ("o", "s", "^", "v", "P", "X", "D", "<", ">", "h", "p", "*")


def _closure_gaps(results, negatives: str, n_boot: int, seed: int) -> dict:
    """``{split: (gap, lo, hi, episodes)}``: the mAP comp gap (points) with its 95 % interval,
    from a results Dataset (paired bootstrap over episodes, as :func:`~bayes_concepts.gap.summarise`
    computes it), from :func:`~bayes_concepts.gap.summarise`'s rows, or from the JSON that
    ``bayes-concepts gap --json`` writes (a mapping with ``results``)."""
    from ...plots.style import negatives_cell, result_learners
    if hasattr(results, "data_vars"):
        cell = negatives_cell(results, negatives)
        if "strong" not in result_learners(results) or "weak" not in result_learners(results):
            raise ValueError("results have no strong and weak oracles to take the comp gap of")
        out = {}
        for split in (str(s) for s in results.split.values.tolist()):
            strong = 100 * cell["ap"].sel(split=split, learner="strong").values.astype(np.float64)
            weak = 100 * cell["ap"].sel(split=split, learner="weak").values.astype(np.float64)
            gap, lo, hi = paired_bootstrap(strong, weak, n_boot, seed)
            out[split] = (gap, lo, hi, int(np.sum(np.isfinite(strong - weak))))
        return out
    rows = results.get("results") if isinstance(results, dict) else results
    if not isinstance(rows, (list, tuple)) or not all(isinstance(r, dict) for r in rows):
        raise ValueError("results must be a results Dataset, summarise()'s rows, or a mapping with 'results' "
                         f"(the JSON of bayes-concepts gap --json); got {type(results).__name__}")
    negs = sorted({str(r.get("negatives")) for r in rows})
    chosen = [r for r in rows if r.get("negatives") == negatives]
    if not chosen:
        raise ValueError(f"results have no {negatives!r} negatives (have: {', '.join(negs)})")
    return {str(r["split"]): (float(r["gap"]["map"]), float(r["gap"]["map_ci"][0]), float(r["gap"]["map_ci"][1]),
                              int(r.get("episodes", 0))) for r in chosen}


def _closure_drops(reported, families) -> pd.DataFrame:
    """One row per (family, model): the model's reported drop in points (NaN where none)."""
    if reported is None:
        reported = load_reported()
    rows = []
    if isinstance(reported, Reported):
        for f in families:
            for m in reported.models:
                has = f in reported.baseline.get(m, {}) and f in reported.zero_shot.get(m, {})
                rows.append({"family": f, "model": m, "drop": reported.drop(m, f) if has else np.nan})
    elif isinstance(reported, dict):  # model -> {family: drop in points}
        for f in families:
            for m, per in reported.items():
                rows.append({"family": f, "model": str(m), "drop": float(per[f]) if f in per else np.nan})
    else:
        raise ValueError("reported must be None (CLOSURE's tables), a bayes_concepts.suites.closure.Reported, or a "
                         f"mapping model -> {{family: drop in points}}; got {type(reported).__name__}")
    return pd.DataFrame(rows, columns=["family", "model", "drop"])


def _signed(v: float) -> str:
    """``v`` with its sign and two decimals, a true minus for negatives: +0.07, −0.21."""
    from ...plots.style import MINUS
    return f"{v:+.2f}".replace("-", MINUS)


def _spearman(x, y) -> tuple:
    """Spearman's rho and its two-sided p-value over the finite pairs; NaNs below 3 pairs or
    when either side is constant."""
    from scipy.stats import spearmanr
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return (np.nan, np.nan, int(ok.sum()))
    r = spearmanr(x[ok], y[ok])
    return (float(r.statistic), float(r.pvalue), int(ok.sum()))


def _label_points(ax, x, y, names, colors, xerr=None, yerr=None) -> None:
    """Write ``names[i]`` beside the point (x[i], y[i]), off the other labels, points and the
    bars ``xerr`` / ``yerr`` ((lo, hi) each) (:func:`bayes_concepts.plots.labels.annotate_points`),
    in the point's colour."""
    from ...plots.labels import annotate_points
    texts = annotate_points(ax, x, y, [str(n) for n in names], colors=list(colors), xerr=xerr, yerr=yerr,
                            marker_radius=7.0, fontsize=9.5, fontweight="bold",
                            zorder=6, bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.75))
    for t, name in zip(texts, names):
        if t is not None:
            t.set_gid(f"closure:label:{name}")


def plot_closure_families(ds, reported=None, negatives: str = "hard", ax=None, *, n_boot: int = 1000,
                          seed: int = 0):
    """CLOSURE's test families: the ideal observers' comp gap against the accuracy drops the
    models of CLOSURE (Bahdanau et al. 2019) show on them, one family per column of markers.

    x is a family's mAP comp gap (strong − weak oracle, percentage points) with its 95 %
    paired-bootstrap interval over episodes (``n_boot`` resamples, ``seed``; the interval of
    the comp-gap table); y is a model's drop, baseline − zero-shot accuracy (percentage
    points): each model one marker shape (nudged sideways by a few points so they do not hide
    each other; their x is the family's gap), the family's mean over the models a large
    circle carrying the gap's interval.  Title and legend give Spearman's rank correlation of
    the gap with the mean drop and with each model's drops: whether the gap ranks the
    families the way the models' drops do.

    ``ds``: a results Dataset of protocol ``closure`` (splits = families), or the rows of
    :func:`~bayes_concepts.gap.summarise`, or the JSON ``bayes-concepts gap --json`` writes
    (e.g. ``benchmarks/results/closure_gap.json``, loaded); splits that are no family with
    reported drops are left out.  ``reported``: None (CLOSURE's tables,
    :func:`~bayes_concepts.suites.closure.load_reported`), a :class:`~bayes_concepts.suites.closure.Reported`,
    or a mapping model -> {family: drop in points} (e.g. your own models).  ``ax``: the Axes
    to draw on; default a new figure.

    Returns ``(ax, data)``: ``data`` one row per family, in the order of the results:
    ``gap``, ``gap_ci_lo``, ``gap_ci_hi`` (x of the circle and its error bar), ``episodes``,
    ``mean_drop`` (y of the circle; NaN-skipping mean over models), ``min_drop``/``max_drop``
    (the thin line), ``n_models``, ``gap_rank`` and ``drop_rank`` (1 = largest).
    ``data.attrs``: ``drops`` (one row per family and model: the drop drawn as that model's
    marker), ``spearman`` (``{"rho", "p", "n"}`` of gap vs mean drop) and ``spearman_by_model``
    (one row per model: ``rho``, ``p``, ``n``)."""
    # matplotlib (and the shared style, seaborn's) loaded here: registering the figure loads neither
    from matplotlib.figure import Figure  # built directly: no pyplot state, works under any (or no) display
    from matplotlib.lines import Line2D
    from matplotlib.transforms import ScaledTranslation

    from ...plots.style import MINUS, dodge, figure_style
    gaps = _closure_gaps(ds, negatives, n_boot, seed)
    drops = _closure_drops(reported, list(gaps))
    known = drops.dropna(subset=["drop"])
    families = [f for f in gaps if f in set(known["family"])]
    if not families:
        raise ValueError(f"no split of the results is a CLOSURE family with reported drops (splits: "
                         f"{', '.join(gaps)}); score them with protocol closure")
    drops = drops[drops.family.isin(families)].reset_index(drop=True)
    models = list(dict.fromkeys(drops["model"]))
    rows = []
    for f in families:
        d = drops.loc[drops.family == f, "drop"].to_numpy(np.float64)
        ok = d[np.isfinite(d)]
        g, lo, hi, n = gaps[f]
        rows.append({"family": f, "negatives": negatives, "gap": g, "gap_ci_lo": lo, "gap_ci_hi": hi, "episodes": n,
                     "mean_drop": float(ok.mean()), "min_drop": float(ok.min()), "max_drop": float(ok.max()),
                     "n_models": int(len(ok))})
    data = pd.DataFrame(rows)
    for col, rank in (("gap", "gap_rank"), ("mean_drop", "drop_rank")):
        data[rank] = data[col].rank(ascending=False, method="average")
    rho, p, n_pairs = _spearman(data["gap"], data["mean_drop"])
    by_model = []
    for m in models:
        per = drops[drops.model == m].set_index("family")["drop"].reindex(families)
        r_m, p_m, n_m = _spearman(data["gap"], per.to_numpy())
        by_model.append({"model": m, "rho": r_m, "p": p_m, "n": n_m})
    data.attrs["drops"] = drops
    data.attrs["spearman"] = {"rho": rho, "p": p, "n": n_pairs}
    data.attrs["spearman_by_model"] = pd.DataFrame(by_model, columns=["model", "rho", "p", "n"])

    from ...plots.style import category_colors
    palette = category_colors(len(families))  # neighbours differ in lightness too
    colors = dict(zip(families, palette))
    nudges = dict(zip(models, dodge(len(models), 3.2 * (len(models) - 1)) if len(models) > 1 else [0.0]))
    with figure_style():
        if ax is None:
            ax = Figure(figsize=(11.0, 6.4), layout="constrained").subplots()
        fig = ax.figure
        ax.axhline(0, color="0.4", linestyle=":", linewidth=1.0, zorder=0)
        for _, r in data.iterrows():
            ax.plot([r["gap"], r["gap"]], [r["min_drop"], r["max_drop"]], color=colors[r["family"]], alpha=0.45,
                    linewidth=2.2, solid_capstyle="round", zorder=1, gid=f"closure:range:{r['family']}")
        for i, m in enumerate(models):
            per = drops[drops.model == m].set_index("family")["drop"].reindex(families)
            shift = ax.transData + ScaledTranslation(nudges[m] / 72, 0, fig.dpi_scale_trans)
            ax.scatter(data["gap"], per.to_numpy(), c=[colors[f] for f in families],
                       marker=_MODEL_MARKERS[i % len(_MODEL_MARKERS)], s=34, edgecolors="white", linewidths=0.5,
                       transform=shift, zorder=3, gid=f"closure:model:{m}")
        err = np.vstack([data["gap"] - data["gap_ci_lo"], data["gap_ci_hi"] - data["gap"]])
        ax.errorbar(data["gap"], data["mean_drop"], xerr=err, fmt="none", ecolor="0.1", elinewidth=1.4,
                    capsize=4, zorder=4, gid="closure:gap_ci")
        ax.scatter(data["gap"], data["mean_drop"], s=150, c=[colors[f] for f in families], edgecolors="black",
                   linewidths=1.4, zorder=5, gid="closure:mean")
        ax.set_xlabel("ideal observers' comp gap: strong " + MINUS + " weak oracle mAP (percentage points; "
                      "bars: 95 % CI)")
        ax.set_ylabel("reported accuracy drop: CLEVR baseline " + MINUS + " CLOSURE zero-shot\n(percentage points)")
        lo_x, hi_x = float(data["gap_ci_lo"].min()), float(data["gap_ci_hi"].max())
        pad = max(0.25, 0.08 * (hi_x - lo_x))
        ax.set_xlim(lo_x - pad, hi_x + 2.2 * pad)  # room on the right for the labels
        _label_points(ax, data["gap"].to_numpy(), data["mean_drop"].to_numpy(), families,
                      [colors[f] for f in families], xerr=(data["gap_ci_lo"].to_numpy(), data["gap_ci_hi"].to_numpy()),
                      yerr=(data["min_drop"].to_numpy(), data["max_drop"].to_numpy()))
        handles = [Line2D([], [], marker=_MODEL_MARKERS[i % len(_MODEL_MARKERS)], linestyle="none", color="0.45",
                          markersize=7, label=f"{m} (\u03c1 = {_signed(r['rho'])})" if np.isfinite(r["rho"]) else m)
                   for i, (m, r) in enumerate(zip(models, by_model))]
        handles.append(Line2D([], [], marker="o", linestyle="none", markerfacecolor="white", markeredgecolor="black",
                              markeredgewidth=1.4, markersize=11,
                              label=f"mean over models (\u03c1 = {_signed(rho)})" if np.isfinite(rho) else
                              "mean over models"))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8.5,
                  frameon=False, title="model (Spearman \u03c1 of its\ndrops with the gap)", title_fontsize=8.5,
                  alignment="left")
        n_eps = sorted(set(data["episodes"]))
        eps = f"{n_eps[0]:,}" if len(n_eps) == 1 else f"{n_eps[0]:,}{chr(8211)}{n_eps[-1]:,}"
        stat = (f"Spearman \u03c1(gap, mean drop) = {_signed(rho)}, p = {p:.2f}, {n_pairs} families"
                if np.isfinite(rho) else f"Spearman \u03c1 undefined ({n_pairs} families)")
        ax.set_title("CLOSURE's families: ideal-observer comp gap vs the models' reported drops\n"
                     f"{negatives} negatives, {eps} test episode{'s' * (n_eps != [1])} per family; {stat}", fontsize=11)
    return ax, data


@figures.register("closure_families")
def _closure_figures(given) -> dict:
    """CLOSURE's families against its models' drops (``closure_families``), for results of a
    CLOSURE protocol (``closure``, ``closure-baselines``)."""
    name = given.results.attrs.get("protocol")
    if name not in protocols or not isinstance(protocols.get(name), ClosureProtocol):
        return {}
    return {"closure_families": partial(plot_closure_families, given.results, n_boot=given.n_boot, seed=given.seed)}
