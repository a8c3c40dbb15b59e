"""The compositionality gap and the audit of a split.

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
from .divergence import split_divergence
from .errors import BayesConceptsError
from .gap_cells import gap_cells
from .oracles import OracleSettings
from .results import empty_dataset
from .scale import check_memory, gap_bytes, scheduler_scope
from .splits import split_stats

LEARNERS = ("strong", "weak")
ORACLES = LEARNERS


def cell_seed(seed: int, split: str, negatives: str) -> int:
    """Seed of one (split, negatives) cell: stable across runs and independent of which
    other splits are computed."""
    ss = np.random.SeedSequence([int(seed), zlib.crc32(split.encode()), zlib.crc32(negatives.encode())])
    return int(ss.generate_state(1, np.uint32)[0])


def _learner_table(learners, split_names) -> dict:
    """``learners`` as name -> {split: learner}.

    Accepts None, a mapping name -> learner (scored on every split) or name -> mapping
    split -> learner (a model per split; scored only on those splits), or a sequence of
    learners (named by their ``name`` attribute)."""
    from collections.abc import Mapping
    from .learners.protocol import LearnerError, is_learner, learner_name
    if learners is None:
        return {}
    if not isinstance(learners, Mapping):
        items = list(learners)
        names = [learner_name(x, f"learner{i}") for i, x in enumerate(items)]
        if len(set(names)) != len(names):
            raise LearnerError(f"learners need distinct names, got {', '.join(names)}")
        learners = dict(zip(names, items))
    table = {}
    for name, value in learners.items():
        name = str(name)
        if name in ORACLES:
            raise LearnerError(f"the learner names {', '.join(ORACLES)} are the oracles'; rename learner {name!r}")
        if isinstance(value, Mapping):
            unknown = [s for s in value if s not in split_names]
            if unknown:
                raise LearnerError(f"learner {name!r} is given for split {', '.join(map(str, unknown))}, which is "
                                   f"not among the splits scored ({', '.join(split_names)})")
            per_split = dict(value)
        else:
            per_split = {s: value for s in split_names}
        for s, learner in per_split.items():
            if not is_learner(learner):
                raise LearnerError(f"learner {name!r} ({type(learner).__name__}) has no fit/predict_proba methods")
        table[name] = per_split
    return table


def _learner_info(table: dict, checks: dict | None = None) -> dict:
    """Per learner and split: the learner's own ``info()`` and, for a trained model, where it
    was scored and how that compares with where it was trained (``scored_on``: see
    :func:`bayes_concepts.learners.binding.check_scoring`)."""
    info = {name: {"kind": "oracle"} for name in ORACLES}
    for name, per_split in table.items():
        entries = {}
        for s, learner in per_split.items():
            describe = getattr(learner, "info", None)
            entries[s] = describe() if callable(describe) else {"kind": type(learner).__name__}
            if (name, s) in (checks or {}):
                entries[s] = {**entries[s], "scored_on": checks[(name, s)]}
        info[name] = entries
    return info


def _whole_number(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_gap_input(splits, negatives, n_episodes, seed, query_negatives) -> tuple:
    """Raise a one-line :class:`BayesConceptsError` for input :func:`compute_gap` cannot score;
    returns ``negatives`` as a tuple (a single string is one setting)."""
    if not splits:
        raise BayesConceptsError("no splits to score: give a dict {name: Split} with at least one split "
                                 "(e.g. load_splits(space), or a protocol's splits(space))")
    if not _whole_number(n_episodes) or n_episodes < 1:
        raise BayesConceptsError(f"n_episodes must be a whole number >= 1, got {n_episodes!r}")
    if not _whole_number(seed) or seed < 0:
        raise BayesConceptsError(f"seed must be a whole number >= 0, got {seed!r}")
    negatives = (negatives,) if isinstance(negatives, str) else tuple(negatives)
    if not negatives:
        raise BayesConceptsError("negatives is empty: give 'hard', 'easy' or both, e.g. ('hard', 'easy')")
    bad = [n for n in negatives if n not in ("hard", "easy")]
    if bad:
        raise BayesConceptsError(f"negatives must be 'hard' or 'easy' (or a sequence of them), got {bad[0]!r}")
    if len(set(negatives)) != len(negatives):
        raise BayesConceptsError(f"negatives lists a setting twice: {negatives!r}")
    if query_negatives not in (None, "hard", "easy", "random"):
        raise BayesConceptsError(f"query_negatives must be None, 'hard', 'easy' or 'random', got {query_negatives!r}")
    return negatives


def compute_gap(space, splits: dict, negatives=("hard", "easy"), n_episodes: int = 20_000,
                settings: OracleSettings | None = None, seed: int = 0, query_negatives: str | None = None,
                progress: bool = False, hard_mode: str = "union", learners=None, scheduler=None,
                allow_other_space: bool = False) -> xr.Dataset:
    """Score the strong and weak oracles of every split, and any other ``learners``, on the
    same ``n_episodes`` test episodes per (split, negatives) with the same metrics.  Returns
    the results Dataset (see :mod:`bayes_concepts.results`), the query predictions of every
    learner included.

    learners: None; a mapping name -> learner (scored on every split), or name -> {split:
    learner} (e.g. a model trained on that split; NaN elsewhere); or a sequence of learners
    named by their ``name``.  A learner is anything with ``fit``/``predict_proba``
    (:mod:`bayes_concepts.learners.protocol`); ones with a batch ``evaluate(episodes)`` are
    scored by it.  The oracles' numbers do not depend on which other learners are scored.

    scheduler: where the oracles' episode chunks run (:class:`bayes_concepts.scale.Scheduler`:
    None, this process; ``"local:N"``, a LocalCluster; a Dask scheduler address, for a saved
    space every worker can read; see :mod:`bayes_concepts.gap_cells`); the results are the
    same, value for value.  Other learners
    are scored in this process on the same episodes.

    A trained model (a learner whose ``card`` has a ``training`` entry) is scored only on the
    space it was trained on and on splits with its training split's concepts: anything else
    is a one-line :class:`~bayes_concepts.learners.protocol.LearnerError` naming both, unless
    ``allow_other_space`` (or the model was loaded with it); the results' ``learners``
    attribute records each model's training space, split hash, steps and settings, where it
    was scored and any override (:mod:`bayes_concepts.learners.binding`).

    Bad input raises :class:`~bayes_concepts.errors.BayesConceptsError` (one line, before any
    work): no splits, ``n_episodes`` not a whole number >= 1, ``seed`` not a whole number
    >= 0, ``negatives`` empty or other than ``"hard"``/``"easy"`` (a single string, e.g.
    ``"hard"``, is one setting), ``query_negatives`` other than None/hard/easy/random; and a
    request whose results cannot fit in the memory available
    (:class:`~bayes_concepts.scale.MemoryLimitError`, as ``gap --episodes`` is refused)."""
    from tqdm.auto import tqdm
    from .learners.scoring import score_learners
    settings = settings or OracleSettings()
    negatives = _check_gap_input(splits, negatives, n_episodes, seed, query_negatives)
    names = list(splits)
    table = _learner_table(learners, names)
    from .learners.binding import check_learners
    checks = check_learners(space, splits, table, allow_other_space)
    all_learners = (*ORACLES, *table)
    cells = [(s, neg) for s in names for neg in negatives]
    # as the command line does: refuse up front a request whose results cannot fit in memory
    check_memory(gap_bytes(n_episodes, len(cells), len(all_learners), keep_episodes=bool(table)),
                 f"n_episodes {n_episodes:,}", "give fewer episodes (or fewer splits)",
                 f"results of {len(cells)} cell(s) x {len(all_learners)} learner(s)")
    ds = None
    with scheduler_scope(scheduler) as sched:
        oracle_cells = gap_cells(space, splits, cells, n_episodes, settings,
                                 lambda name, neg: cell_seed(seed, name, neg), query_negatives, hard_mode,
                                 bool(table), sched)
        for name, neg, concept, scored, eps in tqdm(oracle_cells, total=len(cells), disable=not progress,
                                                    desc="comp gap", unit="cell", leave=False):
            if ds is None:
                ds = empty_dataset(names, negatives, all_learners, n_episodes,
                                   n_query=scored["strong"]["query_pred"].shape[1])
                ds["ap_bound"] = xr.zeros_like(ds["ap"])
            here = {lr: per_split[name] for lr, per_split in table.items() if name in per_split}
            if here:
                scored.update(score_learners(space, eps, here))
            sel = {"split": name, "negatives": neg}
            ds["concept"].loc[sel] = concept
            for learner, r in scored.items():
                for m in ("ap", "cba", "posterior_entropy", "predictive_entropy", "empty", "query_pred"):
                    ds[m].loc[dict(sel, learner=learner)] = r[m]
                ds["ap_bound"].loc[dict(sel, learner=learner)] = r.get("ap_bound", 0.0)  # 0: exact
    if ds is None:
        ds = empty_dataset(names, negatives, all_learners, n_episodes, n_query=0)
        ds["ap_bound"] = xr.zeros_like(ds["ap"])
    ds["weak_empty"] = ds["empty"].sel(learner="weak", drop=True)
    ds.attrs.update({
        "space_manifest_sha256": space.manifest_sha256() or "unsaved",
        "oracle_settings": json.dumps(settings.as_dict(), sort_keys=True),
        "ap_tolerance": settings.tolerance,
        "seed": int(seed), "episodes_per_cell": int(n_episodes),
        "query_negatives": query_negatives or "same as support",
        "hard_mode": hard_mode,
        "toolkit_version": __version__,
        "metric_units": "ap, ap_bound, cba: fraction in [0, 1]; entropies: nats",
        "learners": json.dumps(_learner_info(table, checks), sort_keys=True, default=str),
        "splits": json.dumps(split_records(splits), sort_keys=True, default=str),
    })
    return ds


def split_records(splits: dict) -> dict:
    """What results record of each split scored (``ds.attrs["splits"]``, JSON): name ->
    ``spec`` (the validated spec dict it was made from, so the split can be made again on the
    same space), ``source`` (its spec file, or None), ``protocol`` (the protocol that treated
    it, or None), ``concepts_sha256`` (:meth:`~bayes_concepts.splits.Split.concepts_sha256`:
    tells whether a split made again is the same) and ``sizes`` (concepts per side)."""
    return {name: {"spec": split.spec, "source": split.source, "protocol": getattr(split, "protocol", None),
                   "concepts_sha256": split.concepts_sha256(), "sizes": split.sizes()}
            for name, split in splits.items()}


def recorded_splits(ds: xr.Dataset) -> dict:
    """The split records of results ``ds`` (:func:`split_records`); ``{}`` for results written
    before splits were recorded."""
    text = ds.attrs.get("splits")
    if not text:
        return {}
    try:
        records = json.loads(text)
    except ValueError:
        raise BayesConceptsError("results: attribute 'splits' is not valid JSON") from None
    return records if isinstance(records, dict) else {}


def paired_bootstrap(strong: np.ndarray, weak: np.ndarray, n_boot: int = 1000, seed: int = 0,
                     level: float = 0.95) -> tuple:
    """Mean of ``strong - weak`` and its percentile bootstrap interval, resampling episodes
    (pairs) with replacement.  NaN pairs are dropped.  Returns (mean, lo, hi).  ``n_boot`` not a
    whole number >= 1, a ``level`` outside (0, 1) or arrays of other shapes raise a one-line
    :class:`~bayes_concepts.errors.BayesConceptsError`."""
    if not _whole_number(n_boot) or n_boot < 1:
        raise BayesConceptsError(f"n_boot must be a whole number >= 1, got {n_boot!r}")
    if not isinstance(level, (int, float, np.floating)) or not 0 < level < 1:
        raise BayesConceptsError(f"level must be a number in (0, 1), got {level!r}")
    if np.shape(strong) != np.shape(weak):
        raise BayesConceptsError(f"paired_bootstrap: the two arrays pair episodes and need one shape, got "
                                 f"{np.shape(strong)} and {np.shape(weak)}")
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
    bootstrap 95 % intervals, weak-empty share, mean entropies (strong oracle; nats) and, when
    other learners were scored, ``learners``: name -> their means with bootstrap intervals and
    their differences from the weak oracle with paired bootstrap intervals (:func:`_learner_row`)."""
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
            models = {}
            for learner in (str(x) for x in ds.learner.values.tolist()):
                ap = cell["ap"].sel(learner=learner).values
                if learner in ORACLES or not np.isfinite(ap).any():
                    continue
                models[learner] = _learner_row(cell, learner, n_boot, seed)
            if models:  # other learners scored in this cell: means and differences from the weak oracle
                r["learners"] = models
            r["weak_empty_share"] = float(cell["weak_empty"].mean())
            if "ap_bound" in ds:  # the AP tolerance and the largest certified bound of the oracles
                r["ap_tolerance"] = float(ds.attrs.get("ap_tolerance", 0.0))
                r["ap_bound_max"] = float(np.nanmax(cell["ap_bound"].sel(learner=list(ORACLES)).values,
                                                    initial=0.0))
            r["posterior_entropy"] = r["strong"]["posterior_entropy"]
            r["predictive_entropy"] = r["strong"]["predictive_entropy"]
            rows.append(r)
    return rows


def _learner_row(cell, learner: str, n_boot: int, seed: int) -> dict:
    """A learner's entry in a :func:`summarise` row: mean mAP and CBA (percent) with the
    percentile bootstrap 95 % interval of each mean over its episodes (``map_ci``,
    ``cba_ci``), the episodes it was scored on, and ``vs_weak``: the learner − weak oracle
    difference of each metric (percentage points) with its paired bootstrap 95 % interval over
    the same episodes, as the comp gap's strong − weak."""
    row, vs_weak = {}, {}
    for metric, key in (("ap", "map"), ("cba", "cba")):
        own = 100 * cell[metric].sel(learner=learner).values.astype(np.float64)
        weak = 100 * cell[metric].sel(learner="weak").values.astype(np.float64)
        mean, lo, hi = paired_bootstrap(own, np.zeros_like(own), n_boot, seed)  # the mean itself, resampled
        row[key], row[f"{key}_ci"] = mean, [lo, hi]
        diff, dlo, dhi = paired_bootstrap(own, weak, n_boot, seed)
        vs_weak[key], vs_weak[f"{key}_ci"] = diff, [dlo, dhi]
    row["episodes"] = int(np.isfinite(cell["ap"].sel(learner=learner).values).sum())
    row["vs_weak"] = vs_weak
    return row


def format_table(rows: list) -> str:
    """The comp-gap table as text, splits ordered by mAP gap (largest first)."""
    w = max([15] + [len(r["split"]) + 1 for r in rows])
    head = (f"{'split':<{w}}{'neg':<5}{'strong mAP':>11}{'weak mAP':>9}{'mAP gap [95% CI]':>23}"
            f"{'strong CBA':>11}{'weak CBA':>9}{'CBA gap [95% CI]':>23}{'weak empty':>11}{'H post':>8}"
            f"{'H pred':>8}{'episodes':>9}")
    lines = [head, "-" * len(head)]
    for r in sorted(rows, key=lambda r: (r["negatives"], -r["gap"]["map"])):
        g = r["gap"]
        lines.append(
            f"{r['split']:<{w}}{r['negatives']:<5}{r['strong']['map']:>11.1f}{r['weak']['map']:>9.1f}"
            f"{g['map']:>8.1f} [{g['map_ci'][0]:>5.1f}, {g['map_ci'][1]:>5.1f}]"
            f"{r['strong']['cba']:>11.1f}{r['weak']['cba']:>9.1f}"
            f"{g['cba']:>8.1f} [{g['cba_ci'][0]:>5.1f}, {g['cba_ci'][1]:>5.1f}]"
            f"{100 * r['weak_empty_share']:>10.1f}%"
            f"{(r['posterior_entropy'] if r['posterior_entropy'] is not None else float('nan')):>8.2f}"
            f"{r['predictive_entropy']:>8.3f}{r['episodes']:>9,}")
    lines.append("metrics in percent; gap = strong - weak with a paired bootstrap 95% interval over episodes; "
                 "entropies (nats) of the strong oracle")
    tolerance = max((r.get("ap_tolerance", 0.0) for r in rows), default=0.0)
    if tolerance > 0:
        lines.append(f"AP within {tolerance:g} of the exact AP in every episode (certified per episode; largest "
                     f"bound {max(r.get('ap_bound_max', 0.0) for r in rows):.2g}); AP tolerance 0 computes it exactly")
    models = list(dict.fromkeys(name for r in rows for name in r.get("learners", {})))
    if models:
        lines += ["", format_models(rows, models)]
    return "\n".join(lines)


def format_models(rows: list, models: list) -> str:
    """Models and reference learners placed between the oracles, on the same episodes: per
    (split, negatives) and metric, one line of means (percent; weak oracle left, strong oracle
    right; a learner's mean with its bootstrap 95 % interval) and one line of differences from
    the weak oracle (percentage points, paired bootstrap 95 % intervals: a learner's, and under
    the strong oracle the comp gap)."""
    def ci(value, interval) -> str:
        return f"{value:.1f} [{interval[0]:.1f}, {interval[1]:.1f}]"

    lines_of = []
    for r in sorted(rows, key=lambda r: (r["negatives"], -r["gap"]["map"])):
        for metric in ("map", "cba"):
            label = "mAP" if metric == "map" else "CBA"
            got = r.get("learners", {})
            lines_of.append([r["split"], r["negatives"], label, f"{r['weak'][metric]:.1f}",
                             *[ci(got[m][metric], got[m][f"{metric}_ci"]) if m in got else "-" for m in models],
                             f"{r['strong'][metric]:.1f}"])
            lines_of.append(["", "", f"{label} - weak", "",
                             *[ci(got[m]["vs_weak"][metric], got[m]["vs_weak"][f"{metric}_ci"])
                               if m in got and "vs_weak" in got[m] else "-" for m in models],
                             ci(r["gap"][metric], r["gap"][f"{metric}_ci"])])
    head = ["split", "neg", "metric", "weak", *models, "strong"]
    widths = [max(len(x[k]) for x in [head] + lines_of) for k in range(len(head))]

    def fmt(cells) -> str:
        return "  ".join(c.ljust(w) if k < 3 else c.rjust(w) for k, (c, w) in enumerate(zip(cells, widths))).rstrip()

    lines = [fmt(head), "  ".join("-" * w for w in widths)] + [fmt(x) for x in lines_of]
    lines.append("learners on the same test episodes as the oracles, metrics in percent with bootstrap 95% intervals "
                 "of the mean; '- weak': difference from the weak oracle on the same episodes (percentage points, "
                 "paired bootstrap 95% interval; under strong: the comp gap); '-': not scored there")
    return "\n".join(lines)


def audit(space, split, n_episodes: int = 2000, settings: OracleSettings | None = None, seed: int = 0,
          n_worst: int = 10, structure=None, query_negatives: str | None = None, hard_mode: str = "union") -> dict:
    """A one-page audit of a split: sizes, leakage, comp gap (both metrics, hard and easy
    negatives), weak coverage, entropies, atom and compound divergence (``"divergence"``:
    :func:`bayes_concepts.divergence.split_divergence`; ``structure`` reuses a
    :func:`~bayes_concepts.divergence.concept_structure`), and the held-out concepts the weak
    oracle gets most wrong (lowest mean AP over the test episodes in which they were the true
    concept).  ``query_negatives`` and ``hard_mode``: how episodes are drawn, as for
    :func:`compute_gap` (a protocol's)."""
    ds = compute_gap(space, {split.name: split}, ("hard", "easy"), n_episodes, settings, seed,
                     query_negatives=query_negatives, hard_mode=hard_mode)
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
            "divergence": split_divergence(space, split, structure=structure),
            "worst": [{"id": c, "program": space.programs[c], "readable": space.program(c).readable,
                       "weak_map": 100 * w, "strong_map": 100 * s, "episodes": n}
                      for w, s, n, c in worst[:n_worst]]}


def format_audit(report: dict) -> str:
    """The audit report of :func:`audit` as one page of text (sizes, leakage, the comp-gap table,
    divergences, weak coverage, the hardest held-out concepts)."""
    st = report["stats"]
    lines = [f"audit of split {report['split']!r}",
             f"sizes: train {st['train']:,}, val {st['val']:,}, test {st['test']:,}; synonym leakage "
             f"{st['leakage']:,} held-out concepts have a synonym in train",
             f"mean length: " + ", ".join(f"{s} {v:.2f}" for s, v in st["mean_length"].items() if v is not None),
             *([] if "divergence" not in report else [
                 f"divergence (Keysers et al. 2020; train vs test, weighted by the episode distribution): atom "
                 f"{report['divergence']['atom_divergence']:.3f}, compound {report['divergence']['compound_divergence']:.3f}"]),
             "", format_table(report["gap"]), "",
             "weak coverage: share of test episodes in which some training concept fits the support: " +
             ", ".join(f"{r['negatives']} {100 * (1 - r['weak_empty_share']):.1f}%" for r in report["gap"]),
             "", "held-out concepts the weak oracle gets most wrong (hard negatives, mean AP over their episodes):",
             f"{'weak mAP':>9}{'strong mAP':>11}{'episodes':>9}  concept"]
    for w in report["worst"]:
        lines.append(f"{w['weak_map']:>9.1f}{w['strong_map']:>11.1f}{w['episodes']:>9}  {w['readable']}   [#{w['id']}]")
    return "\n".join(lines)
