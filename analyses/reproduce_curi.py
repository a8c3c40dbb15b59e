"""Reproduce CURI's comp-gap table under two protocols, side by side with the published
reference points, and isolate each difference between CURI's release and the paper's text.

For each protocol (:mod:`bayes_concepts.protocols`; default both, ``curi-release`` first) and
each of its nine splits and both kinds of negatives, the strong and weak Bayesian oracles
are scored on ``--episodes`` test episodes: mAP (test bank) and class-balanced accuracy
(query set), the comp gap strong − weak with paired bootstrap 95 % intervals, the weak
oracle's empty share and the strong oracle's entropies, with CURI's published gaps beside.

* ``curi-release``: the splits, prior (sampler log-probability), likelihood (the size
  likelihood as the release ran it: negatives only), random query negatives and
  all-knowing strong oracle of CURI's public release;
* ``paper``: the paper's splits, length prior (β = 0.2), deterministic likelihood, hard
  query negatives, strong oracle over H_train ∪ H_test.

The published reference points are checked for the first protocol (``reference_checks``):

* hard-negative mAP gap Counting 34.4, Binding (colour) 86.5, Instance IID 0;
* hard-negative CBA gap Counting 14.2, Binding (colour) 34.0, Instance IID 0;
* easy negatives shrink the mAP gap by 5.5 ± 1.4 points on average;
* the Binding splits have the largest gaps and Instance IID the smallest (hard negatives).

With ``--isolate``, every difference between the release and the paper's text is run on its
own: the release protocol with exactly one thing changed (the prior, the likelihood, the
query negatives, the strong oracle's concepts, each split rule, the val carve-out) and,
with ``--variant-dir``, the space rebuilt with one build option changed (depth, sampler,
and optionally the fourth rejection rule, the location bins and the filter bounds).  Each
row gives the gap under the release protocol, under the variant, and the change with its
95 % interval (paired over episodes when the episodes are the same).

``--figures DIR`` writes the paper figures of the first protocol there (each with a note
naming the space and the protocol), e.g. ``--figures paper_figs``; ``--reuse DIR`` loads the
protocols' results saved by an earlier run with the same space, seed and episodes instead of
computing them again.

The split sizes of the ``curi-release`` protocol are written beside the release's (§15): each
structured split's test share (test / all concepts) and its relative difference from the
release's, which the acceptance of issue 13 wants within 25 %.

Run (the curi space: ``bayes-concepts space build spaces/curi --preset curi``)::

    .venv/bin/python analyses/reproduce_curi.py --space spaces/curi --episodes 20000 \\
        --isolate --variant-dir spaces/curi_variants --figures paper_figs

or in pieces, as the guide's figures were made (the table at 20,000 episodes, the oracle and
split differences at 3,000, the rebuilt spaces at 2,000 against the 20,000-episode run)::

    .venv/bin/python analyses/reproduce_curi.py --space spaces/curi --episodes 20000 \\
        --out analyses/out/reproduce_curi_full --figures paper_figs
    .venv/bin/python analyses/reproduce_curi.py --space spaces/curi --episodes 3000 \\
        --protocols curi-release --isolate --release-check-episodes 100 --out analyses/out/reproduce_curi_isolate
    .venv/bin/python analyses/reproduce_curi.py --space spaces/curi --episodes 20000 --protocols curi-release \\
        --reuse analyses/out/reproduce_curi_full --isolate --space-only --variant-dir spaces/curi_variants \\
        --space-variants depth sampler rejection bins filter --variant-episodes 2000 \\
        --out analyses/out/reproduce_curi_variants

Outputs in ``--out`` (default ``analyses/out/reproduce_curi/``): ``comp_gap.md`` (all
tables), ``comp_gap.csv`` (the first protocol), ``comp_gap_by_protocol.csv``,
``reference_checks.csv`` (first protocol), ``reference_checks_by_protocol.csv``, ``split_sizes.csv``,
``differences.csv`` (``--isolate``), ``results.nc`` (first protocol; ``results_<protocol>.nc``
for each), figures ``comp_gap_hard``, ``comp_gap_easy``, ``entropy``, ``synonym_classes``,
``scene_properties`` and ``reference_points`` (ours vs published), as PNG + PDF.
"""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analyses import _common as C
from analyses.negatives_effect import AVERAGE_ALL, PUBLISHED_MAP_CHANGE, negatives_change

NAME = "reproduce_curi"
#: CURI G.6: comp gaps with hard negatives, percentage points
PUBLISHED = {("map", "counting"): 34.4, ("map", "binding_color"): 86.5, ("map", "instance_iid"): 0.0,
             ("cba", "counting"): 14.2, ("cba", "binding_color"): 34.0, ("cba", "instance_iid"): 0.0}
BINDING = ("binding_color", "binding_shape")
METRIC_NAMES = {"map": "mAP", "cba": "CBA"}
PROTOCOLS = ("curi-release", "paper")
STRUCTURED = ("counting", "extrinsic", "intrinsic", "boolean", "binding_color", "binding_shape", "complexity")
#: Space-level differences: name -> (what changes, build options of the variant).  The
#: variant is the ``curi`` preset with these options replaced.
SPACE_VARIANTS = {
    "depth": ("depth: release depth 5 (deepest nonterminal 4) -> 6 (the release's file name)", {"max_depth": 6}),
    "sampler": ("sampler: local retries -> whole-program redraw at the same depth",
                {"retries": "whole", "max_depth": 4}),
    "rejection": ("rejection: the fourth rule (non-x-S P? x P?) -> not applied", {"grammar": "no_fourth_rule"}),
    "bins": ("location bins: 0..7 (release) -> 1..8 (the grammar's constants)",
             {"grammar": "curi.pcfg", "location_bins": None, "keep_fourth_rule": True}),
    "filter": ("filter: > 10 and < 10 % (release) -> >= 10 and <= 10 %", {"filter_bounds": "closed"}),
}
DEFAULT_SPACE_VARIANTS = ("depth", "sampler")
#: the release's (train, test) sizes of its seven structured splits on its 14,929
#: concepts (val = test; the Binding splits dropped the programs mixing held-out and training
#: values, the remainder of 14,929).
RELEASE_CONCEPTS = 14_929
RELEASE_SIZES = {"counting": (14_882, 47), "extrinsic": (14_179, 750), "intrinsic": (14_646, 283),
                 "boolean": (12_335, 2_594), "binding_color": (12_152, 2_620), "binding_shape": (13_421, 1_484),
                 "complexity": (408, 14_521)}
#: acceptance: each structured split's test share within 25 % (relative) of the release's
SHARE_TOLERANCE = 0.25


def with_published(table: pd.DataFrame) -> pd.DataFrame:
    t = table.copy()
    for key in ("map", "cba"):
        t[f"published_{key}_gap"] = [PUBLISHED.get((key, s), np.nan) if n == "hard" else np.nan
                                     for s, n in zip(t["split"], t["negatives"])]
    return t


def reference_checks(table: pd.DataFrame, change: pd.DataFrame | None) -> pd.DataFrame:
    """One row per published reference point: published value, ours (with 95 % interval),
    difference, whether the published value is inside our interval, and for ordering claims
    whether they hold (point estimates) and hold robustly (intervals separate)."""
    hard = table[table.negatives == "hard"].set_index("split")
    rows = []
    for (key, split), pub in PUBLISHED.items():
        if split not in hard.index:
            continue
        r = hard.loc[split]
        m, lo, hi = r[f"{key}_gap"], r[f"{key}_gap_lo"], r[f"{key}_gap_hi"]
        row = {"check": f"{METRIC_NAMES[key]} gap, {r['split_label']}, hard negatives", "kind": "value",
               "published": pub, "ours": m, "ours_lo": lo, "ours_hi": hi, "difference": m - pub,
               "published_in_ci": bool(lo - 1e-9 <= pub <= hi + 1e-9), "holds": None, "robust": None,
               "detail": ""}
        if pub == 0.0:  # "0 by construction": exactly zero, every episode
            row["holds"] = row["robust"] = bool(m == 0 and lo == 0 and hi == 0)
            row["detail"] = "exactly 0 in every episode" if row["holds"] else "not exactly 0"
        rows.append(row)
    if change is not None and (change.split == AVERAGE_ALL).any():
        a = change[change.split == AVERAGE_ALL].iloc[0]
        pub, pm = PUBLISHED_MAP_CHANGE
        lo, hi = a.map_change_lo, a.map_change_hi
        rows.append({"check": "mean change of the mAP gap over splits, easy − hard", "kind": "value",
                     "published": pub, "ours": a.map_change, "ours_lo": lo, "ours_hi": hi,
                     "difference": a.map_change - pub, "published_in_ci": bool(lo <= pub <= hi),
                     "holds": bool(a.map_change < 0), "robust": bool(hi < 0),
                     "detail": f"published {pub} ± {pm}; holds = easy negatives shrink the gap on average "
                               f"(robust: whole interval below 0); unpaired bootstrap over "
                               f"{int(a.n_splits)} splits"})
    for key in ("map", "cba"):
        g = hard[f"{key}_gap"]
        lo, hi = hard[f"{key}_gap_lo"], hard[f"{key}_gap_hi"]
        binding = [s for s in BINDING if s in hard.index]
        others = [s for s in hard.index if s not in BINDING]
        if binding and others:
            top = g.sort_values(ascending=False)
            low_b = g[binding].idxmin()
            best_other = g[others].idxmax()
            holds = bool(g[binding].min() > g[others].max())
            robust = bool(lo[binding].min() > hi[others].max())
            rows.append({"check": f"Binding splits have the largest {METRIC_NAMES[key]} gaps (hard negatives)",
                         "kind": "ordering", "published": np.nan, "ours": float(g[low_b]),
                         "ours_lo": float(lo[low_b]), "ours_hi": float(hi[low_b]), "difference": np.nan,
                         "published_in_ci": None, "holds": holds, "robust": robust,
                         "detail": f"ours = smaller Binding gap ({hard.loc[low_b, 'split_label']}); largest other: "
                                   f"{hard.loc[best_other, 'split_label']} {g[best_other]:.1f} "
                                   f"[{lo[best_other]:.1f}, {hi[best_other]:.1f}]; ranking: "
                                   + ", ".join(f"{hard.loc[s, 'split_label']} {g[s]:.1f}" for s in top.index[:4])})
        if "instance_iid" in hard.index and len(hard) > 1:
            rest = [s for s in hard.index if s != "instance_iid"]
            nxt = g[rest].idxmin()
            holds = bool(g["instance_iid"] < g[rest].min())
            robust = bool(hi["instance_iid"] < lo[rest].min())
            rows.append({"check": f"Instance IID has the smallest {METRIC_NAMES[key]} gap (hard negatives)",
                         "kind": "ordering", "published": np.nan, "ours": float(g["instance_iid"]),
                         "ours_lo": float(lo["instance_iid"]), "ours_hi": float(hi["instance_iid"]),
                         "difference": np.nan, "published_in_ci": None, "holds": holds, "robust": robust,
                         "detail": f"ours = Instance IID; next smallest: {hard.loc[nxt, 'split_label']} {g[nxt]:.1f} "
                                   f"[{lo[nxt]:.1f}, {hi[nxt]:.1f}]"})
    return pd.DataFrame(rows)


def _yn(v):
    return "–" if v is None or (isinstance(v, float) and np.isnan(v)) else ("yes" if v else "**no**")


# ----------------------------------------------------------------------- one protocol
def protocol_table(ds, args) -> pd.DataFrame:
    t = with_published(C.gap_frame(ds, args.boot, args.seed))
    t.insert(0, "protocol", ds.attrs.get("protocol", "?"))
    return t


def gap_tables_markdown(table: pd.DataFrame, level: int = 2, title: str = "") -> list:
    lines = []
    for neg in ("hard", "easy"):
        t = table[table.negatives == neg]
        if not len(t):
            continue
        show = pd.DataFrame({
            "split": t.split_label, "strong mAP": t.strong_map, "weak mAP": t.weak_map,
            "mAP gap [95% CI]": [C.fmt_ci(*v) for v in zip(t.map_gap, t.map_gap_lo, t.map_gap_hi)],
            "published mAP gap": [C.fmt_num(v) if np.isfinite(v) else "" for v in t.published_map_gap],
            "strong CBA": t.strong_cba, "weak CBA": t.weak_cba,
            "CBA gap [95% CI]": [C.fmt_ci(*v) for v in zip(t.cba_gap, t.cba_gap_lo, t.cba_gap_hi)],
            "published CBA gap": [C.fmt_num(v) if np.isfinite(v) else "" for v in t.published_cba_gap],
            "weak empty %": t.weak_empty_pct, "H post": [f"{v:.2f}" for v in t.posterior_entropy],
            "H pred": [f"{v:.3f}" for v in t.predictive_entropy],
            "episodes": t.episodes})
        lines += [f"{'#' * level} {neg.capitalize()} negatives{title} (splits by mAP gap, largest first)", "",
                  C.markdown_table(show, align=["left"] + ["right"] * 12), ""]
    return lines


def checks_markdown(checks: pd.DataFrame) -> list:
    show = pd.DataFrame({
        "reference point": checks.check,
        "published": [C.fmt_num(v) if np.isfinite(v) else "" for v in checks.published],
        "ours [95% CI]": [C.fmt_ci(m, lo, hi) for m, lo, hi in zip(checks.ours, checks.ours_lo, checks.ours_hi)],
        "ours − published": [f"{v:+.1f}" if np.isfinite(v) else "" for v in checks.difference],
        "published in our CI": [_yn(v) for v in checks.published_in_ci],
        "claim holds": [_yn(v) for v in checks.holds],
        "robust (CIs separate)": [_yn(v) for v in checks.robust],
        "detail": checks.detail})
    n_claims = int(checks.holds.notna().sum())
    n_hold = int(checks.holds.fillna(False).astype(bool).sum())
    return [C.markdown_table(show, align=["left"] + ["right"] * 3 + ["left"] * 4), "",
            f"{n_hold} of {n_claims} claims hold on this space."]


def side_by_side(tables: dict) -> pd.DataFrame:
    """One row per (split, negatives): each protocol's mAP and CBA gaps, and the published."""
    rows = {}
    for proto, t in tables.items():
        for r in t.itertuples():
            row = rows.setdefault((r.split, r.negatives), {"split": r.split, "split_label": r.split_label,
                                                           "negatives": r.negatives,
                                                           "published_map_gap": r.published_map_gap,
                                                           "published_cba_gap": r.published_cba_gap})
            for key in ("map", "cba"):
                row[f"{proto}:{key}_gap"] = getattr(r, f"{key}_gap")
                row[f"{proto}:{key}_gap_lo"] = getattr(r, f"{key}_gap_lo")
                row[f"{proto}:{key}_gap_hi"] = getattr(r, f"{key}_gap_hi")
                row[f"{proto}:strong_{key}"] = getattr(r, f"strong_{key}")
                row[f"{proto}:weak_{key}"] = getattr(r, f"weak_{key}")
    return pd.DataFrame(list(rows.values()))


def side_by_side_markdown(sbs: pd.DataFrame, protos) -> list:
    lines = []
    for neg in ("hard", "easy"):
        t = sbs[sbs.negatives == neg]
        if not len(t):
            continue
        cols = {"split": t.split_label}
        for key in ("map", "cba"):
            for p in protos:
                cols[f"{p} {METRIC_NAMES[key]} (strong / weak)"] = [
                    f"{s:.1f} / {w:.1f}" for s, w in zip(t[f"{p}:strong_{key}"], t[f"{p}:weak_{key}"])]
                cols[f"{p} {METRIC_NAMES[key]} gap"] = [
                    C.fmt_ci(m, lo, hi) for m, lo, hi in zip(t[f"{p}:{key}_gap"], t[f"{p}:{key}_gap_lo"],
                                                             t[f"{p}:{key}_gap_hi"])]
            if neg == "hard":
                cols[f"published {METRIC_NAMES[key]} gap"] = [C.fmt_num(v) if np.isfinite(v) else ""
                                                              for v in t[f"published_{key}_gap"]]
        show = pd.DataFrame(cols)
        lines += [f"### {neg.capitalize()} negatives", "",
                  C.markdown_table(show, align=["left"] + ["right"] * (len(cols) - 1)), ""]
    return lines


# -------------------------------------------------------------------- split sizes
def split_sizes(space, protocol: str = "curi-release") -> pd.DataFrame:
    """One row per split of ``protocol`` on ``space``: train / val / test / dropped counts and the
    test share (test / all concepts) beside the release's (§15) for the seven structured
    splits, with the relative difference and whether it lies within ``SHARE_TOLERANCE``."""
    from bayes_concepts.protocols import protocols
    rows = []
    n = space.n_concepts
    for name, split in protocols.get(protocol).splits(space).items():
        row = {"protocol": protocol, "split": name, "concepts": n, "train": len(split.train), "val": len(split.val),
               "test": len(split.test), "dropped": int(getattr(split, "dropped", 0) or 0),
               "test_share_pct": 100 * len(split.test) / n}
        ref = RELEASE_SIZES.get(name)
        if ref is not None:
            tr, te = ref
            share = 100 * te / RELEASE_CONCEPTS
            rel = row["test_share_pct"] / share - 1
            row.update({"release_train": tr, "release_test": te, "release_dropped": RELEASE_CONCEPTS - tr - te,
                        "release_test_share_pct": share, "relative_difference_pct": 100 * rel,
                        "within_tolerance": bool(abs(rel) <= SHARE_TOLERANCE)})
        rows.append(row)
    return pd.DataFrame(rows)


def split_sizes_markdown(sizes: pd.DataFrame) -> list:
    def num(v):
        return "" if pd.isna(v) else f"{int(v):,}"

    has = sizes["release_test_share_pct"].notna() if "release_test_share_pct" in sizes else pd.Series(False, sizes.index)
    show = pd.DataFrame({
        "split": sizes.split, "train": sizes.train.map(num), "val": sizes.val.map(num), "test": sizes.test.map(num),
        "dropped": sizes.dropped.map(num), "test share %": sizes.test_share_pct.map(lambda v: f"{v:.2f}"),
        "release train / test": [f"{num(a)} / {num(b)}" if h else "" for a, b, h in
                                 zip(sizes.get("release_train"), sizes.get("release_test"), has)],
        "release test share %": [f"{v:.2f}" if h else "" for v, h in zip(sizes.get("release_test_share_pct"), has)],
        "relative difference %": [f"{v:+.1f}" if h else "" for v, h in zip(sizes.get("relative_difference_pct"), has)],
        f"within {SHARE_TOLERANCE:.0%}": [_yn(v) if h else "" for v, h in zip(sizes.get("within_tolerance"), has)]})
    n_ok = int(sizes.get("within_tolerance", pd.Series(dtype=object)).fillna(False).astype(bool).sum())
    return [f"Protocol `{sizes.protocol.iloc[0]}` on {int(sizes.concepts.iloc[0]):,} concepts (the release: "
            f"{RELEASE_CONCEPTS:,}); test share = test / all concepts; the release's val was its test set, so val "
            "here holds only Concept IID's 5 % and the programs the Binding splits dropped (neither trained on "
            "nor tested).", "",
            C.markdown_table(show, align=["left"] + ["right"] * (show.shape[1] - 1)), "",
            f"{n_ok} of {int(has.sum())} structured splits within {SHARE_TOLERANCE:.0%} (relative) of the release's "
            "test share."]


# -------------------------------------------------------------------- differences
def _gap_per_episode(ds, split, neg, metric) -> np.ndarray:
    cell = ds.sel(split=split, negatives=neg)
    return 100 * (cell[metric].sel(learner="strong").values - cell[metric].sel(learner="weak").values)


def compare_cells(base, variant, split, neg, paired: bool, variant_split=None) -> dict:
    """Gap of one (split, negatives) cell under the release protocol and under a variant, and
    the change variant − release with a normal-approximation 95 % interval (on per-episode
    gap differences when ``paired``: the same episodes scored two ways)."""
    row = {"split": split, "negatives": neg, "paired": paired}
    vsplit = variant_split or split
    for metric, key in (("ap", "map"), ("cba", "cba")):
        a = _gap_per_episode(base, split, neg, metric)
        b = _gap_per_episode(variant, vsplit, neg, metric)
        a, b = a[np.isfinite(a)], b[np.isfinite(b)]
        if paired and len(a) == len(b):
            d = b - a
            se = d.std(ddof=1) / np.sqrt(len(d))
        else:
            se = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
        change = float(b.mean() - a.mean())
        row.update({f"release_{key}_gap": float(a.mean()), f"variant_{key}_gap": float(b.mean()),
                    f"{key}_change": change, f"{key}_change_lo": change - 1.96 * se,
                    f"{key}_change_hi": change + 1.96 * se})
    row["release_weak_empty_pct"] = 100 * float(base["weak_empty"].sel(split=split, negatives=neg).mean())
    row["variant_weak_empty_pct"] = 100 * float(variant["weak_empty"].sel(split=vsplit, negatives=neg).mean())
    row["episodes"] = int(variant.sizes["episode"])
    return row


def _spec_variant(path, **changes) -> dict:
    from bayes_concepts.splits import load_spec
    spec = load_spec(path)
    spec.update(changes)
    return spec


def oracle_and_split_runs(space, base, args, log) -> list:
    """The release protocol with one oracle setting, one split rule or the val carve-out
    changed.  Returns rows (dicts)."""
    from bayes_concepts.protocols import protocols
    from bayes_concepts.resources import data_file
    from bayes_concepts.splits import make_split
    rel, paper = protocols.get("curi-release"), protocols.get("paper")
    splits = rel.splits(space)
    names = list(splits)
    n, seed = args.episodes, args.seed
    rows = []

    def run(difference, kind, chosen, negatives=("hard", "easy"), paired=True, **overrides):
        log(f"  {difference} ({', '.join(chosen)}; {', '.join(negatives)})")
        ds = rel.compute_gap(space, negatives=negatives, n_episodes=n, seed=seed,
                             splits={s: chosen[s] for s in chosen}, **overrides)
        for s in chosen:
            for neg in negatives:
                rows.append({"difference": difference, "kind": kind,
                             **compare_cells(base, ds, s, neg, paired and np.array_equal(
                                 base["concept"].sel(split=s, negatives=neg).values,
                                 ds["concept"].sel(split=s, negatives=neg).values))})

    every = {s: splits[s] for s in names}
    run("prior: sampler log-prob (pcfg_release) -> length, beta 0.2 (paper)", "oracle", every,
        settings=rel.settings_with(prior="length", beta=0.2))
    run("prior: one quantifier's log-prob -> both quantifiers' (pcfg) for x-free concepts", "oracle",
        every, negatives=("hard",), settings=rel.settings_with(prior="pcfg"))
    run("likelihood: the release's as it ran (negatives only) -> consistent (paper)", "oracle", every,
        settings=rel.settings_with(likelihood="consistent"))
    run("likelihood: the release's as it ran (negatives only) -> the size principle it meant (size)", "oracle",
        every, settings=rel.settings_with(likelihood="size"))
    run("query negatives: random -> as the support's (paper)", "oracle", every, negatives=("hard",),
        query_negatives=None)
    narrow = {}
    for s in ("binding_color", "binding_shape", "concept_iid"):
        if s in splits:
            narrow[s] = dataclasses.replace(splits[s])  # the same sides, no strong_concepts: H_train ∪ H_test
    run("strong oracle: every concept -> H_train ∪ H_test (paper)", "oracle", narrow)

    paper_dir = data_file(paper.splits_dir)
    rule_changes = {
        "counting": "Counting: 8 (number, colour) token pairs in count= programs -> 6 count comparisons (paper spec)",
        "extrinsic": "Extrinsic: 20 (location, colour) pairs -> 11 (paper spec)",
        "intrinsic": "Intrinsic: pairs anywhere -> pairs in material programs (paper spec)",
        "boolean": "Boolean: same pairs (paper spec)",
        "binding_color": "Binding (colour): mixed programs dropped -> in test (paper spec)",
        "binding_shape": "Binding (shape): mixed programs dropped -> in test (paper spec)",
        "complexity": "Complexity: < 10 released tokens (l <= 7) train -> l <= 10 train (paper spec)",
    }
    for s, difference in rule_changes.items():
        if s not in splits:
            continue
        # the paper's rule, nothing dropped, val = test as in the release; the strong oracle still knows all
        keep_mixed = dataclasses.replace(rel, drop_mixed=())
        variant = keep_mixed.adapt(space, make_split(space, _spec_variant(paper_dir / f"{s}.toml", val_fraction=0.0)))
        if np.array_equal(variant.test, splits[s].test) and np.array_equal(variant.train, splits[s].train):
            log(f"  {difference}: the same split on this space, not run")
            rows.append({"difference": difference, "kind": "split rule", "split": s, "negatives": "both",
                         "note": "identical train and test sides: no change"})
            continue
        run(difference, "split rule", {s: variant}, paired=False)
    carved = {}
    for s in STRUCTURED:
        if s in splits:
            spec = _spec_variant(data_file(rel.splits_dir, f"{s}.toml"), val_fraction=0.1, val_seed=0)
            carved[s] = rel.adapt(space, make_split(space, spec))
    run("val: val = test (release) -> 10 % of the held-out concepts carved out as val (paper)", "split rule",
        carved, paired=False)
    return rows


def release_oracle_runs(space, base, args, log) -> list:
    """The release's weak posterior in float32 with the 1e-12 guard, and its AP pool (3 scenes
    per concept drawn with replacement), each on the first ``--release-check-episodes``
    episodes of every cell (the same episodes as the release protocol's run; slow path)."""
    from bayes_concepts.episodes import EpisodeSampler
    from bayes_concepts.gap import cell_seed
    from bayes_concepts.protocols import protocols
    from bayes_concepts.suites.curi.release import release_oracle_scores, release_pool
    rel = protocols.get("curi-release")
    splits = rel.splits(space)
    k = args.release_check_episodes
    sampler = EpisodeSampler(space)
    pool = release_pool(space, seed=args.seed)
    rows = []
    for name, split in splits.items():
        for neg in base.negatives.values.tolist():
            eps = sampler.sample(split.test, args.episodes, neg, seed=cell_seed(args.seed, name, neg),
                                 query_negatives=rel.query_negatives, hard_mode=rel.hard_mode,
                                 meta={"split": name, "side": "test"})
            cell = base.sel(split=name, negatives=neg)
            if not np.array_equal(eps.concept, cell["concept"].values):
                raise RuntimeError(f"{name}/{neg}: episodes differ from the protocol run's")
            ours = {f"{lr}_{m}": 100 * cell[metric].sel(learner=lr).values[:k]
                    for lr in ("strong", "weak") for m, metric in (("ap", "ap"), ("cba", "cba"))}
            for difference, kw in (("weak posterior: exact renormalisation -> the release's float32 with + 1e-12",
                                    {"masked32": True}),
                                   ("AP pool: test bank (3 distinct scenes per concept) -> 3 per concept drawn "
                                    "with replacement", {"masked32": False, "pool": pool})):
                log(f"  {difference} ({name}/{neg}, {k:,} episodes)")
                r = release_oracle_scores(space, split, rel.settings, eps, n=k, **kw)
                row = {"difference": difference, "kind": "oracle", "split": name, "negatives": neg, "paired": True,
                       "episodes": int(min(k, len(eps)))}
                for key, metric in (("map", "ap"), ("cba", "cba")):
                    a = ours[f"strong_{metric}"] - ours[f"weak_{metric}"]
                    b = 100 * (r[f"strong_{metric}"] - r[f"weak_{metric}"])
                    ok = np.isfinite(a) & np.isfinite(b)
                    d = b[ok] - a[ok]
                    se = d.std(ddof=1) / np.sqrt(max(len(d), 1)) if len(d) > 1 else 0.0
                    row.update({f"release_{key}_gap": float(a[ok].mean()), f"variant_{key}_gap": float(b[ok].mean()),
                                f"{key}_change": float(d.mean()), f"{key}_change_lo": float(d.mean() - 1.96 * se),
                                f"{key}_change_hi": float(d.mean() + 1.96 * se)})
                row["release_weak_empty_pct"] = row["variant_weak_empty_pct"] = 100 * float(
                    cell["weak_empty"].values[:k].mean())
                row["note"] = f"first {row['episodes']:,} episodes of each cell"
                if kw.get("masked32"):
                    row["tiny_train_mass_pct"] = 100 * float(np.mean((r["train_mass"] > 0) & (r["train_mass"] < 1e-12)))
                rows.append(row)
    return rows


def variant_space(space_args: dict, name: str, args, log, base=None):
    """The ``curi`` preset (with ``base``'s sizes and seed) with one option changed, built (and
    saved under --variant-dir) or loaded."""
    from bayes_concepts.spaces import build as B
    from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
    from bayes_concepts.lot.grammar import Grammar
    from bayes_concepts.resources import data_file
    path = Path(args.variant_dir) / name
    if (path / "manifest.json").exists():
        log(f"  loading {path}")
        return HypothesisSpace.load(path)
    opts = dict(space_args)
    grammar = None
    g = opts.pop("grammar", None)
    keep_fourth = opts.pop("keep_fourth_rule", False)
    if g == "no_fourth_rule":
        text = data_file("curi_release.pcfg").read_text(encoding="utf-8")
        text = "\n".join(l for l in text.splitlines() if not l.startswith("reject non_x_set"))
        tmp = Path(args.variant_dir) / "curi_release_three_rules.pcfg"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text + "\n", encoding="utf-8")
        grammar = Grammar.from_file(tmp)
    elif g == "curi.pcfg":
        text = data_file("curi.pcfg").read_text(encoding="utf-8")
        if keep_fourth:
            text = text.replace("reject top_forall_non_x x_compared_with_itself set_quantifier_over_own_property",
                                "reject top_forall_non_x x_compared_with_itself set_quantifier_over_own_property\n"
                                "reject non_x_set_quantifier_over_own_property")
        tmp = Path(args.variant_dir) / "curi_bins_1_8.pcfg"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        grammar = Grammar.from_file(tmp)
    sizes = {k: base.params.get(k) for k in ("samples", "scenes", "seed")} if base is not None else {}
    p = B.resolve_params("curi", **{k: v for k, v in sizes.items() if v is not None},
                         **{k: v for k, v in opts.items() if v is not None})
    for k, v in opts.items():
        if v is None:
            p[k] = None
    log(f"  building {name}: {json.dumps({k: v for k, v in {**sizes, **opts}.items()})}")
    space = HypothesisSpace(**B.build_fields(p, grammar=grammar))
    space.save(path, overwrite=True)
    return HypothesisSpace.load(path)


def space_runs(base, args, log, base_space=None) -> list:
    """The release protocol on a space built with one build option changed."""
    from bayes_concepts.protocols import protocols
    rel = protocols.get("curi-release")
    rows = []
    for name in args.space_variants:
        difference, opts = SPACE_VARIANTS[name]
        log(f"  {difference}")
        space = variant_space(opts, name, args, log, base_space)
        ds = rel.compute_gap(space, n_episodes=args.variant_episodes or args.episodes, seed=args.seed)
        for s in ds.split.values.tolist():
            for neg in ds.negatives.values.tolist():
                rows.append({"difference": difference, "kind": "space",
                             "note": f"{space.n_concepts:,} concepts", **compare_cells(base, ds, s, neg, False)})
    return rows


def differences_markdown(diff: pd.DataFrame) -> list:
    lines = ["Each row: the release protocol on this space with exactly one thing changed; gaps in "
             "percentage points; change = variant − release with a 95 % interval (paired over the same "
             "episodes where the variant scores the same episodes, else unpaired).", ""]
    ok = diff[diff["map_change"].notna()] if "map_change" in diff else diff.iloc[0:0]
    for difference, block in ok.groupby("difference", sort=False):
        show = pd.DataFrame({
            "split": block.split, "neg": block.negatives,
            "release mAP gap": block.release_map_gap, "variant mAP gap": block.variant_map_gap,
            "Δ mAP gap [95% CI]": [C.fmt_ci(*v) for v in zip(block.map_change, block.map_change_lo,
                                                                block.map_change_hi)],
            "release CBA gap": block.release_cba_gap, "variant CBA gap": block.variant_cba_gap,
            "Δ CBA gap [95% CI]": [C.fmt_ci(*v) for v in zip(block.cba_change, block.cba_change_lo,
                                                               block.cba_change_hi)],
            "weak empty % (release → variant)": [f"{a:.1f} → {b:.1f}" for a, b in
                                                 zip(block.release_weak_empty_pct, block.variant_weak_empty_pct)]})
        if "tiny_train_mass_pct" in block and block["tiny_train_mass_pct"].notna().any():
            show["episodes with 0 < training mass < 1e-12 (%)"] = block["tiny_train_mass_pct"].map(lambda v: f"{v:.2f}")
        note = block["note"].dropna().iloc[0] if "note" in block and block["note"].notna().any() else ""
        lines += [f"### {difference}" + (f" ({note})" if note else ""), "",
                  C.markdown_table(show, align=["left", "left"] + ["right"] * (show.shape[1] - 2)), ""]
    same = diff[diff["map_change"].isna()] if "map_change" in diff else diff
    for r in same.itertuples():
        lines.append(f"* {r.difference}: {r.note}.")
    return lines


def shrink_effects(diff: pd.DataFrame, n_splits: int = 9) -> pd.DataFrame:
    """How much each isolated difference moves the easy-negative shrink of the mAP gap (the
    mean over the ``n_splits`` splits of easy − hard, published −5.5 ± 1.4): the sum over the
    splits it was run on of (Δ easy − Δ hard), divided by ``n_splits``, with a 95 % interval
    from the rows' intervals (easy and hard episodes are independent).  A difference run with
    hard negatives only counts as 0 on easy when its easy cells cannot change (the query
    negatives: random in easy mode either way); otherwise it is left out."""
    rows = []
    ok = diff[diff["map_change"].notna()] if "map_change" in diff else diff.iloc[0:0]
    for difference, block in ok.groupby("difference", sort=False):
        by = {(r.split, r.negatives): r for r in block.itertuples()}
        splits = list(dict.fromkeys(block.split))
        total, var, used = 0.0, 0.0, []
        for sp in splits:
            h, e = by.get((sp, "hard")), by.get((sp, "easy"))
            if h is None:
                continue
            if e is None and not difference.startswith("query negatives"):
                continue
            de = 0.0 if e is None else e.map_change
            ve = 0.0 if e is None else ((e.map_change_hi - e.map_change_lo) / 3.92) ** 2
            total += de - h.map_change
            var += ve + ((h.map_change_hi - h.map_change_lo) / 3.92) ** 2
            used.append(sp)
        if not used:
            continue
        change, se = total / n_splits, np.sqrt(var) / n_splits
        rows.append({"difference": difference, "splits": len(used), "shrink_change": change,
                     "shrink_change_lo": change - 1.96 * se, "shrink_change_hi": change + 1.96 * se})
    return pd.DataFrame(rows)


def shrink_markdown(shrink: pd.DataFrame, release_shrink: float | None = None) -> list:
    if not len(shrink):
        return []
    show = pd.DataFrame({"difference": shrink.difference, "splits run": shrink.splits,
                         "change of the mean easy − hard mAP gap change [95% CI]": [
                             C.fmt_ci(*v) for v in zip(shrink.shrink_change, shrink.shrink_change_lo,
                                                       shrink.shrink_change_hi)]})
    head = ("How much each difference moves the mean over the nine splits of the easy − hard change of the "
            "mAP gap (published −5.5 ± 1.4" + (f"; the release protocol here {release_shrink:+.1f}" if
                                              release_shrink is not None else "") + "); + = less shrink.")
    return [head, "", C.markdown_table(show, align=["left", "right", "right"]), ""]


# ------------------------------------------------------------------------ figures
# ------------------------------------------------------------------------ figures
def note_of(space, ds) -> str:
    path = Path(space.path).name if space.path else "unsaved"
    return (f"space '{path}' ({space.n_concepts:,} concepts, {space.n_scenes:,} scenes, "
            f"{space.params.get('grammar', {}).get('file', '?')}, sampler {space.params.get('retries', 'whole')}); "
            f"protocol {ds.attrs.get('protocol', '?')}")


def write_paper_figures(ds, space, out_dir, args) -> list:
    """The paper figures (:func:`bayes_concepts.plots.write_figures`' set, and the episode
    view of a Concept IID episode) with a footnote naming the space and the protocol."""
    from bayes_concepts import plots
    from bayes_concepts.episodes import sample_episodes
    from bayes_concepts.oracles import strong_and_weak
    from bayes_concepts.protocols import protocols
    proto = protocols.get(ds.attrs.get("protocol", "curi-release"))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    note = note_of(space, ds)
    split = proto.splits(space, ["concept_iid"])["concept_iid"]
    eps = sample_episodes(space, split, "test", "hard", 200, seed=args.seed, query_negatives=proto.query_negatives,
                          hard_mode=proto.hard_mode)
    strong, weak = strong_and_weak(space, split, proto.settings)
    index = int(np.nanargmax(strong.evaluate(eps)["posterior_entropy"]))
    jobs = [(f"comp_gap_{neg}", lambda neg=neg: plots.plot_comp_gap(ds, neg, args.boot, args.seed))
            for neg in ("hard", "easy") if neg in ds.negatives.values.tolist()]
    jobs += [("entropy", lambda: plots.plot_entropies(ds, "hard", args.boot, args.seed)),
             ("synonym_classes", lambda: plots.plot_synonym_classes(space)),
             ("scene_properties", lambda: plots.plot_scene_properties(space)),
             ("episode_view", lambda: plots.plot_episode(space, eps, index, strong, weak))]
    paths = []
    for name, make in jobs:
        drawn, data = make()  # one Axes or an array of them, on a figure of their own
        fig = np.ravel(drawn)[0].figure
        engine = fig.get_layout_engine()
        if engine is not None and hasattr(engine, "set"):
            try:  # room for the note below the axes' labels
                engine.set(rect=(0, 0.022, 1, 0.978))
            except TypeError:
                pass
        fig.text(0.995, 0.002, note, ha="right", va="bottom", fontsize=7, color="0.35")
        for fmt in ("png", "pdf"):
            p = out / f"{name}.{fmt}"
            fig.savefig(p, dpi=150 if fmt == "png" else None, format=fmt,  # no date or version stamp
                        metadata={"CreationDate": None} if fmt == "pdf" else {"Software": None})
            paths.append(p)
        data.to_csv(out / f"{name}.csv", index=False)
        paths.append(out / f"{name}.csv")
        extra = data.attrs.get("concepts")
        if extra is not None:
            extra.to_csv(out / f"{name}_concepts.csv", index=False)
            paths.append(out / f"{name}_concepts.csv")
    return paths


def reference_figure(checks: pd.DataFrame, subtitle: str = ""):
    """Ours vs published for the numeric reference points (bars; ours with 95 % intervals)."""
    v = checks[checks.kind == "value"].reset_index(drop=True)
    y = np.arange(len(v))
    with C.style():
        fig = Figure(figsize=(9.5, 0.55 * len(v) + 1.8), layout="constrained")
        ax = fig.subplots()
        pub = ax.barh(y + 0.2, v.published, height=0.38, color="#e6ab02", label="published (CURI)", gid="published")
        err = np.vstack([v.ours - v.ours_lo, v.ours_hi - v.ours])
        ours = ax.barh(y - 0.2, v.ours, height=0.38, color="#1a9641", xerr=err, capsize=3, label="ours (95 % CI)",
                       gid="ours")
        for bars in (pub, ours):
            ax.bar_label(bars, fmt="%.1f", padding=8, fontsize=8)
        ax.margins(x=0.12)
        ax.axvline(0, color="0.2", linewidth=0.8)
        ax.set_yticks(y, v.check)
        ax.invert_yaxis()
        ax.set_xlabel("percentage points")
        ax.legend(loc="lower right")
        ax.set_title("CURI reference points: published vs this space" + (f"\n{subtitle}" if subtitle else ""))
    return fig


# --------------------------------------------------------------------------- main
def markdown(tables, checks, sbs, diff, datasets, space, args, sizes=None) -> str:
    protos = list(tables)
    first = datasets[protos[0]]
    lines = ["# CURI comp-gap table, reproduced with Bayesian oracles", "",
             C.space_note(space) + f"; build parameters: grammar "
             f"`{space.params.get('grammar', {}).get('file', '?')}`, sampler `{space.params.get('retries', 'whole')}`, "
             f"max_depth {space.params.get('max_depth')}, location bins {space.params.get('location_bins', '1..8')}, "
             f"filter `{space.params.get('filter_bounds', 'closed')}`.",
             f"{int(first.sizes['episode']):,} test episodes per (split, negatives); seed {args.seed}. "
             "Metrics in percent; gap = strong − weak oracle (percentage points) with a paired bootstrap 95 % "
             "interval over episodes; weak empty = share of episodes in which no training concept fits the "
             "support (the weak oracle then scores 0); entropies (nats) of the strong oracle. "
             "Published = CURI's reported oracle gap (hard negatives; CURI §5, G.6).", ""]
    from bayes_concepts.results import get_attr
    for p in protos:
        info = get_attr(datasets[p], "protocol_info", {})
        lines += [f"Protocol `{p}`: oracle settings `{datasets[p].attrs.get('oracle_settings')}`, query negatives "
                  f"{datasets[p].attrs.get('query_negatives')}, splits `hypotheses/{info.get('splits_dir')}/`, strong "
                  f"oracle over {'every concept' if info.get('strong_knows_all') else 'H_train ∪ H_test'}."]
    if sizes is not None:
        lines += ["", "## Split sizes", ""] + split_sizes_markdown(sizes)
    lines += ["", "## Side by side", ""] + side_by_side_markdown(sbs, protos)
    lines += gap_tables_markdown(tables[protos[0]], 2, f" — protocol {protos[0]}")
    lines += ["## Reference checks", "", f"Protocol `{protos[0]}`.", ""] + checks_markdown(checks[protos[0]])
    for p in protos[1:]:
        lines += ["", f"## Protocol {p}", ""] + gap_tables_markdown(tables[p], 3)
        lines += [f"### Reference checks ({p})", ""] + checks_markdown(checks[p])
    if diff is not None:
        lines += ["", "## Release vs paper, one difference at a time", ""] + differences_markdown(diff)
        rel = checks.get("curi-release")
        shrink_now = None
        if rel is not None and rel.check.str.startswith("mean change").any():
            shrink_now = float(rel[rel.check.str.startswith("mean change")].ours.iloc[0])
        lines += ["", "### The easy-negative shrink, difference by difference", ""] + \
            shrink_markdown(shrink_effects(diff, int(datasets[protos[0]].sizes["split"])), shrink_now)
    return "\n".join(lines)


def reused(args, name, space, log):
    """The results of protocol ``name`` saved in ``--reuse`` when they match this run (space,
    protocol, seed, episodes per cell, the protocol's nine splits and both negatives), else None."""
    from bayes_concepts.protocols import protocols
    from bayes_concepts.results import load_results
    if args.reuse is None:
        return None
    path = Path(args.reuse) / f"results_{name}.nc"
    if not path.exists():
        log(f"protocol {name}: {path} not found, computing")
        return None
    ds = load_results(path)
    a = ds.attrs
    want = {"protocol": name, "seed": str(args.seed), "episodes_per_cell": str(args.episodes),
            "space_manifest_sha256": space.manifest_sha256() or "unsaved"}
    bad = [k for k, v in want.items() if str(a.get(k)) != v]
    if a.get("protocol_info") != json.dumps(protocols.get(name).info(), sort_keys=True):
        bad.append("protocol_info")
    if set(ds.split.values.tolist()) != {f.stem for f in protocols.get(name).spec_files()} or \
            set(ds.negatives.values.tolist()) != {"hard", "easy"}:
        bad.append("splits or negatives")
    if bad:
        log(f"protocol {name}: {path} differs from this run ({', '.join(bad)}), computing")
        return None
    log(f"protocol {name}: reusing {path}")
    return ds


def main(argv=None) -> pd.DataFrame:
    p = C.parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--no-space-figures", action="store_true",
                   help="skip the figures of the space itself (synonym classes, scene properties)")
    p.add_argument("--protocols", nargs="+", default=list(PROTOCOLS), metavar="NAME",
                   help="protocols to compute, the first one checked against the published points "
                        "(default: %(default)s)")
    p.add_argument("--isolate", action="store_true",
                   help="run every release-vs-paper difference on its own (oracle settings, split rules, val)")
    p.add_argument("--variant-dir", type=Path, default=None,
                   help="with --isolate: build (or reuse) the space variants here and run them too")
    p.add_argument("--space-variants", nargs="+", default=list(DEFAULT_SPACE_VARIANTS),
                   choices=list(SPACE_VARIANTS), help="space-level differences to run (default: %(default)s)")
    p.add_argument("--variant-episodes", type=int, default=None,
                   help="with --variant-dir: episodes per cell of the space variants (default: --episodes; "
                        "compared unpaired with the release protocol's run)")
    p.add_argument("--space-only", action="store_true",
                   help="with --isolate: run only the space variants (e.g. with --reuse for the release run)")
    p.add_argument("--release-check-episodes", type=int, default=1000,
                   help="with --isolate: episodes per cell for the release's float32 weak posterior and AP pool "
                        "(slow path; 0 skips them; default %(default)s)")
    p.add_argument("--reuse", type=Path, default=None, metavar="DIR",
                   help="load each protocol's results_<protocol>.nc from DIR instead of computing it, when it was "
                        "made on this space with the same seed and --episodes (else compute)")
    p.add_argument("--figures", type=Path, default=None,
                   help="also write the paper figures of the first protocol there (e.g. paper_figs)")
    args = C.parse(p, argv, NAME)
    from bayes_concepts import plots
    from bayes_concepts.protocols import protocols
    from bayes_concepts.results import save_results
    for name in args.protocols:
        if name not in protocols:
            p.error(f"unknown protocol {name!r} (expected {', '.join(protocols.names())})")
    elapsed = C.timer()
    log = (lambda m: None) if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    space = C.load_space(args, p)
    datasets, tables, checks = {}, {}, {}
    for name in args.protocols:
        ds = reused(args, name, space, log)
        if ds is None:
            log(f"protocol {name}: {args.episodes:,} episodes per cell")
            ds = protocols.get(name).compute_gap(space, n_episodes=args.episodes, seed=args.seed)
        save_results(ds, args.out / f"results_{name}.nc", overwrite=True)
        datasets[name] = ds
        tables[name] = protocol_table(ds, args)
        checks[name] = reference_checks(tables[name], negatives_change(ds, args.boot, args.seed))
        checks[name].insert(0, "protocol", name)
    first = args.protocols[0]
    save_results(datasets[first], args.out / "results.nc", overwrite=True)
    table = tables[first].drop(columns="protocol")
    C.write_table(table, args.out, "comp_gap")
    C.write_table(pd.concat(list(tables.values()), ignore_index=True), args.out, "comp_gap_by_protocol")
    C.write_table(checks[first].drop(columns="protocol"), args.out, "reference_checks")
    C.write_table(pd.concat(list(checks.values()), ignore_index=True), args.out, "reference_checks_by_protocol")
    sbs = side_by_side(tables)
    C.write_table(sbs, args.out, "side_by_side")
    sizes = split_sizes(space, "curi-release") if "curi-release" in datasets else None
    if sizes is not None:
        C.write_table(sizes, args.out, "split_sizes")
    diff = None
    if args.isolate:
        if "curi-release" not in datasets:
            p.error("--isolate compares with the curi-release protocol: include it in --protocols")
        log("differences, one at a time:")
        if args.space_only and args.variant_dir is None:
            p.error("--space-only runs the space variants: give --variant-dir")
        rows = [] if args.space_only else oracle_and_split_runs(space, datasets["curi-release"], args, log)
        if args.release_check_episodes > 0 and not args.space_only:
            rows += release_oracle_runs(space, datasets["curi-release"], args, log)
        if args.variant_dir is not None:
            rows += space_runs(datasets["curi-release"], args, log, space)
        diff = pd.DataFrame(rows)
        C.write_table(diff, args.out, "differences")
        C.write_table(shrink_effects(diff, int(datasets["curi-release"].sizes["split"])), args.out,
                      "shrink_effects")
    md = markdown(tables, {k: v.drop(columns="protocol") for k, v in checks.items()}, sbs, diff, datasets,
                  space, args, sizes)
    C.write_markdown(md, args.out, "comp_gap")
    ds = datasets[first]
    if args.no_space_figures:
        for neg in ("hard", "easy"):
            axes, data = plots.plot_comp_gap(ds, neg, args.boot, args.seed)
            C.save_figure(axes[0].figure, args.out, f"comp_gap_{neg}")
            data.to_csv(args.out / f"comp_gap_{neg}.csv", index=False)
    else:
        plots.write_figures(ds, space, args.out, n_boot=args.boot, seed=args.seed)
    C.save_figure(reference_figure(checks[first], note_of(space, ds)), args.out, "reference_points")
    if args.figures is not None:
        write_paper_figures(ds, space, args.figures, args)
    table.attrs["reference_checks"] = checks[first]
    table.attrs["by_protocol"] = tables
    table.attrs["differences"] = diff
    table.attrs["split_sizes"] = sizes
    if not args.quiet:
        print(md)
        print(f"\n[{NAME}: {elapsed():.1f} s; outputs in {args.out}]")
    return table


if __name__ == "__main__":
    main()
