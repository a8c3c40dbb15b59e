"""The compositionality gap (DESIGN section 9) and the audit of a split.

comp gap = M(strong) − M(weak) on a split's test episodes, for M = mAP (test bank)
and CBA (query), with a paired bootstrap 95 % interval over episodes.

>>> ds = compute_gap(space, curi_splits(space), n_episodes=2000)     # doctest: +SKIP
>>> rows = summarise(ds)                                              # doctest: +SKIP
>>> print(format_table(rows))                                         # doctest: +SKIP
"""
from __future__ import annotations

import json
import zlib

import numpy as np
import xarray as xr

from . import __version__
from .episodes import EpisodeSampler
from .oracles import OracleSettings, strong_and_weak
from .results import empty_dataset

LEARNERS = ("strong", "weak")


def cell_seed(seed: int, split: str, negatives: str) -> int:
    """Seed of one (split, negatives) cell: stable across runs and independent of which
    other splits are computed."""
    ss = np.random.SeedSequence([int(seed), zlib.crc32(split.encode()), zlib.crc32(negatives.encode())])
    return int(ss.generate_state(1, np.uint32)[0])


def compute_gap(space, splits: dict, negatives=("hard", "easy"), n_episodes: int = 20_000,
                settings: OracleSettings | None = None, seed: int = 0, query_negatives: str | None = None,
                progress: bool = False, hard_mode: str = "union") -> xr.Dataset:
    """Score the strong and weak oracles of every split on ``n_episodes`` test episodes per
    (split, negatives).  Returns the results Dataset (see :mod:`bayes_concepts.results`)."""
    from tqdm.auto import tqdm
    settings = settings or OracleSettings()
    names = list(splits)
    ds = empty_dataset(names, negatives, LEARNERS, n_episodes)
    sampler = EpisodeSampler(space)
    cells = [(s, neg) for s in names for neg in negatives]
    for name, neg in tqdm(cells, disable=not progress, desc="comp gap", unit="cell", leave=False):
        split = splits[name]
        eps = sampler.sample(split.test, n_episodes, neg, seed=cell_seed(seed, name, neg),
                             query_negatives=query_negatives, hard_mode=hard_mode,
                             meta={"split": name, "side": "test"})
        strong, weak = strong_and_weak(space, split, settings)
        sel = {"split": name, "negatives": neg}
        ds["concept"].loc[sel] = eps.concept
        for learner, oracle in (("strong", strong), ("weak", weak)):
            r = oracle.evaluate(eps)
            for m in ("ap", "cba", "posterior_entropy", "predictive_entropy", "empty"):
                ds[m].loc[dict(sel, learner=learner)] = r[m]
    ds["weak_empty"] = ds["empty"].sel(learner="weak", drop=True)
    ds.attrs.update({
        "space_manifest_sha256": space.manifest_sha256() or "unsaved",
        "oracle_settings": json.dumps(settings.as_dict(), sort_keys=True),
        "seed": int(seed), "episodes_per_cell": int(n_episodes),
        "query_negatives": query_negatives or "same as support",
        "hard_mode": hard_mode,
        "toolkit_version": __version__,
        "metric_units": "ap, cba: fraction in [0, 1]; entropies: nats",
    })
    return ds


def paired_bootstrap(strong: np.ndarray, weak: np.ndarray, n_boot: int = 1000, seed: int = 0,
                     level: float = 0.95) -> tuple:
    """Mean of ``strong - weak`` and its percentile bootstrap interval, resampling episodes
    (pairs) with replacement.  NaN pairs are dropped.  Returns (mean, lo, hi)."""
    d = np.asarray(strong, np.float64) - np.asarray(weak, np.float64)
    d = d[~np.isnan(d)]
    if len(d) == 0:
        return (np.nan, np.nan, np.nan)
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    block = max(1, 2_000_000 // len(d))
    for lo in range(0, n_boot, block):
        k = min(block, n_boot - lo)
        idx = rng.integers(0, len(d), size=(k, len(d)))
        means[lo: lo + k] = d[idx].mean(axis=1)
    a = (1 - level) / 2
    return float(d.mean()), float(np.quantile(means, a)), float(np.quantile(means, 1 - a))


def summarise(ds: xr.Dataset, n_boot: int = 1000, seed: int = 0) -> list:
    """One row per (split, negatives): strong/weak mAP and CBA (percent), gaps with paired
    bootstrap 95 % intervals, weak-empty share, mean entropies (strong oracle; nats)."""
    rows = []
    for split in ds.split.values.tolist():
        for neg in ds.negatives.values.tolist():
            cell = ds.sel(split=split, negatives=neg)
            r = {"split": split, "negatives": neg, "episodes": int(cell.sizes["episode"])}
            for learner in ("strong", "weak"):
                c = cell.sel(learner=learner)
                r[learner] = {"map": 100 * float(np.nanmean(c["ap"])), "cba": 100 * float(np.nanmean(c["cba"])),
                              "posterior_entropy": float(np.nanmean(c["posterior_entropy"]))
                              if np.isfinite(c["posterior_entropy"]).any() else None,
                              "predictive_entropy": float(np.nanmean(c["predictive_entropy"]))}
            gap = {}
            for metric, key in (("ap", "map"), ("cba", "cba")):
                mean, lo, hi = paired_bootstrap(100 * cell[metric].sel(learner="strong").values,
                                                100 * cell[metric].sel(learner="weak").values, n_boot, seed)
                gap[key], gap[f"{key}_ci"] = mean, [lo, hi]
            r["gap"] = gap
            r["weak_empty_share"] = float(cell["weak_empty"].mean())
            r["posterior_entropy"] = r["strong"]["posterior_entropy"]
            r["predictive_entropy"] = r["strong"]["predictive_entropy"]
            rows.append(r)
    return rows


def format_table(rows: list) -> str:
    """The comp-gap table as text, splits ordered by mAP gap (largest first)."""
    head = (f"{'split':<15}{'neg':<5}{'strong mAP':>11}{'weak mAP':>9}{'mAP gap [95% CI]':>23}"
            f"{'strong CBA':>11}{'weak CBA':>9}{'CBA gap [95% CI]':>23}{'weak empty':>11}{'H post':>8}"
            f"{'H pred':>8}{'episodes':>9}")
    lines = [head, "-" * len(head)]
    for r in sorted(rows, key=lambda r: (r["negatives"], -r["gap"]["map"])):
        g = r["gap"]
        lines.append(
            f"{r['split']:<15}{r['negatives']:<5}{r['strong']['map']:>11.1f}{r['weak']['map']:>9.1f}"
            f"{g['map']:>8.1f} [{g['map_ci'][0]:>5.1f}, {g['map_ci'][1]:>5.1f}]"
            f"{r['strong']['cba']:>11.1f}{r['weak']['cba']:>9.1f}"
            f"{g['cba']:>8.1f} [{g['cba_ci'][0]:>5.1f}, {g['cba_ci'][1]:>5.1f}]"
            f"{100 * r['weak_empty_share']:>10.1f}%"
            f"{(r['posterior_entropy'] if r['posterior_entropy'] is not None else float('nan')):>8.2f}"
            f"{r['predictive_entropy']:>8.3f}{r['episodes']:>9,}")
    lines.append("metrics in percent; gap = strong - weak with a paired bootstrap 95% interval over episodes; "
                 "entropies (nats) of the strong oracle")
    return "\n".join(lines)


def audit(space, split, n_episodes: int = 2000, settings: OracleSettings | None = None, seed: int = 0,
          n_worst: int = 10) -> dict:
    """A one-page audit of a split: sizes, leakage, comp gap (both metrics, hard and easy
    negatives), weak coverage, entropies, and the held-out concepts the weak oracle gets most
    wrong (lowest mean AP over the test episodes in which they were the true concept)."""
    from .splits import split_stats
    ds = compute_gap(space, {split.name: split}, ("hard", "easy"), n_episodes, settings, seed)
    rows = summarise(ds)
    cell = ds.sel(split=split.name, negatives="hard")
    concepts = cell["concept"].values
    weak_ap = cell["ap"].sel(learner="weak").values
    strong_ap = cell["ap"].sel(learner="strong").values
    worst = []
    for c in np.unique(concepts):
        sel = concepts == c
        worst.append((float(np.mean(weak_ap[sel])), float(np.mean(strong_ap[sel])), int(sel.sum()), int(c)))
    worst.sort()
    return {"split": split.name, "stats": split_stats(space, split), "gap": rows, "results": ds,
            "worst": [{"id": c, "program": space.programs[c], "readable": space.program(c).readable,
                       "weak_map": 100 * w, "strong_map": 100 * s, "episodes": n}
                      for w, s, n, c in worst[:n_worst]]}


def format_audit(report: dict) -> str:
    st = report["stats"]
    lines = [f"audit of split {report['split']!r}",
             f"sizes: train {st['train']:,}, val {st['val']:,}, test {st['test']:,}; synonym leakage "
             f"{st['leakage']:,} held-out concepts have a synonym in train",
             f"mean length: " + ", ".join(f"{s} {v:.2f}" for s, v in st["mean_length"].items() if v is not None),
             "", format_table(report["gap"]), "",
             "weak coverage: share of test episodes in which some training concept fits the support: " +
             ", ".join(f"{r['negatives']} {100 * (1 - r['weak_empty_share']):.1f}%" for r in report["gap"]),
             "", "held-out concepts the weak oracle gets most wrong (hard negatives, mean AP over their episodes):",
             f"{'weak mAP':>9}{'strong mAP':>11}{'episodes':>9}  concept"]
    for w in report["worst"]:
        lines.append(f"{w['weak_map']:>9.1f}{w['strong_map']:>11.1f}{w['episodes']:>9}  {w['readable']}   [#{w['id']}]")
    return "\n".join(lines)
