"""The difficulty report of a benchmark: one page a reviewer can read.

:func:`audit_splits` audits every split of a space (:func:`bayes_concepts.gap.audit`:
sizes, leakage, comp gap with paired-bootstrap intervals for hard and easy negatives, weak
coverage, entropies, atom and compound divergence, the hardest held-out concepts);
:func:`audit_frame` puts them in one table; :func:`write_report` writes the page as
Markdown (figures as PNG files in ``<name>_files/``) or as one self-contained HTML file
(figures embedded), chosen by the file's suffix (``.md`` / ``.html``).

The page holds, in order: what was audited (space, kind, settings); the table of the
splits; comp gap and compound divergence side by side (and, with three or more splits,
where the two rank the splits differently); per held-out split the atoms and compounds
the test side over-represents and the concepts the weak oracle gets most wrong; one
episode of the hardest held-out concept with both oracles' top concepts.

Every ``plot_*`` function follows :mod:`bayes_concepts.plots`' convention: it draws into
``ax=`` (a new figure when None) and returns ``(ax, data)``, the Axes and a DataFrame of
the values drawn.

>>> reports = audit_splits(space, load_splits(space), n_episodes=2000)       # doctest: +SKIP
>>> print(format_audit_table(audit_frame(reports)))                            # doctest: +SKIP
>>> write_report(space, reports, "audit.md")                                   # doctest: +SKIP
"""
from __future__ import annotations

import base64
import html
import io
import time
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import BayesConceptsError
from .params import RUN_PARAMS, Interval, run_given, validate_params
from .divergence import concept_structure, episode_weights, side_distribution
from .episodes import episode_shapes
from .gap import audit, build_exclusion_lines, build_note_lines, cell_seed, ci_text
from .gap_cells import draw_cell
from .oracles import OracleSettings, strong_and_weak
from .plots import plot_episode, plot_gap_parts
from .plots.style import figure_style, split_label
from .results import get_attr
from .splits import side_space

__all__ = ["audit_splits", "audit_frame", "format_audit_table", "rank_disagreements", "plot_gap_vs_divergence",
           "plot_gap_intervals", "plot_side_distributions", "hardest_episode", "write_report", "ReportError"]


class ReportError(BayesConceptsError):
    """A report that cannot be written as asked (e.g. an unknown file suffix)."""


# ==================================================================================== audit

#: fewer usable test concepts than this, and the build's line for the split says how to get more
FEW_DRAWABLE = 5


def check_drawable(space, splits, episode_shape=None):
    """Refuse, in one line naming the split, the counts and the fix
    (:func:`~bayes_concepts.episodes.drawable_fix`), a split none of whose test concepts has the
    items an episode needs, before anything runs (as
    :func:`~bayes_concepts.episodes.episode_shapes` does for every gap run)."""
    named = splits if isinstance(splits, dict) else {s.name: s for s in splits}
    episode_shapes(space, named, episode_shape)


@validate_params({**RUN_PARAMS, "n_worst": Interval(int, 0)})
def audit_splits(space, splits=None, n_episodes: int = 2000, settings=None, seed: int = 0, n_worst: int = 10,
                 log=None, query_negatives: str | None = None, hard_mode: str = "union", episode_shape=None,
                 learners=None) -> list:
    """:func:`~bayes_concepts.gap.audit` of every split (a dict ``{name: Split}`` or a list),
    with the concept structure for the divergences computed once.  Each report gains
    ``seconds`` (wall time of its audit) and ``split_object`` (the Split).  ``log(str)``
    receives one line per split.  ``query_negatives`` and ``hard_mode`` draw the episodes as
    :func:`~bayes_concepts.gap.compute_gap` does (a protocol's; default: as the support's,
    union).  Works on relational spaces alike (their atoms and compounds: see
    :mod:`bayes_concepts.divergence`).  ``space`` may be a :class:`~bayes_concepts.run.Run`,
    which settles the splits, settings and episodes itself.  ``learners``: scored on the same
    episodes (as for :func:`~bayes_concepts.gap.compute_gap`; name -> {split: learner} scores
    one on those splits only), shown between the oracles (:func:`audit_frame`'s
    ``attrs["learners"]``); not with a Run."""
    if run_given(space, splits=splits, settings=settings, query_negatives=query_negatives,
                 episode_shape=episode_shape, hard_mode=None if hard_mode == "union" else hard_mode):
        if learners:
            from .errors import BayesConceptsError
            raise BayesConceptsError("learners: score them with audit_splits(space, splits, ..., learners=...), "
                                     "not with a Run")
        return space.audit(n_episodes, seed, n_worst=n_worst, log=log)
    check_drawable(space, splits, episode_shape)
    structure = concept_structure(space)
    out = []
    for split in (splits.values() if isinstance(splits, dict) else splits):
        t = time.perf_counter()
        r = audit(space, split, n_episodes, settings, seed, n_worst, structure=structure,
                  query_negatives=query_negatives, hard_mode=hard_mode, episode_shape=episode_shape,
                  learners=learners)
        r["seconds"] = time.perf_counter() - t
        r["split_object"] = split
        if log is not None:
            log(f"audited {split.name} in {r['seconds']:.1f} s")
        out.append(r)
    return out


def audit_frame(reports: list) -> pd.DataFrame:
    """One row per audited split: sizes (``train``, ``val``, ``test``), ``leakage``, for hard
    and easy negatives the mAP and CBA gaps with 95 % intervals (percentage points;
    ``map_gap_hard``, ``map_gap_hard_lo``, ...), the weak oracle's coverage (% of test
    episodes where some training concept fits the support), the strong oracle's posterior and
    predictive entropies (nats, hard negatives), ``atom_divergence``, ``compound_divergence``,
    ``seconds`` and, for results that record them, ``ap_tolerance`` and ``ap_bound_max`` (the
    largest certified bound on an episode's AP).  When learners were scored on the audit's
    episodes, ``attrs["learners"]`` holds their table (:func:`~bayes_concepts.gap.format_models`),
    which :func:`format_audit_table` prints after the splits."""
    rows = []
    for r in reports:
        st, d = r["stats"], r["divergence"]
        row = {"split": r["split"], "train": st["train"], "val": st["val"], "test": st["test"],
               "leakage": st["leakage"]}
        for g in r["gap"]:
            neg = g["negatives"]
            for key in ("map", "cba"):
                row[f"{key}_gap_{neg}"] = g["gap"][key]
                row[f"{key}_gap_{neg}_lo"], row[f"{key}_gap_{neg}_hi"] = g["gap"][f"{key}_ci"]
            row[f"weak_coverage_{neg}"] = 100 * (1 - g["weak_empty_share"])
            if "ap_tolerance" in g:  # the AP tolerance and the largest certified bound
                row["ap_tolerance"] = g["ap_tolerance"]
                row["ap_bound_max"] = max(row.get("ap_bound_max", 0.0), g["ap_bound_max"])
            for part, value in g.get("parts", {}).get("map", {}).items():  # the mAP gap in parts
                if part != "total" and not part.endswith("_ci"):
                    row[f"map_{part}_{neg}"] = value
            if neg == "hard":
                row["posterior_entropy"] = g["posterior_entropy"]
                row["predictive_entropy"] = g["predictive_entropy"]
                row["episodes"] = g["episodes"]
        row["atom_divergence"] = d["atom_divergence"]
        row["compound_divergence"] = d["compound_divergence"]
        row["seconds"] = r.get("seconds", np.nan)
        rows.append(row)
    df = pd.DataFrame(rows)
    gap_rows = [g for r in reports for g in r["gap"]]
    models = list(dict.fromkeys(name for g in gap_rows for name in g.get("learners", {})))
    if models:  # learners scored on the audit's episodes: placed between the oracles
        from .gap import format_models
        df.attrs["learners"] = format_models(gap_rows, models)
    return df


def _ci(df, row, key) -> str:
    m, lo, hi = (row.get(f"{key}{s}") for s in ("", "_lo", "_hi"))
    if m is None or not np.isfinite(m):
        return "–"
    return f"{m:.1f} {ci_text(lo, hi)}"


def _cells(df: pd.DataFrame) -> tuple:
    head = ["split", "train", "val", "test", "leakage", "mAP gap hard", "CBA gap hard", "mAP gap easy",
            "weak cov. hard", "weak cov. easy", "H post", "H pred", "atom div.", "compound div."]
    parts = [f"map_{p}_hard" for p in ("novel_arrangements", "novel_compounds", "novel_atoms")]
    with_parts = all(k in df for k in parts)
    if with_parts:
        head.insert(6, "parts hard (arr./comp./atoms)")
    rows = []
    for _, r in df.iterrows():
        r = r.to_dict()

        def num(k, fmt):
            v = r.get(k)
            return "–" if v is None or (isinstance(v, float) and not np.isfinite(v)) else format(v, fmt)
        rows.append([str(r["split"]), f"{r['train']:,}", f"{r['val']:,}", f"{r['test']:,}", f"{r['leakage']:,}",
                     _ci(df, r, "map_gap_hard"), _ci(df, r, "cba_gap_hard"), _ci(df, r, "map_gap_easy"),
                     num("weak_coverage_hard", ".1f") + "%", num("weak_coverage_easy", ".1f") + "%",
                     num("posterior_entropy", ".2f"), num("predictive_entropy", ".3f"),
                     num("atom_divergence", ".3f"), num("compound_divergence", ".3f")])
        if with_parts:
            rows[-1].insert(6, " / ".join(num(k, ".1f") for k in parts))
    return head, rows


def format_audit_table(df: pd.DataFrame) -> str:
    """The audit table as plain text (one line per split)."""
    head, rows = _cells(df)
    widths = [max(len(x[k]) for x in [head] + rows) for k in range(len(head))]
    fmt = lambda r: "  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths)))
    lines = [fmt(head), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows]
    lines.append("gaps: strong - weak oracle in percentage points with paired bootstrap 95% intervals; weak cov.: "
                 "test episodes in which some training concept fits the support; H: strong oracle's entropies (nats, "
                 "hard negatives); divergences: 1 - Chernoff coefficient (alpha 0.5 atoms, 0.1 compounds), train vs "
                 "test, weighted by the episode distribution"
                 + ("; parts: the hard mAP gap as novel arrangements (compound - weak oracle) / novel compounds "
                    "(atom - compound) / novel atoms (strong - atom)" if "parts hard (arr./comp./atoms)" in head else ""))
    if "ap_tolerance" in df and (df["ap_tolerance"] > 0).any():
        lines.append(f"AP within {df['ap_tolerance'].max():g} of the exact AP in every episode (certified per "
                     f"episode; largest bound {df['ap_bound_max'].max():.2g})")
    note = constant_note(df)
    if note:
        lines.append(note)
    if df.attrs.get("learners"):
        lines += ["", df.attrs["learners"]]
    return "\n".join(lines)


def rank_disagreements(df: pd.DataFrame, a: str = "map_gap_hard", b: str = "compound_divergence") -> pd.DataFrame:
    """Ranks of the splits by columns ``a`` and ``b`` (1 = largest; ties share the mean rank),
    their difference ``b − a``, and Spearman's ρ in ``attrs["spearman"]`` (NaN for < 3
    splits, or when ``a`` or ``b`` is the same on every split: ``attrs["constant"]`` then lists
    those columns, and there is no correlation to state).  Rows ordered by |rank difference|,
    largest first."""
    out = df[["split", a, b]].copy()
    out[f"rank_{a}"] = out[a].rank(ascending=False)
    out[f"rank_{b}"] = out[b].rank(ascending=False)
    out["rank_difference"] = out[f"rank_{b}"] - out[f"rank_{a}"]
    constant = [c for c in (a, b) if len(out) >= 2 and np.ptp(out[c].to_numpy(np.float64)) <= CONSTANT_TOLERANCE]
    rho = (float(out[f"rank_{a}"].corr(out[f"rank_{b}"])) if len(out) >= 3 and not constant else float("nan"))
    out = out.reindex(out["rank_difference"].abs().sort_values(ascending=False, kind="stable").index)
    out = out.reset_index(drop=True)
    out.attrs["spearman"] = rho
    out.attrs["constant"] = constant
    return out


#: a column whose values across splits differ by no more than this is constant (stated, not correlated)
CONSTANT_TOLERANCE = 5e-4


def constant_note(df: pd.DataFrame, columns=("atom_divergence", "compound_divergence")) -> str:
    """``compound divergence is 1.000 on every split (constant: it cannot rank them)`` for the
    ``columns`` whose values are the same on every split of ``df`` (2 splits or more), else ``""``."""
    if len(df) < 2:
        return ""
    same = [(c, float(df[c].iloc[0])) for c in columns
            if c in df and np.ptp(df[c].to_numpy(np.float64)) <= CONSTANT_TOLERANCE]
    if not same:
        return ""
    return ("; ".join(f"{c.replace('_', ' ')} is {v:.3f} on every split" for c, v in same)
            + f" (constant: {'it cannot rank' if len(same) == 1 else 'they cannot rank'} the splits, and no rank "
              "correlation with the gap is stated)")


def episode_note(reports: list) -> list:
    """One line per audited split with episode exclusions: the usable and excluded test concepts
    (count, first names, rule); then :func:`episode_footer`."""
    lines = []
    for r in reports:
        ep = r.get("episodes")
        if not ep:
            continue
        ex = ep["excluded"]
        lines.append(f"{r['split']}: {ep['usable']:,} usable test concept{'s' * (ep['usable'] != 1)}, "
                     f"{ex['count']:,} excluded" + (f" ({', '.join(ex['first'])}" + (", ..." if ex["count"] > len(
                         ex["first"]) else "") + ")" if ex["count"] else "")
                     + f"; episodes {ep['shape']['positives']}+{ep['shape']['negatives']} support, "
                       f"{ep['shape']['query_positives']}+{ep['shape']['query_negatives']} query")
    return lines + episode_footer(reports)


def episode_footer(reports: list) -> list:
    """What holds for every split at once: one line per kind of what the space's build left
    out and of what it noted, and the rule by which test concepts are excluded (when some split excludes any)."""
    first = next((r["episodes"] for r in reports if r.get("episodes")), None)
    if first is None:
        return []
    lines = build_exclusion_lines(first.get("space")) + build_note_lines(first.get("notes"))
    if any(r.get("episodes", {}).get("excluded", {}).get("count") for r in reports):
        lines.append(f"excluded test concepts: {first['excluded']['rule']}")
    return lines


def episode_table(reports: list) -> tuple:
    """``(head, rows)``: per audited split with an episode record, the episode shape, the
    usable test concepts and the excluded ones (count and first names)."""
    head = ["split", "episode shape (support; query)", "usable test concepts", "excluded", "first excluded"]
    rows = []
    for r in reports:
        ep = r.get("episodes")
        if not ep:
            continue
        sh, ex = ep["shape"], ep["excluded"]
        more = ", ..." if ex["count"] > len(ex["first"]) else ""
        rows.append([r["split"], f"{sh['positives']}+{sh['negatives']}; {sh['query_positives']}+{sh['query_negatives']}",
                     f"{ep['usable']:,}", f"{ex['count']:,}", ", ".join(ex["first"]) + more if ex["count"] else ""])
    return head, rows


# ================================================================================= figures
def _axes(ax, size=(5.5, 4.0)):
    """``(figure, ax)``: those of the given ``ax``, else a new figure of ``size`` inches and its Axes."""
    if ax is not None:
        return ax.figure, ax
    from matplotlib.figure import Figure
    fig = Figure(figsize=size, layout="constrained")
    return fig, fig.add_subplot()


def plot_gap_vs_divergence(df: pd.DataFrame, ax=None, divergence: str = "compound_divergence",
                           gap: str = "map_gap_hard", hue: str | None = None, xlim=(-0.03, 1.08),
                           labelled=None) -> tuple:
    """Scatter of the comp gap (column ``gap`` of ``df``, percentage points, with its 95 %
    interval as error bars when the frame has ``<gap>_lo``/``_hi``) against a divergence
    (column ``divergence``, in [0, 1]), one labelled point per row (split) of :func:`audit_frame`;
    ``hue``: a column whose values colour the points (e.g. the benchmark); ``xlim``: the
    divergence axis (default the whole [0, 1]); ``labelled``: bool per row, which points get a
    label (default all).  ``ax``: the Axes to draw on; default a new figure.

    Returns ``(ax, data)``: ``data`` one row per point drawn: ``split``, ``label`` (its
    text), the divergence (x), the gap (y), ``hue``'s column and the interval ends."""
    import seaborn as sns
    data = df.copy()
    data["label"] = [split_label(s) for s in data["split"]]
    groups = list(dict.fromkeys(data[hue])) if hue else [None]
    from .plots.style import category_colors
    palette = dict(zip(groups, category_colors(max(3, len(groups)))))
    with figure_style():
        fig, ax = _axes(ax)
        for g in groups:
            d = data if g is None else data[data[hue] == g]
            err = None
            if f"{gap}_lo" in d:
                err = np.vstack([d[gap] - d[f"{gap}_lo"], d[f"{gap}_hi"] - d[gap]])
            ax.errorbar(d[divergence], d[gap], yerr=err, fmt="o", color=palette[g], ecolor=palette[g],
                        elinewidth=1, capsize=2, markersize=6, label=None if g is None else str(g))
        ax.set_xlim(*xlim)
        ax.set_ylim(min(-4.0, float(np.nanmin(data[gap])) - 4), max(100.0, float(np.nanmax(data[gap])) + 4))
        keep = np.ones(len(data), bool) if labelled is None else np.asarray(labelled, bool)
        bars = ((data[f"{gap}_lo"].to_numpy(float)[keep], data[f"{gap}_hi"].to_numpy(float)[keep])
                if f"{gap}_lo" in data else None)
        _place_labels(ax, data[divergence].to_numpy(float)[keep], data[gap].to_numpy(float)[keep],
                      list(data["label"][keep]), right_of=xlim[0] + 0.75 * (xlim[1] - xlim[0]), yerr=bars)
        ax.set_xlabel({"compound_divergence": "compound divergence", "atom_divergence": "atom divergence"}
                      .get(divergence, divergence))
        ax.set_ylabel(_gap_label(gap))
        if hue:
            ax.legend(fontsize=8, loc="best")
    return ax, data[["split", "label", divergence, gap] + ([hue] if hue else [])
                    + [c for c in (f"{gap}_lo", f"{gap}_hi") if c in data]].reset_index(drop=True)


def _place_labels(ax, xs, ys, labels, right_of: float = None, fontsize: float = 8.0, yerr=None):
    """Label each point beside it, off the other labels, the points and their vertical error
    bars ``yerr`` ((lo, hi)) (:func:`bayes_concepts.plots.labels.annotate_points`; the highest
    points first).  ``right_of`` is kept for callers; the placement tries both sides of every point."""
    from .plots.labels import annotate_points
    order = list(np.argsort(-np.asarray(ys, float), kind="stable"))
    annotate_points(ax, xs, ys, labels, order=order, fontsize=fontsize, yerr=yerr)


def _gap_label(gap: str) -> str:
    metric = "mAP" if gap.startswith("map") else "CBA"
    neg = "hard" if "hard" in gap else "easy"
    return f"comp gap, {metric} ({neg} negatives, points)"


def plot_gap_intervals(df: pd.DataFrame, ax=None, metric: str = "map") -> tuple:
    """The comp gap (``metric``: ``"map"`` or ``"cba"``; percentage points) of every split of
    :func:`audit_frame`'s ``df`` with its 95 % interval, hard and easy negatives side by side
    (horizontal bars, splits top to bottom in table order).  ``ax``: the Axes to draw on;
    default a new figure.  Returns ``(ax, data)``: ``data`` one row per bar: ``split``,
    ``label``, ``negatives``, ``gap`` (the bar's length), ``lo`` and ``hi`` (its error bar)."""
    import seaborn as sns
    rows = []
    for _, r in df.iterrows():
        for neg in ("hard", "easy"):
            k = f"{metric}_gap_{neg}"
            if k in r and np.isfinite(r[k]):
                rows.append({"split": r["split"], "label": split_label(r["split"]), "negatives": neg,
                             "gap": r[k], "lo": r[f"{k}_lo"], "hi": r[f"{k}_hi"]})
    data = pd.DataFrame(rows)
    with figure_style():
        fig, ax = _axes(ax, (5.5, 0.45 * len(df) + 1.2))
        labels = list(dict.fromkeys(data["label"]))
        colours = dict(zip(("hard", "easy"), sns.color_palette("deep", 2)))
        for j, neg in enumerate(("hard", "easy")):
            d = data[data["negatives"] == neg]
            y = np.array([labels.index(t) for t in d["label"]]) + (j - 0.5) * 0.38
            ax.barh(y, d["gap"], height=0.36, color=colours[neg], label=f"{neg} negatives")
            ax.errorbar(d["gap"], y, xerr=np.vstack([d["gap"] - d["lo"], d["hi"] - d["gap"]]), fmt="none",
                        ecolor="0.2", elinewidth=1, capsize=2)
        ax.set_yticks(np.arange(len(labels)), labels)
        ax.invert_yaxis()
        ax.set_xlabel(f"comp gap, {'mAP' if metric == 'map' else 'CBA'} (points, 95% interval)")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)  # beside: off the bars
    return ax, data


def plot_side_distributions(space, split, kind: str = "compound", top: int = 12, ax=None, structure=None,
                            beta: float = 0.2, episode_shape=None) -> tuple:
    """The ``top`` atoms or compounds (``kind``: ``"atom"`` or ``"compound"``) with the largest
    |p_test − p_train| under the episode-weighted distributions of
    :mod:`bayes_concepts.divergence` (concepts weighted by ``exp(-beta · length)``; shares in
    [0, 1]), train and test bars side by side.  ``ax``: the Axes to draw on; default a new
    figure.  ``episode_shape``: which concepts can fill an episode (an
    :class:`~bayes_concepts.episodes.EpisodeShape`, its dict or ``"P,N[,QP,QN]"`` text; None:
    the split spec's ``[episodes]`` table, else 5+20 each).  Returns ``(ax, data)``: ``data``
    one row per atom or compound drawn, largest difference first (ties: the larger share
    first, then by name): ``type`` (its name), ``p_train`` and ``p_test`` (the bar lengths);
    ``data.attrs["tied_left_out"]``: how many more tie with the last one drawn (said on the axis)."""
    import seaborn as sns

    from .episodes import EpisodeShape
    shape = EpisodeShape.parse(episode_shape if episode_shape is not None
                               else (getattr(split, "spec", None) or {}).get("episodes"),
                               f"split {split.name}: episode shape")
    st = structure if structure is not None else concept_structure(space)
    counts, names = (st.atoms, st.atom_names) if kind == "atom" else (st.compounds, st.compound_names)
    dist = {}
    for side in ("train", "test"):
        ids = split.ids(side)
        dist[side] = np.nan_to_num(side_distribution(counts, ids, episode_weights(space, ids, beta, shape.positives,
                                                                                  shape.query_positives)))
    diff = np.round(np.abs(dist["test"] - dist["train"]), 12)
    # ties (many in a pair space) broken by the larger share, then the name -- not by which comes first
    every = sorted(range(len(diff)), key=lambda j: (-diff[j], -(dist["train"][j] + dist["test"][j]), str(names[j])))
    order = every[:top]
    tied = sum(1 for j in every[top:] if diff[j] == diff[order[-1]]) if order and len(every) > top else 0
    data = pd.DataFrame({"type": [names[j] for j in order], "p_train": dist["train"][order],
                         "p_test": dist["test"][order]})
    data.attrs["tied_left_out"] = int(tied)
    with figure_style():
        fig, ax = _axes(ax, (5.5, 0.32 * len(data) + 1.3))
        y = np.arange(len(data))
        colours = sns.color_palette("deep", 2)
        ax.barh(y - 0.2, data["p_train"], height=0.38, color=colours[0], label="train")
        ax.barh(y + 0.2, data["p_test"], height=0.38, color=colours[1], label="test")
        ax.set_yticks(y, [t if len(t) <= 28 else t[:26] + "…" for t in data["type"]], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(f"share of {kind}s (episode-weighted)"
                      + (f"\n{tied:,} more tied with the last shown, not drawn" if tied else ""))
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)  # beside: off the bars
    return ax, data


def hardest_episode(space, report, settings=None, seed: int = 0) -> tuple:
    """(episodes, index, strong, weak, shown): the hard-negative test episodes the audit scored,
    redrawn exactly as the comp gap drew them (same seed, episode shape, query negatives and
    hard-negative mode, read from the results' attributes; a by-set split's on its test-set
    items, :func:`bayes_concepts.splits.side_space`), the index of the one with the largest
    strong − weak AP, the oracles of the split, and the space whose scene ids the episodes hold
    (``space``, or a by-set split's test-set items)."""
    ds = report["results"]
    name = report["split"]
    cell = ds.sel(split=name, negatives="hard")
    n = int(cell.sizes["episode"])
    split = report["split_object"]
    query_negatives = ds.attrs.get("query_negatives", "same as support")
    shown = side_space(space, split, "test")
    eps = draw_cell(shown, name, split, n, "hard", cell_seed(seed, name, "hard"),
                    None if query_negatives == "same as support" else query_negatives,
                    ds.attrs.get("hard_mode", "union"), get_attr(ds, "episode_shape", {}).get(name))
    if not np.array_equal(eps.concept, cell["concept"].values):
        raise ReportError(f"split {name!r}: the redrawn episodes differ from the audited ones (different seed?)")
    diff = cell["ap"].sel(learner="strong").values - cell["ap"].sel(learner="weak").values
    index = int(np.nanargmax(diff)) if np.isfinite(diff).any() else 0
    strong, weak = strong_and_weak(shown, split, settings)
    return eps, index, strong, weak, shown


# ================================================================================= writing
def _fig_png(fig, dpi: int = 130) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def _md_table(head, rows) -> str:
    esc = lambda c: str(c).replace("|", "\\|")
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _html_table(head, rows) -> str:
    out = ["<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>")
    return "\n".join(out + ["</tbody></table>"])


def _settings_text(settings) -> str:
    st = settings if settings is not None else OracleSettings()
    prior = f"{st.prior} prior" + (f" (beta {st.beta:g})" if st.prior == "length" else "")
    lik = f"{st.likelihood} likelihood" + (f" (epsilon {st.epsilon:g})" if st.likelihood == "noisy" else "")
    ap = f", AP to within {st.tolerance:g} (certified per episode)" if st.tolerance > 0 else ""
    return f"{prior}, {lik}, weak-empty policy {st.weak_empty}{ap}"


def _hard_map_gap(report) -> float:
    """The hard-negative mAP gap of an audit report; -inf when it has none."""
    gaps = [g["gap"]["map"] for g in report["gap"] if g["negatives"] == "hard"]
    return float(gaps[0]) if gaps and np.isfinite(gaps[0]) else -np.inf


def _parts_blocks(reports) -> list:
    """The report's section on the gap in parts (audits with the atom and compound oracles):
    a table of the three parts of the hard-negative mAP gap per split and their figure."""
    with_parts = [r for r in reports if any("parts" in g for g in r["gap"])]
    if not with_parts:
        return []
    import xarray as xr
    rows = []
    for r in with_parts:
        g = next(g for g in r["gap"] if g["negatives"] == "hard" and "parts" in g)
        p, sizes = g["parts"]["map"], r.get("oracle_sizes", {})
        rows.append([split_label(r["split"]), *(f"{g[lr]['map']:.1f}" for lr in ("weak", "compound", "atom", "strong")),
                     *(f"{p[k]:.1f} {ci_text(*p[k + '_ci'])}"
                       for k in ("novel_arrangements", "novel_compounds", "novel_atoms")),
                     " / ".join(f"{sizes[k]:,}" for k in ("weak", "compound", "atom", "strong")) if sizes else "–"])
    blocks = [("h2", "The gap in parts"),
              ("p", "Two oracles sit between the weak and the strong one, on the same episodes: the compound oracle "
                    "knows every concept whose atoms and compounds (parent-child sub-trees; for attribute-object "
                    "pairs, the pair) all occur in train concepts, the atom oracle every concept whose atoms all "
                    "do. The hard-negative mAP gap is the sum of three parts (percentage points, paired bootstrap "
                    "95 % intervals): novel arrangements of seen compounds (compound - weak), novel compounds "
                    "(atom - compound) and novel atoms (strong - atom)."),
              ("table", ["split", "weak", "compound", "atom", "strong", "novel arrangements", "novel compounds",
                         "novel atoms", "concepts (weak / compound / atom / strong)"], rows)]
    sets = [r["results"] for r in with_parts]
    if len({d.sizes["episode"] for d in sets}) == 1:
        from matplotlib.figure import Figure
        ds = xr.concat(sets, dim="split", combine_attrs="override")
        fig = Figure(figsize=(max(6.0, 1.1 * len(sets) + 2.5), 5.2), layout="constrained")
        plot_gap_parts(ds, "hard", ax=fig.add_subplot())
        blocks.append(("figure", "gap_parts", fig, "The hard-negative mAP gap of each split in its three parts, "
                       "from the weak oracle's mAP (bottom of the bar) to the strong oracle's (top)."))
    return blocks


def _ladder_blocks(ladder_rows) -> list:
    """The report's section on the oracle ladder (:func:`bayes_concepts.ladder.ladder_summary`
    rows): each split's gap to the strong oracle on every rung (hard negatives) and where it
    stops being hard, and the profiles' figure."""
    from .ladder import SOLVED_WITHIN
    from .plots import plot_ladder
    rows = [r for r in (ladder_rows or []) if r["negatives"] == "hard"]
    if not rows:
        return []
    labels = list(rows[0]["rungs"])
    table = [[split_label(r["split"]), *(f"{r['rungs'][lb]['gap']:.1f}" for lb in labels), r["solved_at"] or "–"]
             for r in rows]
    blocks = [("h2", "The oracle ladder"),
              ("p", "Ideal learners between the weak oracle (the memoriser) and the strong one, each with one more "
                    "ability, scored on the same hard-negative episodes: recombiners of seen compounds and atoms, a "
                    "learner bounded by the training concepts' length, one that considers only a sample of "
                    "hypotheses, one whose prior is learned from the training concepts. Each cell is the rung's "
                    f"mAP gap to the strong oracle (percentage points); solved at: the lowest rung within "
                    f"{SOLVED_WITHIN:g} points of it."),
              ("table", ["split", *labels, "solved at"], table)]
    from .plots import figure_of
    fig = figure_of(plot_ladder(rows, "hard")[0])
    blocks.append(("figure", "ladder", fig, "Each split's mAP on the nested ladder (memoriser, compound, atom, strong "
                   "oracle) and on the other rungs (hard negatives)."))
    return blocks


def _blocks(space, reports, settings, seed, title, episode_view: bool, ladder=None) -> list:
    """The page as blocks: ("h1"|"h2"|"p", text), ("table", head, rows), ("figure", name, fig, caption)."""
    df = audit_frame(reports)
    kind = space.kind
    sha = space.manifest_sha256()
    what = "scenes" if kind == "program" else "items"
    b = [("h1", title or "Difficulty report"),
         ("p", f"Space: {kind} space{f' `{space.path}`' if space.path else ''} with {space.n_concepts:,} concepts "
               f"({space.n_synonym_classes:,} synonym classes) over {space.n_scenes:,} {what}"
               f"{f', manifest sha256 `{sha[:12]}`' if sha else ''}. Oracle settings: "
               f"{_settings_text(settings)}; "
               f"{int(df['episodes'].iloc[0]):,} test episodes per split and negatives, seed {seed}."),
         ("h2", "Splits at a glance")]
    head, rows = _cells(df)
    b.append(("table", head, rows))
    b.append(("p", "Comp gap = metric of the strong oracle (knows train and test concepts) minus the weak oracle "
                   "(train concepts only), with paired bootstrap 95 % intervals over episodes. Leakage: held-out "
                   "concepts with a synonym (same extension) in train. Weak coverage: test episodes in which some "
                   "training concept fits the support. Atom / compound divergence (Keysers et al. 2020): 1 minus the "
                   "Chernoff coefficient (alpha 0.5 / 0.1) of the train and test distributions over atoms and "
                   "compounds, each concept weighted as episodes draw it (exp(-0.2 l))."))
    from matplotlib.figure import Figure
    fig = Figure(figsize=(11, max(3.6, 0.45 * len(df) + 1.4)), layout="constrained")
    a1, a2 = fig.subplots(1, 2)
    plot_gap_intervals(df, ax=a1)
    plot_gap_vs_divergence(df, ax=a2)
    b.append(("figure", "gap_and_divergence", fig, "Left: comp gap (mAP) per split, hard and easy negatives. "
              "Right: hard-negative mAP gap against compound divergence."))
    b += _parts_blocks(reports)
    b += _ladder_blocks(ladder)
    note = constant_note(df)
    if note:
        b.append(("p", note[0].upper() + note[1:] + "."))
    head, rows = episode_table(reports)
    if rows:
        b.append(("h2", "Episodes: usable and excluded concepts"))
        b.append(("table", head, rows))
        footer = episode_footer(reports)
        if footer:
            b.append(("p", footer[0][0].upper() + "; ".join(footer)[1:] + "."))
    if len(df) >= 3 and not rank_disagreements(df).attrs["constant"]:
        rk = rank_disagreements(df)
        rho = rk.attrs["spearman"]
        moved = rk[rk["rank_difference"].abs() >= 2]
        text = (f"Spearman rank correlation of mAP gap (hard) and compound divergence over the {len(df)} splits: "
                f"{rho:.2f}.")
        if len(moved):
            text += " Ranked most differently: " + "; ".join(
                f"{split_label(r['split'])} (gap rank {r['rank_map_gap_hard']:.0f}, divergence rank "
                f"{r['rank_compound_divergence']:.0f})" for _, r in moved.head(4).iterrows()) + "."
        b.append(("p", text))
    structure = concept_structure(space)
    held = [r for r in reports if len(np.setdiff1d(r["split_object"].test, r["split_object"].train))]
    held.sort(key=lambda r: -_hard_map_gap(r))
    for r in held[:2]:  # the two held-out splits with the largest hard-negative mAP gap
        split = r["split_object"]
        b.append(("h2", f"{split_label(r['split'])}: what the test side holds and who gets it wrong"))
        d = r["divergence"]
        b.append(("p", f"Atoms: {d['n_atoms']['train']} types in train, {d['n_atoms']['test']} in test, "
                       f"{d['n_atoms']['shared']} shared; compounds: {d['n_compounds']['train']} / "
                       f"{d['n_compounds']['test']} / {d['n_compounds']['shared']}; "
                       f"{100 * d['test_compounds_unseen']:.1f} % of the test side's compound mass is on "
                       "compounds train never uses."))
        fig = Figure(figsize=(11, 3.8), layout="constrained")
        a1, a2 = fig.subplots(1, 2)
        shape = (r.get("episodes") or {}).get("shape")  # the audit's episode shape for this split
        plot_side_distributions(space, split, "atom", 10, a1, structure, episode_shape=shape)
        a1.set_title("atoms", fontsize=10)
        plot_side_distributions(space, split, "compound", 10, a2, structure, episode_shape=shape)
        a2.set_title("compounds", fontsize=10)
        b.append(("figure", f"distributions_{r['split']}", fig,
                  "Atoms and compounds whose share differs most between train and test."))
        b.append(("table", ["weak mAP", "strong mAP", "episodes", "held-out concept"],
                  [[f"{w['weak_map']:.1f}", f"{w['strong_map']:.1f}", f"{w['episodes']}",
                    f"{w['readable']} [#{w['id']}]"] for w in r["worst"][:5]]))
    if episode_view and held:
        r = held[0]
        eps, index, strong, weak, shown = hardest_episode(space, r, settings, seed)
        ax, _ = plot_episode(shown, eps, index, strong, weak)
        fig = ax.figure
        b.append(("h2", "An episode"))
        b.append(("figure", "episode", fig, f"The hard-negative test episode of {split_label(r['split'])} with the "
                  "largest strong − weak AP, with the top concepts of both oracles."))
    b.append(("p", "Written by bayes_concepts.report; " + ", ".join(
        f"{r['split']} {r.get('seconds', float('nan')):.1f} s" for r in reports) + "."))
    return b


def report_format(out) -> str:
    """The format of a report written to ``out``, from its suffix: "md" or "html" (else a
    ReportError), so a command can refuse a bad name before computing anything."""
    out = Path(out)
    fmt = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html"}.get(out.suffix.lower())
    if fmt is None:
        raise ReportError(f"{out}: unknown report format {out.suffix!r} (use .md or .html)")
    return fmt


def write_report(space, reports: list, out, *, settings=None, seed: int = 0, title: str | None = None,
                 episode_view: bool = True, dpi: int = 130, ladder=None) -> list:
    """Write the difficulty report of ``reports`` (:func:`audit_splits`; each needs its
    ``split_object``, which :func:`audit_splits` adds) to ``out``: Markdown when it ends in
    ``.md`` (figures as PNG in ``<stem>_files/``), one self-contained HTML file when it ends in
    ``.html``.  ``ladder``: :func:`~bayes_concepts.ladder.ladder_summary` rows of the same splits,
    for a section on the oracle ladder.  Written atomically; returns the paths written."""
    out = Path(out)
    fmt = report_format(out)
    if not reports:
        raise ReportError(f"{out}: no split to report on")
    blocks = _blocks(space, reports, settings, seed, title, episode_view, ladder)
    written = []
    files_dir = out.with_name(out.stem + "_files")
    parts = []
    for blk in blocks:
        if blk[0] in ("h1", "h2"):
            parts.append(("#" if blk[0] == "h1" else "##") + " " + blk[1] if fmt == "md"
                         else f"<{blk[0]}>{html.escape(blk[1])}</{blk[0]}>")
        elif blk[0] == "p":
            parts.append(blk[1] if fmt == "md" else f"<p>{html.escape(blk[1])}</p>")
        elif blk[0] == "table":
            parts.append(_md_table(blk[1], blk[2]) if fmt == "md" else _html_table(blk[1], blk[2]))
        else:
            _, name, fig, caption = blk
            png = _fig_png(fig, dpi)
            if fmt == "md":
                files_dir.mkdir(parents=True, exist_ok=True)
                p = files_dir / f"{name}.png"
                tmp = p.with_name(p.name + ".partial")
                tmp.write_bytes(png)
                tmp.replace(p)
                written.append(p)
                parts.append(f"![{caption}]({files_dir.name}/{name}.png)\n\n*{caption}*")
            else:
                data = base64.b64encode(png).decode()
                parts.append(f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
                             f"<figcaption>{html.escape(caption)}</figcaption></figure>")
    if fmt == "md":
        text = "\n\n".join(parts) + "\n"
    else:
        style = ("body{font-family:sans-serif;max-width:1150px;margin:2em auto;line-height:1.4}"
                 "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;"
                 "text-align:right}td:first-child,th:first-child{text-align:left}img{max-width:100%}"
                 "figcaption{font-size:12px;color:#555}")
        text = (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(blocks[0][1])}</title>"
                f"<style>{style}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")
    tmp = out.with_name(out.name + ".partial")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    return [out, *written]
