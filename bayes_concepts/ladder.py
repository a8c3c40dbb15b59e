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

import numpy as np
import pandas as pd
import xarray as xr

from .collector import fewer_collections
from .divergence import concept_structure
from .errors import BayesConceptsError
from .params import FLAG, RUN_PARAMS, run_given, validate_params
from .results import get_attr, set_attrs
from .gap import compute_gap, paired_bootstrap
from .gap_cells import NESTED_ORACLES
from .rungs import (RungError, check_rung, default_rungs, ladder_order, oracle_names, parse_rung_text, rung_label,
                    rung_learner)
from .rungs import rungs as rung_registry
from .splits import side_space
from .difficulty import PREDICTORS
from .ranking import percentile_interval, rank_series

__all__ = ["DEFAULT_RUNGS", "SOLVED_WITHIN", "MIN_RANKED", "rho_text", "difference_text", "parse_rungs", "published_difficulty", "format_correlations", "ladder_profile", "ladder_summary", "format_ladder",
           "ladder_correlations", "pooled_correlations", "rung_spreads", "LadderError"]

#: the default ladder: every built-in rung, knobs at their defaults
#: a rung whose mAP is within this many points of the strong oracle's has "solved" the split
SOLVED_WITHIN = 5.0


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


def parse_rungs(names=None, alphas=None, budgets=None, space=None, skipped: list | None = None) -> list:
    """The rungs of a ladder as ``[(name, knobs), ...]`` in ladder order.

    names: rung names (default :data:`DEFAULT_RUNGS`), each optionally with knobs as
    ``name[k=v,...]`` (``sampling[n=100]``) or ``(name, {knob: value})``; alphas: a curve of
    ``alpha`` values for every rung that takes ``alpha`` (each becomes one rung of the ladder);
    budgets: a curve of ``n`` for every rung that takes ``n``.  An unknown rung, a knob a rung
    does not take or refuses (alpha <= 0, n < 1) and a rung that cannot apply to ``space``
    are one-line :class:`~bayes_concepts.rungs.RungError` s — except that with the default rungs
    (``names`` None) a rung that cannot apply to ``space`` is left out and appended to
    ``skipped`` as ``(name, why)``."""
    defaults = names is None
    names = default_rungs() if names is None else names
    if isinstance(names, str):
        names = [names]
    specs = []
    for item in names:
        name, knobs = (item if isinstance(item, tuple) else parse_rung_text(str(item)))
        knobs = dict(knobs)
        try:
            rung = check_rung(name, space, knobs)
        except RungError as e:
            if not defaults or space is None:
                raise
            if skipped is not None:
                skipped.append((name, str(e)))
            continue
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
    rank = {n: i for i, n in enumerate(ladder_order())}
    order = sorted(range(len(specs)), key=lambda i: (rank.get(specs[i][0], len(rank) - 1 if specs[i][0] != "strong"
                                                              else len(rank)), i))
    return [specs[i] for i in order]


@validate_params({**RUN_PARAMS, "progress": FLAG, "skip_undrawable": FLAG})
@fewer_collections()
def ladder_profile(space, splits: dict | None = None, rungs=None, negatives=("hard", "easy"), n_episodes: int = 5_000,
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
    if run_given(space, splits=splits, settings=settings, query_negatives=query_negatives,
                 episode_shape=episode_shape, hard_mode=None if hard_mode == "union" else hard_mode):
        return space.ladder(rungs, negatives, n_episodes, seed, learners=models, progress=progress,
                            scheduler=scheduler, alphas=alphas, budgets=budgets)
    from .oracles import OracleSettings
    settings = settings or OracleSettings()
    skipped = []
    specs = parse_rungs(rungs, alphas, budgets, space, skipped=skipped)
    labels = [rung_label(n, k) for n, k in specs]
    if len(set(labels)) != len(labels):
        raise LadderError(f"a rung is listed twice: {', '.join(labels)}")
    oracle_of = oracle_names()  # rungs that are oracles compute_gap scores itself -> their learner there
    parts = any(n in NESTED_ORACLES for n, _ in specs)
    models = dict(models or {})
    clash = sorted(set(models) & ({*labels, *oracle_of.values()}))
    if clash:
        raise LadderError(f"a model is named like a rung ({', '.join(clash)}): give it another name")
    learners = {}
    # an undrawable split is refused (or, with skip_undrawable, left unscored) before any rung is made
    from .episodes import episode_shapes
    shapes, _ = episode_shapes(space, splits, episode_shape, skip_undrawable=bool(skip_undrawable))
    scored = {s: split for s, split in splits.items() if s in shapes}
    for (name, knobs), label in zip(specs, labels):
        if name in oracle_of and not knobs:
            continue
        # a by-set split's rungs know its test-set items, where its episodes are drawn (splits.side_space)
        learners[label] = {s: rung_learner(name, side_space(space, split, "test"), split, settings, **knobs)
                           for s, split in scored.items()}
    learners.update(models)
    ds = compute_gap(space, splits, negatives, n_episodes, settings, seed, query_negatives=query_negatives,
                     progress=progress, hard_mode=hard_mode, learners=learners, scheduler=scheduler, parts=parts,
                     episode_shape=episode_shape, structure=concept_structure(space) if parts else None,
                     skip_undrawable=bool(skip_undrawable))
    source = {}
    for (name, knobs), label in zip(specs, labels):
        source[label] = oracle_of[name] if name in oracle_of and not knobs else label
    ds = ds.sel(learner=[source[lb] for lb in labels] + list(models)).assign_coords(learner=labels + list(models))
    info = get_attr(ds, "learners", {})
    info = {lb: info.get(source.get(lb, lb), {"kind": "rung"}) for lb in labels + list(models)}
    for (name, knobs), label in zip(specs, labels):
        info[label] = {"kind": "rung", "rung": name, "knobs": knobs}
    set_attrs(ds, learners=info,
              ladder=[{"label": lb, "rung": n, "knobs": k, "definition": rung_registry.get(n).definition}
                      for (n, k), lb in zip(specs, labels)],
              ladder_models=list(models), ladder_skipped=[{"rung": n, "why": why} for n, why in skipped],
              solved_within=SOLVED_WITHIN)
    return ds


def _ladder_models(ds) -> list:
    """The names of the models scored beside the rungs (attribute ``ladder_models``)."""
    return get_attr(ds, "ladder_models", [])


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
    info = get_attr(ds, "learners", {})
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
                if lb in models:  # "did it learn?": its validation against the random learner's (learners.learned)
                    from .learners.learned import did_learn, not_learned_text  # a model was scored: torch is loaded
                    record = (info.get(lb) or {}).get(split) or {}
                    learned = did_learn(record)
                    scored[lb]["learned"] = learned
                    if learned is False:
                        scored[lb]["not_learned"] = not_learned_text(record)
            solved = next((lb for lb in labels if lb != "strong" and out[lb]["gap"] <= solved_within), None)
            row = {"split": split, "negatives": neg, "episodes": int(cell.sizes["episode"]), "rungs": out,
                   "solved_at": solved}
            if models:
                row["models"] = scored
            rows.append(row)
    return rows


def _points(value: float) -> str:
    """One decimal, a value that rounds to zero written ``0.0`` (not ``-0.0``: a rung a hair
    above the strong oracle is level with it at this precision)."""
    return f"{round(float(value), 1) + 0.0:.1f}"


def format_ladder(rows: list, metric: str = "gap") -> str:
    """The ladder profiles as a plain-text table: one line per (split, negatives), one column
    per rung (``metric``: ``gap``, strong − rung in mAP points, or ``map``), and where the
    split stops being hard."""
    if not rows:
        return "(no cells)"
    labels = list(rows[0]["rungs"])
    models = list(dict.fromkeys(m for r in rows for m in r.get("models", {})))
    head = ["split", "neg", *labels, "solved at", *models]
    body = [[r["split"], r["negatives"], *(_points(r['rungs'][lb][metric]) for lb in labels),
             r["solved_at"] or "-",
             *(_model_cell(r["models"][m], metric) if m in r.get("models", {}) else "-" for m in models)] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(head, widths))]
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)) for line in body]
    what = "strong − rung, mAP points" if metric == "gap" else "mAP, percent"
    lines.append(f"({what}; solved at: the lowest rung within {SOLVED_WITHIN:g} mAP points of the strong oracle"
                 + ("; after it, the models scored on the same episodes, on their training splits" if models else "")
                 + ")")
    for r in rows:
        for m, v in r.get("models", {}).items():
            if v.get("learned") is False:
                lines.append(f"{m} on {r['split']}: {v['not_learned']}: no gap or rank correlation printed")
    return "\n".join(lines)


def _model_cell(v: dict, metric: str) -> str:
    """A model's cell in the ladder's table: its number, or ``did not learn``."""
    return "did not learn" if v.get("learned") is False else f"{v[metric]:.1f}"


# ------------------------------------------------------------------------------ correlations
def _cell_table(rows, negatives, metric, models: bool = False) -> dict:
    """condition -> rung -> (mean, se) of the gap (``metric``: ``gap`` or ``cba_gap``); with
    ``models``, the models scored beside the rungs too, except where one did not learn
    (:mod:`bayes_concepts.learners.learned`)."""
    table = {}
    for r in rows:
        if r["negatives"] != negatives:
            continue
        cell = {}
        entries = dict(r["rungs"])
        if models:
            entries.update({m: v for m, v in r.get("models", {}).items() if v.get("learned") is not False})
        for lb, v in entries.items():
            if metric == "gap":
                cell[lb] = (v["gap"], v.get("gap_se", 0.0))
            else:
                lo, hi = v["cba_gap_ci"]
                cell[lb] = (v["cba_gap"], (hi - lo) / (2 * 1.96))
        table[r["split"]] = cell
    return table


def ladder_correlations(rows: list, published, negatives: str = "hard", metric: str = "gap", n_boot: int = 2000,
                        seed: int = 0, each_model: bool = True, measure: str | None = None,
                        predictors: dict | None = None, compare_to: str = "compound_divergence") -> dict:
    """Per rung and per baseline predictor: rank correlations between its value per condition
    (a rung's gap from a :func:`ladder_summary` row per split, ``metric`` ``gap`` (mAP) or
    ``cba_gap``; a predictor's value from ``predictors``) and ``published``'s difficulty per
    condition (:class:`~bayes_concepts.published.PublishedResults`: higher = harder), for the
    mean model and (``each_model``) each model.

    predictors: ``{condition: {name: value}}`` (:func:`bayes_concepts.difficulty.split_predictors`);
    the memoriser's gap is a predictor too whenever the rows have the memoriser rung.

    Ranks treat ties as ties (:mod:`bayes_concepts.ranking`): two conditions whose gaps differ
    by less than 2 standard errors of their difference share a rank; a series with one tie
    group is ``flat`` (ρ NaN); one that singles out a single condition reports the
    ``direct_test`` (is that condition the models' hardest? chance 1/C) instead of an
    interval.  Intervals: one two-level bootstrap per target, shared by every rung and
    predictor (conditions resampled, gaps redrawn from N(gap, se)), so differences are
    paired: every rung gets ``vs_best`` (ρ − ρ of the best predictor, with its interval) and
    ``vs_<compare_to>``.

    Returns ``{"conditions": [...], "negatives", "metric", "measure", "rungs": {label:
    {"mean_model": entry, "models": {model: entry}}}, "predictors": {name: {...}},
    "best_predictor": {"mean_model": name, model: name}}``, an entry holding ``spearman``,
    ``spearman_ci``, ``kendall``, ``kendall_ci``, ``n_conditions``, ``flat``, ``tied_share``,
    ``direct_test``, ``vs_best``, ``vs_<compare_to>``.  Only conditions both sides have are
    ranked: the rows' conditions without published numbers are listed (``unmatched``), and so
    are the published conditions the rows do not score (``unscored``).  Check a published set
    against the space's splits first (``published.check``: the command line does)."""
    table = _cell_table(rows, negatives, metric, models=True)
    if not table:
        raise LadderError(f"no {negatives}-negative cells in the ladder's rows")
    targets = published_difficulty(published, list(table), negatives, measure, each_model)
    rungs_here = list(next(iter(r["rungs"] for r in rows if r["negatives"] == negatives)))
    # a model is ranked with the rungs where it has a gap in every condition (it learned in each)
    learners = [m for m in dict.fromkeys(m for c in table.values() for m in c if m not in rungs_here)
                if all(m in c for c in table.values())]
    not_learned = {m: v["not_learned"] for r in rows if r["negatives"] == negatives
                   for m, v in r.get("models", {}).items() if v.get("learned") is False}
    labels = rungs_here + learners
    names = _predictor_names(predictors, labels)
    out = {"negatives": negatives, "metric": metric, "measure": measure or published.measure,
           "rungs": {lb: {"models": {}} for lb in labels}, "predictors": {p: {"models": {}} for p in names},
           "best_predictor": {}, "compare_to": compare_to, "learners": learners, "not_learned": not_learned}
    for k, (who, series) in enumerate(targets.items()):
        series = series.dropna()
        conds = [c for c in table if c in series.index]
        if who != "mean_model" and not conds:  # a model with no numbers for these negatives / measure
            continue
        if who == "mean_model":
            out["conditions"] = conds
            out["unmatched"] = [c for c in table if c not in series.index]
            out["unscored"] = [str(c) for c in series.index if c not in table]
        diff = np.array([series[c] for c in conds], float)
        got = rank_series(_series(table, predictors, conds, labels, names), diff, conds,
                          predictors=[f"p:{p}" for p in names], n_boot=n_boot, seed=[int(seed), k],
                          compare_to=f"p:{compare_to}")
        best = got["best_predictor"]
        out["best_predictor"][who] = best[2:] if best else None
        for name, entry in got["series"].items():
            kind, key = ("predictors", name[2:]) if name.startswith("p:") else ("rungs", name)
            entry[f"vs_{compare_to}"] = entry.pop(f"vs_p:{compare_to}", None)
            if entry.get("vs_best"):
                entry["vs_best"]["predictor"] = entry["vs_best"]["predictor"][2:]
            if entry.get(f"vs_{compare_to}"):
                entry[f"vs_{compare_to}"]["predictor"] = compare_to
            if who == "mean_model":
                out[kind][key]["mean_model"] = entry
            else:
                out[kind][key]["models"][who] = entry
    return out


def _predictor_names(predictors: dict | None, labels: list) -> list:
    """The predictors every condition has, in :data:`~bayes_concepts.difficulty.PREDICTORS`
    order, the memoriser last when the rows have it."""
    have = None
    for row in (predictors or {}).values():
        have = set(row) if have is None else have & set(row)
    names = [p for p in PREDICTORS if p in (have or ()) and p != "memoriser"]
    return names + (["memoriser"] if "memoriser" in labels else [])


def _series(table: dict, predictors: dict | None, conds: list, labels: list, names: list) -> dict:
    """``{name: (values, ses)}`` for :func:`~bayes_concepts.ranking.rank_series`: the rungs by
    label, the predictors as ``p:NAME`` (exact values, the memoriser's gap with its errors)."""
    out = {lb: (np.array([table[c][lb][0] for c in conds], float), np.array([table[c][lb][1] for c in conds], float))
           for lb in labels}
    for p in names:
        if p == "memoriser":
            out["p:memoriser"] = out["memoriser"]
        else:
            out[f"p:{p}"] = (np.array([predictors[c][p] for c in conds], float), np.zeros(len(conds)))
    return out


#: fewer conditions than this are not ranked in printed tables ("too few conditions to rank")
MIN_RANKED = 5


def _signed(x: float) -> str:
    return f"{x:+.2f}"


def rho_text(e: dict, number=_signed) -> str:
    """A correlation entry in a table cell: ``flat``, the direct test, or ρ [95 % interval]
    (``number`` formats each value)."""
    if e.get("flat"):
        return "flat"
    d = e.get("direct_test")
    if d:
        return (f"singles out {d['condition']} ({d['side']}): models' rank {d['target_rank']} of "
                f"{e['n_conditions']} (p {d['p_value']:.2f})")
    if not np.isfinite(e["spearman"]):
        return "–"
    lo, hi = e["spearman_ci"]
    return f"{number(e['spearman'])} [{number(lo)}, {number(hi)}]"


def difference_text(v: dict | None, number=_signed) -> str:
    """A ``vs_*`` entry (ρ − ρ of a predictor) in a table cell: the difference [95 % interval]."""
    if not v or not np.isfinite(v["difference"]):
        return "–"
    lo, hi = v["difference_ci"]
    return f"{number(v['difference'])} [{number(lo)}, {number(hi)}]"


def _format_entry(e: dict) -> str:
    """One correlation entry as a line's text: ρ with its interval and tied pairs, and the
    difference to the best predictor; flat or the direct test in words."""
    if e.get("flat"):
        return "flat (every pair of conditions within 2 standard errors: ranks nothing)"
    if e.get("direct_test") or not np.isfinite(e["spearman"]):
        return rho_text(e)
    text = f"ρ {rho_text(e)}  tied pairs {100 * e.get('tied_share', 0):.0f} %"
    if e.get("vs_best"):
        text += f"  − best predictor {difference_text(e['vs_best'])}"
    return text


def format_correlations(corr: dict, what: str = "models") -> str:
    """A :func:`ladder_correlations` result as text: every rung, then every baseline predictor
    (:mod:`bayes_concepts.difficulty`), the mean model; with fewer than :data:`MIN_RANKED`
    conditions, no correlation ("too few conditions to rank")."""
    from .difficulty import predictor_label
    n = len(corr.get("conditions", ()))
    head = (f"rank correlation with the {what}' difficulty ({corr['measure']}, mean model; higher = harder), "
            f"{corr['negatives']} negatives, {n} conditions")
    if n < MIN_RANKED:
        return head + f": too few conditions to rank (n = {n})"
    best = corr.get("best_predictor", {}).get("mean_model")
    lines = [head + "; ties: gaps within 2 standard errors share a rank; 95 % intervals bootstrap conditions and "
             f"episodes; best baseline predictor: {predictor_label(best) if best else 'none ranks'}"]
    learners = corr.get("learners", [])
    width = max([len(lb) for lb in corr["rungs"]] + [len(predictor_label(p)) for p in corr.get("predictors", {})]) + 2
    for lb, v in corr["rungs"].items():
        if lb not in learners:
            lines.append(f"  {lb:{width}s}{_format_entry(v['mean_model'])}")
    if learners or corr.get("not_learned"):
        lines.append("  learners scored beside the rungs:")
        for lb in learners:
            lines.append(f"  {lb:{width}s}{_format_entry(corr['rungs'][lb]['mean_model'])}")
        for lb, why in corr.get("not_learned", {}).items():
            lines.append(f"  {lb}: {why}: no ρ")
    if corr.get("predictors"):
        lines.append("  baseline predictors:")
        for p, v in corr["predictors"].items():
            lines.append(f"  {predictor_label(p):{width}s}{_format_entry(v['mean_model'])}")
    if corr.get("unmatched"):
        lines.append(f"  (no published numbers for {', '.join(corr['unmatched'])}: left out)")
    return "\n".join(lines)


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


def pooled_correlations(per_benchmark: dict, kind: str = "rungs") -> dict:
    """Fisher-z pooled Spearman ρ of the mean model, per rung, across benchmarks.

    per_benchmark: benchmark -> a :func:`ladder_correlations` result (with its bootstrap
    replicates).  Each benchmark's z = atanh(ρ) is weighted by its conditions minus 3; a
    benchmark with 3 or fewer conditions is left out (``left_out``).  The interval pools the
    benchmarks' bootstrap replicates replicate by replicate; ``leave_one_out``: the pooled ρ
    without each benchmark.  Returns ``{label: {"spearman", "spearman_ci", "benchmarks",
    "left_out", "leave_one_out": {benchmark: ρ}}}`` for the rungs every benchmark has
    (``kind="predictors"``: for the baseline predictors every benchmark has)."""
    labels = None
    for corr in per_benchmark.values():
        here = set(corr.get(kind, {}))
        labels = here if labels is None else labels & here
    out = {}
    for lb in sorted(labels or (), key=lambda x: list(next(iter(per_benchmark.values()))[kind]).index(x)):
        used, left = {}, []
        for bench, corr in per_benchmark.items():
            e = corr[kind][lb]["mean_model"]
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
            ci = percentile_interval(draws)
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


def __getattr__(name):
    if name == "DEFAULT_RUNGS":  # the rungs registered with default=True, read when asked for
        return default_rungs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
