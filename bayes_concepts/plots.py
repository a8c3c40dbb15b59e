"""Figures of the results Dataset and of a hypothesis space.

One convention, as in ArviZ: every ``plot_*`` function draws into the Axes it is given
(``ax=`` for one panel, ``axes=`` for a grid whose shape it documents), creates a figure
only when none is given (a :class:`matplotlib.figure.Figure` built directly, without
pyplot, so nothing depends on a display or a global figure registry), and returns
``(ax, data)``: the Axes drawn into (for a grid, a NumPy array of Axes of the documented
shape; the figure is ``ax.figure`` / ``axes.flat[0].figure``) and a tidy
:class:`pandas.DataFrame` holding exactly the numbers drawn (bar heights, interval ends,
counts).  A grid's shared legend and its title go on the figure that holds its axes.
Figures read only the results Dataset (:mod:`bayes_concepts.results`) and the space.

>>> axes, data = plot_comp_gap(ds)                                    # doctest: +SKIP
>>> axes, data = plot_entropies(ds)                                   # doctest: +SKIP
>>> ax, data = plot_synonym_classes(space)                            # doctest: +SKIP
>>> axes, data = plot_scene_properties(space)                         # doctest: +SKIP
>>> ax, data = plot_episode(space, episodes, 0, strong, weak)         # doctest: +SKIP
>>> axes, data = plot_modalities(space, episodes, 0)                  # doctest: +SKIP
>>> ax, data = plot_closure_families(ds_closure)                      # doctest: +SKIP
>>> ax.figure.savefig("episode.png")                                  # doctest: +SKIP
>>> paths = write_figures(ds, space, "figures/")                      # doctest: +SKIP

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
``plot_synonym_classes``
    CURI Figure 13: how many synonym classes (concepts with identical truth values on
    the scene bank) have each size; log-scaled count axis.
``plot_scene_properties``
    CURI Figure 12: share of the scene bank's objects taking each value of each attribute.
``plot_episode``
    One episode: support and query scenes drawn top-down on the 8 × 8 location grid,
    with labels, the true concept and the oracles' most probable concepts.
``plot_modalities``
    A few support scenes of one episode as schema, rendered picture and spectrogram.
``write_figures``
    Every figure above to PNG and PDF files, with a CSV of each one's ``data``.
``plot_closure_families``
    CLOSURE's test families: the ideal observers' mAP comp gap against the accuracy drops
    CLOSURE reports for its models, with Spearman's rank correlation of the two.
"""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import matplotlib.colors
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure  # built directly: no pyplot state, works under any (or no) display
from matplotlib.lines import Line2D

from .conceptworld.space import GENERATOR_LABELS, is_conceptworld, space_colors, space_grid
from .engine.rendered import find_rendered_bank
from .gap import paired_bootstrap
from .oracles import OracleSettings, strong_and_weak
from .scenes.grid import render_grids
from .scenes.render import render_scenes
from .scenes.sound import SoundSettings, log_mel_spectrogram, synthesize_scenes

__all__ = ["SPLIT_NAMES", "split_label", "learner_label", "learner_color", "split_order", "bootstrap_mean",
           "plot_comp_gap", "plot_entropies", "plot_synonym_classes", "plot_scene_properties", "plot_episode",
           "plot_modalities", "plot_closure_families", "write_figures", "comp_gap_data", "entropy_data",
           "plot_gap_parts", "gap_parts_data",
           "synonym_data", "scene_property_data", "object_encoding", "value_styles", "oracles_for"]

#: readable names of CURI's splits (seed paper section 3); other splits fall back to their id
SPLIT_NAMES = {
    "instance_iid": "Instance IID", "concept_iid": "Concept IID", "counting": "Counting",
    "extrinsic": "Extrinsic", "intrinsic": "Intrinsic", "boolean": "Boolean",
    "binding_color": "Binding (colour)", "binding_shape": "Binding (shape)", "complexity": "Complexity",
}
LEARNER_NAMES = {"strong": "strong oracle", "weak": "weak oracle", "atom": "atom oracle",
                 "compound": "compound oracle"}
#: strong green and weak red as in CURI's Figure 5; further learners (neural baselines) take
#: CURI's yellow / purple / gray, then a seaborn palette
LEARNER_COLORS = {"strong": "#1a9641", "weak": "#d7191c", "atom": "#a6d96a", "compound": "#fdae61"}
_EXTRA_COLORS = ("#e6ab02", "#7570b3", "#7f7f7f", "#1f78b4", "#a6761d", "#e7298a")
#: how CLEVR draws its eight colours
OBJECT_COLORS = {"gray": "#8c8c8c", "red": "#d62728", "blue": "#2b63c8", "green": "#2ca02c",
                 "brown": "#8c564b", "purple": "#8e44ad", "cyan": "#17becf", "yellow": "#f1c40f"}
SHAPE_MARKERS = {"cube": "s", "sphere": "o", "cylinder": "^"}
SIZE_POINTS = {"small": 70.0, "large": 190.0}  # marker area, points²
#: edge of an object's marker by material: (edge colour, line width in points)
RING_STYLES = {"rubber": ("0.55", 0.6), "metal": ("black", 2.0)}
ATTRIBUTE_TITLES = {"color": "colour", "shape": "shape", "material": "material", "size": "size",
                    "x": "x bin (1 = left of image)", "y": "y bin (1 = top of image)"}
#: which attribute each drawing channel of the episode view shows when the schema has it;
#: channels left free take the schema's other attributes in order (see ``object_encoding``)
CHANNEL_ATTRIBUTES = {"color": "color", "marker": "shape", "ring": "material", "size": "size"}
#: fallbacks, in order, for values the tables above do not know (see ``value_styles``)
_FALLBACK_MARKERS = ("D", "P", "X", "v", "h", "*", "p", "<", ">", "8", "H", "d")
_FALLBACK_RINGS = (("0.55", 0.6), ("black", 2.0), ("#b2182b", 2.0), ("#2166ac", 2.0), ("#762a83", 2.0),
                   ("#e08214", 2.0), ("#1b7837", 2.0))
_HATCHES = ("", "////", "....", "xxxx", "\\\\\\\\", "oo", "----", "++++", "||||", "**")
METRIC_LABELS = {"ap": "mAP (%)", "cba": "class-balanced accuracy (%)"}
MINUS = "\u2212"


#: Fonts that draw scripts DejaVu Sans lacks (CJK, Arabic, Hebrew, Indic, Thai), tried glyph by
#: glyph after the style's own font, so a non-Latin pair name is drawn, not as boxes; only the
#: families installed are named (matplotlib would log every missing one).
FALLBACK_FONTS = ("Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans CJK KR",
                  "Source Han Sans", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei", "Droid Sans Fallback",
                  "Microsoft YaHei", "SimHei", "MS Gothic", "Malgun Gothic", "AppleGothic", "Arial Unicode MS",
                  "Noto Sans Arabic", "Noto Sans Hebrew", "Noto Sans Devanagari", "Noto Sans Thai", "Unifont")


def fallback_fonts() -> list:
    """The families of :data:`FALLBACK_FONTS` installed here (as matplotlib's font list has them)."""
    from matplotlib import font_manager
    installed = {f.name for f in font_manager.fontManager.ttflist}
    return [name for name in FALLBACK_FONTS if name in installed]


def _style():
    """Seaborn's white-grid look, applied only while a figure is built (no global rcParams change),
    with the installed :data:`FALLBACK_FONTS` after its font for glyphs that font lacks."""
    import contextlib
    stack = contextlib.ExitStack()
    stack.enter_context(sns.axes_style("whitegrid"))
    stack.enter_context(sns.plotting_context("paper", font_scale=1.15))
    extra = fallback_fonts()
    if extra:
        family = list(matplotlib.rcParams["font.family"])
        stack.enter_context(matplotlib.rc_context({"font.family": family + [f for f in extra if f not in family]}))
    return stack


def split_label(name: str) -> str:
    """Readable split name: ``binding_color`` -> ``Binding (colour)``."""
    name = str(name)
    if name in SPLIT_NAMES:
        return SPLIT_NAMES[name]
    text = name.replace("_", " ")
    return text[:1].upper() + text[1:]


def learner_label(name: str) -> str:
    return LEARNER_NAMES.get(str(name), str(name))


def learner_color(name: str, learners=()) -> str:
    """Colour of a learner: strong green, weak red, the others in order of ``learners``."""
    name = str(name)
    if name in LEARNER_COLORS:
        return LEARNER_COLORS[name]
    others = [str(x) for x in learners if str(x) not in LEARNER_COLORS]
    i = others.index(name) if name in others else 0
    if i < len(_EXTRA_COLORS):
        return _EXTRA_COLORS[i]
    return matplotlib.colors.to_hex(sns.color_palette("husl", i + 1)[i])


def _learners(ds) -> list:
    """Learners of ``ds``, strong and weak first."""
    names = [str(x) for x in ds.learner.values.tolist()]
    return [n for n in ("strong", "weak") if n in names] + [n for n in names if n not in ("strong", "weak")]


def _cell(ds, negatives):
    negs = [str(x) for x in ds.negatives.values.tolist()]
    if negatives not in negs:
        raise ValueError(f"results have no {negatives!r} negatives (have: {', '.join(negs)})")
    return ds.sel(negatives=negatives)


def bootstrap_mean(x, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> tuple:
    """Mean of ``x`` (NaNs dropped) and its percentile bootstrap interval over entries.
    Returns (mean, lo, hi, n); NaNs when nothing is left."""
    x = np.asarray(x, np.float64)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return (np.nan, np.nan, np.nan, 0)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(n_boot, len(x)))
    means = x[idx].mean(axis=1)
    a = (1 - level) / 2
    return float(x.mean()), float(np.quantile(means, a)), float(np.quantile(means, 1 - a)), int(len(x))


def split_order(ds, negatives: str = "hard") -> list:
    """Splits ordered by mAP gap (mean strong − mean weak AP), largest first; ties keep
    the Dataset's order; splits whose gap is undefined go last."""
    cell = _cell(ds, negatives)
    names = [str(x) for x in ds.split.values.tolist()]
    if "strong" not in _learners(ds) or "weak" not in _learners(ds):
        return names
    with np.errstate(all="ignore"):
        gaps = [float(np.nanmean(cell["ap"].sel(split=s, learner="strong").values)
                      - np.nanmean(cell["ap"].sel(split=s, learner="weak").values)) for s in names]
    key = [(-g if np.isfinite(g) else np.inf, i) for i, g in enumerate(gaps)]
    return [names[i] for _, i in sorted(key)]


def _order(ds, negatives, order):
    """``order`` checked against the Dataset's splits, or the mAP-gap order."""
    if order is None:
        return split_order(ds, negatives)
    order = [str(s) for s in order]
    have = [str(x) for x in ds.split.values.tolist()]
    unknown = [s for s in order if s not in have]
    if unknown:
        raise ValueError(f"splits {', '.join(unknown)} are not in the results (have: {', '.join(have)})")
    return order


def _dodge(n: int, width: float = 0.36) -> np.ndarray:
    """Horizontal offsets of n series around an integer x position."""
    if n == 1:
        return np.zeros(1)
    return np.linspace(-width / 2, width / 2, n)


def _episodes_note(ds, negatives) -> str:
    n = int(_cell(ds, negatives).sizes["episode"])
    return f"{negatives} negatives, {n:,} test episode{'s' * (n != 1)} per split"


def _given_axes(axes, n: int, what: str, at_least: bool = False) -> np.ndarray:
    """``axes`` (an Axes or any array-like of Axes) as an object array, flattened row by row;
    a clear error when it holds fewer (or, unless ``at_least``, other) than ``n`` Axes."""
    flat = np.asarray(axes, dtype=object).ravel()
    if len(flat) < n or (len(flat) != n and not at_least):
        raise ValueError(f"{what} draws on {'at least ' if at_least else ''}{n} axes, got {len(flat)}")
    return flat


def _figure_of(drawn):
    """The figure of what a ``plot_*`` function returned: one Axes or an array of them."""
    return np.asarray(drawn, dtype=object).flat[0].figure


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
    cell = _cell(ds, negatives)
    order = _order(ds, negatives, order)
    learners = _learners(ds)
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
    order = _order(ds, negatives, order)
    data = comp_gap_data(ds, negatives, n_boot, seed, order)
    learners = _learners(ds)
    x = np.arange(len(order))
    oracles = [lr for lr in learners if lr in LEARNER_COLORS]
    models = [lr for lr in learners if lr not in LEARNER_COLORS]  # drawn as bars between the oracle lines
    bar_width = 0.5 / max(1, len(models))
    offsets = dict(zip(models, _dodge(len(models), 0.5 - bar_width)))
    with _style():
        if axes is None:
            axes = Figure(figsize=(max(8.0, 1.25 * len(order) + 2.5), 8.4), layout="constrained").subplots(
                2, 1, sharex=True)
        axes = _given_axes(axes, 2, "plot_comp_gap")
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
            if "strong" in learners and "weak" in learners:
                g = d[d.learner == "strong"].sort_values("order")
                w = d[d.learner == "weak"].set_index("split")["mean"]
                for xi, (_, r) in zip(x, g.iterrows()):
                    lo, hi = sorted((float(w[r["split"]]), float(r["mean"])))
                    if not (np.isfinite(r["gap"]) and np.isfinite(lo)):
                        continue
                    ax.bar(xi, hi - lo, bottom=lo, width=0.5, color="#fdae6b", alpha=0.35, linewidth=0, zorder=1,
                           label="comp gap (strong " + MINUS + " weak)" if xi == 0 else None)
                    small = hi - lo < 16
                    ax.annotate(f"{r['gap']:.1f}\n[{r['gap_ci_lo']:.1f}, {r['gap_ci_hi']:.1f}]",
                                (xi, lo if small else (lo + hi) / 2), xytext=(0, -8 if small else 0),
                                textcoords="offset points", ha="center", va="top" if small else "center",
                                fontsize=7.5, zorder=4, gid=f"gap:{metric}:{r['split']}",
                                bbox=dict(boxstyle="round,pad=0.25", fc="white", ec="#e6550d", lw=0.8, alpha=0.9))
            if metric == "cba":
                ax.axhline(50, color="0.35", linestyle=":", linewidth=1.2, zorder=0)
                ax.text(len(order) - 0.45, 49, "chance (50 %)", ha="right", va="top", fontsize=8, color="0.3")
            ax.set_ylim(-3, 106)
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
                   ncol=_legend_columns(labels, width, 10))
        fig.suptitle(_wrap_lines("Compositionality gap per split (" + _episodes_note(ds, negatives) + ")\n"
                                 "error bars: 95 % bootstrap CI of each mean over episodes;  boxes: comp gap in "
                                 "percentage points [paired bootstrap 95 % CI]"
                                 + ("\ntext up a learner's bar: learner " + MINUS + " weak oracle in percentage "
                                    "points [paired bootstrap 95 % CI]" if models else ""), width, 11.5),
                     fontsize=11.5)
    return axes, data


def _line_chars(width_in: float, fontsize: float) -> int:
    """About how many characters of ``fontsize`` points fit in ``width_in`` inches (an
    average character is taken as 0.55 em wide, with a margin)."""
    return max(20, int(0.92 * width_in * 72 / (0.55 * fontsize)))


def _wrap_lines(text: str, width_in: float, fontsize: float) -> str:
    """``text`` with each of its lines wrapped to fit a figure ``width_in`` inches wide."""
    import textwrap
    n = _line_chars(width_in, fontsize)
    return "\n".join(textwrap.fill(line, n) if line else line for line in text.split("\n"))


def _legend_columns(labels, width_in: float, fontsize: float, most: int = 5) -> int:
    """The most legend columns (at most ``most``) whose widest label (with its handle) fits
    ``width_in`` inches."""
    widest = max((len(str(lb)) for lb in labels), default=1) + 6  # the handle and the gap
    return max(1, min(most, len(labels), _line_chars(width_in, fontsize) // widest))


def gap_parts_data(ds, negatives: str = "hard", metric: str = "ap", n_boot: int = 1000, seed: int = 0,
                   order=None) -> pd.DataFrame:
    """The values of :func:`plot_gap_parts` (results with the atom and compound oracles:
    ``compute_gap(..., parts=True)``): one row per (split, part) for the three parts of the
    gap (``kind`` ``"part"``: ``part``, ``bottom`` and ``height`` of its segment in percent,
    ``ci_lo``/``ci_hi`` its paired bootstrap 95 % interval in percentage points) and one row per
    (split, learner) for every learner that is not an oracle (``kind`` ``"learner"``: ``mean``
    with its bootstrap interval).  Segments start at the weak oracle's mean and end at the
    strong oracle's; other results (no atom or compound oracle) are an error."""
    from .gap import GAP_PARTS
    if metric not in ("ap", "cba"):
        raise ValueError(f"metric must be 'ap' or 'cba', got {metric!r}")
    learners = _learners(ds)
    missing = [lr for lr in ("strong", "atom", "compound", "weak") if lr not in learners]
    if missing:
        raise ValueError(f"results have no {' or '.join(missing)} oracle: compute the gap with parts=True "
                         "(bayes-concepts gap --parts)")
    cell = _cell(ds, negatives)
    order = _order(ds, negatives, order)
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
    order = _order(ds, negatives, order)
    learners = [lr for lr in _learners(ds) if lr not in LEARNER_COLORS]
    x = np.arange(len(order))
    with _style():
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
        offsets = dict(zip(learners, _dodge(len(learners), 0.4)))
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
                     f"{_episodes_note(ds, negatives)}; segments in percentage points", fontsize=10)
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
    cell = _cell(ds, negatives)
    order = _order(ds, negatives, order)
    learners = [lr for lr in _learners(ds)
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
    order = _order(ds, negatives, order)
    data = entropy_data(ds, negatives, n_boot, seed, order)
    learners = list(dict.fromkeys(data["learner"]))
    x = np.arange(len(order))
    width = 0.8 / max(1, len(learners))
    offsets = dict(zip(learners, _dodge(len(learners), 0.8 - width)))
    with _style():
        if axes is None:
            axes = Figure(figsize=(max(8.0, 1.2 * len(order) + 2.5), 7.8), layout="constrained").subplots(
                2, 1, sharex=True)
        axes = _given_axes(axes, 2, "plot_entropies")
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
        fig.suptitle("Uncertainty of the oracles per split (" + _episodes_note(ds, negatives) + ")\n"
                     f"n = how many of the {n_total} episode{'s' * (n_total != 1)} have some concept the learner "
                     "knows that fits the "
                     "support (else it has no posterior); bars average over these n", fontsize=11)
    return axes, data


# ---------------------------------------------------------------------------------------
# 3. the space: synonym classes and scene properties
# ---------------------------------------------------------------------------------------

def synonym_data(space) -> pd.DataFrame:
    """Number of synonym classes of each size (1 .. largest; sizes no class has are 0)."""
    sizes = np.bincount(np.asarray(space.synonym_classes, np.int64))
    sizes = sizes[sizes > 0]
    hist = np.bincount(sizes)[1:] if len(sizes) else np.zeros(0, np.int64)
    return pd.DataFrame({"class_size": np.arange(1, len(hist) + 1), "n_classes": hist.astype(np.int64),
                         "n_concepts": hist.astype(np.int64) * np.arange(1, len(hist) + 1)})


def plot_synonym_classes(space, *, ax=None):
    """CURI Figure 13: how many synonym classes have 1, 2, ... members (concepts whose truth
    values agree on every scene of the bank), one bar per class size; count axis log-scaled.

    ``ax``: the Axes to draw on; default a new figure.  Returns ``(ax, data)``: ``data`` =
    :func:`synonym_data`, one row per class size 1 .. largest: ``n_classes`` (the bar
    height; sizes no class has get no bar) and ``n_concepts`` (size × classes)."""
    data = synonym_data(space)
    n_classes = int(data["n_classes"].sum())
    with _style():
        if ax is None:
            ax = Figure(figsize=(7.5, 4.6), layout="constrained").subplots()
        shown = data[data.n_classes > 0]
        ax.bar(shown["class_size"], shown["n_classes"], width=0.8 if len(data) <= 60 else 1.0,
               color=sns.color_palette("deep")[0], edgecolor="white", linewidth=0.5, gid="synonym_bars")
        ax.set_yscale("log")
        ax.set_ylim(0.7, max(2.0, float(data["n_classes"].max())) * 2.0)
        ax.set_xlabel("synonym-class size (concepts with an identical truth-value signature)")
        ax.set_ylabel("number of synonym classes (log scale)")
        if len(data) <= 25:
            ax.set_xticks(data["class_size"])
        ax.set_xlim(0.3, len(data) + 0.7)
        single = int(data.loc[data.class_size == 1, "n_classes"].sum())
        ax.set_title(f"Synonymy of concepts: {space.n_concepts:,} concepts form {n_classes:,} classes on "
                     f"{space.n_scenes:,} scenes\n{100 * single / max(1, n_classes):.0f} % of classes have a "
                     f"single member; the largest has {len(data)}", fontsize=11)
    return ax, data


def object_encoding(schema) -> dict:
    """Which attribute of ``schema`` each drawing channel of a scene shows.

    Returns ``{channel: attribute name or None}`` for ``color``, ``marker``, ``ring``
    (the marker's edge), ``size`` (marker area) and ``hatch``, plus ``position``: the pair
    ``("x", "y")`` when the schema has both (objects drawn at their bins), else None
    (objects drawn in a row in slot order); ``undrawn``: a tuple of the attributes no
    channel shows.  A channel shows the attribute :data:`CHANNEL_ATTRIBUTES` names when
    the schema has it; the channels left free take the schema's remaining attributes in
    schema order (``size`` only an ordered one).
    """
    names = [n for n in schema.names if n not in GENERATOR_LABELS]  # how a scene was made is not its property
    position = ("x", "y") if "x" in names and "y" in names else None
    free = [n for n in names if position is None or n not in position]
    encoding = {"position": position}
    for channel, name in CHANNEL_ATTRIBUTES.items():
        encoding[channel] = name if name in free else None
    taken = {n for c, n in encoding.items() if c != "position" and n is not None}
    free = [n for n in free if n not in taken]
    for channel in ("color", "marker", "ring", "size", "hatch"):
        if encoding.get(channel) is None:
            pick = next((n for n in free if channel != "size" or schema.attribute(n).ordered), None)
            encoding[channel] = pick
            if pick is not None:
                free.remove(pick)
    encoding["undrawn"] = tuple(free)
    return encoding


def _with_fallbacks(values, known: dict, pool) -> dict:
    """``known[v]`` where known, else the entries of ``pool`` not used by known values, in
    value order (cycled when there are more values than entries)."""
    out = {v: known[v] for v in values if v in known}
    spare = [p for p in pool if p not in out.values()] or list(pool)
    for i, v in enumerate(v for v in values if v not in known):
        out[v] = spare[i % len(spare)]
    return out


def _names_its_colour(value) -> bool:
    """Whether a value is drawn in the colour it names (CLEVR's, or one matplotlib knows)."""
    return value in OBJECT_COLORS or (isinstance(value, str) and len(value) > 1 and value.isalpha()
                                      and matplotlib.colors.is_color_like(value))


def value_styles(attribute, channel: str) -> dict:
    """How each value of ``attribute`` (a schema :class:`~bayes_concepts.scenes.Attribute`)
    is drawn on ``channel``; deterministic: a function of the attribute's values only.

    ``color``: hex colour: :data:`OBJECT_COLORS`, else the value itself when matplotlib knows
    it as a colour name (``olive``), else a husl palette over the remaining values in value
    order.  ``marker``: :data:`SHAPE_MARKERS`, else unused fallback markers in value order.
    ``ring``: ``(edge colour, line width in points)``: :data:`RING_STYLES`, else unused
    fallbacks (thin grey first, then thick black, red, blue, ...).  ``size``: marker area in
    points²: :data:`SIZE_POINTS` when it knows every value, else evenly spaced from 70 to 190
    in code order.  ``hatch``: a hatch pattern per code, none for the first.
    """
    values = list(attribute.values)
    if channel == "color":
        known = {v: OBJECT_COLORS[v] if v in OBJECT_COLORS else matplotlib.colors.to_hex(v)
                 for v in values if _names_its_colour(v)}
        rest = [v for v in values if v not in known]
        palette = [matplotlib.colors.to_hex(c) for c in sns.color_palette("husl", len(rest))] if rest else []
        return {v: known[v] if v in known else palette[rest.index(v)] for v in values}
    if channel == "marker":
        return _with_fallbacks(values, SHAPE_MARKERS, _FALLBACK_MARKERS)
    if channel == "ring":
        return _with_fallbacks(values, RING_STYLES, _FALLBACK_RINGS)
    if channel == "size":
        if all(v in SIZE_POINTS for v in values):
            return {v: SIZE_POINTS[v] for v in values}
        areas = np.linspace(70.0, 190.0, len(values)) if len(values) > 1 else [130.0]
        return {v: float(a) for v, a in zip(values, areas)}
    if channel == "hatch":
        return {v: _HATCHES[i % len(_HATCHES)] for i, v in enumerate(values)}
    raise ValueError(f"unknown drawing channel {channel!r} (expected color, marker, ring, size or hatch)")


def _scene_styles(schema) -> tuple:
    """``(encoding, {channel: {value: style}})`` of :func:`object_encoding` and :func:`value_styles`."""
    encoding = object_encoding(schema)
    styles = {c: value_styles(schema.attribute(encoding[c]), c)
              for c in ("color", "marker", "ring", "size", "hatch") if encoding[c] is not None}
    return encoding, styles


def scene_property_data(space) -> pd.DataFrame:
    """Objects of the scene bank per attribute value: count and share (%) of all objects."""
    codes = np.asarray(space.scene_codes)
    present = codes[:, :, 0] >= 0
    rows = []
    for a, attr in enumerate(space.schema.attributes):
        if attr.name in GENERATOR_LABELS:  # how a scene was generated, not a property of it
            continue
        vals = codes[:, :, a][present].astype(np.int64)
        counts = np.bincount(vals, minlength=attr.n_values)[: attr.n_values]
        total = counts.sum()
        for code, value in enumerate(attr.values):
            rows.append({"attribute": attr.name, "value": str(value), "code": code, "count": int(counts[code]),
                         "share": 100 * counts[code] / total if total else np.nan,
                         "uniform_share": 100 / attr.n_values})
    return pd.DataFrame(rows)


def plot_scene_properties(space, *, axes=None):
    """CURI Figure 12: one panel per attribute of the space's schema (CURI: colour, shape,
    material, size, x bin, y bin) with the share (%) of the scene bank's objects taking each
    value; dashed: the share if values were uniform.  The bars of the attribute the episode
    view draws as colour (:func:`object_encoding`) take its colours (:func:`value_styles`),
    the others one colour.

    ``axes``: at least one Axes per attribute, any shape, taken row by row in schema order
    (those left over are hidden); default a new figure of three columns.  The title goes on
    their figure.  Returns ``(axes, data)``: ``axes`` as given (an array) or the new
    (rows, 3) array; ``data``: :func:`scene_property_data`, one row per (attribute, value):
    ``count``, ``share`` (%, the bar height), ``uniform_share`` (the dashed line), plus
    ``bar_color`` (the bar's colour)."""
    data = scene_property_data(space)
    attrs = list(dict.fromkeys(data["attribute"])) if len(data) else []
    if not attrs:
        raise ValueError("scene properties: the space's scenes carry no property to plot (a ConceptWorld space's "
                         "scenes are grids; their only label, 'source', is how each was generated)")
    colour_attr = object_encoding(space.schema)["color"]
    plain = matplotlib.colors.to_hex(sns.color_palette("deep")[0])
    bar_colors = {a.name: [plain] * a.n_values for a in space.schema.attributes}
    if colour_attr is not None:
        attr = space.schema.attribute(colour_attr)
        styles = value_styles(attr, "color")
        bar_colors[colour_attr] = [styles[v] for v in attr.values]
    data["bar_color"] = [bar_colors[a][c] for a, c in zip(data["attribute"], data["code"])]
    ncol = 3
    nrow = int(np.ceil(len(attrs) / ncol))
    n_obj = int((np.asarray(space.scene_codes)[:, :, 0] >= 0).sum())
    with _style():
        if axes is None:
            axes = Figure(figsize=(11, 3.3 * nrow + 0.8), layout="constrained").subplots(nrow, ncol, squeeze=False)
        axes = np.asarray(axes, dtype=object)
        flat = _given_axes(axes, len(attrs), "plot_scene_properties", at_least=True)
        fig = flat[0].figure
        for ax, attr in zip(flat, attrs):
            d = data[data.attribute == attr]
            ax.bar(np.arange(len(d)), d["share"], color=list(d["bar_color"]), edgecolor="0.2", linewidth=0.4,
                   gid=f"prop:{attr}")
            ax.axhline(d["uniform_share"].iloc[0], color="0.3", linestyle="--", linewidth=1)
            ax.grid(axis="x", visible=False)
            slanted = sum(len(v) for v in d["value"]) > 24  # long labels (CURI's colours) are slanted
            ax.set_xticks(np.arange(len(d)), d["value"], rotation=35 if slanted else 0,
                          ha="right" if slanted else "center")
            title = ATTRIBUTE_TITLES.get(attr, attr)
            if attr in ("x", "y"):  # the first bin's own name (CURI's release binned from 0)
                title = title.replace("(1 =", f"({d['value'].iloc[0]} =")
            ax.set_title(title, fontsize=11)
            ax.set_ylabel("share of objects (%)")
            ax.set_ylim(0, max(d["share"].max(), d["uniform_share"].iloc[0]) * 1.18)
        for ax in flat[len(attrs):]:
            ax.set_visible(False)
        fig.suptitle(f"Object properties in the scene bank ({space.n_scenes:,} scenes, {n_obj:,} objects); "
                     "dashed line: share if every value were equally common", fontsize=12)
    return axes, data


# ---------------------------------------------------------------------------------------
# 4. one episode
# ---------------------------------------------------------------------------------------

def _scene_axes_label(label: int, topup: bool, relabelled: bool) -> str:
    text = "+" if label else MINUS
    if topup:
        text += " top-up"
    if relabelled:
        text += " relabelled"
    return text


def _object_cell(o, k: int, schema, encoding) -> tuple:
    """Grid cell (1-based column, row) of object ``o`` in slot ``k``: its x/y bins (by code
    order) when the encoding has a position, else column ``k + 1`` of row 1."""
    if encoding["position"] is None:
        return k + 1, 1
    ax_name, ay_name = encoding["position"]
    return (schema.attribute(ax_name).values.index(o[ax_name]) + 1,
            schema.attribute(ay_name).values.index(o[ay_name]) + 1)


def _draw_scene(ax, objects, grid, schema, encoding, styles):
    """Draw one scene's objects on ``ax``: ``grid = (nx, ny)`` cells; ``encoding, styles`` of
    :func:`_scene_styles` decide each object's colour, marker, edge, area and hatch."""
    nx, ny = grid

    def style(channel, o, default):
        name = encoding[channel]
        return styles[channel][o[name]] if name is not None else default

    cells = {}
    for k, o in enumerate(objects):
        cells.setdefault(_object_cell(o, k, schema, encoding), []).append(o)
    for (bx, by), objs in cells.items():
        k = len(objs)
        # several objects in one bin: spread them around the cell centre
        shifts = [(0.0, 0.0)] if k == 1 else [(0.27 * np.cos(2 * np.pi * i / k), 0.27 * np.sin(2 * np.pi * i / k))
                                              for i in range(k)]
        for o, (dx, dy) in zip(objs, shifts):
            edge, width = style("ring", o, RING_STYLES["rubber"])
            hatch = style("hatch", o, "")
            ax.scatter([bx + dx], [by + dy], s=style("size", o, 130.0), marker=style("marker", o, "o"),
                       c=[style("color", o, "0.5")], edgecolors=edge, linewidths=width, zorder=3,
                       clip_on=False, **({"hatch": hatch} if hatch else {}))
    ax.set_xlim(0.5, nx + 0.5)
    ax.set_ylim(ny + 0.5, 0.5)  # y bin 1 at the top, as in the image
    # the bin grid as two line collections (ticks are slow to build on 50 axes)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    ax.vlines(np.arange(1.5, nx), 0.5, ny + 0.5, colors="0.88", linewidth=0.5, zorder=0)
    ax.hlines(np.arange(1.5, ny), 0.5, nx + 0.5, colors="0.88", linewidth=0.5, zorder=0)
    ax.set_aspect("equal")


def _legend_handles(encoding, styles) -> list:
    """Legend entries of the episode view: one per value of the attributes drawn as marker,
    size, edge and hatch, and as colour when a colour is not named by its value."""
    from matplotlib.patches import Patch

    def label(channel, v):
        name = encoding[channel]
        return str(v) if name == CHANNEL_ATTRIBUTES.get(channel) else f"{name} = {v}"

    handles = []
    for v, m in styles.get("marker", {}).items():
        handles.append(Line2D([], [], marker=m, linestyle="none", color="0.6", markeredgecolor="0.4", markersize=8,
                              label=label("marker", v)))
    for v, area in styles.get("size", {}).items():
        handles.append(Line2D([], [], marker="o", linestyle="none", color="0.6", markeredgecolor="0.4",
                              markersize=np.sqrt(area), label=label("size", v)))
    for v, (edge, width) in sorted(styles.get("ring", {}).items(), key=lambda kv: -kv[1][1]):
        ring = " (black ring)" if edge == "black" else (" (ring)" if width > 1 else "")
        handles.append(Line2D([], [], marker="o", linestyle="none", color="0.8", markeredgecolor=edge,
                              markeredgewidth=width, markersize=9, label=label("ring", v) + ring))
    for v, h in styles.get("hatch", {}).items():
        handles.append(Patch(facecolor="0.85", edgecolor="0.3", hatch=h or None, label=label("hatch", v)))
    colours = styles.get("color", {})
    if any(not _names_its_colour(v) for v in colours):
        handles += [Line2D([], [], marker="o", linestyle="none", color=c, markersize=8, label=label("color", v))
                    for v, c in colours.items()]
    return handles


def _top_concepts(oracle, scenes, labels, hard, top):
    oracle.fit([int(s) for s in scenes], labels, hard=hard)
    ids, probs = oracle.posterior()
    return [(int(i), float(p)) for i, p in zip(ids[:top], probs[:top])], (np.asarray(ids), np.asarray(probs))


def _episode_images(space, scene_ids, image_size) -> np.ndarray:
    """Pictures uint8 (n, H, W, 3) of bank scenes: from the space's cached rendered bank of
    that size when it has one (:meth:`~bayes_concepts.spaces.hypothesis_space.HypothesisSpace.rendered_bank`),
    else rendered now."""
    h, w = (int(v) for v in image_size)
    ids = np.asarray(scene_ids, np.int64)
    bank = None
    if space.path is not None and space.has_pictures:
        bank = find_rendered_bank(space, "image", height=h, width=w)
    if bank is not None:
        return np.asarray(bank[ids])
    return render_scenes(np.asarray(space.scene_codes[ids]), space.schema, height=h, width=w)


def plot_episode(space, episodes, index: int = 0, strong_oracle=None, weak_oracle=None, top: int = 3, *,
                 modality: str = "schema", image_size=(160, 240), ax=None):
    """Episode ``index`` of ``episodes``: its support and query scenes drawn top-down (objects
    at their (x, y) bins, y bin 1 at the top), each titled with its label (+ / −, flagged
    when a top-up or relabelled), and a text box with the true concept and the ``top`` most
    probable concepts of the oracles (fitted here on the support when given).

    ``modality="image"`` shows every scene as its rendered picture instead
    (:func:`~bayes_concepts.scenes.render.render_scenes` at ``image_size`` = (height, width)
    pixels; read from the space's cached rendered bank of that size when there is one).

    How an object is drawn derives from the space's schema (:func:`object_encoding`,
    :func:`value_styles`, shown in the legend); for CURI: colour = object colour,
    square / circle / triangle = cube / sphere / cylinder, bigger = large, black ring =
    metal.  A schema without ``x``/``y`` draws a scene's objects in a row, in slot order.

    ``ax``: the Axes whose area the whole view is drawn in (each scene, the text box and
    the legend as inset axes: ``ax.child_axes``; it needs about the size a new figure would
    get, ``data.attrs["size_inches"]``); default a new figure of that size, the view's Axes
    covering it (the scenes are then axes of the figure).  Every scene's Axes has the gid
    ``"support:k"`` / ``"query:k"``.  Returns ``(ax, data)``: ``data`` one row per object
    drawn (set, position in the set, scene id, label, top-up and relabelled flags, the
    object's attribute values; the scene's mean pixel value ``image_mean`` when pictures are
    shown); ``data.attrs["concepts"]`` a DataFrame of the concepts in the text box (role,
    rank, concept id, readable form, posterior probability, whether a synonym of the true
    concept) and ``data.attrs["size_inches"]`` the view's (width, height)."""
    if modality not in ("schema", "image"):
        raise ValueError(f"episode view: modality must be 'schema' or 'image', got {modality!r}")
    if modality == "image" and not space.has_pictures:
        raise ValueError(f"episode view: a {space.kind} space has no pictures (use modality='schema')")
    e = int(index)
    if not 0 <= e < len(episodes):
        raise IndexError(f"episode {index} out of range (0..{len(episodes) - 1})")
    h = int(episodes.concept[e])
    hard = episodes.meta.get("negatives", "hard") == "hard"
    grids = is_conceptworld(space)  # scenes drawn as their grids
    sets = {}
    for side in ("support", "query"):
        sets[side] = dict(scenes=np.asarray(getattr(episodes, f"{side}_scenes")[e]),
                          labels=np.asarray(getattr(episodes, f"{side}_labels")[e]),
                          topup=np.asarray(getattr(episodes, f"{side}_topup")[e]),
                          relabelled=np.asarray(getattr(episodes, f"{side}_relabelled")[e]))
    sup = sets["support"]
    classes = np.asarray(space.synonym_classes)
    concept_rows = [{"role": "true concept", "rank": 0, "concept": h, "readable": space.program(h).readable,
                     "probability": np.nan, "synonym_of_true": True}]
    text = [f"true concept (#{h}):  {space.program(h).readable}"]
    for name, oracle in (("strong", strong_oracle), ("weak", weak_oracle)):
        if oracle is None:
            continue
        tops, (ids, probs) = _top_concepts(oracle, sup["scenes"], sup["labels"], hard, top)
        true_mass = float(probs[classes[ids] == classes[h]].sum()) if len(ids) else 0.0
        text.append("")
        if not tops:
            text.append(f"{learner_label(name)}: no concept it knows fits the support")
            continue
        text.append(f"{learner_label(name)} (p(true concept or a synonym) = {true_mass:.2f}), "
                    f"top {len(tops)} of {len(ids):,} consistent concepts:")
        for r, (c, p) in enumerate(tops, 1):
            syn = classes[c] == classes[h]
            mark = "  [= true concept]" if c == h else ("  [synonym of the true concept]" if syn else "")
            line = f"    {r}.  p = {p:.3f}   {space.program(c).readable}{mark}"
            text.append(line if len(line) <= 160 else line[:156] + " ...")
            concept_rows.append({"role": f"{name} oracle", "rank": r, "concept": c,
                                 "readable": space.program(c).readable, "probability": p,
                                 "synonym_of_true": bool(syn)})
    rows = []
    n_per_set = max(len(s["scenes"]) for s in sets.values())
    ncol = 5 if n_per_set > 5 else max(1, n_per_set)
    nrow = int(np.ceil(n_per_set / ncol))
    schema = space.schema
    encoding, styles = _scene_styles(schema)
    if encoding["position"] is not None:
        nx, ny = (schema.attribute(a).n_values for a in encoding["position"])
    else:
        nx, ny = schema.max_objects, 1
    images = {}
    if modality == "image":
        ih, iw = (int(v) for v in image_size)
        for side in ("support", "query"):
            images[side] = _episode_images(space, sets[side]["scenes"], (ih, iw))
    # fixed layout in inches (constrained layout is slow with 50 axes)
    cell, gap_x, row_h, head, set_head, block_gap, margin = 1.25, 0.2, 1.6, 0.6, 0.3, 0.5, 0.2
    cell_h = cell
    if modality == "image":  # cells shaped like the pictures
        cell, cell_h = (1.8, 1.8 * ih / iw) if ih <= iw else (1.25 * iw / ih, 1.25)
        row_h = cell_h + 0.35
    text_h = max(2.0, 0.19 * len(text) + 0.6)
    block_w = ncol * cell + (ncol - 1) * gap_x
    width = 2 * block_w + block_gap + 2 * margin
    height = head + set_head + nrow * row_h + 0.15 + text_h
    with _style():
        new_figure = ax is None
        if new_figure:  # the scenes as axes of the figure; ``ax`` an empty, invisible Axes covering it
            fig = Figure(figsize=(width, height))
            ax = fig.add_axes((0, 0, 1, 1), gid="episode_view")
            ax.axis("off")
            ax.patch.set_visible(False)
            add_axes, put_text = fig.add_axes, fig.text
        else:  # the view drawn inside ``ax``: its area is the canvas
            fig, canvas = ax.figure, ax
            canvas.axis("off")

            def add_axes(rect):
                return canvas.inset_axes(rect)

            def put_text(x, y, s, **kw):
                return canvas.text(x, y, s, transform=canvas.transAxes, **kw)

        def box(left, top, w, h):  # inches from the top-left corner -> figure fractions
            return [left / width, 1 - (top + h) / height, w / width, h / height]

        for b, side in enumerate(("support", "query")):
            s = sets[side]
            x0 = margin + b * (block_w + block_gap)
            n_pos = int(s["labels"].sum())
            put_text((x0 + block_w / 2) / width, 1 - (head + 0.05) / height,
                     f"{side} set: {n_pos} positive (+), {len(s['labels']) - n_pos} negative ({MINUS})",
                     ha="center", va="top", fontsize=12, fontweight="bold")
            for k in range(len(s["scenes"])):
                r, c = divmod(k, ncol)
                sax = add_axes(box(x0 + c * (cell + gap_x), head + set_head + r * row_h + 0.3, cell, cell_h))
                sid = int(s["scenes"][k])
                scene = space.scene(sid)
                extra = {}
                if modality == "image":
                    sax.imshow(images[side][k], interpolation="antialiased", aspect="auto")
                    sax.set_xticks([])
                    sax.set_yticks([])
                    sax.grid(False)
                    extra = {"image_mean": float(images[side][k].mean())}
                elif grids:  # a ConceptWorld scene is its grid (its label is how it was generated)
                    grid = space_grid(space, sid)
                    sax.imshow(render_grids(grid, space_colors(space))[0], interpolation="nearest", aspect="auto")
                    sax.set_xticks([])
                    sax.set_yticks([])
                    sax.grid(False)
                    extra = {"points": int((grid >= 0).sum())}
                else:
                    _draw_scene(sax, scene["objects"], (nx, ny), schema, encoding, styles)
                lab = int(s["labels"][k])
                title = _scene_axes_label(lab, bool(s["topup"][k]), bool(s["relabelled"][k]))
                sax.set_title(title, fontsize=13 if len(title) == 1 else 9, color="#1a7d36" if lab else "#b2182b",
                              fontweight="bold", pad=2)
                for spine in sax.spines.values():
                    spine.set_visible(True)
                    spine.set_edgecolor("#1a9641" if lab else "#d7191c")
                    spine.set_linewidth((2.4 if lab else 1.4) if modality == "image" else (1.8 if lab else 0.9))
                sax.set_gid(f"{side}:{k}")
                for o in scene["objects"]:
                    rows.append({"set": side, "position": k, "scene": sid, "label": lab,
                                 "topup": bool(s["topup"][k]), "relabelled": bool(s["relabelled"][k]),
                                 **{a: v for a, v in o.items() if a not in GENERATOR_LABELS}, **extra})
        text_top = head + set_head + nrow * row_h + 0.15
        legend_w = 2.6
        text_ax = add_axes(box(margin, text_top, width - 2 * margin - legend_w, text_h - 0.15))
        legend_ax = add_axes(box(width - margin - legend_w, text_top, legend_w, text_h - 0.15))
        text_ax.axis("off")
        text_ax.text(0.005, 0.97, "\n".join(text), va="top", ha="left", fontsize=9.5,
                     transform=text_ax.transAxes, gid="concepts_text",
                     bbox=dict(boxstyle="round,pad=0.5", fc="#f7f7f7", ec="0.6"))
        legend_ax.axis("off")
        where = f"seen from above, {nx}×{ny} bins" if encoding["position"] else "in slot order"
        undrawn = f"\nnot drawn: {', '.join(encoding['undrawn'])}" if encoding["undrawn"] else ""
        if grids:
            size = int(space.params.get("grid_size", 32))
            legend_ax.text(0.98, 0.97, f"grids: {size}×{size} points,\none pixel a point, black empty",
                           transform=legend_ax.transAxes, ha="right", va="top", fontsize=8.5,
                           bbox=dict(boxstyle="round,pad=0.4", fc="white", ec="0.7"))
        elif modality == "image":
            legend_ax.text(0.98, 0.97, f"pictures: {ih}×{iw} pixels, rendered\nfrom the scene codes "
                           "(CLEVR-like);\nmetal shiny, rubber matte;\nx bins left to right, y bins far to near",
                           transform=legend_ax.transAxes, ha="right", va="top", fontsize=8.5,
                           bbox=dict(boxstyle="round,pad=0.4", fc="white", ec="0.7"))
        else:
            legend_ax.legend(handles=_legend_handles(encoding, styles), loc="upper right", fontsize=8.5, ncol=2,
                             title=f"objects ({where}){undrawn}", title_fontsize=9, frameon=True)
        split = episodes.meta.get("split")
        what = f"split {split_label(split)}, " if split else ""
        if encoding["position"]:
            xs, ys = (schema.attribute(a).values for a in encoding["position"])
            layout = f"scene seen from above: x bin {xs[0]}..{xs[-1]} left to right, y bin {ys[0]} at the top"
        else:
            layout = "scene, its objects left to right in slot order"
        if modality == "image":
            layout = "scene rendered as a picture"
        elif grids:
            layout = "grid scene"
        title = (f"Episode {e} ({what}{episodes.meta.get('negatives', '?')} negatives); each "
                 f"{'picture' if modality == 'image' else 'square'} is one {layout}.\n"
                 "Title: label (+ / " + MINUS + "); top-up = random negative filling a hard set, relabelled = "
                 "random scene that satisfies the concept")
        if new_figure:
            fig.suptitle(title, fontsize=11, y=1 - 0.08 / height, va="top")
        else:
            put_text(0.5, 1 - 0.08 / height, title, fontsize=11, ha="center", va="top")
    data = pd.DataFrame(rows)
    data.attrs["size_inches"] = (width, height)
    data.attrs["concepts"] = pd.DataFrame(concept_rows)
    return ax, data


# ---------------------------------------------------------------------------------------
# 5. everything at once
# ---------------------------------------------------------------------------------------

def oracles_for(space, split, results=None):
    """Strong and weak oracles of ``split`` with the oracle settings recorded in ``results``
    (``attrs["oracle_settings"]``), else the defaults."""
    settings = None
    if results is not None and "oracle_settings" in results.attrs:
        settings = OracleSettings(**json.loads(results.attrs["oracle_settings"]))
    return strong_and_weak(space, split, settings)


def write_figures(results, space, out_dir, formats=("png", "pdf"), episodes=None, *, episode_index: int = 0,
                  oracles=None, n_boot: int = 1000, seed: int = 0, dpi: int = 150) -> list:
    """Write every figure of ``results`` (and ``space``) to ``out_dir``, each drawn by its
    ``plot_*`` function on a new figure: ``comp_gap_hard``,
    ``comp_gap_easy`` (when the results have easy negatives), ``gap_parts_hard`` /
    ``gap_parts_easy`` (results with the atom and compound oracles), ``entropy`` (hard negatives, or
    the first negatives setting present), ``synonym_classes``, ``scene_properties`` and,
    when ``episodes`` is given, ``episode_view`` (episode ``episode_index``; with the top
    concepts of ``oracles = (strong, weak)`` when given).  One file per format (PNG at
    ``dpi``) and one CSV of the drawn values per figure (``<name>.csv``; the episode view
    also ``episode_view_concepts.csv``).  Returns the written paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    negs = [str(x) for x in results.negatives.values.tolist()]
    jobs = []
    for neg in ("hard", "easy"):
        if neg in negs:
            jobs.append((f"comp_gap_{neg}", lambda neg=neg: plot_comp_gap(results, neg, n_boot, seed)))
    if {"atom", "compound"} <= set(_learners(results)):
        for neg in ("hard", "easy"):
            if neg in negs:
                jobs.append((f"gap_parts_{neg}", lambda neg=neg: plot_gap_parts(results, neg, "ap", n_boot, seed)))
    ent_neg = "hard" if "hard" in negs else negs[0]
    jobs.append(("entropy", lambda: plot_entropies(results, ent_neg, n_boot, seed)))
    jobs.append(("synonym_classes", lambda: plot_synonym_classes(space)))
    if any(n not in GENERATOR_LABELS for n in space.schema.names):  # a ConceptWorld space has none to draw
        jobs.append(("scene_properties", lambda: plot_scene_properties(space)))
    if episodes is not None:
        strong, weak = oracles if oracles is not None else (None, None)
        jobs.append(("episode_view", lambda: plot_episode(space, episodes, episode_index, strong, weak)))
    paths = []
    for name, make in jobs:
        drawn, data = make()
        fig = _figure_of(drawn)
        for fmt in formats:
            p = out / f"{name}.{fmt}"
            # no creation date or version stamp: the same figure is the same bytes
            fig.savefig(p, dpi=dpi if fmt == "png" else None, format=fmt,
                        metadata={"CreationDate": None} if fmt == "pdf" else {"Software": None})
            paths.append(p)
        p = out / f"{name}.csv"
        data.to_csv(p, index=False)
        paths.append(p)
        extra = data.attrs.get("concepts")
        if extra is not None:
            p = out / f"{name}_concepts.csv"
            extra.to_csv(p, index=False)
            paths.append(p)
    return paths


# ---------------------------------------------------------------------------------------
# 6. one support set in the three modalities
# ---------------------------------------------------------------------------------------

def plot_modalities(space, episodes, index: int = 0, axes=None, *, n_scenes: int = 5, height: int = 80,
                    width: int = 120):
    """``n_scenes`` support scenes of episode ``index`` (its first positives, then about
    ``n_scenes // 2`` of its first negatives, fewer when the set has fewer) as a learner sees them in each
    modality: row 1 the schema (objects drawn top-down at their bins, as in
    :func:`plot_episode`), row 2 the rendered picture (:func:`~bayes_concepts.scenes.render.render_scenes`,
    ``height × width`` pixels), row 3 the log-mel spectrogram of the synthesised sound
    (:func:`~bayes_concepts.scenes.sound.log_mel_spectrogram`, 64 mel bands, time left to right).

    ``axes``: 3 × n Axes to draw on, n the number of scenes drawn (``n_scenes`` unless the
    support set has fewer), any array-like read row by row into shape (3, n) (e.g.
    ``fig.subplots(3, n)``); default a new figure.  The legend of the schema row (below the
    panels) and the title go on their figure.  Returns ``(axes, data)``: ``axes`` the (3, n)
    array; ``data`` one row per scene drawn (set position, scene id, label, objects as text,
    mean pixel value of the picture shown, spectrogram shape (bands, frames) and its maximum
    in natural-log power)."""
    e = int(index)
    if not 0 <= e < len(episodes):
        raise IndexError(f"episode {index} out of range (0..{len(episodes) - 1})")
    all_labels = np.asarray(episodes.support_labels[e])
    pos, neg = np.flatnonzero(all_labels == 1), np.flatnonzero(all_labels == 0)
    n_neg = min(len(neg), int(n_scenes) // 2)
    n_pos = min(len(pos), int(n_scenes) - n_neg)
    n_neg = min(len(neg), int(n_scenes) - n_pos)
    chosen = np.concatenate([pos[:n_pos], neg[:n_neg]])
    scenes, labels = np.asarray(episodes.support_scenes[e])[chosen], all_labels[chosen]
    n = len(scenes)
    codes = np.asarray(space.scene_codes[scenes])
    schema = space.schema
    images = render_scenes(codes, schema, height=height, width=width)
    settings = SoundSettings()
    specs = log_mel_spectrogram(synthesize_scenes(codes, schema, settings), settings.rate)
    encoding, styles = _scene_styles(schema)
    grid = ((schema.attribute(encoding["position"][0]).n_values, schema.attribute(encoding["position"][1]).n_values)
            if encoding["position"] is not None else (schema.max_objects, 1))
    with _style():
        if axes is None:
            fig = Figure(figsize=(2.3 * n + 0.9, 6.6), layout="constrained")
            axes = np.asarray(fig.subplots(3, n, squeeze=False))
        else:
            axes = _given_axes(axes, 3 * n, "plot_modalities").reshape(3, n)
            fig = axes[0, 0].figure
        lo, hi = float(np.percentile(specs, 5)), float(specs.max())
        rows = []
        for k in range(n):
            sid, lab = int(scenes[k]), int(labels[k])
            scene = space.scene(sid)
            _draw_scene(axes[0, k], scene["objects"], grid, schema, encoding, styles)
            axes[0, k].set_title(f"{'+' if lab else MINUS}  scene {sid}", fontsize=10,
                                 color="#1a7d36" if lab else "#b2182b", fontweight="bold")
            axes[1, k].imshow(images[k], interpolation="nearest")
            axes[1, k].grid(False)
            axes[2, k].grid(False)
            axes[1, k].set_xticks([])
            axes[1, k].set_yticks([])
            axes[2, k].imshow(specs[k], origin="lower", aspect="auto", cmap="magma", vmin=lo, vmax=hi,
                              extent=(0.0, settings.duration, 0, specs.shape[1]))
            axes[2, k].set_yticks([])
            axes[2, k].set_xlabel("time (s)", fontsize=8)
            axes[2, k].tick_params(labelsize=7)
            rows.append({"position": k, "scene": sid, "label": lab,
                         "objects": "; ".join(" ".join(str(v) for v in o.values()) for o in scene["objects"]),
                         "image_mean": float(images[k].mean()), "spectrogram_shape": specs[k].shape,
                         "spectrogram_max": float(specs[k].max())})
        for r, name in enumerate(("schema", f"image\n{height}×{width}", "sound\nlog-mel (64 bands)")):
            axes[r, 0].set_ylabel(name, fontsize=10)
        fig.legend(handles=_legend_handles(encoding, styles), loc="outside lower center", ncol=8, fontsize=8,
                   title="schema row: objects seen from above", title_fontsize=8, frameon=False)
        h = int(episodes.concept[e])
        fig.suptitle(f"Episode {e}: the support set in three modalities; true concept {space.program(h).readable}",
                     fontsize=10)
    return axes, pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------
# 7. CLOSURE's families: the ideal observers' gap beside the models' reported drops
# ---------------------------------------------------------------------------------------

#: one marker per reported model, in the order of ``Reported.models``
_MODEL_MARKERS = ("o", "s", "^", "v", "P", "X", "D", "<", ">", "h", "p", "*")


def _closure_gaps(results, negatives: str, n_boot: int, seed: int) -> dict:
    """``{split: (gap, lo, hi, episodes)}``: the mAP comp gap (points) with its 95 % interval,
    from a results Dataset (paired bootstrap over episodes, as :func:`~bayes_concepts.gap.summarise`
    computes it), from :func:`~bayes_concepts.gap.summarise`'s rows, or from the JSON that
    ``bayes-concepts gap --json`` writes (a mapping with ``results``)."""
    if hasattr(results, "data_vars"):
        cell = _cell(results, negatives)
        if "strong" not in _learners(results) or "weak" not in _learners(results):
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
    from .closure import Reported, load_reported
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
        raise ValueError("reported must be None (CLOSURE's tables), a bayes_concepts.closure.Reported, or a "
                         f"mapping model -> {{family: drop in points}}; got {type(reported).__name__}")
    return pd.DataFrame(rows, columns=["family", "model", "drop"])


def _signed(v: float) -> str:
    """``v`` with its sign and two decimals, a true minus for negatives: +0.07, −0.21."""
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


def _label_points(ax, x, y, names, colors) -> None:
    """Write ``names[i]`` beside the point (x[i], y[i]): right of it where that space is free
    of the other points and of labels already written, else below-right, above, below,
    above-left or below-left (a greedy check of approximate text boxes in display points)."""
    ax.get_xlim(), ax.get_ylim()  # settle the autoscaled limits before reading positions
    scale = ax.figure.dpi / 72
    pts = ax.transData.transform(np.column_stack([x, y])) / scale  # display points
    placed = []
    candidates = ((9, 5, "left"), (9, -15, "left"), (0, 10, "center"), (0, -23, "center"), (-9, 5, "right"),
                  (-9, -15, "right"))
    for i in np.argsort(x, kind="stable"):
        w, h = 6.4 * len(str(names[i])) + 4, 13
        chosen = candidates[0]
        for dx, dy, ha in candidates:
            x0 = pts[i, 0] + dx - {"left": 0, "center": w / 2, "right": w}[ha]
            box = (x0, pts[i, 1] + dy - 2, x0 + w, pts[i, 1] + dy + h)
            hits_box = any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed)
            hits_point = any(box[0] - 6 < px < box[2] + 6 and box[1] - 6 < py < box[3] + 6
                             for j, (px, py) in enumerate(pts) if j != i)
            if not hits_box and not hits_point:
                chosen = (dx, dy, ha)
                placed.append(box)
                break
        else:
            placed.append((pts[i, 0] + 9, pts[i, 1] + 3, pts[i, 0] + 9 + w, pts[i, 1] + 5 + h))
        dx, dy, ha = chosen
        ax.annotate(str(names[i]), (x[i], y[i]), xytext=(dx, dy), textcoords="offset points", ha=ha, va="bottom",
                    fontsize=9.5, color=colors[i], fontweight="bold", zorder=6, gid=f"closure:label:{names[i]}",
                    bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.75))


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
    :func:`~bayes_concepts.closure.load_reported`), a :class:`~bayes_concepts.closure.Reported`,
    or a mapping model -> {family: drop in points} (e.g. your own models).  ``ax``: the Axes
    to draw on; default a new figure.

    Returns ``(ax, data)``: ``data`` one row per family, in the order of the results:
    ``gap``, ``gap_ci_lo``, ``gap_ci_hi`` (x of the circle and its error bar), ``episodes``,
    ``mean_drop`` (y of the circle; NaN-skipping mean over models), ``min_drop``/``max_drop``
    (the thin line), ``n_models``, ``gap_rank`` and ``drop_rank`` (1 = largest).
    ``data.attrs``: ``drops`` (one row per family and model: the drop drawn as that model's
    marker), ``spearman`` (``{"rho", "p", "n"}`` of gap vs mean drop) and ``spearman_by_model``
    (one row per model: ``rho``, ``p``, ``n``)."""
    from matplotlib.transforms import ScaledTranslation
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

    palette = [matplotlib.colors.to_hex(c) for c in sns.color_palette("dark", max(len(families), 3))]
    colors = dict(zip(families, palette))
    nudges = dict(zip(models, _dodge(len(models), 3.2 * (len(models) - 1)) if len(models) > 1 else [0.0]))
    with _style():
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
                      [colors[f] for f in families])
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


# ---------------------------------------------------------------------------------------
# the oracle ladder
# ---------------------------------------------------------------------------------------

def ladder_data(profile, negatives: str = "hard") -> pd.DataFrame:
    """The values of :func:`plot_ladder`'s profile panel: one row per (split, rung) with the
    rung's position on the ladder (``order``), its mAP (percent) and its gap to the strong
    oracle (mAP points) with the paired bootstrap 95 % interval.  ``profile``: a
    :func:`~bayes_concepts.ladder.ladder_profile` Dataset or its
    :func:`~bayes_concepts.ladder.ladder_summary` rows."""
    from .ladder import ladder_summary
    rows = ladder_summary(profile) if hasattr(profile, "sel") else profile
    out = []
    for r in rows:
        if r["negatives"] != negatives:
            continue
        for i, (lb, v) in enumerate(r["rungs"].items()):
            out.append({"split": r["split"], "rung": lb, "order": i, "map": v["map"], "gap": v["gap"],
                        "gap_lo": v["gap_ci"][0], "gap_hi": v["gap_ci"][1]})
    if not out:
        raise ValueError(f"the ladder has no {negatives}-negative cells")
    return pd.DataFrame(out)


def plot_ladder(profile, negatives: str = "hard", correlations=None, published=None, rung: str | None = None,
                *, ax=None):
    """The ladder profiles of a benchmark's splits and, given ``published`` model results, one
    rung's gap against the models' difficulty.

    Left: each split's mAP (percent) on every rung, bottom of the ladder (the memoriser) to
    the top (the strong oracle), one line per split.  Right (only with ``published``, a
    :class:`~bayes_concepts.published.PublishedResults`): the gap (strong − rung, mAP points,
    with its 95 % interval) of ``rung`` (default: the rung with the largest mean-model
    Spearman ρ in ``correlations``, else the memoriser) per condition against the mean
    model's difficulty (higher = harder), ρ in the title.  ``ax``: one Axes (profiles only) or
    two (default a new figure).  Returns ``(axes, data)``: data = :func:`ladder_data`, with
    the scatter's rows (``panel`` = ``"models"``) appended."""
    data = ladder_data(profile, negatives)
    rungs = list(dict.fromkeys(data.sort_values("order")["rung"]))
    splits = list(dict.fromkeys(data["split"]))
    two = published is not None
    with _style():
        if ax is None:
            fig = Figure(figsize=(13.0 if two else 7.5, 5.0), layout="constrained")
            axes = fig.subplots(1, 2 if two else 1, squeeze=False).ravel()
        else:
            axes = np.atleast_1d(np.asarray(ax, dtype=object))
            if two and len(axes) < 2:
                raise ValueError("plot_ladder with published results draws two panels: give two Axes")
        a = axes[0]
        palette = sns.color_palette("husl", len(splits))
        x = np.arange(len(rungs))
        for color, s in zip(palette, splits):
            d = data[data.split == s].set_index("rung").reindex(rungs)
            a.plot(x, d["map"].to_numpy(), marker="o", color=color, label=split_label(s), gid=f"split:{s}")
        a.set_xticks(x, rungs, rotation=40, ha="right", fontsize=8)
        a.set_ylim(-3, 103)
        a.set_ylabel(METRIC_LABELS["ap"])
        a.set_title(f"Ladder profiles ({negatives} negatives): memoriser to strong oracle", fontsize=10)
        a.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        data["panel"] = "profile"
        if two:
            b = axes[1]
            corr_rungs = (correlations or {}).get("rungs", {})
            if rung is None:
                finite = {lb: v["mean_model"]["spearman"] for lb, v in corr_rungs.items()
                          if lb != "strong" and np.isfinite(v["mean_model"]["spearman"])}
                rung = max(finite, key=finite.get) if finite else rungs[0]
            if rung not in rungs:
                raise ValueError(f"rung {rung!r} is not on this ladder ({', '.join(rungs)})")
            from .ladder import published_difficulty
            diff = published_difficulty(published, splits, negatives)["mean_model"].dropna()
            d = data[(data.rung == rung) & data.split.isin(diff.index)].copy()
            d["difficulty"] = [float(diff[s]) for s in d["split"]]
            b.errorbar(d["gap"], d["difficulty"], xerr=np.vstack([d["gap"] - d["gap_lo"], d["gap_hi"] - d["gap"]]),
                       marker="o", linestyle="none", color="#7570b3", capsize=2.5, gid=f"rung:{rung}")
            for _, r in d.iterrows():
                b.annotate(split_label(r["split"]), (r["gap"], r["difficulty"]), fontsize=7, xytext=(4, 3),
                           textcoords="offset points")
            rho = corr_rungs.get(rung, {}).get("mean_model", {})
            note = (f"Spearman ρ {rho['spearman']:.2f} [{rho['spearman_ci'][0]:.2f}, {rho['spearman_ci'][1]:.2f}]"
                    if rho and np.isfinite(rho.get("spearman", np.nan)) else "ρ not computed")
            b.set_xlabel(f"gap strong {MINUS} {rung} (mAP points)")
            b.set_ylabel(f"models' difficulty ({published.measure}; higher = harder)")
            b.set_title(f"{published.benchmark}: rung {rung} against the mean model\n{note}", fontsize=10)
            d["panel"] = "models"
            data = pd.concat([data, d], ignore_index=True)
    return axes if two else axes[0], data
