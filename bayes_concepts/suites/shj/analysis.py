"""The people-versus-ideal-observer figure for Shepard, Hovland & Jenkins' six structures, and
the files a run writes (matplotlib on an Agg canvas, no pyplot).

:func:`plot_shj_fit` draws, for each type I..VI, the human error proportions per block
(points) against the fitted observer's posterior-mean error curve, with the 90 % posterior
interval of the curve (dark band) and the 90 % posterior predictive interval of replicated
proportions (light band); a seventh panel sets the mean error over all blocks of each type,
people (with their 90 % interval given their counts) against the model, side by side: the
type ordering.  Legends and the title name the study.  :func:`write_shj_outputs` saves
the figure (PNG and PDF, no dates: byte-for-byte reproducible PNGs), the numbers drawn (CSV)
and the summary (JSON) side by side.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .fit import TYPES

#: gids of the plotted artists (tests find them by these)
GID_HUMAN, GID_MODEL, GID_MODEL_BAND, GID_PPC_BAND = "human", "model_mean", "model_interval", "ppc_interval"
GID_ORDER_PEOPLE, GID_ORDER_MODEL = "order_people", "order_model"


def shj_tables(predictions) -> dict:
    """The numbers :func:`plot_shj_fit` draws: ``curves`` (one row per type and block:
    ``type``, ``block``, ``human``, ``model_mean``, ``model_low``, ``model_high``, ``ppc_low``,
    ``ppc_high``, ``inside``) and ``order`` (one row per type: mean errors over the blocks,
    people and model, with the model's ``prob`` interval over posterior draws and the
    people's given their counts, ``people_low`` and ``people_high``)."""
    ds = predictions
    rows = []
    for i, t in enumerate(ds["type"].values):
        for j, b in enumerate(ds["block"].values):
            rows.append({"type": TYPES[int(t) - 1], "block": int(b), **{
                v: (bool(ds[v].values[i, j]) if v == "inside" else float(ds[v].values[i, j]))
                for v in ("human", "model_mean", "model_low", "model_high", "ppc_low", "ppc_high", "inside")}})
    curves = pd.DataFrame(rows)
    per_draw = ds["draws"].values.mean(axis=2)                                  # (draw, type)
    prob = float(ds.attrs.get("prob", 0.9))
    lo, hi = (1 - prob) / 2, (1 + prob) / 2
    order = pd.DataFrame({"type": [TYPES[int(t) - 1] for t in ds["type"].values],
                          "people": ds["human"].values.mean(axis=1), "model": ds["model_mean"].values.mean(axis=1),
                          "model_low": np.quantile(per_draw, lo, axis=0),
                          "model_high": np.quantile(per_draw, hi, axis=0)})
    if "human_errors" in ds:        # the people's mean errors given their counts (people_order's draws)
        from .people import HumanData, people_order
        k, n = ds["human_errors"].values, ds["human_trials"].values
        po = people_order(HumanData(k, n, ds["human"].values, "people"), seed=int(ds.attrs.get("seed", 0)))
        order["people_low"] = np.quantile(po["draws"], lo, axis=0)
        order["people_high"] = np.quantile(po["draws"], hi, axis=0)
    order["rank_people"] = order["people"].rank(method="min").astype(int)
    order["rank_model"] = order["model"].rank(method="min").astype(int)
    return {"curves": curves, "order": order}


def plot_shj_fit(predictions, *, axes=None, title: str | None = None, people: str | None = None,
                 figsize=(13.0, 6.0)):
    """Draw :func:`~bayes_concepts.suites.shj.fit.shj_predictions` (see the module docstring).

    axes: seven Axes (six types, then the ordering panel) or None (a new figure of
    ``figsize`` inches); people: the study's name in the legends (default the predictions'
    ``human`` attribute).  Panels are titled ``type I`` .. ``type VI`` for Shepard, Hovland &
    Jenkins' structures, ``structure 1`` .. ``6`` (with the SHJ type each is equivalent to, if
    any) for one's own.  Returns ``(axes, tables)``: the seven Axes and the numbers drawn,
    :func:`shj_tables`."""
    tables = shj_tables(predictions)
    people = people or predictions.attrs.get("human")
    who = f"people ({people})" if people else "people"
    own = predictions.attrs.get("structures_kind", "shj") != "shj"
    classes = json.loads(predictions.attrs.get("structures_shj", "null")) or [None] * 6
    curves, order = tables["curves"], tables["order"]
    prob = float(predictions.attrs.get("prob", 0.9))
    if axes is None:
        fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(fig)
        grid = fig.add_gridspec(2, 4, width_ratios=(1, 1, 1, 1.25))
        axes = [fig.add_subplot(grid[r, c]) for r in range(2) for c in range(3)] + [fig.add_subplot(grid[:, 3])]
    axes = list(np.ravel(axes))
    if len(axes) != 7:
        raise ValueError(f"axes must be seven Axes (six types and the ordering panel), got {len(axes)}")
    colours = [f"C{i}" for i in range(6)]
    for i, (ax, t) in enumerate(zip(axes[:6], TYPES)):
        c = curves[curves["type"] == t]
        band = ax.fill_between(c["block"], c["ppc_low"], c["ppc_high"], color=colours[i], alpha=0.15, lw=0,
                               label=f"{prob:.0%} predictive interval")
        band.set_gid(GID_PPC_BAND)
        inner = ax.fill_between(c["block"], c["model_low"], c["model_high"], color=colours[i], alpha=0.4, lw=0,
                                label=f"{prob:.0%} posterior interval")
        inner.set_gid(GID_MODEL_BAND)
        (model,) = ax.plot(c["block"], c["model_mean"], color=colours[i], lw=2, label="ideal observer")
        model.set_gid(GID_MODEL)
        (human,) = ax.plot(c["block"], c["human"], "o", color="black", ms=3.5, label=who)
        human.set_gid(GID_HUMAN)
        name = (f"structure {i + 1}" + (f" (SHJ {classes[i]})" if classes[i] else "")) if own else f"type {t}"
        ax.set(title=name, ylim=(-0.02, 0.62), xlim=(0.5, c["block"].max() + 0.5))
        if i % 3 == 0:
            ax.set_ylabel("P(error)")
        if i >= 3:
            ax.set_xlabel("block (16 trials)")
        if i == 0:
            ax.legend(loc="upper right", fontsize="x-small", frameon=False)
    ax = axes[6]
    x = np.arange(6)
    if "people_low" in order:
        perr = np.vstack([order["people"] - order["people_low"], order["people_high"] - order["people"]])
        dots = ax.errorbar(x - 0.12, order["people"], yerr=np.maximum(perr, 0), fmt="o", color="black",
                           label=f"{who} ({prob:.0%} interval)").lines[0]
    else:
        dots = ax.plot(x - 0.12, order["people"], "o", color="black", label=who)[0]
    dots.set_gid(GID_ORDER_PEOPLE)
    err = np.vstack([order["model"] - order["model_low"], order["model_high"] - order["model"]])
    model = ax.errorbar(x + 0.12, order["model"], yerr=np.maximum(err, 0), fmt="s", color="C3",
                        label=f"ideal observer ({prob:.0%} interval)")
    model.lines[0].set_gid(GID_ORDER_MODEL)
    ax.set_xticks(x, [f"{t}\n({p}/{m})" for t, p, m in zip(order["type"], order["rank_people"], order["rank_model"])])
    ax.set(ylabel="mean P(error) over the blocks", title="type ordering (rank people/model)",
           xlim=(-0.5, 5.5))
    ax.legend(loc="upper left", fontsize="small", frameon=False)
    fig = axes[0].figure
    if title:
        fig.suptitle(title)
    return axes, tables


def write_shj_outputs(out, predictions, summary: dict, *, stem: str = "shj_people", title: str | None = None) -> list:
    """Write ``<stem>.png``, ``<stem>.pdf`` (the figure), ``<stem>.csv`` (its curves, one row per
    type and block), ``<stem>_order.csv`` (the ordering panel) and ``<stem>.json`` (the summary)
    into folder ``out`` (created).  Returns the paths written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    axes, tables = plot_shj_fit(predictions, title=title)
    fig = axes[0].figure
    paths = [out / f"{stem}.png", out / f"{stem}.pdf", out / f"{stem}.csv", out / f"{stem}_order.csv",
             out / f"{stem}.json"]
    fig.savefig(paths[0], dpi=120, metadata={"Software": None})
    fig.savefig(paths[1], metadata={"CreationDate": None, "Producer": None, "Creator": None})
    tables["curves"].to_csv(paths[2], index=False, float_format="%.6g")
    tables["order"].to_csv(paths[3], index=False, float_format="%.6g")
    paths[4].write_text(json.dumps(summary, indent=2, sort_keys=False, default=_json_default) + "\n", encoding="utf-8")
    return paths


def shj_analysis(language="and_or_not", prior: str = "length", *, space=None, method: str = "svi", steps: int = 300,
                 num_samples: int = 1000, warmup_steps: int = 300, states: str = "exact", n_orders: int = 32,
                 seed: int = 0, draws: int = 100, prob: float = 0.9, compare: bool = False, compare_grid: int = 12,
                 human=None, structures=None, trials=None, name: str | None = None, unbalanced: bool = False,
                 out=None, progress: bool = False) -> dict:
    """The whole comparison in one call: data, fit, predictions, summary, (language comparison),
    files.  Arguments as :func:`~bayes_concepts.suites.shj.fit.shj_data`,
    :func:`~bayes_concepts.suites.shj.fit.fit_shj` (``method``, ``steps``, ``num_samples``,
    ``warmup_steps``, ``seed``) and :func:`~bayes_concepts.suites.shj.fit.shj_predictions`
    (``draws`` posterior draws, ``prob``); ``compare``: also
    :func:`~bayes_concepts.suites.shj.fit.compare_languages` (every language × both priors, exact
    prefix states, ``compare_grid`` nodes per parameter); out: a folder for
    :func:`write_shj_outputs` (None: nothing written); human, structures, trials, name,
    unbalanced: the study and its structures (:func:`~bayes_concepts.suites.shj.fit.shj_data`),
    whose name titles the figure and is recorded, with the file's sha256 and counts, in the
    summary.  Returns a dict with ``data``, ``posterior``, ``predictions``, ``summary``
    (JSON-ready: the fit's summary, the settings, the title, the run times and, with
    ``compare``, the comparison) and ``paths``."""
    import time
    from .fit import compare_languages, fit_shj, grid_posterior, shj_data, shj_predictions, shj_summary

    times = {}
    t = time.perf_counter()
    data = shj_data(language, prior, space=space, method=states, n_orders=n_orders, seed=seed, human=human,
                    structures=structures, trials=trials, name=name, unbalanced=unbalanced)
    times["data_seconds"] = time.perf_counter() - t
    posterior = fit_shj(data, method=method, steps=steps, num_samples=num_samples, warmup_steps=warmup_steps,
                        seed=seed, progress=progress)
    times["fit_seconds"] = float(posterior.attrs["fit_seconds"])
    t = time.perf_counter()
    predictions = shj_predictions(posterior, data, max_draws=draws, prob=prob, seed=seed)
    summary = shj_summary(posterior, data, predictions, prob=prob, seed=seed)
    times["predictions_seconds"] = time.perf_counter() - t
    summary["settings"] = {"states": states, "n_orders": int(n_orders) if states == "sampled" else None,
                           "seed": int(seed), "method": method, "steps": int(steps) if method == "svi" else None,
                           "num_samples": int(num_samples), "warmup_steps": int(warmup_steps) if method == "nuts"
                           else None, "draws": int(draws), "prob": float(prob), "n_concepts": int(len(data.concepts)),
                           "n_trials_per_cell": data.people.trials_per_cell(),
                           "priors": json.loads(posterior.attrs["priors"])}
    if compare:
        t = time.perf_counter()
        summary["comparison"] = compare_languages(method="exact", n_grid=compare_grid, seed=seed, human=data.people,
                                                  structures=data.shapes, progress=progress)
        times["comparison_seconds"] = time.perf_counter() - t
    else:
        t = time.perf_counter()
        g = grid_posterior(data, n_grid=compare_grid)
        summary["grid_check"] = {k: g[k] for k in ("posterior_mean", "posterior_sd", "log_evidence", "edge_mass",
                                                    "held_out")}
        times["grid_seconds"] = time.perf_counter() - t
    summary["times"] = times
    summary["title"] = shj_title(data, summary)
    paths = []
    if out is not None:
        paths = write_shj_outputs(out, predictions, summary, title=summary["title"])
    return {"data": data, "posterior": posterior, "predictions": predictions, "summary": summary, "paths": paths}


def shj_title(data, summary: dict) -> str:
    """The figure's title: the study's name (``People (Nosofsky et al. 1994)`` for the published
    table, ``People (<file stem>)`` or the name given otherwise), the structures when they are
    one's own, the language, the prior and the fit."""
    shapes = "" if data.shapes.kind == "shj" else f" on {data.shapes.name} (own structures)"
    par = summary["parameters"]
    return (f"People ({data.people.name}){shapes} vs the ideal observer: "
            f"{data.language}, {data.prior} prior (β={par['beta']['mean']:.3g}, ε={par['epsilon']['mean']:.3g}, "
            f"λ={par['lapse']['mean']:.3g}; r={summary['correlation']:.3f})")


def _json_default(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, (np.bool_,)):
        return bool(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


__all__ = ["plot_shj_fit", "shj_tables", "write_shj_outputs", "shj_analysis", "shj_title", "GID_HUMAN", "GID_MODEL",
           "GID_MODEL_BAND",
           "GID_PPC_BAND", "GID_ORDER_PEOPLE", "GID_ORDER_MODEL"]
