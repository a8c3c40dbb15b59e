"""The oracle ladder: every rung's scores on the same episodes, a split's ladder profile,
and rank correlations with published models' results.

A split's *ladder profile* is each rung's mAP and CBA (:mod:`bayes_concepts.rungs`: the
memoriser, the recombiners, the length-bounded and sampling learners, the learned priors,
the strong oracle) on the same test episodes, with each rung's gap to the strong oracle
(strong − rung, percentage points) and its paired bootstrap 95 % interval over episodes.
Summaries, fixed before any comparison with models:

* ``gap`` of a rung: strong − rung, mAP points (hard or easy negatives);
* ``solved_at``: the lowest rung, in ladder order, whose mAP gap is at most
  :data:`SOLVED_WITHIN` points — where on the ladder the split stops being hard (None: no
  rung below the strong oracle gets there);
* ``spread`` of a rung over a benchmark's splits: the largest minus the smallest gap.

Correlations (:func:`ladder_correlations`): per rung, Spearman's ρ and Kendall's τ between
the rung's gap per condition (split) and the published models' difficulty per condition
(:mod:`bayes_concepts.published`: higher = harder; the mean model and each model), with 95 %
intervals from a two-level bootstrap: conditions resampled with replacement and, within
each, the episode mean redrawn around the condition's mean gap with its standard error (the
paired bootstrap's own distribution at thousands of episodes).  Across benchmarks
(:func:`pooled_correlations`): Fisher's z of each benchmark's ρ, weighted by its number of
conditions minus 3 (benchmarks with 3 or fewer conditions are left out and named), with the
same bootstrap per benchmark and the pooled figure recomputed leaving one benchmark out at
a time.

>>> ds = ladder_profile(space, splits, n_episodes=2000)                      # doctest: +SKIP
>>> rows = ladder_summary(ds)                                                # doctest: +SKIP
>>> print(format_ladder(rows))                                               # doctest: +SKIP
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import xarray as xr

from .errors import BayesConceptsError
from .gap import compute_gap, paired_bootstrap
from .gap_cells import NESTED_ORACLES
from .rungs import LADDER_ORDER, RungError, check_rung, parse_rung_text, rung_label, rung_learner
from .rungs import rungs as rung_registry
from .rungs.oracle_rungs import space_structure
from .splits import side_space

__all__ = ["DEFAULT_RUNGS", "SOLVED_WITHIN", "FLAT_SPREAD", "parse_rungs", "published_difficulty", "ladder_profile", "ladder_summary", "format_ladder",
           "ladder_correlations", "pooled_correlations", "rung_spreads", "LadderError"]

#: the default ladder: every built-in rung, knobs at their defaults
DEFAULT_RUNGS = ("memoriser", "compound", "atom", "bounded_length", "sampling", "learned_prior",
                 "learned_prior_parent", "strong")
#: a rung whose mAP is within this many points of the strong oracle's has "solved" the split
SOLVED_WITHIN = 5.0
#: a rung whose gaps over a benchmark's conditions spread less than this (mAP points) is
#: "flat": it cannot rank the conditions, and its correlations are NaN (not the rank order of
#: differences far inside its intervals)
FLAT_SPREAD = 1.0
#: rungs that are the oracles compute_gap scores itself: rung name -> its learner name there
_ORACLE_NAMES = {"memoriser": "weak", "strong": "strong", "compound": "compound", "atom": "atom"}


class LadderError(BayesConceptsError):
    """Bad input to the ladder: rungs, knobs, published results that do not fit the splits."""


def _knob_values(values, what: str, check) -> tuple:
    out = []
    for v in values:
        why = check(v)
        if why:
            raise LadderError(f"{what} {why}")
        out.append(v)
    return tuple(out)


def parse_rungs(names=None, alphas=None, budgets=None, space=None) -> list:
    """The rungs of a ladder as ``[(name, knobs), ...]`` in ladder order.

    names: rung names (default :data:`DEFAULT_RUNGS`), each optionally with knobs as
    ``name[k=v,...]`` (``sampling[n=100]``) or ``(name, {knob: value})``; alphas: a curve of
    ``alpha`` values for every rung that takes ``alpha`` (each becomes one rung of the ladder);
    budgets: a curve of ``n`` for every rung that takes ``n``.  An unknown rung, a knob a rung
    does not take or refuses (alpha <= 0, n < 1) and a rung that cannot apply to ``space``
    are one-line :class:`~bayes_concepts.rungs.RungError` s."""
    names = DEFAULT_RUNGS if names is None else names
    if isinstance(names, str):
        names = [names]
    specs = []
    for item in names:
        name, knobs = (item if isinstance(item, tuple) else parse_rung_text(str(item)))
        knobs = dict(knobs)
        rung = check_rung(name, space, knobs)
        curves = []
        if alphas is not None and "alpha" in rung.knobs and "alpha" not in knobs:
            curves.append(("alpha", list(alphas)))
        if budgets is not None and "n" in rung.knobs and "n" not in knobs:
            curves.append(("n", list(budgets)))
        combos = [knobs]
        for key, values in curves:
            combos = [{**c, key: v} for c in combos for v in values]
        for c in combos:
            check_rung(name, space, c)
            spec = (name, c)
            if spec not in specs:
                specs.append(spec)
    if not specs:
        raise RungError("no rungs given: name at least one (" + ", ".join(rung_registry.names()) + ")")
    rank = {n: i for i, n in enumerate(LADDER_ORDER)}
    order = sorted(range(len(specs)), key=lambda i: (rank.get(specs[i][0], len(rank) - 1 if specs[i][0] != "strong"
                                                              else len(rank)), i))
    return [specs[i] for i in order]


def ladder_profile(space, splits: dict, rungs=None, negatives=("hard", "easy"), n_episodes: int = 5_000,
                   settings=None, seed: int = 0, query_negatives=None, hard_mode: str = "union",
                   progress: bool = False, episode_shape=None, scheduler=None, alphas=None,
                   budgets=None, models=None, skip_undrawable: bool = False) -> xr.Dataset:
    """Score every rung of the ladder on the same test episodes of every split.

    rungs: as :func:`parse_rungs` takes them (default :data:`DEFAULT_RUNGS`); alphas, budgets:
    curves of the learned priors' ``alpha`` and the sampling learners' ``n``.  The episodes are
    those :func:`~bayes_concepts.gap.compute_gap` draws with the same seed (the memoriser's and
    the strong oracle's numbers equal the gap's weak and strong ones).  Returns a results
    Dataset (:mod:`bayes_concepts.results`) whose ``learner`` coordinate holds the rungs'
    labels (:func:`~bayes_concepts.rungs.rung_label`) in ladder order, with the attribute
    ``ladder`` (JSON: each rung's label, name, knobs and definition).  ``models``: trained
    models or other learners scored on the same episodes beside the rungs, ``{name: {split:
    learner}}`` as :func:`bayes_concepts.learners.learners_for_gap` gives them (a model on its
    training split); their names follow the rungs in ``learner`` and are listed in the
    attribute ``ladder_models``.  ``skip_undrawable``: a split none of whose test concepts can be
    an episode's concept is not scored, and counted with the reason in the attribute
    ``excluded`` (``not_scored``), as :func:`~bayes_concepts.gap.compute_gap` does."""
    from .oracles import OracleSettings
    settings = settings or OracleSettings()
    specs = parse_rungs(rungs, alphas, budgets, space)
    labels = [rung_label(n, k) for n, k in specs]
    if len(set(labels)) != len(labels):
        raise LadderError(f"a rung is listed twice: {', '.join(labels)}")
    parts = any(n in NESTED_ORACLES for n, _ in specs)
    models = dict(models or {})
    clash = sorted(set(models) & ({*labels, *_ORACLE_NAMES.values()}))
    if clash:
        raise LadderError(f"a model is named like a rung ({', '.join(clash)}): give it another name")
    learners = {}
    scored = splits
    if skip_undrawable:  # no rung is made for a split that is not scored
        from .episodes import episode_shapes
        shapes, _ = episode_shapes(space, splits, episode_shape, skip_undrawable=True)
        scored = {s: split for s, split in splits.items() if s in shapes}
    for (name, knobs), label in zip(specs, labels):
        if name in _ORACLE_NAMES and not knobs:
            continue
        # a by-set split's rungs know its test-set items, where its episodes are drawn (splits.side_space)
        learners[label] = {s: rung_learner(name, side_space(space, split, "test"), split, settings, **knobs)
                           for s, split in scored.items()}
    learners.update(models)
    ds = compute_gap(space, splits, negatives, n_episodes, settings, seed, query_negatives=query_negatives,
                     progress=progress, hard_mode=hard_mode, learners=learners, scheduler=scheduler, parts=parts,
                     episode_shape=episode_shape, structure=space_structure(space) if parts else None,
                     skip_undrawable=bool(skip_undrawable))
    source = {}
    for (name, knobs), label in zip(specs, labels):
        source[label] = _ORACLE_NAMES[name] if name in _ORACLE_NAMES and not knobs else label
    ds = ds.sel(learner=[source[lb] for lb in labels] + list(models)).assign_coords(learner=labels + list(models))
    info = json.loads(ds.attrs.get("learners", "{}"))
    info = {lb: info.get(source.get(lb, lb), {"kind": "rung"}) for lb in labels + list(models)}
    for (name, knobs), label in zip(specs, labels):
        info[label] = {"kind": "rung", "rung": name, "knobs": knobs}
    ds.attrs["learners"] = json.dumps(info, sort_keys=True, default=str)
    ds.attrs["ladder"] = json.dumps([{"label": lb, "rung": n, "knobs": k, "definition": rung_registry.get(n).definition}
                                     for (n, k), lb in zip(specs, labels)], default=str)
    ds.attrs["ladder_models"] = json.dumps(list(models))
    ds.attrs["solved_within"] = SOLVED_WITHIN
    return ds


def _ladder_models(ds) -> list:
    """The names of the models scored beside the rungs (attribute ``ladder_models``)."""
    return json.loads(ds.attrs.get("ladder_models", "[]"))


def _ladder_labels(ds) -> list:
    models = set(_ladder_models(ds))
    labels = [str(x) for x in ds.learner.values.tolist() if str(x) not in models]
    if "strong" not in labels:
        raise LadderError("the ladder's results lack the strong oracle (rung 'strong'): every gap is measured "
                          "against it")
    return labels


def ladder_summary(ds: xr.Dataset, n_boot: int = 1000, seed: int = 0, solved_within: float = SOLVED_WITHIN) -> list:
    """One row per (split, negatives) of a :func:`ladder_profile` Dataset: ``rungs``: label ->
    ``map``, ``cba`` (percent), ``gap`` (strong − rung, mAP points) with ``gap_ci`` (paired
    bootstrap 95 %) and ``gap_se`` (standard error over episodes), ``cba_gap`` with
    ``cba_gap_ci``, ``empty_share`` (episodes where nothing the rung knows fits the
    support); and ``solved_at`` (the lowest rung within ``solved_within`` mAP points of the
    strong oracle, or None); ``models``: the same numbers of each model scored on the split
    (:func:`ladder_profile`'s ``models``), which ``solved_at`` never names."""
    labels = _ladder_labels(ds)
    models = _ladder_models(ds)
    rows = []
    for split in ds.split.values.tolist():
        for neg in ds.negatives.values.tolist():
            cell = ds.sel(split=split, negatives=neg)
            strong_ap = 100 * cell["ap"].sel(learner="strong").values
            strong_cba = 100 * cell["cba"].sel(learner="strong").values
            out, scored = {}, {}
            for lb in labels + models:
                ap = 100 * cell["ap"].sel(learner=lb).values
                if lb in models and not np.isfinite(ap).any():
                    continue  # a model is scored on its training split only
                cba = 100 * cell["cba"].sel(learner=lb).values
                gap, lo, hi = paired_bootstrap(strong_ap, ap, n_boot, seed)
                cgap, clo, chi = paired_bootstrap(strong_cba, cba, n_boot, seed)
                d = strong_ap - ap
                d = d[np.isfinite(d)]
                (scored if lb in models else out)[lb] = {
                    "map": float(np.nanmean(ap)), "cba": float(np.nanmean(cba)), "gap": gap, "gap_ci": [lo, hi],
                    "gap_se": float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan"),
                    "cba_gap": cgap, "cba_gap_ci": [clo, chi],
                    "empty_share": float(np.nanmean(cell["empty"].sel(learner=lb).values))}
            solved = next((lb for lb in labels if lb != "strong" and out[lb]["gap"] <= solved_within), None)
            row = {"split": split, "negatives": neg, "episodes": int(cell.sizes["episode"]), "rungs": out,
                   "solved_at": solved}
            if models:
                row["models"] = scored
            rows.append(row)
    return rows


def format_ladder(rows: list, metric: str = "gap") -> str:
    """The ladder profiles as a plain-text table: one line per (split, negatives), one column
    per rung (``metric``: ``gap``, strong − rung in mAP points, or ``map``), and where the
    split stops being hard."""
    if not rows:
        return "(no cells)"
    labels = list(rows[0]["rungs"])
    models = list(dict.fromkeys(m for r in rows for m in r.get("models", {})))
    head = ["split", "neg", *labels, "solved at", *models]
    body = [[r["split"], r["negatives"], *(f"{r['rungs'][lb][metric]:.1f}" for lb in labels),
             r["solved_at"] or "-",
             *(f"{r['models'][m][metric]:.1f}" if m in r.get("models", {}) else "-" for m in models)] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(head, widths))]
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)) for line in body]
    what = "strong − rung, mAP points" if metric == "gap" else "mAP, percent"
    lines.append(f"({what}; solved at: the lowest rung within {SOLVED_WITHIN:g} mAP points of the strong oracle"
                 + ("; after it, the models scored on the same episodes, on their training splits" if models else "")
                 + ")")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ correlations
def _rank_correlations(x, y) -> tuple:
    """(Spearman ρ, Kendall τ-b) of two equal-length vectors (scipy's, ties as average ranks);
    NaN where either is constant or shorter than 3."""
    rho, tau = _rank_correlations_rows(np.asarray(x, float)[None, :], np.asarray(y, float)[None, :])
    return float(rho[0]), float(tau[0])


def _rank_correlations_rows(x, y) -> tuple:
    """Spearman ρ and Kendall τ-b of every row pair of ``x`` and ``y`` (float (B, C) each):
    float64 (B,) each, NaN for a row shorter than 3 or constant in either.  ρ is the Pearson
    correlation of average ranks; τ-b = Σ sign(Δx)·sign(Δy) / sqrt(Σ sign(Δx)² · Σ sign(Δy)²)
    over pairs i < j (scipy.stats.spearmanr / kendalltau, as the tests check)."""
    from scipy.stats import rankdata
    b, c = x.shape
    if c < 3:
        return np.full(b, np.nan), np.full(b, np.nan)
    rx, ry = rankdata(x, axis=1), rankdata(y, axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    den = np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(den > 0, (rx * ry).sum(axis=1) / np.where(den > 0, den, 1), np.nan)
    i, j = np.triu_indices(c, 1)
    sx, sy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    den = np.sqrt((sx * sx).sum(axis=1) * (sy * sy).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(den > 0, (sx * sy).sum(axis=1) / np.where(den > 0, den, 1), np.nan)
    return np.clip(rho, -1.0, 1.0), np.clip(tau, -1.0, 1.0)


def _cell_table(rows, negatives, metric) -> dict:
    """condition -> rung -> (mean, se) of the gap (``metric``: ``gap`` or ``cba_gap``)."""
    table = {}
    for r in rows:
        if r["negatives"] != negatives:
            continue
        cell = {}
        for lb, v in r["rungs"].items():
            if metric == "gap":
                cell[lb] = (v["gap"], v.get("gap_se", 0.0))
            else:
                lo, hi = v["cba_gap_ci"]
                cell[lb] = (v["cba_gap"], (hi - lo) / (2 * 1.96))
        table[r["split"]] = cell
    return table


def _bootstrap_draws(gaps, ses, difficulty, n_boot: int, rng) -> tuple:
    """Replicates of (ρ, τ): conditions resampled with replacement, each condition's gap drawn
    from N(gap, se).  gaps, ses, difficulty: float (C,).  Returns float64 (n_boot,) each; a
    replicate with all gaps (or all difficulties) equal is 0."""
    c = len(gaps)
    idx = rng.integers(0, c, (n_boot, c))
    g = gaps[idx] + rng.standard_normal((n_boot, c)) * np.nan_to_num(ses[idx])
    rho, tau = _rank_correlations_rows(g, difficulty[idx])
    # a replicate whose gaps (or difficulties) are all equal ranks nothing: it counts as no
    # association, not as a missing draw (dropping it would keep only the replicates that hold
    # the conditions a one-condition rung separates, and bias the interval away from 0)
    return np.nan_to_num(rho), np.nan_to_num(tau)


def _interval(draws) -> list:
    d = draws[np.isfinite(draws)]
    if len(d) < 10:
        return [float("nan"), float("nan")]
    return [float(np.quantile(d, 0.025)), float(np.quantile(d, 0.975))]


def ladder_correlations(rows: list, published, negatives: str = "hard", metric: str = "gap", n_boot: int = 2000,
                        seed: int = 0, each_model: bool = True, measure: str | None = None) -> dict:
    """Per rung: rank correlations between its gap per condition (a :func:`ladder_summary`
    row per split; ``metric`` ``gap`` (mAP) or ``cba_gap``) and ``published``'s difficulty per
    condition (:class:`~bayes_concepts.published.PublishedResults`: higher = harder), for the
    mean model and (``each_model``) each model.

    Returns ``{"conditions": [...], "negatives": ..., "rungs": {label: {"mean_model":
    {"spearman", "spearman_ci", "kendall", "kendall_ci", "n_conditions", "flat"}, "models":
    {model: {...}}}}}``; a rung whose gaps spread less than :data:`FLAT_SPREAD` points over the
    conditions is ``flat`` and its correlations NaN.  Only conditions both sides have are
    ranked: the rows' conditions without published numbers are listed (``unmatched``), and so
    are the published conditions the rows do not score (``unscored``).  Check a published set
    against the space's splits first (``published.check``: the command line does)."""
    table = _cell_table(rows, negatives, metric)
    if not table:
        raise LadderError(f"no {negatives}-negative cells in the ladder's rows")
    targets = published_difficulty(published, list(table), negatives, measure, each_model)
    labels = list(next(iter(table.values())))
    rng = np.random.default_rng(seed)
    out = {"negatives": negatives, "metric": metric, "measure": measure or published.measure,
           "rungs": {lb: {"models": {}} for lb in labels}}
    for who, series in targets.items():
        series = series.dropna()
        conds = [c for c in table if c in series.index]
        if who != "mean_model" and not conds:  # a model with no numbers for these negatives / measure
            continue
        if who == "mean_model":
            out["conditions"] = conds
            out["unmatched"] = [c for c in table if c not in series.index]
            out["unscored"] = [str(c) for c in series.index if c not in table]
        diff = np.array([series[c] for c in conds], float)
        for lb in labels:
            gaps = np.array([table[c][lb][0] for c in conds], float)
            ses = np.array([table[c][lb][1] for c in conds], float)
            flat = len(gaps) == 0 or float(np.ptp(gaps)) < FLAT_SPREAD
            if flat:  # a rung that hardly separates the conditions cannot rank them
                rho = tau = float("nan")
                brho = btau = np.full(n_boot, np.nan)
            else:
                rho, tau = _rank_correlations(gaps, diff)
                brho, btau = _bootstrap_draws(gaps, ses, diff, n_boot, rng)
            entry = {"spearman": rho, "spearman_ci": _interval(brho), "kendall": tau, "kendall_ci": _interval(btau),
                     "n_conditions": len(conds), "flat": flat, "_draws": brho}
            if who == "mean_model":
                out["rungs"][lb]["mean_model"] = entry
            else:
                out["rungs"][lb]["models"][who] = entry
    return out


def published_difficulty(published, conditions: list, negatives: str = "hard", measure=None,
                         each_model: bool = False) -> dict:
    """``{"mean_model": difficulty per condition, model: ...}`` (pandas Series indexed by the
    published conditions).  Conditions written ``experiment/condition`` are looked up in that
    experiment of ``published`` (ConceptWorld: ``productivity/length_5``); an experiment it
    lacks is a one-line error."""
    kw = {"negatives": negatives} if _has_negatives(published, negatives) else {}
    if measure is not None:
        kw["measure"] = measure
    experiments = published.experiments()
    if experiments and all("/" in c for c in conditions):
        groups = {}
        for c in conditions:
            e, cond = c.split("/", 1)
            groups.setdefault(e, []).append(cond)
        unknown = [e for e in groups if e not in experiments]
        if unknown:
            raise LadderError(f"split {unknown[0]}/…: {published.benchmark}'s published results have no experiment "
                              f"{unknown[0]!r} ({', '.join(experiments)})")

        def series(model):
            parts = []
            for e in groups:
                try:
                    d = published.difficulty(model, experiment=e, **kw)
                except BayesConceptsError:  # this model reports nothing in experiment e
                    continue
                parts.append(pd.Series(d.to_numpy(), index=[f"{e}/{c}" for c in d.index]))
            return pd.concat(parts) if parts else pd.Series(dtype=float)
    else:
        def series(model):
            try:
                return published.difficulty(model, **kw)
            except BayesConceptsError:  # this model reports nothing for these negatives or measure
                if model is None:
                    raise
                return pd.Series(dtype=float)
    targets = {"mean_model": series(None)}
    if each_model:
        for model in published.models():
            targets[model] = series(model)
    return targets


def _has_negatives(published, negatives) -> bool:
    frame = published.frame()
    return "negatives" in frame and (frame["negatives"] == negatives).any()


def strip_draws(corr: dict) -> dict:
    """``corr`` without the bootstrap replicates (for JSON)."""
    def clean(x):
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items() if k != "_draws"}
        return x
    return clean(corr)


def pooled_correlations(per_benchmark: dict) -> dict:
    """Fisher-z pooled Spearman ρ of the mean model, per rung, across benchmarks.

    per_benchmark: benchmark -> a :func:`ladder_correlations` result (with its bootstrap
    replicates).  Each benchmark's z = atanh(ρ) is weighted by its conditions minus 3; a
    benchmark with 3 or fewer conditions is left out (``left_out``).  The interval pools the
    benchmarks' bootstrap replicates replicate by replicate; ``leave_one_out``: the pooled ρ
    without each benchmark.  Returns ``{label: {"spearman", "spearman_ci", "benchmarks",
    "left_out", "leave_one_out": {benchmark: ρ}}}`` for the rungs every benchmark has."""
    labels = None
    for corr in per_benchmark.values():
        here = set(corr["rungs"])
        labels = here if labels is None else labels & here
    out = {}
    for lb in sorted(labels or (), key=lambda x: list(next(iter(per_benchmark.values()))["rungs"]).index(x)):
        used, left = {}, []
        for bench, corr in per_benchmark.items():
            e = corr["rungs"][lb]["mean_model"]
            if e["n_conditions"] > 3 and np.isfinite(e["spearman"]):
                used[bench] = e
            else:
                left.append(bench)

        def pool(entries, key="spearman"):
            w = np.array([e["n_conditions"] - 3 for e in entries], float)
            z = np.array([np.arctanh(np.clip(e[key], -0.999999, 0.999999)) for e in entries])
            return float(np.tanh((w * z).sum() / w.sum())) if len(entries) else float("nan")

        entries = list(used.values())
        rho = pool(entries)
        if entries:
            n = min(len(e["_draws"]) for e in entries)
            w = np.array([e["n_conditions"] - 3 for e in entries], float)
            z = np.stack([np.arctanh(np.clip(e["_draws"][:n], -0.999999, 0.999999)) for e in entries])
            ok = np.isfinite(z).all(axis=0)
            draws = np.tanh((w[:, None] * z[:, ok]).sum(axis=0) / w.sum())
            ci = _interval(draws)
        else:
            ci = [float("nan"), float("nan")]
        loo = {b: pool([e for bb, e in used.items() if bb != b]) for b in used}
        out[lb] = {"spearman": rho, "spearman_ci": ci, "benchmarks": sorted(used), "left_out": sorted(left),
                   "weights": {b: used[b]["n_conditions"] - 3 for b in used}, "leave_one_out": loo}
    return out


def rung_spreads(rows: list, negatives: str = "hard") -> dict:
    """Per rung: the largest minus the smallest gap (mAP points) over the splits of ``rows``
    with ``negatives``."""
    table = _cell_table(rows, negatives, "gap")
    if not table:
        return {}
    labels = list(next(iter(table.values())))
    return {lb: float(np.ptp([table[c][lb][0] for c in table])) for lb in labels}
