"""The look shared by every figure, and the helpers every ``plot_*`` function uses.

:func:`figure_style` is the style a figure is built in (seaborn's white grid, without a
global rcParams change); the names, colours and labels of splits and learners; reading a
results Dataset's cells, learners and split order; the percentile bootstrap of a mean;
checking the Axes a caller gives; writing a figure to a file.  :mod:`bayes_concepts.report`
and the benchmark suites' figures draw with the same helpers.
"""
from __future__ import annotations

import contextlib
import textwrap

import matplotlib
import matplotlib.colors
import numpy as np
import seaborn as sns

__all__ = ["SPLIT_NAMES", "LEARNER_NAMES", "LEARNER_COLORS", "METRIC_LABELS", "MINUS", "FALLBACK_FONTS",
           "fallback_fonts", "figure_style", "split_label", "learner_label", "learner_color", "result_learners",
           "negatives_cell", "bootstrap_mean", "split_order", "checked_order", "dodge", "episodes_note",
           "given_axes", "figure_of", "wrap_lines", "legend_columns", "save_figure", "category_colors"]

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


def figure_style() -> contextlib.ExitStack:
    """Seaborn's white-grid look, applied only while a figure is built (``with figure_style():``;
    no global rcParams change), with the installed :data:`FALLBACK_FONTS` after its font for
    glyphs that font lacks."""
    stack = contextlib.ExitStack()
    stack.enter_context(sns.axes_style("whitegrid"))
    stack.enter_context(sns.plotting_context("paper", font_scale=1.15))
    extra = fallback_fonts()
    if extra:
        family = list(matplotlib.rcParams["font.family"])
        stack.enter_context(matplotlib.rc_context({"font.family": family + [f for f in extra if f not in family]}))
    return stack


def category_colors(n: int) -> list:
    """``n`` colours (hex) for categories drawn side by side (splits, families): hues spread
    round the wheel and lightness alternating dark / light, so two neighbouring categories
    differ in lightness too, not only in a hue a reader (or a grey-scale print) may not tell
    apart.  Hues are perceptually even (seaborn's husl); dark 38 %, light 68 % lightness."""
    if n <= 0:
        return []
    dark = sns.husl_palette(n, l=0.38, s=0.9)
    light = sns.husl_palette(n, l=0.68, s=0.9)
    return [matplotlib.colors.to_hex(dark[i] if i % 2 == 0 else light[i]) for i in range(n)]


def split_label(name: str) -> str:
    """Readable split name: ``binding_color`` -> ``Binding (colour)``."""
    name = str(name)
    if name in SPLIT_NAMES:
        return SPLIT_NAMES[name]
    text = name.replace("_", " ")
    return text[:1].upper() + text[1:]


def learner_label(name: str) -> str:
    """Readable learner name: ``strong`` -> ``strong oracle``; other names as they are."""
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


def result_learners(ds) -> list:
    """Learners of a results Dataset ``ds``, strong and weak first."""
    names = [str(x) for x in ds.learner.values.tolist()]
    return [n for n in ("strong", "weak") if n in names] + [n for n in names if n not in ("strong", "weak")]


def negatives_cell(ds, negatives):
    """``ds`` at one ``negatives`` setting; a ValueError naming those it has when it lacks it."""
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
    cell = negatives_cell(ds, negatives)
    names = [str(x) for x in ds.split.values.tolist()]
    if "strong" not in result_learners(ds) or "weak" not in result_learners(ds):
        return names
    with np.errstate(all="ignore"):
        gaps = [float(np.nanmean(cell["ap"].sel(split=s, learner="strong").values)
                      - np.nanmean(cell["ap"].sel(split=s, learner="weak").values)) for s in names]
    key = [(-g if np.isfinite(g) else np.inf, i) for i, g in enumerate(gaps)]
    return [names[i] for _, i in sorted(key)]


def checked_order(ds, negatives, order) -> list:
    """``order`` checked against the Dataset's splits, or the mAP-gap order (:func:`split_order`)."""
    if order is None:
        return split_order(ds, negatives)
    order = [str(s) for s in order]
    have = [str(x) for x in ds.split.values.tolist()]
    unknown = [s for s in order if s not in have]
    if unknown:
        raise ValueError(f"splits {', '.join(unknown)} are not in the results (have: {', '.join(have)})")
    return order


def dodge(n: int, width: float = 0.36) -> np.ndarray:
    """Horizontal offsets of n series around an integer x position."""
    if n == 1:
        return np.zeros(1)
    return np.linspace(-width / 2, width / 2, n)


def episodes_note(ds, negatives) -> str:
    """``"hard negatives, 1,000 test episodes per split"``: what a results figure averages over."""
    n = int(negatives_cell(ds, negatives).sizes["episode"])
    return f"{negatives} negatives, {n:,} test episode{'s' * (n != 1)} per split"


def given_axes(axes, n: int, what: str, at_least: bool = False) -> np.ndarray:
    """``axes`` (an Axes or any array-like of Axes) as an object array, flattened row by row;
    a clear error when it holds fewer (or, unless ``at_least``, other) than ``n`` Axes."""
    flat = np.asarray(axes, dtype=object).ravel()
    if len(flat) < n or (len(flat) != n and not at_least):
        raise ValueError(f"{what} draws on {'at least ' if at_least else ''}{n} axes, got {len(flat)}")
    return flat


def figure_of(drawn):
    """The figure of what a ``plot_*`` function returned: one Axes or an array of them."""
    return np.asarray(drawn, dtype=object).flat[0].figure


def _line_chars(width_in: float, fontsize: float) -> int:
    """About how many characters of ``fontsize`` points fit in ``width_in`` inches (an
    average character is taken as 0.55 em wide, with a margin)."""
    return max(20, int(0.92 * width_in * 72 / (0.55 * fontsize)))


def wrap_lines(text: str, width_in: float, fontsize: float) -> str:
    """``text`` with each of its lines wrapped to fit a figure ``width_in`` inches wide."""
    n = _line_chars(width_in, fontsize)
    return "\n".join(textwrap.fill(line, n) if line else line for line in text.split("\n"))


def legend_columns(labels, width_in: float, fontsize: float, most: int = 5) -> int:
    """The most legend columns (at most ``most``) whose widest label (with its handle) fits
    ``width_in`` inches."""
    widest = max((len(str(lb)) for lb in labels), default=1) + 6  # the handle and the gap
    return max(1, min(most, len(labels), _line_chars(width_in, fontsize) // widest))


def save_figure(fig, path, fmt: str, dpi: int = 150) -> None:
    """Write ``fig`` to ``path`` as ``fmt`` (PNG at ``dpi``), with no creation date or version
    stamp: the same figure is the same bytes."""
    fig.savefig(path, dpi=dpi if fmt == "png" else None, format=fmt,
                metadata={"CreationDate": None} if fmt == "pdf" else {"Software": None})
