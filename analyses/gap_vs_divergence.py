"""Comp gap vs atom and compound divergence: do the two measures rank splits alike?

CURI calls Keysers et al.'s (2020) distribution-based measures *complementary* to its
comp gap.  This script puts them side by side:

* **CURI's nine splits** on a saved program space (default ``spaces/demo``): comp gap
  (strong − weak oracle, mAP and CBA, hard and easy negatives, paired bootstrap 95 %
  intervals) next to atom and compound divergence (:mod:`bayes_concepts.divergence`:
  tokens and parent–child sub-trees of the programs, weighted by the episode
  distribution exp(−0.2·l)), and where the two rank the splits differently;
* **an attribute–object benchmark** (default: the synthetic fixture of
  ``tests/fixtures/pairs/``, written by ``analyses/make_pairs_fixture.py``; any
  CZSL-layout benchmark with ``--items`` / ``--pairs-dir``): Instance IID, Concept IID
  (random 80/20 over all concepts), CZSL's seen-vs-unseen pairs (with and without the
  single attributes and objects as concepts) and RLCL-style reference-limited splits
  with ``k`` seen pairs per attribute for each ``--ks`` -- the gap as a function of k.

Run::

    .venv/bin/python analyses/gap_vs_divergence.py --space spaces/demo --episodes 2000
    .venv/bin/python analyses/gap_vs_divergence.py --items my/items.tsv --pairs-dir my/split --ks 1 2 3 5 10

Outputs in ``--out`` (default ``analyses/out/gap_vs_divergence/``): ``gap_vs_divergence.md``
/ ``.csv`` (one row per split, run times included) and ``ranks.csv``; the figure
``gap_vs_divergence.png`` / ``.pdf`` / ``.csv`` goes to ``--figures`` (default ``paper_figs/``).
"""
from __future__ import annotations

import sys
import time
import tomllib
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analyses import _common as C

NAME = "gap_vs_divergence"
FIXTURE = C.ROOT / "tests" / "fixtures" / "pairs"


def _rows(space, splits, benchmark, args, extra=None) -> pd.DataFrame:
    """Gap (hard and easy) and divergences of ``splits``; seconds of each part."""
    from bayes_concepts.divergence import concept_structure, split_divergence
    from bayes_concepts.gap import compute_gap
    rows = []
    t = time.perf_counter()
    structure = concept_structure(space)
    t_structure = time.perf_counter() - t
    for name, split in splits.items():
        t = time.perf_counter()
        ds = compute_gap(space, {name: split}, ("hard", "easy"), args.episodes, seed=args.seed)
        t_gap = time.perf_counter() - t
        t = time.perf_counter()
        d = split_divergence(space, split, structure=structure)
        t_div = time.perf_counter() - t
        g = C.gap_frame(ds, args.boot, args.seed).set_index("negatives")
        row = {"benchmark": benchmark, "split": name, "train": len(split.train), "test": len(split.test)}
        for neg in ("hard", "easy"):
            for m in ("map_gap", "cba_gap"):
                row[f"{m}_{neg}"] = g.loc[neg, m]
                row[f"{m}_{neg}_lo"], row[f"{m}_{neg}_hi"] = g.loc[neg, f"{m}_lo"], g.loc[neg, f"{m}_hi"]
            row[f"weak_coverage_{neg}"] = 100 - g.loc[neg, "weak_empty_pct"]
        row.update({"atom_divergence": d["atom_divergence"], "compound_divergence": d["compound_divergence"],
                    "test_compounds_unseen": d["test_compounds_unseen"], "gap_seconds": t_gap,
                    "divergence_seconds": t_div + t_structure / len(splits)})
        row.update(extra.get(name, {}) if extra else {})
        rows.append(row)
    return pd.DataFrame(rows)


def pair_splits(space, ks, seed: int = 0) -> tuple:
    """The pair benchmark's splits: Instance IID, Concept IID, unseen pairs and ``seen_k<k>``."""
    from bayes_concepts.suites.pairs import PairsLayoutError, reference_limited_spec
    from bayes_concepts.splits import make_split
    splits = {"instance_iid": make_split(space, {"name": "instance_iid", "kind": "all"}),
              "concept_iid": make_split(space, {"name": "concept_iid", "kind": "random", "seed": seed,
                                                "fractions": {"train": 0.8, "test": 0.2}}),
              "unseen_pairs": make_split(space, tomllib.loads(space.spec_files["unseen_pairs.toml"]))}
    extra = {}
    for k in ks:
        try:
            splits[f"seen_k{k}"] = make_split(space, reference_limited_spec(space, k, seed))
            extra[f"seen_k{k}"] = {"k": k}
        except PairsLayoutError as exc:  # a k that keeps every pair of every attribute holds nothing out
            print(f"[{NAME}: k = {k} skipped: {exc}]", file=sys.stderr)
    return splits, extra


def ranks(df: pd.DataFrame) -> pd.DataFrame:
    """Per benchmark: ranks by hard-negative mAP gap and by compound divergence (1 = largest),
    their difference, and Spearman's ρ (column ``spearman``, one value per benchmark)."""
    from bayes_concepts.report import rank_disagreements
    out = []
    for bench, d in df.groupby("benchmark", sort=False):
        rk = rank_disagreements(d.reset_index(drop=True))
        rk.insert(0, "benchmark", bench)
        rk["spearman"] = rk.attrs["spearman"]
        out.append(rk)
    return pd.concat(out, ignore_index=True)


def figure(df: pd.DataFrame):
    """(a) hard-negative mAP gap vs compound divergence, both benchmarks, the whole [0, 1];
    (b) CURI's nine, zoomed; (c) the pair benchmark's gap (hard and easy) and its atom and
    compound divergence against k, the seen pairs per attribute."""
    import seaborn as sns
    from bayes_concepts.report import plot_gap_vs_divergence
    with C.style():
        fig = Figure(figsize=(16, 5.0), layout="constrained")
        a, b, c = fig.subplots(1, 3, width_ratios=[1.1, 1.1, 1])
        _, drawn = plot_gap_vs_divergence(df, ax=a, hue="benchmark",
                                          labelled=(df["benchmark"] != "curi") | (df["compound_divergence"] == 0))
        a.set_title("(a) comp gap vs compound divergence (CURI's labelled in b)", fontsize=11)
        curi = df[df["benchmark"] == "curi"]
        top = float(curi["compound_divergence"].max()) if len(curi) else 1.0
        _, zoom = plot_gap_vs_divergence(curi, ax=b, xlim=(-0.01, 1.3 * top + 0.01))
        b.set_title("(b) CURI's nine splits (zoomed)", fontsize=11)
        kd = df[df["k"].notna()].sort_values("k") if "k" in df else df.iloc[:0]
        colours = sns.color_palette("deep", 4)
        rows = []
        for j, neg in enumerate(("hard", "easy")):
            y, lo, hi = kd[f"map_gap_{neg}"], kd[f"map_gap_{neg}_lo"], kd[f"map_gap_{neg}_hi"]
            c.errorbar(kd["k"], y, yerr=np.vstack([y - lo, hi - y]), marker="o", capsize=3, color=colours[j],
                       label=f"mAP gap, {neg} negatives")
            rows += [{"panel": "c", "k": k, "series": f"map_gap_{neg}", "value": v} for k, v in zip(kd["k"], y)]
        c.set_xlabel("seen pairs per attribute (k)")
        c.set_ylabel("comp gap (points)")
        c.set_ylim(0, 105)
        c.set_xticks(kd["k"].astype(int))
        twin = c.twinx()
        for j, (col, style) in enumerate((("atom_divergence", "s--"), ("compound_divergence", "d:"))):
            twin.plot(kd["k"], kd[col], style, color=colours[2 + j], label=col.replace("_", " "))
            rows += [{"panel": "c", "k": k, "series": col, "value": v} for k, v in zip(kd["k"], kd[col])]
        twin.set_ylabel("divergence")
        twin.set_ylim(0, 1.05)
        twin.grid(False)
        h1, l1 = c.get_legend_handles_labels()
        h2, l2 = twin.get_legend_handles_labels()
        c.legend(h1 + h2, l1 + l2, fontsize=8, loc="center left")
        c.set_title("(c) pair benchmark: k seen pairs per attribute", fontsize=11)
    drawn = pd.concat([drawn.assign(panel="a"), zoom.assign(panel="b")], ignore_index=True)
    return fig, pd.concat([drawn, pd.DataFrame(rows)], ignore_index=True)


def markdown(df: pd.DataFrame, rk: pd.DataFrame, notes: list) -> str:
    from bayes_concepts.plots import split_label
    show = pd.DataFrame({
        "benchmark": df["benchmark"], "split": [split_label(s) for s in df["split"]],
        "train": df["train"], "test": df["test"],
        "mAP gap hard": [C.fmt_ci(m, lo, hi) for m, lo, hi in zip(df.map_gap_hard, df.map_gap_hard_lo,
                                                                   df.map_gap_hard_hi)],
        "CBA gap hard": [C.fmt_ci(m, lo, hi) for m, lo, hi in zip(df.cba_gap_hard, df.cba_gap_hard_lo,
                                                                   df.cba_gap_hard_hi)],
        "mAP gap easy": [C.fmt_ci(m, lo, hi) for m, lo, hi in zip(df.map_gap_easy, df.map_gap_easy_lo,
                                                                   df.map_gap_easy_hi)],
        "weak cov. easy (%)": df["weak_coverage_easy"],
        "atom div.": [f"{v:.3f}" for v in df["atom_divergence"]],
        "compound div.": [f"{v:.3f}" for v in df["compound_divergence"]],
        "gap s": df["gap_seconds"], "div. s": [f"{v:.3f}" for v in df["divergence_seconds"]]})
    lines = [f"# {NAME}", "", *notes, "", C.markdown_table(show, 1), "",
             "Gaps: strong − weak oracle, percentage points, paired bootstrap 95 % intervals; weak cov.: test "
             "episodes in which some training concept fits the support; divergences: 1 − Chernoff coefficient "
             "(α 0.5 atoms, 0.1 compounds), train vs test, episode-weighted; run times in seconds (gap: both "
             "negatives; divergence: per split, the concept structure shared).", "", "## Ranks", ""]
    for bench, d in rk.groupby("benchmark", sort=False):
        lines.append(f"**{bench}**: Spearman ρ (mAP gap hard vs compound divergence) = {d['spearman'].iloc[0]:.2f}. "
                     "Largest rank differences: " + "; ".join(
                         f"{split_label(r.split)} (gap rank {r.rank_map_gap_hard:.0f}, divergence rank "
                         f"{r.rank_compound_divergence:.0f})" for r in d.head(4).itertuples()) + ".")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> pd.DataFrame:
    p = C.parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--items", type=Path, default=FIXTURE / "items.tsv", help="pair benchmark items file")
    p.add_argument("--pairs-dir", type=Path, default=FIXTURE, help="directory of train/val/test_pairs.txt")
    p.add_argument("--ks", type=int, nargs="+", default=[1, 2, 3, 4, 5], help="seen pairs per attribute")
    p.add_argument("--figures", type=Path, default=C.ROOT / "paper_figs", help="where the figure goes")
    args = C.parse(p, argv, NAME)
    from bayes_concepts.suites.pairs import pair_space, read_pairs_layout
    from bayes_concepts.splits import curi_splits
    elapsed = C.timer()
    space = C.load_space(args, p)
    curi = _rows(space, curi_splits(space), "curi", args)
    layout = read_pairs_layout(args.items, args.pairs_dir)
    t = time.perf_counter()
    pairs = pair_space(layout, seed=args.seed)
    t_build = time.perf_counter() - t
    splits, extra = pair_splits(pairs, args.ks, args.seed)
    pair_df = _rows(pairs, splits, "pairs", args, extra)
    bare = pair_space(layout, primitives=False, seed=args.seed)
    bare_df = _rows(bare, {"unseen_pairs_no_primitives": make_unseen(bare)}, "pairs", args)
    df = pd.concat([curi, pair_df, bare_df], ignore_index=True)
    rk = ranks(df[df["split"] != "unseen_pairs_no_primitives"])
    notes = [C.space_note(space),
             f"pair benchmark: `{args.items}` ({layout.n_items:,} items, {len(set(layout.attributes))} attributes, "
             f"{len(set(layout.objects))} objects, {pairs.n_concepts} concepts with primitives; built in "
             f"{t_build:.2f} s); {args.episodes:,} test episodes per split and negatives, seed {args.seed}."]
    C.write_table(df, args.out, NAME)
    C.write_table(rk, args.out, "ranks")
    md = markdown(df, rk, notes)
    C.write_markdown(md, args.out, NAME)
    fig, drawn = figure(df[df["split"] != "unseen_pairs_no_primitives"])
    args.figures.mkdir(parents=True, exist_ok=True)
    C.save_figure(fig, args.figures, NAME)
    drawn.to_csv(args.figures / f"{NAME}.csv", index=False)
    if not args.quiet:
        print(md)
        print(f"\n[{NAME}: {elapsed():.1f} s; outputs in {args.out}, figure in {args.figures}]")
    return df


def make_unseen(space):
    from bayes_concepts.splits import make_split
    return make_split(space, tomllib.loads(space.spec_files["unseen_pairs.toml"]))


if __name__ == "__main__":
    main()
