"""Did a learner learn?  Its validation numbers against the random learner's.

A trained learner is scored on its validation episodes beside the random learner
(:class:`~bayes_concepts.learners.reference.RandomLearner`) on the *same* episodes.  It
*learned* when its validation mAP is clearly above random: the lower end of its 95 %
interval is above the upper end of the random learner's (the intervals do not overlap).
A trained learner whose kept weights are its initial ones (no training step improved its
validation) did not learn either, whatever its margin over random: an untrained net's random
features can rank above chance.  A learner that did not learn has no drops, gaps or rank correlations worth printing: the
scorer, the ladder and the tables mark it *did not learn* and print none for it.

The record (:func:`learned_check`, kept in a model's card as ``"validation"``)::

    {"episodes": 500, "map": {"mean", "ci95"}, "cba": {...}, "random_map": {...},
     "random_cba": {...}, "learned": true, "rule": "..."}

numbers in points (0-100), intervals 95 % normal over episodes (mean ± 1.96 standard errors).
"""
from __future__ import annotations

import numpy as np

__all__ = ["mean_ci", "learned_check", "did_learn", "not_learned_text", "RULE"]

RULE = ("learned: the lower end of the validation mAP's 95 % interval is above the upper end of the random "
        "learner's on the same episodes")


def mean_ci(values) -> dict:
    """``{"mean", "ci95", "n"}`` of finite ``values``: the mean and its 95 % normal interval
    (mean ± 1.96 standard errors; ``[mean, mean]`` with one value, NaN with none)."""
    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v)]
    if not len(v):
        return {"mean": float("nan"), "ci95": [float("nan"), float("nan")], "n": 0}
    m = float(v.mean())
    half = float(1.96 * v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0
    return {"mean": round(m, 4), "ci95": [round(m - half, 4), round(m + half, 4)], "n": int(len(v))}


def learned_check(model_ap, random_ap, model_cba=None, random_cba=None) -> dict:
    """The "did it learn?" record of a model's per-episode validation AP (and CBA) against the
    random learner's on the same episodes (points, arrays (E,)).  ``learned`` is True only when
    the model's mAP interval lies wholly above the random learner's (no overlap)."""
    m, r = mean_ci(model_ap), mean_ci(random_ap)
    out = {"episodes": m["n"], "map": m, "random_map": r}
    if model_cba is not None:
        out["cba"] = mean_ci(model_cba)
    if random_cba is not None:
        out["random_cba"] = mean_ci(random_cba)
    out["learned"] = bool(m["n"] and r["n"] and m["ci95"][0] > r["ci95"][1])
    out["rule"] = RULE
    return out


def did_learn(record) -> bool | None:
    """True / False from a :func:`learned_check` record, or from a model card holding one as
    ``"validation"``; None when there is none (an untrained reference learner, an old card)."""
    if not isinstance(record, dict):
        return None
    rec = record.get("validation") if "learned" not in record else record
    if not isinstance(rec, dict) or not isinstance(rec.get("learned"), bool):
        return None
    return rec["learned"]


def not_learned_text(record: dict) -> str:
    """``did not learn (validation mAP 7.4 [7.3, 7.6], random 7.1 [6.9, 7.3])``."""
    rec = record.get("validation", record) if isinstance(record, dict) else {}
    m, r = rec.get("map") or {}, rec.get("random_map") or {}

    def cell(e):
        if not e or not np.isfinite(e.get("mean", np.nan)):
            return "?"
        lo, hi = e["ci95"]
        return f"{e['mean']:.1f} [{lo:.1f}, {hi:.1f}]"
    if rec.get("untrained"):
        return (f"did not learn (no training step improved on the untrained net's validation mAP {cell(m)}; "
                f"random {cell(r)})")
    return f"did not learn (validation mAP {cell(m)}, random {cell(r)} on the same episodes)"
