"""Shared plumbing of the analysis scripts: command line, space loading, tables, figures.

Every script in ``analyses/`` takes the same core options (:func:`parser`), loads or
builds its hypothesis space with :func:`load_space`, and writes its outputs with
:func:`write_table` (Markdown + CSV) and :func:`save_figure` (PNG + PDF).
"""
from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SPACE = ROOT / "spaces" / "demo"
DEFAULT_OUT = ROOT / "analyses" / "out"


def parser(name: str, description: str) -> argparse.ArgumentParser:
    """The options every analysis script shares."""
    p = argparse.ArgumentParser(prog=f"analyses/{name}.py", description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--space", type=Path, default=DEFAULT_SPACE,
                   help="a saved hypothesis space directory (default: %(default)s)")
    p.add_argument("--build-demo", action="store_true",
                   help="if --space does not hold a saved space, build HypothesisSpace.build('demo') and save it there")
    p.add_argument("--episodes", type=int, default=2000, help="test episodes per (split, negatives) cell "
                   "(default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="master seed of episodes and bootstraps (default: %(default)s)")
    p.add_argument("--boot", type=int, default=1000, help="bootstrap resamples for intervals (default: %(default)s)")
    p.add_argument("--out", type=Path, default=None, help=f"output directory (default: analyses/out/{name}/)")
    p.add_argument("--quiet", action="store_true", help="do not print the table")
    return p


def parse(p: argparse.ArgumentParser, argv, name: str) -> argparse.Namespace:
    args = p.parse_args(None if argv is None else [str(a) for a in argv])
    if args.episodes < 1:
        p.error("--episodes must be >= 1")
    if args.boot < 1:
        p.error("--boot must be >= 1")
    args.out = Path(args.out) if args.out is not None else DEFAULT_OUT / name
    args.out.mkdir(parents=True, exist_ok=True)
    return args


def load_space(args, p: argparse.ArgumentParser | None = None, log=None):
    """The space at ``args.space``; built with the ``demo`` preset and saved there when it is
    missing and ``--build-demo`` was given."""
    from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
    path = Path(args.space)
    if (path / "manifest.json").exists():
        return HypothesisSpace.load(path)
    if not args.build_demo:
        msg = f"--space {path}: no saved hypothesis space there (give --build-demo to build the demo space there)"
        if p is not None:
            p.error(msg)
        raise FileNotFoundError(msg)
    if path.exists() and any(path.iterdir()):
        msg = f"--space {path}: exists, is not empty and holds no saved space; refusing to build into it"
        if p is not None:
            p.error(msg)
        raise FileExistsError(msg)
    t = time.perf_counter()
    space = HypothesisSpace.build("demo")
    space.save(path, overwrite=path.exists())
    (log or (lambda m: print(m, file=sys.stderr)))(f"built the demo space in {time.perf_counter() - t:.1f} s and saved it to {path}")
    return HypothesisSpace.load(path)


def space_note(space) -> str:
    sha = space.manifest_sha256()
    where = f"`{space.path}`" if space.path else "unsaved"
    return (f"space {where} (manifest sha256 `{sha[:12] if sha else 'n/a'}`): {space.n_concepts:,} concepts, "
            f"{space.n_synonym_classes:,} synonym classes, {space.n_scenes:,} scenes, "
            f"test bank {space.test_bank.n_scenes:,} scenes")


# ------------------------------------------------------------------------ tables
def fmt_num(v, digits: int = 1) -> str:
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        if not math.isfinite(float(v)):
            return "–"
        return f"{float(v):.{digits}f}"
    return str(v)


def fmt_ci(mean, lo, hi, digits: int = 1) -> str:
    """``12.3 [10.1, 14.0]``."""
    if mean is None or not np.isfinite(mean):
        return "–"

    def f(v):  # no "-0.0"
        return f"{(round(float(v), digits) + 0.0):.{digits}f}" if np.isfinite(v) else "–"
    return f"{f(mean)} [{f(lo)}, {f(hi)}]"


def markdown_table(df: pd.DataFrame, digits: int = 1, align=None) -> str:
    """A GitHub Markdown table of ``df`` (numbers right-aligned; floats with ``digits``)."""
    cols = [str(c) for c in df.columns]
    cells = [[fmt_num(v, digits).replace("|", "\\|") for v in row] for row in df.itertuples(index=False)]
    numeric = [pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) for c in df.columns]
    if align is not None:
        numeric = [a == "right" for a in align]
    lines = ["| " + " | ".join(cols) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in cells]
    return "\n".join(lines)


def write_table(df: pd.DataFrame, out: Path, name: str) -> Path:
    """``<out>/<name>.csv`` (full precision)."""
    path = Path(out) / f"{name}.csv"
    df.to_csv(path, index=False)
    return path


def write_markdown(text: str, out: Path, name: str) -> Path:
    path = Path(out) / f"{name}.md"
    path.write_text(text.rstrip() + "\n", encoding="utf-8")
    return path


# ----------------------------------------------------------------------- figures
def style():
    """Seaborn's white-grid look for the duration of a ``with`` block (no global change)."""
    import seaborn as sns
    stack = contextlib.ExitStack()
    stack.enter_context(sns.axes_style("whitegrid"))
    stack.enter_context(sns.plotting_context("paper", font_scale=1.15))
    return stack


def save_figure(fig, out: Path, name: str, dpi: int = 150) -> list:
    """``<out>/<name>.png`` and ``.pdf``, without a creation date or version stamp (the same
    figure is the same bytes); returns the paths."""
    paths = []
    for fmt in ("png", "pdf"):
        p = Path(out) / f"{name}.{fmt}"
        fig.savefig(p, dpi=dpi if fmt == "png" else None, format=fmt,
                    metadata={"CreationDate": None} if fmt == "pdf" else {"Software": None})
        paths.append(p)
    return paths


def split_colors(splits) -> dict:
    """One fixed colour per split name, in the given order, neighbours differing in lightness
    too (:func:`bayes_concepts.plots.style.category_colors`)."""
    from bayes_concepts.plots.style import category_colors
    splits = [str(s) for s in splits]
    return dict(zip(splits, category_colors(len(splits))))


# --------------------------------------------------------------------- bootstrap
def bootstrap_means(x, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap replicates (n_boot,) of the mean of ``x`` (NaNs dropped): episodes resampled
    with replacement.  All NaN when nothing is left."""
    x = np.asarray(x, np.float64)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return np.full(n_boot, np.nan)
    out = np.empty(n_boot)
    block = max(1, 2_000_000 // len(x))
    for lo in range(0, n_boot, block):
        k = min(block, n_boot - lo)
        out[lo: lo + k] = x[rng.integers(0, len(x), size=(k, len(x)))].mean(axis=1)
    return out


def percentile_ci(reps: np.ndarray, level: float = 0.95) -> tuple:
    reps = np.asarray(reps, np.float64)
    reps = reps[np.isfinite(reps)]
    if len(reps) == 0:
        return (np.nan, np.nan)
    a = (1 - level) / 2
    return float(np.quantile(reps, a)), float(np.quantile(reps, 1 - a))


def timer():
    t0 = time.perf_counter()
    return lambda: time.perf_counter() - t0


# ------------------------------------------------------------------- comp gap
def gap_frame(ds, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """The comp-gap table of a results Dataset as a DataFrame: one row per (split, negatives)
    from :func:`bayes_concepts.gap.summarise` (metrics in percent, gaps strong - weak with
    paired bootstrap 95 % intervals), ordered hard before easy, then by mAP gap (largest
    first)."""
    from bayes_concepts.gap import summarise
    from bayes_concepts.plots import split_label
    rows = []
    for r in summarise(ds, n_boot=n_boot, seed=seed):
        g = r["gap"]
        rows.append({
            "split": r["split"], "split_label": split_label(r["split"]), "negatives": r["negatives"],
            "strong_map": r["strong"]["map"], "weak_map": r["weak"]["map"],
            "map_gap": g["map"], "map_gap_lo": g["map_ci"][0], "map_gap_hi": g["map_ci"][1],
            "strong_cba": r["strong"]["cba"], "weak_cba": r["weak"]["cba"],
            "cba_gap": g["cba"], "cba_gap_lo": g["cba_ci"][0], "cba_gap_hi": g["cba_ci"][1],
            "weak_empty_pct": 100 * r["weak_empty_share"],
            "posterior_entropy": r["posterior_entropy"], "predictive_entropy": r["predictive_entropy"],
            "episodes": r["episodes"]})
    df = pd.DataFrame(rows)
    neg_rank = {"hard": 0, "easy": 1}
    df["_n"] = df["negatives"].map(lambda n: neg_rank.get(n, 2))
    df = df.sort_values(["_n", "map_gap"], ascending=[True, False], kind="stable").drop(columns="_n")
    return df.reset_index(drop=True)
