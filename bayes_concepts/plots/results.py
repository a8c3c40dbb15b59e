"""Figures of a results Dataset (:mod:`bayes_concepts.results`) and of a ladder profile.

``plot_comp_gap``
    CURI's Figure 5: per split (ordered by mAP gap, largest first) the mean mAP (top)
    and CBA (bottom) of every learner in ``ds.learner`` with 95 % bootstrap intervals,
    and the comp gap (strong − weak, paired bootstrap interval) written at each split.
``plot_gap_parts``
    results with the atom and compound oracles (``compute_gap(..., parts=True)``): per split
    the gap as a stacked bar from the weak to the strong oracle's mAP, in novel arrangements,
    novel compounds and novel atoms, with every other learner as a marker against them.
``plot_entropies``
    CURI ICML Figure 4: expected posterior entropy over concepts and expected
    predictive entropy on the query set, per split, for each learner with entropies.
``plot_ladder``
    The ladder of a benchmark's splits: the nested rungs (memoriser ⊆ compound ⊆ atom ⊆
    strong) as one ladder, the other rungs as their own curves and, given published model
    results (passed in by the caller), one rung's gap against the models' own measure.

:func:`~bayes_concepts.plots.write_figures` writes them (:mod:`.figure_set`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure  # built directly: no pyplot state, works under any (or no) display
from matplotlib.lines import Line2D

from ..gap import GAP_PARTS, paired_bootstrap
from .style import (LEARNER_COLORS, METRIC_LABELS, MINUS, bootstrap_mean, checked_order, dodge, episodes_note,
                    figure_style, given_axes, learner_color, learner_label, legend_columns, negatives_cell,
                    result_learners, split_label, split_order, wrap_lines)

__all__ = ["comp_gap_data", "plot_comp_gap", "gap_parts_data", "plot_gap_parts", "entropy_data", "plot_entropies",
           "ladder_data", "plot_ladder", "LADDER_CHAIN", "GAP_PARTS_ORDER_ORACLES", "PART_STYLES", "ENTROPIES", "ENTROPY_LABELS"]


# ---------------------------------------------------------------------------------------
# 1. compositionality gap
# ---------------------------------------------------------------------------------------

def comp_gap_data(ds, negatives: str = "hard", n_boot: int = 1000, seed: int = 0, order=None) -> pd.DataFrame:
    """The values of :func:`plot_comp_gap`: one row per (metric, split, learner) with the
    mean in percent, its 95 % bootstrap interval, the number of episodes and, on the rows
    of the strong oracle, the gap strong − weak (percentage points) with its paired
    bootstrap interval (:func:`bayes_concepts.gap.paired_bootstrap`).  When the results hold
    other learners than the oracles, columns ``vs_weak``, ``vs_weak_ci_lo``, ``vs_weak_ci_hi``
    give each such learner's difference from the weak oracle on the same episodes
    (percentage points) with its paired bootstrap interval (NaN on the oracles' rows)."""
    cell = negatives_cell(ds, negatives)
    order = checked_order(ds, negatives, order)
    learners = result_learners(ds)
    others = [lr for lr in learners if lr not in ("strong", "weak")]
    rows = []
    for metric in ("ap", "cba"):
        for rank, split in enumerate(order):
            per = {lr: 100 * cell[metric].sel(split=split, learner=lr).values.astype(np.float64) for lr in learners}
            gap = (np.nan, np.nan, np.nan)
            if "strong" in per and "weak" in per:
                gap = paired_bootstrap(per["strong"], per["weak"], n_boot, seed)
            for lr in learners:
                mean, lo, hi, n = bootstrap_mean(per[lr], n_boot, seed)
                is_strong = lr == "strong"
                rows.append({"metric": metric, "split": split, "split_label": split_label(split), "order": rank,
                             "learner": lr, "negatives": negatives, "mean": mean, "ci_lo": lo, "ci_hi": hi,
                             "episodes": n, "gap": gap[0] if is_strong else np.nan,
                             "gap_ci_lo": gap[1] if is_strong else np.nan,
                             "gap_ci_hi": gap[2] if is_strong else np.nan})
                if others:
                    vs = paired_bootstrap(per[lr], per["weak"], n_boot, seed) \
                        if lr in others and "weak" in per else (np.nan, np.nan, np.nan)
                    rows[-1].update({"vs_weak": vs[0], "vs_weak_ci_lo": vs[1], "vs_weak_ci_hi": vs[2]})
    return pd.DataFrame(rows)


def plot_comp_gap(ds, negatives: str = "hard", n_boot: int = 1000, seed: int = 0, order=None, *, axes=None):
    """CURI Figure 5 from a results Dataset: splits on x ordered by mAP gap (largest first)
    or in ``order``, mAP (%) on top and CBA (%) below; the strong and weak oracles as
    horizontal lines at each split, every other learner (models, reference learners) as a
    bar between them, each with the 95 % bootstrap interval (``n_boot`` resamples, ``seed``)
    of its mean over episodes; the comp gap (strong − weak, percentage points) shaded and
    written at each split with its paired bootstrap interval, and up each other learner's bar
    its difference from the weak oracle with its paired bootstrap interval.

    ``axes``: two Axes, mAP then CBA (e.g. ``fig.subplots(2, 1, sharex=True)``); default a
    new figure.  The legend (below the panels) and the title go on their figure.
    Returns ``(axes, data)``: ``axes`` an array of the two Axes; ``data`` =
    :func:`comp_gap_data`, one row per (metric, split, learner): ``mean`` (%, the height of
    the learner's line or bar), ``ci_lo``/``ci_hi`` (its error bar), ``episodes``, and on the
    strong oracle's rows ``gap``, ``gap_ci_lo``, ``gap_ci_hi`` (the text at each split)."""
    order = checked_order(ds, negatives, order)
    data = comp_gap_data(ds, negatives, n_boot, seed, order)
    learners = result_learners(ds)
    x = np.arange(len(order))
    oracles = [lr for lr in learners if lr in LEARNER_COLORS]
    models = [lr for lr in learners if lr not in LEARNER_COLORS]  # drawn as bars between the oracle lines
    bar_width = 0.5 / max(1, len(models))
    offsets = dict(zip(models, dodge(len(models), 0.5 - bar_width)))
    with figure_style():
        if axes is None:
            axes = Figure(figsize=(max(8.0, 1.25 * len(order) + 2.5), 8.4), layout="constrained").subplots(
                2, 1, sharex=True)
        axes = given_axes(axes, 2, "plot_comp_gap")
        fig = axes[0].figure
        for ax, metric in zip(axes, ("ap", "cba")):
            d = data[data.metric == metric]
            for lr in models:
                s = d[d.learner == lr].sort_values("order")
                y = s["mean"].to_numpy()
                err = np.vstack([y - s["ci_lo"].to_numpy(), s["ci_hi"].to_numpy() - y])
                color = learner_color(lr, learners)
                ax.bar(x + offsets[lr], y, width=bar_width * 0.92, color=color, alpha=0.8, linewidth=0, zorder=2,
                       gid=f"{metric}:bar:{lr}")
                ax.errorbar(x + offsets[lr], y, yerr=err, color=color, marker="o", markersize=3.5, linestyle="none",
                            ecolor="0.2", capsize=2.5, elinewidth=1.1, label=learner_label(lr),
                            gid=f"{metric}:{lr}", zorder=3.5)
                if "vs_weak" in s:  # the learner − weak oracle difference [paired bootstrap CI], up the bar
                    for xi, (_, r) in zip(x, s.iterrows()):
                        if np.isfinite(r["vs_weak"]):
                            text = f"{r['vs_weak']:+.1f} [{r['vs_weak_ci_lo']:+.1f}, {r['vs_weak_ci_hi']:+.1f}]"
                            ax.text(xi + offsets[lr] - 0.3 * bar_width, 1.5, text.replace("-", MINUS), rotation=90,
                                    ha="center", va="bottom", fontsize=6.5, color="0.1", zorder=4,
                                    gid=f"vs_weak:{metric}:{lr}:{r['split']}")
            for lr in oracles:
                s = d[d.learner == lr].sort_values("order")
                y = s["mean"].to_numpy()
                err = np.vstack([y - s["ci_lo"].to_numpy(), s["ci_hi"].to_numpy() - y])
                ax.errorbar(x, y, yerr=err, color=learner_color(lr, learners), marker="_", markersize=34,
                            markeredgewidth=2.4, linestyle="none", capsize=3.5, elinewidth=1.3,
                            label=learner_label(lr), gid=f"{metric}:{lr}", zorder=3)
            top = 106.0  # the panel's upper limit: raised where a gap box goes above the bars
            if "strong" in learners and "weak" in learners:
                g = d[d.learner == "strong"].sort_values("order")
                w = d[d.learner == "weak"].set_index("split")["mean"]
                # the box's height in data units (two 7.5-point lines and its padding, with a margin for the
                # layout shrinking the panel), so that it can be kept off the bars
                panel_pt = ax.get_position().height * fig.get_figheight() * 72
                box_h = 1.4 * 30.0 * 109.0 / max(panel_pt, 1.0)
                for xi, (_, r) in zip(x, g.iterrows()):
                    lo, hi = sorted((float(w[r["split"]]), float(r["mean"])))
                    if not (np.isfinite(r["gap"]) and np.isfinite(lo)):
                        continue
                    ax.bar(xi, hi - lo, bottom=lo, width=0.5, color="#fdae6b", alpha=0.35, linewidth=0, zorder=1,
                           label="comp gap (strong " + MINUS + " weak)" if xi == 0 else None)
                    bars = d[(d.split == r["split"]) & d.learner.isin(models)]["ci_hi"].to_numpy(np.float64)
                    bar_top = float(np.nanmax(bars)) if np.isfinite(bars).any() else -np.inf
                    small = hi - lo < 16
                    bottom = lo - 4 - box_h if small else (lo + hi - box_h) / 2  # the box's lower edge
                    if bottom < bar_top + 1:  # it would cover a bar: above the strong oracle and the bars instead
                        anchor, offset, va = max(hi, bar_top) + 2, 4, "bottom"
                        top = max(top, anchor + box_h + 3)
                    else:
                        anchor, offset, va = (lo, -8, "top") if small else ((lo + hi) / 2, 0, "center")
                    ax.annotate(f"{r['gap']:.1f}\n[{r['gap_ci_lo']:.1f}, {r['gap_ci_hi']:.1f}]",
                                (xi, anchor), xytext=(0, offset), textcoords="offset points", ha="center", va=va,
                                fontsize=7.5, zorder=4, gid=f"gap:{metric}:{r['split']}",
                                bbox=dict(boxstyle="round,pad=0.25", fc="white", ec="#e6550d", lw=0.8, alpha=0.9))
            if metric == "cba":
                ax.axhline(50, color="0.35", linestyle=":", linewidth=1.2, zorder=0)
                ax.text(len(order) - 0.45, 49, "chance (50 %)", ha="right", va="top", fontsize=8, color="0.3")
            ax.set_ylim(-3, top)
            if top > 106:  # no ticks above 100 % in the room made for a box
                ax.set_yticks(np.arange(0, 101, 20))
            ax.set_ylabel(METRIC_LABELS[metric])
            ax.set_xlim(-0.6, len(order) - 0.4)
            ax.grid(axis="x", visible=False)
        axes[0].set_title("mAP on the test bank (average precision per episode, mean over episodes)", fontsize=11)
        axes[1].set_title("Class-balanced accuracy on the query set (predict positive iff p > 0.5)", fontsize=11)
        axes[1].set_xticks(x, [split_label(s) for s in order], rotation=25, ha="right")
        axes[1].set_xlabel("split (ordered by mAP gap, largest first)" if order == split_order(ds, negatives)
                           else "split")
        handles, labels = axes[0].get_legend_handles_labels()
        width = fig.get_figwidth()  # a narrow figure (one split): fewer legend columns, wrapped subtitle
        fig.legend(handles, labels, loc="outside lower center", fontsize=10, frameon=False,
                   ncol=legend_columns(labels, width, 10))
        fig.suptitle(wrap_lines("Compositionality gap per split (" + episodes_note(ds, negatives) + ")\n"
                                 "error bars: 95 % bootstrap CI of each mean over episodes;  boxes: comp gap in "
                                 "percentage points [paired bootstrap 95 % CI]"
                                 + ("\ntext up a learner's bar: learner " + MINUS + " weak oracle in percentage "
                                    "points [paired bootstrap 95 % CI]" if models else ""), width, 11.5),
                     fontsize=11.5)
    return axes, data


def gap_parts_data(ds, negatives: str = "hard", metric: str = "ap", n_boot: int = 1000, seed: int = 0,
                   order=None) -> pd.DataFrame:
    """The values of :func:`plot_gap_parts` (results with the atom and compound oracles:
    ``compute_gap(..., parts=True)``): one row per (split, part) for the three parts of the
    gap (``kind`` ``"part"``: ``part``, ``bottom`` and ``height`` of its segment in percent,
    ``ci_lo``/``ci_hi`` its paired bootstrap 95 % interval in percentage points) and one row per
    (split, learner) for every learner that is not an oracle (``kind`` ``"learner"``: ``mean``
    with its bootstrap interval).  Segments start at the weak oracle's mean and end at the
    strong oracle's; other results (no atom or compound oracle) are an error."""
    if metric not in ("ap", "cba"):
        raise ValueError(f"metric must be 'ap' or 'cba', got {metric!r}")
    learners = result_learners(ds)
    missing = [lr for lr in ("strong", "atom", "compound", "weak") if lr not in learners]
    if missing:
        raise ValueError(f"results have no {' or '.join(missing)} oracle: compute the gap with parts=True "
                         "(bayes-concepts gap --parts)")
    cell = negatives_cell(ds, negatives)
    order = checked_order(ds, negatives, order)
    rows = []
    for rank, split in enumerate(order):
        per = {lr: 100 * cell[metric].sel(split=split, learner=lr).values.astype(np.float64) for lr in learners}
        keep = np.logical_and.reduce([np.isfinite(per[lr]) for lr in GAP_PARTS_ORDER_ORACLES])
        bottom = float(np.mean(per["weak"][keep])) if keep.any() else np.nan
        for part in reversed(list(GAP_PARTS)):  # from the weak oracle up: arrangements, compounds, atoms
            upper, lower = GAP_PARTS[part]
            mean, lo, hi = paired_bootstrap(per[upper][keep], per[lower][keep], n_boot, seed)
            rows.append({"kind": "part", "split": split, "split_label": split_label(split), "order": rank,
                         "part": part, "learner": None, "bottom": bottom, "height": mean, "ci_lo": lo, "ci_hi": hi,
                         "mean": np.nan, "negatives": negatives, "metric": metric, "episodes": int(keep.sum())})
            bottom = bottom + mean
        for lr in learners:
            if lr in LEARNER_COLORS:
                continue
            mean, lo, hi, n = bootstrap_mean(per[lr], n_boot, seed)
            rows.append({"kind": "learner", "split": split, "split_label": split_label(split), "order": rank,
                         "part": None, "learner": lr, "bottom": np.nan, "height": np.nan, "ci_lo": lo, "ci_hi": hi,
                         "mean": mean, "negatives": negatives, "metric": metric, "episodes": n})
    return pd.DataFrame(rows)


#: the oracles a gap in parts needs, weakest first
GAP_PARTS_ORDER_ORACLES = ("weak", "compound", "atom", "strong")
#: the colours and labels of the three parts' segments
PART_STYLES = {"novel_arrangements": ("#fdd49e", "novel arrangements (compound " + MINUS + " weak)"),
               "novel_compounds": ("#fc8d59", "novel compounds (atom " + MINUS + " compound)"),
               "novel_atoms": ("#b30000", "novel atoms (strong " + MINUS + " atom)")}


def plot_gap_parts(ds, negatives: str = "hard", metric: str = "ap", n_boot: int = 1000, seed: int = 0, order=None,
                   *, ax=None):
    """The comp gap of every split in its three parts, one stacked bar per split: from the weak
    oracle's mean up through novel arrangements (compound − weak), novel compounds (atom −
    compound) and novel atoms (strong − atom) to the strong oracle's mean, each segment
    labelled with its size (percentage points) when there is room; every other learner of the
    results as a marker with its 95 % bootstrap interval, so it is placed against all four
    oracles.  Splits as :func:`plot_comp_gap` orders them (or ``order``).

    ``ax``: the Axes to draw on (default a new figure).  Returns ``(ax, data)``: ``data`` =
    :func:`gap_parts_data` (the segments' ``bottom``/``height`` and intervals, the learners'
    means)."""
    data = gap_parts_data(ds, negatives, metric, n_boot, seed, order)
    order = checked_order(ds, negatives, order)
    learners = [lr for lr in result_learners(ds) if lr not in LEARNER_COLORS]
    x = np.arange(len(order))
    with figure_style():
        if ax is None:
            ax = Figure(figsize=(max(6.0, 1.1 * len(order) + 2.5), 5.2), layout="constrained").add_subplot()
        for part, (color, label) in PART_STYLES.items():
            d = data[(data.kind == "part") & (data.part == part)].sort_values("order")
            h = d["height"].to_numpy()
            ax.bar(x, h, bottom=d["bottom"].to_numpy(), width=0.55, color=color, edgecolor="white", linewidth=0.6,
                   label=label, gid=f"part:{part}", zorder=2)
            for xi, (_, r) in zip(x, d.iterrows()):
                if np.isfinite(r["height"]) and abs(r["height"]) >= 4:
                    ax.text(xi, r["bottom"] + r["height"] / 2, f"{r['height']:.1f}", ha="center", va="center",
                            fontsize=7.5, color="white" if part == "novel_atoms" else "0.1", zorder=3,
                            gid=f"part_text:{part}:{r['split']}")
        offsets = dict(zip(learners, dodge(len(learners), 0.4)))
        for lr in learners:
            d = data[(data.kind == "learner") & (data.learner == lr)].sort_values("order")
            y = d["mean"].to_numpy()
            err = np.vstack([y - d["ci_lo"].to_numpy(), d["ci_hi"].to_numpy() - y])
            ax.errorbar(x + offsets[lr], y, yerr=err, color=learner_color(lr, learners), marker="D", markersize=5,
                        linestyle="none", capsize=2.5, label=learner_label(lr), gid=f"learner:{lr}", zorder=4)
        ax.set_xticks(x, [split_label(s) for s in order], rotation=25, ha="right")
        ax.set_xlim(-0.6, len(order) - 0.4)
        ax.set_ylim(-3, 106)
        ax.set_ylabel(METRIC_LABELS[metric])
        ax.grid(axis="x", visible=False)
        ax.set_title("The comp gap in parts: weak oracle (bar bottom) to strong oracle (bar top)\n"
                     f"{episodes_note(ds, negatives)}; segments in percentage points", fontsize=10)
        # three columns only where the figure is wide enough for them (6 splits or more); one
        # column otherwise, so that the legend never pushes the axes out of a narrow figure
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3 if len(order) >= 6 else 1,
                  frameon=False)
    return ax, data


# ---------------------------------------------------------------------------------------
# 2. entropies
# ---------------------------------------------------------------------------------------

ENTROPIES = ("posterior_entropy", "predictive_entropy")
ENTROPY_LABELS = {"posterior_entropy": "posterior entropy over concepts (nats)",
                  "predictive_entropy": "predictive entropy on the query (nats)"}


def entropy_data(ds, negatives: str = "hard", n_boot: int = 1000, seed: int = 0, order=None) -> pd.DataFrame:
    """The values of :func:`plot_entropies`: one row per (entropy, split, learner): mean over
    the episodes in which the learner has a posterior (``empty`` False and a finite value),
    its 95 % bootstrap interval, and how many of the split's episodes that is."""
    cell = negatives_cell(ds, negatives)
    order = checked_order(ds, negatives, order)
    learners = [lr for lr in result_learners(ds)
                if any(np.isfinite(cell[v].sel(learner=lr).values).any() for v in ENTROPIES)]
    rows = []
    for var in ENTROPIES:
        for rank, split in enumerate(order):
            for lr in learners:
                c = cell.sel(split=split, learner=lr)
                vals = c[var].values.astype(np.float64)
                ok = ~c["empty"].values.astype(bool) & np.isfinite(vals)
                mean, lo, hi, n = bootstrap_mean(vals[ok], n_boot, seed)
                rows.append({"entropy": var, "split": split, "split_label": split_label(split), "order": rank,
                             "learner": lr, "negatives": negatives, "mean": mean, "ci_lo": lo, "ci_hi": hi,
                             "episodes": n, "episodes_total": int(len(vals)),
                             "coverage": n / len(vals) if len(vals) else np.nan})
    return pd.DataFrame(rows)


def plot_entropies(ds, negatives: str = "hard", n_boot: int = 1000, seed: int = 0, order=None, *, axes=None):
    """Expected posterior entropy (top) and expected predictive entropy (bottom) per split,
    in nats, as in CURI ICML Figure 4, for the strong and weak oracles (and any other learner
    with entropies).  Grouped bars with 95 % bootstrap intervals; a learner with no
    consistent concept in an episode (``empty``) has no posterior there, so its bars average
    over the other episodes and show how many (``n=``) when that is not all of them.

    ``axes``: two Axes, posterior then predictive entropy (e.g. ``fig.subplots(2, 1,
    sharex=True)``); default a new figure.  The legend and the title go on their figure.
    Returns ``(axes, data)``: ``axes`` an array of the two Axes; ``data`` =
    :func:`entropy_data`, one row per (entropy, split, learner): ``mean`` (nats; the bar
    height, 0 drawn where NaN), ``ci_lo``/``ci_hi`` (its error bar), ``episodes`` (n),
    ``episodes_total`` and ``coverage``."""
    order = checked_order(ds, negatives, order)
    data = entropy_data(ds, negatives, n_boot, seed, order)
    learners = list(dict.fromkeys(data["learner"]))
    x = np.arange(len(order))
    width = 0.8 / max(1, len(learners))
    offsets = dict(zip(learners, dodge(len(learners), 0.8 - width)))
    with figure_style():
        if axes is None:
            axes = Figure(figsize=(max(8.0, 1.2 * len(order) + 2.5), 7.8), layout="constrained").subplots(
                2, 1, sharex=True)
        axes = given_axes(axes, 2, "plot_entropies")
        fig = axes[0].figure
        for ax, var in zip(axes, ENTROPIES):
            d = data[data.entropy == var]
            top = np.nanmax(d["ci_hi"].to_numpy()) if np.isfinite(d["ci_hi"]).any() else 1.0
            for lr in learners:
                s = d[d.learner == lr].sort_values("order")
                y = s["mean"].to_numpy()
                err = np.vstack([y - s["ci_lo"].to_numpy(), s["ci_hi"].to_numpy() - y])
                ax.bar(x + offsets[lr], np.nan_to_num(y), width=width, color=learner_color(lr, learners),
                       alpha=0.85, label=learner_label(lr), gid=f"{var}:{lr}", zorder=2)
                ax.errorbar(x + offsets[lr], y, yerr=err, fmt="none", ecolor="0.15", capsize=2.5, elinewidth=1,
                            zorder=3)
                for xi, (_, r) in zip(x, s.iterrows()):
                    if r["coverage"] < 1:
                        yy = r["ci_hi"] if np.isfinite(r["ci_hi"]) else 0.0
                        ax.text(xi + offsets[lr], yy + 0.02 * top, f"n={r['episodes']}", ha="center", va="bottom",
                                fontsize=7.5, color=learner_color(lr, learners), rotation=90)
            if var == "predictive_entropy" and top > 0.25 * np.log(2):
                ax.axhline(np.log(2), color="0.35", linestyle=":", linewidth=1.1, zorder=0)
                ax.text(len(order) - 0.45, np.log(2), "max: ln 2", ha="right", va="bottom", fontsize=8, color="0.3")
                top = max(top, np.log(2))
            ax.set_ylim(0, top * 1.25 + 1e-9)
            ax.set_ylabel(ENTROPY_LABELS[var])
            ax.set_xlim(-0.6, len(order) - 0.4)
            ax.grid(axis="x", visible=False)
        axes[0].set_title("Expected posterior entropy  E[H(p(h | support))]", fontsize=11)
        axes[1].set_title("Expected predictive entropy  E[mean over query scenes of H(p(y | u, support))]",
                          fontsize=11)
        axes[1].set_xticks(x, [split_label(s) for s in order], rotation=25, ha="right")
        axes[1].set_xlabel("split (ordered by mAP gap, largest first)" if order == split_order(ds, negatives)
                           else "split")
        handles, labels = axes[0].get_legend_handles_labels()
        handles.append(Line2D([], [], color="0.15", marker="|", linestyle="none", markersize=10))
        labels.append("95 % bootstrap CI")
        fig.legend(handles, labels, loc="outside lower center", fontsize=10, frameon=False, ncol=len(labels))
        n_total = int(data["episodes_total"].max()) if len(data) else 0
        fig.suptitle("Uncertainty of the oracles per split (" + episodes_note(ds, negatives) + ")\n"
                     f"n = how many of the {n_total} episode{'s' * (n_total != 1)} have some concept the learner "
                     "knows that fits the "
                     "support (else it has no posterior); bars average over these n", fontsize=11)
    return axes, data


# ---------------------------------------------------------------------------------------
# 3. the space: synonym classes and scene properties
# ---------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------
# the oracle ladder
# ---------------------------------------------------------------------------------------

#: the rungs that nest (each one's hypothesis space holds the one before it): drawn as one ladder
LADDER_CHAIN = ("memoriser", "compound", "atom", "strong")


def _rung_base(label: str) -> str:
    """``sampling[n=100]`` -> ``sampling``."""
    return str(label).split("[", 1)[0]


def ladder_data(profile, negatives: str = "hard") -> pd.DataFrame:
    """The values of :func:`plot_ladder`'s ladder panels: one row per (split, rung) with the
    rung's position on the ladder (``order``), its mAP (percent) and its gap to the strong
    oracle (mAP points) with the paired bootstrap 95 % interval, and ``panel``: ``"chain"``
    for the nested rungs (:data:`LADDER_CHAIN`: memoriser ⊆ compound ⊆ atom ⊆ strong),
    ``"other"`` for the rest (bounded length, sampling, learned priors, models), each of which
    is not a step of that chain.  ``profile``: a :func:`~bayes_concepts.ladder.ladder_profile`
    Dataset or its :func:`~bayes_concepts.ladder.ladder_summary` rows."""
    from ..ladder import ladder_summary
    rows = ladder_summary(profile) if hasattr(profile, "sel") else profile
    out = []
    for r in rows:
        if r["negatives"] != negatives:
            continue
        for i, (lb, v) in enumerate(r["rungs"].items()):
            out.append({"split": r["split"], "rung": lb, "order": i, "map": v["map"], "gap": v["gap"],
                        "gap_lo": v["gap_ci"][0], "gap_hi": v["gap_ci"][1],
                        "panel": "chain" if lb in LADDER_CHAIN else "other"})
    if not out:
        raise ValueError(f"the ladder has no {negatives}-negative cells")
    return pd.DataFrame(out)


def _finite(x) -> bool:
    """A number that is not NaN (a JSON copy of the correlations writes NaN as null)."""
    return x is not None and bool(np.isfinite(x))


def _models_axis_label(published, measure: str) -> str:
    """The models' own measure, as published, and which way is harder."""
    info = published.measures.get(measure)
    hib = True if info is None else info.higher_is_better
    unit = "percentage points" if info is not None and info.difference else "%"
    name = {"map": "mAP", "cba": "CBA", "f1": "F1"}.get(measure, measure.replace("_", " "))
    return f"models' {name} ({unit}), mean model; {'lower' if hib else 'higher'} = harder"


def plot_ladder(profile, negatives: str = "hard", correlations=None, published=None, rung: str | None = None,
                *, ax=None):
    """The ladder of a benchmark's splits and, given ``published`` model results, one rung's gap
    against the models' own measure.

    Panels, left to right:

    * **the nested ladder**: each split's mAP (percent) on the rungs that nest, memoriser ⊆
      compound ⊆ atom ⊆ strong (:data:`LADDER_CHAIN`), one line per split -- one ladder;
    * **the other rungs** (only when the profile has any: bounded length, sampling budgets,
      learned priors, models): each split's mAP on each, a marker per split; the values of
      one rung's knob (``sampling[n=100]``, ``sampling[n=1000]``) joined as that rung's own
      curve, never joined to another rung;
    * **the models** (only with ``published``, a
      :class:`~bayes_concepts.published.PublishedResults`): the gap (strong − rung, mAP
      points, 95 % interval) of ``rung`` per condition against the mean model's value of the
      published measure, in its own units and the right way up (mAP: lower = harder; a drop:
      higher = harder).  ``rung`` defaults to the rung whose gap has the largest mean-model
      Spearman ρ in ``correlations`` -- the title says it was *chosen* so -- else the memoriser.

    Splits share one colour each (:func:`~bayes_concepts.plots.style.category_colors`) and one
    legend under the panels; point labels are placed beside their points
    (:func:`~bayes_concepts.plots.labels.annotate_points`).  ``ax``: Axes for the panels drawn
    (one to three, in that order; default a new figure).  Returns ``(axes, data)``: data =
    :func:`ladder_data`, with the models panel's rows (``panel`` = ``"models"``, ``value`` =
    the mean model's measure) appended; ``axes`` one Axes when a single panel is drawn."""
    from .labels import annotate_points
    from .style import category_colors
    data = ladder_data(profile, negatives)
    rungs = list(dict.fromkeys(data.sort_values("order")["rung"]))
    chain = [r for r in rungs if r in LADDER_CHAIN]
    others = [r for r in rungs if r not in LADDER_CHAIN]
    splits = list(dict.fromkeys(data["split"]))
    two = published is not None
    n_panels = 1 + bool(others) + two
    with figure_style():
        if ax is None:
            widths = [max(3.2, 1.1 * len(chain) + 1.5)] + ([max(3.5, 0.75 * len(others) + 1.5)] if others else []) \
                + ([5.2] if two else [])
            fig = Figure(figsize=(sum(widths) + 0.6, 5.6), layout="constrained")
            axes = fig.subplots(1, n_panels, squeeze=False, width_ratios=widths).ravel()
        else:
            axes = np.atleast_1d(np.asarray(ax, dtype=object)).ravel()
            if len(axes) < n_panels:
                raise ValueError(f"plot_ladder draws {n_panels} panels here (the nested ladder"
                                 + (", the other rungs" if others else "") + (", the models" if two else "")
                                 + f"): give {n_panels} Axes, got {len(axes)}")
            fig = axes[0].figure
        colors = dict(zip(splits, category_colors(len(splits))))
        a = axes[0]
        x = np.arange(len(chain))
        for s in splits:
            d = data[data.split == s].set_index("rung").reindex(chain)
            a.plot(x, d["map"].to_numpy(), marker="o", color=colors[s], label=split_label(s), gid=f"split:{s}")
        a.set_xticks(x, [c.replace("_", " ") for c in chain], rotation=30, ha="right", fontsize=8)
        a.set_xlim(-0.3, len(chain) - 0.7)
        a.set_ylim(-3, 103)
        a.set_ylabel(METRIC_LABELS["ap"])
        a.set_title(f"The nested ladder ({negatives} negatives)\n"
                    + f" {chr(0x2286)} ".join(c.replace("_", " ") for c in chain), fontsize=9.5)
        k = 1
        if others:
            b = axes[k]
            k += 1
            groups = list(dict.fromkeys(_rung_base(r) for r in others))
            pos, ticks, x0 = {}, [], 0.0
            for g in groups:
                members = [r for r in others if _rung_base(r) == g]
                for j, r in enumerate(members):
                    pos[r] = x0 + j
                x0 += len(members) + 0.6  # a gap between one rung's curve and the next rung
            offsets = dict(zip(splits, dodge(len(splits), 0.3)))
            for s in splits:
                d = data[data.split == s].set_index("rung")
                for g in groups:
                    members = [r for r in others if _rung_base(r) == g and r in d.index]
                    xs = [pos[r] + offsets[s] for r in members]
                    b.plot(xs, d.loc[members, "map"].to_numpy(), marker="o", markersize=4.5, color=colors[s],
                           linestyle="-" if len(members) > 1 else "none", gid=f"other:{s}:{g}")
            b.set_xticks([pos[r] for r in others], [r.replace("_", " ") for r in others], rotation=35, ha="right",
                         fontsize=7.5)
            b.set_ylim(-3, 103)
            b.set_ylabel(METRIC_LABELS["ap"])
            b.set_title("The other rungs: not steps of that ladder\n(a knob's values joined, per split)",
                        fontsize=9.5)
        handles = [Line2D([], [], color=colors[s], marker="o", label=split_label(s)) for s in splits]
        if two:
            c = axes[k]
            corr_rungs = (correlations or {}).get("rungs", {})
            from ..ladder import MIN_RANKED, rho_text
            n_cond = len((correlations or {}).get("conditions", ()))
            chosen = rung is None
            finite = {}
            if rung is None:
                if n_cond >= MIN_RANKED:
                    finite = {lb: v["mean_model"]["spearman"] for lb, v in corr_rungs.items()
                              if lb != "strong" and _finite(v["mean_model"].get("spearman"))}
                rung = max(finite, key=finite.get) if finite else rungs[0]
            if rung not in rungs:
                raise ValueError(f"rung {rung!r} is not on this ladder ({', '.join(rungs)})")
            from ..ladder import published_difficulty
            diff = published_difficulty(published, splits, negatives)["mean_model"].dropna()
            measure = (correlations or {}).get("measure") or published.measure
            hib = published.measures[measure].higher_is_better if measure in published.measures else True
            d = data[(data.rung == rung) & data.split.isin(diff.index)].copy()
            d["difficulty"] = [float(diff[s]) for s in d["split"]]
            d["value"] = -d["difficulty"] if hib else d["difficulty"]  # the models' own measure, as published
            for s, r in d.set_index("split").iterrows():
                c.errorbar([r["gap"]], [r["value"]], xerr=[[r["gap"] - r["gap_lo"]], [r["gap_hi"] - r["gap"]]],
                           marker="o", linestyle="none", color=colors[s], capsize=2.5, gid=f"rung:{rung}:{s}")
            rho = corr_rungs.get(rung, {}).get("mean_model", {})
            if rho and n_cond < MIN_RANKED:
                note = f"too few conditions to rank (n = {n_cond})"
            elif rho and rho.get("flat"):
                note = "flat: every pair of splits within 2 standard errors, ranks nothing"
            elif rho and (rho.get("direct_test") or _finite(rho.get("spearman"))):
                note = ("Spearman ρ " if not rho.get("direct_test") else "") + rho_text(rho)
            else:
                note = "ρ not computed"
            if chosen and finite:
                head = f"rung {rung}\n(chosen: the highest ρ of the mean model)"
            elif chosen:
                head = f"rung {rung}\n(none chosen: " + ("too few conditions" if n_cond < MIN_RANKED
                                                         else "no rung ranks the splits") + "; the lowest rung)"
            else:
                head = f"rung {rung}"
            c.set_xlabel(f"gap strong {MINUS} {rung} (mAP points)")
            c.set_ylabel(_models_axis_label(published, measure), fontsize=8.5)
            c.set_title(f"{published.benchmark}: {head}\n{note}", fontsize=9)
            c.margins(x=0.12, y=0.12)
            if len(d):
                annotate_points(c, d["gap"].to_numpy(), d["value"].to_numpy(), [split_label(s) for s in d["split"]],
                                xerr=(d["gap_lo"].to_numpy(), d["gap_hi"].to_numpy()), fontsize=7.5, color="0.15")
            d["panel"] = "models"
            data = pd.concat([data, d], ignore_index=True)
        if ax is None:
            fig.legend(handles=handles, loc="outside lower center", fontsize=7.5, frameon=False,
                       ncol=legend_columns([h.get_label() for h in handles], fig.get_figwidth(), 7.5, most=6))
        else:
            axes[0].legend(handles=handles, fontsize=7, loc="lower right", frameon=True, framealpha=0.85)
    return (axes[:n_panels] if n_panels > 1 else axes[0]), data


def write_ladder_figures(rows, negatives, correlations, published, folder) -> list:
    """``ladder_<negatives>.png``, ``.pdf`` and ``.csv`` (:func:`plot_ladder` and its numbers)
    into ``folder`` (created), one set per negatives; returns the picture paths written."""
    from pathlib import Path
    from .style import figure_of
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for neg in negatives:
        drawn, data = plot_ladder(rows, neg, correlations.get(neg), published)
        fig = figure_of(drawn)
        for fmt in ("png", "pdf"):
            path = out / f"ladder_{neg}.{fmt}"
            fig.savefig(path, dpi=150 if fmt == "png" else None, format=fmt,
                        metadata={"CreationDate": None} if fmt == "pdf" else {"Software": None})
            written.append(str(path))
        data.to_csv(out / f"ladder_{neg}.csv", index=False)
    return written
