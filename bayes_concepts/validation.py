"""Does the ladder predict difficulty?  A pre-registered validation on many conditions.

Seven to nine conditions per benchmark decide nothing, so the ladder's claim is tested where
conditions can be many: generated splits of one space, learners meta-trained on each, and
every rung and baseline predictor (:mod:`bayes_concepts.difficulty`) ranked against each
learner's difficulty (strong mAP − learner mAP on the same test episodes) with the tie-aware
two-level bootstrap of :mod:`bayes_concepts.ranking`.

The study is fixed in a **pre-registration file** (TOML) before any learner runs:

.. code-block:: toml

    [study]
    name = "ladder_validation_v1"
    space_preset = "paper"          # what the space is (checked against its manifest hash)
    space_manifest_sha256 = "..."
    seed = 0
    negatives = "hard"
    episodes = 1000                 # test episodes per split
    train_check_episodes = 500      # training-distribution episodes for "did it learn?"
                                    # (the untrained net of the same architecture is reported beside)
    learned_margin = 20.0           # mAP points above the random learner
    n_boot = 2000
    statistic = "..."               # what is computed, in words
    compare_to = "compound_divergence"

    [rungs]
    names = ["memoriser", "compound", "atom", "bounded_length", "learned_prior[alpha=10]", "strong"]

    [predictors]
    names = ["compound_divergence", "atom_divergence", "mean_length", "n_test_concepts",
             "unseen_token_share", "memoriser"]

    [learners]
    kinds = ["schema-average", "schema-relnet"]
    budget_s = 170                  # a wall-clock cap (seconds); the budget is max_steps
    threads = 1
    max_steps = {schema-average = 300, schema-relnet = 120}

    [[split]]
    name = "random_f10_s1"
    file = "splits/random_f10_s1.toml"   # relative to the pre-registration file
    sha256 = "..."
    generator = "random"
    half = "confirmatory"               # or "exploratory"

:func:`read_preregistration` checks it (an unknown rung, learner, predictor or split file is
a one-line :class:`ValidationError`); :func:`run_split` scores one split (resumable: a
finished split's record is kept); :func:`validation_table` ranks every rung and predictor
against each learner on one half.  :func:`validate_conditions` is the same table for a
user's own conditions and published results (``bayes-concepts ladder-validate``).
"""
from __future__ import annotations

import hashlib
import json
import time
import tomllib
from pathlib import Path

import numpy as np

from .difficulty import PREDICTORS, predictor_label, split_predictors
from .errors import BayesConceptsError
from .ladder import (difference_text, ladder_correlations, ladder_profile, ladder_summary, parse_rungs,
                     rho_text, strip_draws)
from .ranking import rank_series
from .rungs import RungError, rung_label

__all__ = ["ValidationError", "MIN_CONDITIONS", "read_preregistration", "run_split", "validation_table",
           "format_validation", "validate_conditions", "file_sha256"]

#: the fewest conditions a validation ranks
MIN_CONDITIONS = 4
_HALVES = ("exploratory", "confirmatory")
_STUDY_KEYS = {"name", "space_preset", "space_manifest_sha256", "seed", "negatives", "episodes",
               "train_check_episodes", "learned_margin", "n_boot", "statistic", "compare_to", "primary", "secondary",
               "created"}


class ValidationError(BayesConceptsError):
    """A pre-registration file or a validation input that cannot be used (one line)."""


def file_sha256(path) -> str:
    """The hex sha256 of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _learner_kinds() -> tuple:
    from .learners import encoders, poolings, reference_learners
    kinds = [f"{e}-{p}" for e in encoders.names() for p in poolings.names()]
    return tuple(kinds) + tuple(reference_learners.names())


def read_preregistration(path, space=None) -> dict:
    """The pre-registration file at ``path``, checked: its study keys, rungs (as
    :func:`~bayes_concepts.ladder.parse_rungs` takes them; ``strong`` required), predictors
    (:data:`~bayes_concepts.difficulty.PREDICTORS`), learner kinds, and every split's file
    (present, sha256 as written, half exploratory or confirmatory, names unique).  With
    ``space``, the rungs are checked against it and its manifest hash against the study's.
    Returns the parsed dict with ``path``, ``sha256`` and each split's absolute ``path``."""
    path = Path(path)
    where = str(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValidationError(f"{where}: no such pre-registration file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ValidationError(f"{where}: not a TOML file ({e})") from None
    for key in ("study", "rungs", "predictors", "learners"):
        if not isinstance(raw.get(key), dict):
            raise ValidationError(f"{where}: no [{key}] table")
    study = raw["study"]
    unknown = sorted(set(study) - _STUDY_KEYS)
    if unknown:
        raise ValidationError(f"{where}: [study] has an unknown key {unknown[0]!r}")
    rungs = raw["rungs"].get("names")
    if not isinstance(rungs, list) or not rungs:
        raise ValidationError(f"{where}: [rungs] names must be a non-empty list")
    try:
        specs = parse_rungs(rungs, space=space)
    except (RungError, BayesConceptsError) as e:
        raise ValidationError(f"{where}: [rungs] {e}") from None
    if "strong" not in [n for n, _ in specs]:
        raise ValidationError(f"{where}: [rungs] must include strong (every gap is measured against it)")
    predictors = raw["predictors"].get("names") or []
    for p in predictors:
        if p not in PREDICTORS:
            raise ValidationError(f"{where}: [predictors] unknown predictor {p!r} (known: {', '.join(PREDICTORS)})")
    kinds = raw["learners"].get("kinds")
    if not isinstance(kinds, list) or not kinds:
        raise ValidationError(f"{where}: [learners] kinds must be a non-empty list")
    known = _learner_kinds()
    for k in kinds:
        if k not in known:
            raise ValidationError(f"{where}: [learners] unknown learner {k!r} (known: {', '.join(known)})")
    budget = raw["learners"].get("budget_s")
    if not isinstance(budget, (int, float)) or not 0 < budget <= 180:
        raise ValidationError(f"{where}: [learners] budget_s must be in (0, 180] seconds, got {budget!r}")
    steps = raw["learners"].get("max_steps", {})
    if not isinstance(steps, dict) or any(k not in kinds for k in steps) or \
            any(not isinstance(v, int) or v < 1 for v in steps.values()):
        raise ValidationError(f"{where}: [learners] max_steps must map learner kinds to positive step counts")
    splits = raw.get("split")
    if not isinstance(splits, list) or not splits:
        raise ValidationError(f"{where}: no [[split]] entries")
    names = set()
    for i, s in enumerate(splits):
        name = s.get("name")
        if not isinstance(name, str) or not name:
            raise ValidationError(f"{where}: split {i + 1} has no name")
        if name in names:
            raise ValidationError(f"{where}: split {name!r} is listed twice")
        names.add(name)
        if s.get("half") not in _HALVES:
            raise ValidationError(f"{where}: split {name!r}: half must be exploratory or confirmatory, "
                                  f"got {s.get('half')!r}")
        f = path.parent / str(s.get("file", ""))
        if not s.get("file") or not f.is_file():
            raise ValidationError(f"{where}: split {name!r}: unknown split file {s.get('file')!r}")
        if s.get("sha256") != file_sha256(f):
            raise ValidationError(f"{where}: split {name!r}: {s.get('file')} does not have the sha256 written "
                                  "in the pre-registration (a changed split is a new pre-registration)")
        s["path"] = str(f.resolve())
    if space is not None:
        want = study.get("space_manifest_sha256")
        have = space.manifest_sha256()
        if want and have and want != have:
            raise ValidationError(f"{where}: the space's manifest sha256 {have[:12]} is not the pre-registered "
                                  f"{want[:12]}")
    raw["path"] = str(path.resolve())
    raw["sha256"] = file_sha256(path)
    raw["rung_labels"] = [rung_label(n, k) for n, k in specs]
    return raw


def _train_distribution_split(split, n_concepts: int, seed: int):
    """A split whose test side is a seeded sample of ``split``'s training concepts (at most
    ``n_concepts``): the learner's training distribution, for "did it learn?"."""
    from .splits.split import Split
    rng = np.random.default_rng([int(seed), 0x7A1D])
    train = np.asarray(split.train, np.int64)
    test = np.sort(rng.choice(train, min(len(train), n_concepts), replace=False))
    return Split(f"{split.name}__train_distribution", train, np.zeros(0, np.int64), test, dict(split.spec),
                 n_concepts=split.n_concepts)


def run_split(space, prereg: dict, name: str, out_dir, log=print) -> dict:
    """Score one pre-registered split: train each learner kind on its training concepts (the
    pre-registered budget: ``max_steps`` Adam steps per kind, stopped earlier only by the
    wall-clock cap ``budget_s``; no early stopping), check that it learned (training-distribution mAP against the
    random learner's on the same episodes), score every rung and each learner on the same
    test episodes, and compute the baseline predictors.  The record is written to
    ``out_dir/NAME.json`` (whole, by rename) and returned; a record already there for the
    same pre-registration is returned as it is (resume)."""
    from .gap import compute_gap
    from .learners import make_learner, train
    from .learners.reference import RandomLearner
    from .splits import make_split
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{name}.json"
    if target.exists():
        done = json.loads(target.read_text())
        if done.get("preregistration_sha256") == prereg["sha256"]:
            return done
        raise ValidationError(f"{target}: a record of another pre-registration; move it away first")
    entry = next((s for s in prereg["split"] if s["name"] == name), None)
    if entry is None:
        raise ValidationError(f"unknown split {name!r}: not in {prereg['path']}")
    study, lrn = prereg["study"], prereg["learners"]
    seed = int(study.get("seed", 0))
    split = make_split(space, entry["path"])
    split.name = name
    t0 = time.perf_counter()
    learners, training, untrained = {}, {}, {}
    for kind in lrn["kinds"]:
        untrained[f"{kind} (untrained)"] = make_learner(space, kind, seed=seed)  # its initial weights
        learner = make_learner(space, kind, seed=seed)
        t = time.perf_counter()
        cpu = time.process_time()
        hist = train(learner, split, budget_s=float(lrn["budget_s"]), max_steps=lrn.get("max_steps", {}).get(kind),
                     threads=int(lrn.get("threads", 1)), progress=False,
                     val_episodes=int(lrn.get("val_episodes", 300)), patience=0)
        training[kind] = {"steps": int(hist["steps"]), "episodes": int(hist["episodes"]),
                          "wall_s": round(time.perf_counter() - t, 1), "cpu_s": round(time.process_time() - cpu, 1),
                          "best_val_map": float(hist["best_val_map"]), "stopped": hist["stopped"]}
        learners[kind] = learner
        log(f"  {name}: {kind} trained {hist['steps']} steps in {training[kind]['wall_s']} s")
    check = _train_distribution_split(split, 2000, seed)
    n_check = int(study.get("train_check_episodes", 500))
    ds = compute_gap(space, {check.name: check}, ("hard",), n_check, seed=seed,
                     learners={**learners, **untrained, "random": RandomLearner(space, seed=seed)},
                     allow_other_space=True)
    ap = 100 * ds["ap"].sel(split=check.name, negatives="hard").mean("episode")
    margin = float(study.get("learned_margin", 20.0))
    random_map = float(ap.sel(learner="random"))
    learned = {k: {"train_distribution_map": float(ap.sel(learner=k)), "random_map": random_map,
                   "untrained_map": float(ap.sel(learner=f"{k} (untrained)")),
                   "learned": bool(float(ap.sel(learner=k)) - random_map >= margin)} for k in learners}
    negatives = study.get("negatives", "hard")
    ds = ladder_profile(space, {name: split}, prereg["rungs"]["names"], (negatives,), int(study.get("episodes", 1000)),
                        seed=seed, models={k: {name: v} for k, v in learners.items()})
    rows = ladder_summary(ds, n_boot=200, seed=seed)
    preds = split_predictors(space, {name: split})[name]
    record = {"split": name, "half": entry["half"], "generator": entry.get("generator"),
              "preregistration_sha256": prereg["sha256"], "sizes": {s: int(len(getattr(split, s)))
                                                                    for s in ("train", "val", "test")},
              "training": training, "learned": learned, "rows": rows, "predictors": preds,
              "seconds": round(time.perf_counter() - t0, 1)}
    tmp = target.with_suffix(f".tmp{id(record)}")
    tmp.write_text(json.dumps(record, indent=1, default=float))
    tmp.replace(target)
    return record


def _targets(records: list, learner: str, negatives: str) -> tuple:
    """(difficulty, se) per record of one learner: strong mAP − learner mAP on the same test
    episodes (mAP points) and its standard error over episodes."""
    d, s = [], []
    for r in records:
        row = next(x for x in r["rows"] if x["negatives"] == negatives)
        m = row["models"][learner]
        d.append(m["gap"])
        s.append(m["gap_se"])
    return np.array(d, float), np.array(s, float)


def validation_table(records: list, prereg: dict, half: str | None = "confirmatory", learned_only: bool = False,
                     n_boot: int | None = None) -> dict:
    """Every rung and baseline predictor ranked against each learner's difficulty on one half
    of the splits (``half`` None: all), with intervals and the difference to the best
    predictor and to the pre-registered comparison (``compare_to``).  ``learned_only``: only
    the splits where that learner learned.  Returns ``{learner: {"conditions": [...],
    "not_learned": [...], "series": {name: entry}, "best_predictor": name}}``."""
    study = prereg["study"]
    negatives = study.get("negatives", "hard")
    compare_to = study.get("compare_to", "compound_divergence")
    predictors = [p for p in prereg["predictors"]["names"]]
    labels = [lb for lb in prereg["rung_labels"] if lb != "strong"]
    out = {}
    for kind in prereg["learners"]["kinds"]:
        recs = [r for r in records if half is None or r["half"] == half]
        not_learned = [r["split"] for r in recs if not r["learned"][kind]["learned"]]
        if learned_only:
            recs = [r for r in recs if r["learned"][kind]["learned"]]
        conds = [r["split"] for r in recs]
        if len(conds) < MIN_CONDITIONS:
            out[kind] = {"conditions": conds, "not_learned": not_learned, "series": {}, "best_predictor": None,
                         "too_few": True}
            continue
        diff, se = _targets(recs, kind, negatives)
        series = {}
        for lb in labels:
            g = [next(x for x in r["rows"] if x["negatives"] == negatives)["rungs"][lb] for r in recs]
            series[lb] = (np.array([x["gap"] for x in g]), np.array([x["gap_se"] for x in g]))
        for p in predictors:
            if p == "memoriser":
                series["p:memoriser"] = series.get("memoriser") or _memoriser(recs, negatives)
            else:
                series[f"p:{p}"] = (np.array([r["predictors"][p] for r in recs], float), np.zeros(len(recs)))
        got = rank_series(series, diff, conds, target_ses=se, predictors=[f"p:{p}" for p in predictors],
                          n_boot=int(n_boot or study.get("n_boot", 2000)), seed=[int(study.get("seed", 0)), 50],
                          compare_to=f"p:{compare_to}")
        entries = {}
        for name, e in got["series"].items():
            e = strip_draws(e)
            key = f"vs_p:{compare_to}"
            if key in e:
                e["vs_compare_to"] = e.pop(key)
            entries[name] = e
        out[kind] = {"conditions": conds, "not_learned": not_learned, "learned_only": bool(learned_only),
                     "series": entries,
                     "best_predictor": got["best_predictor"], "difficulty": diff.tolist(), "difficulty_se": se.tolist()}
    return out


def _memoriser(records, negatives):
    g = [next(x for x in r["rows"] if x["negatives"] == negatives)["rungs"]["memoriser"] for r in records]
    return np.array([x["gap"] for x in g]), np.array([x["gap_se"] for x in g])


def format_validation(table: dict, compare_to: str = "compound_divergence") -> str:
    """A :func:`validation_table` as text: one block per learner, one line per rung and
    predictor: ρ with its 95 % interval, ρ − ρ(best predictor), ρ − ρ(``compare_to``)."""
    lines = []
    for kind, t in table.items():
        n = len(t["conditions"])
        if t.get("too_few"):
            lines.append(f"{kind}: too few conditions to rank (n = {n}; at least {MIN_CONDITIONS})")
            continue
        best = t["best_predictor"]
        lines.append(f"{kind}: {n} conditions ({len(t['not_learned'])} "
                     + ("left out where it did not learn" if t.get("learned_only") else "where it did not learn")
                     + (f": {', '.join(t['not_learned'])}" if t["not_learned"] else "") + "); best baseline predictor: "
                     + (predictor_label(best[2:]) if best else "none ranks"))
        head = ["", "Spearman ρ [95 %]", "− best predictor", f"− {predictor_label(compare_to)}", "tied pairs"]
        body = []
        for name, e in t["series"].items():
            label = f"{predictor_label(name[2:])} (predictor)" if name.startswith("p:") else name
            body.append([label, rho_text(e), difference_text(e.get("vs_best")), difference_text(e.get("vs_compare_to")),
                         f"{100 * e.get('tied_share', 0):.0f} %"])
        widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
        lines.append("  " + "  ".join(str(x).ljust(w) for x, w in zip(head, widths)))
        lines += ["  " + "  ".join(str(x).ljust(w) for x, w in zip(row, widths)) for row in body]
    return "\n".join(lines)


def validate_conditions(space, splits: dict, published, *, rungs=None, negatives: str = "hard",
                        n_episodes: int = 1000, seed: int = 0, n_boot: int = 2000, chance_levels=None,
                        measure=None, progress: bool = False, **ladder_options) -> dict:
    """The validation table for a user's own conditions: the ladder on ``splits`` (name ->
    Split), the baseline predictors, and every rung and predictor ranked against
    ``published``'s difficulty per condition (a
    :class:`~bayes_concepts.published.PublishedResults` with at least
    :data:`MIN_CONDITIONS` conditions among the splits; fewer is a one-line
    :class:`ValidationError`, checked before any work).  Returns the
    :func:`~bayes_concepts.ladder.ladder_correlations` result (without replicates) with the
    ladder's ``rows`` and the ``predictor_values`` per condition."""
    common = [c for c in splits if c in set(map(str, published.conditions()))]
    if len(common) < MIN_CONDITIONS:
        raise ValidationError(f"the published results name {len(common)} of the {len(splits)} conditions "
                              f"({', '.join(common) or 'none'}); a validation needs at least {MIN_CONDITIONS}")
    specs = parse_rungs(rungs, space=space)
    if "strong" not in [n for n, _ in specs]:
        raise ValidationError("the rungs must include strong (every gap is measured against it)")
    ds = ladder_profile(space, splits, specs, (negatives,), n_episodes, seed=seed, progress=progress, **ladder_options)
    rows = ladder_summary(ds, n_boot=200, seed=seed)
    preds = split_predictors(space, splits, chance_levels=chance_levels)
    corr = ladder_correlations(rows, published, negatives, n_boot=n_boot, seed=seed, each_model=False,
                               measure=measure, predictors=preds)
    return {**strip_draws(corr), "rows": rows, "predictor_values": preds}
