"""The multi-class form of ConceptWorld's experiments: which of K concepts a scene shows.

The seed poses every experiment as multi-class image classification over a small set of
concepts (3-5; its §4-5).  Here, per test condition of an experiment, the K classes are the
condition's concepts (``red_seq 3``, ``blue_seq 3``, ``mixed_seq 3`` for productivity's
``length_3``).  An episode draws ``shots`` labelled scenes and ``queries`` query scenes per
class, distinct, from the scenes that show that class's concept and no other class's (so a
label is never ambiguous).  Each learner -- an ideal observer, the strong or the weak oracle
of the split -- is fitted once per class, one against the rest (the class's scenes positive,
the other classes' negative; ``hard=False``: they were not chosen to be confusable), and
classifies a query scene x by the posterior predictive over classes

    p(c | x, S) ∝ p(x | S_c) = Σ_h p(h | S_c) · [x ∈ h] / |h|

(a scene of class c is drawn uniformly from c's concept: the size principle; a uniform prior
over classes).  Its prediction is the most probable class; tied classes share the credit
(1/m each of m), so an oracle with no hypothesis left for any class scores chance, 1/K.
The seed's classes pool the lengths (one class "red sequence" trained on lengths 1-2,
tested on 3); here each condition is its own K-way task, few-shot, so that the strong and
the weak oracle (which knows only the training concepts) are compared on the same episodes,
as the binary comp gap compares them.

The learners are duck-typed (``fit(scenes, labels, hard=...)`` and ``posterior()`` ->
``(concept ids, probabilities)``, as :class:`bayes_concepts.oracles.Oracle`): this package
is in the oracles' layer and does not import them; the ConceptWorld protocols pass them in.
"""
from __future__ import annotations

import numpy as np

from .definitions import DefinitionsError
from ...params import whole_number

__all__ = ["multiclass_accuracy", "format_multiclass"]


def _class_scenes(space, classes) -> list:
    """Per class: int64 ids of the scenes that show its concept and no other class's."""
    member = np.stack([np.asarray(space.signature(int(i)), bool) for i in classes])  # (K, n_scenes)
    alone = member.sum(axis=0) == 1
    return [np.flatnonzero(m & alone) for m in member]


def _credit(scores: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """float64 (Q,): for scores (Q, K) and true classes int (Q,), 1/m when the true class is one
    of the m classes of highest score, else 0."""
    top = scores >= scores.max(axis=1, keepdims=True)
    return top[np.arange(len(truth)), truth] / top.sum(axis=1)


def multiclass_accuracy(space, split, learners: dict, shots: int = 5, queries: int = 5, n_episodes: int = 500,
                        seed: int = 0, n_boot: int = 1000) -> dict:
    """The multi-class accuracy of each of ``learners`` on ``split``'s test condition (module
    docstring).

    space: a ConceptWorld space; split: one of :func:`~bayes_concepts.conceptworld.space.experiment_splits`
    (its ``test`` concepts are the classes); learners: ``{name: oracle}`` (fitted anew in every
    episode); shots, queries: labelled and query scenes per class; n_episodes: episodes (each
    K·queries query scenes); n_boot: bootstrap resamples of the episodes for the intervals.

    Returns a dict: ``classes`` (the K concept names used), ``excluded`` (test concepts with
    fewer than shots + queries scenes of their own, left out), ``K``, ``chance`` (1/K),
    ``shots``, ``queries``, ``episodes``, ``accuracy`` ``{name: percent}``, ``interval``
    ``{name: [lo, hi]}`` (95 %, percentile bootstrap over episodes) and, with learners named
    ``strong`` and ``weak``, ``gap`` (their difference, points) and ``gap_interval`` (paired
    bootstrap).  Fewer than two usable classes: the same keys with ``accuracy`` empty and a
    ``note`` saying why."""
    for name, v, least in (("shots", shots, 1), ("queries", queries, 1), ("n_episodes", n_episodes, 1),
                           ("n_boot", n_boot, 1)):
        whole_number(name, v, least, error=DefinitionsError, prefix="multiclass_accuracy: ")
    test = [int(i) for i in np.asarray(split.test)]
    own = _class_scenes(space, test) if test else []
    need = int(shots) + int(queries)
    keep = [k for k, s in enumerate(own) if len(s) >= need]
    classes = [test[k] for k in keep]
    out = {"split": split.name, "classes": [space.programs[i] for i in classes],
           "excluded": [space.programs[test[k]] for k in range(len(test)) if k not in keep],
           "K": len(classes), "chance": 100.0 / len(classes) if classes else float("nan"), "shots": int(shots),
           "queries": int(queries), "episodes": int(n_episodes), "accuracy": {}, "interval": {}}
    if len(classes) < 2:
        out["note"] = (f"{len(classes)} test concept(s) with {need} or more scenes of their own: no multi-class "
                       "task (build the space with more --scenes)")
        return out
    pools = [own[k] for k in keep]
    K, Q = len(classes), len(classes) * int(queries)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 24, 3]))
    counts = np.asarray(space.counts, np.float64)
    truth = np.repeat(np.arange(K), int(queries))
    support_labels = np.repeat(np.arange(K), int(shots))
    acc = {name: np.empty(int(n_episodes)) for name in learners}
    for e in range(int(n_episodes)):
        drawn = [rng.choice(p, size=need, replace=False) for p in pools]
        support = np.concatenate([d[:shots] for d in drawn])
        query = np.concatenate([d[shots:] for d in drawn])
        rows = np.asarray(space.scene_rows(query), np.uint64)  # (Q, words): which concepts hold on each query
        for name, learner in learners.items():
            scores = np.zeros((Q, K))
            for c in range(K):
                learner.fit(support, (support_labels == c).astype(np.int8), hard=False)
                ids, probs = learner.posterior()
                if len(ids):
                    ids = np.asarray(ids, np.int64)
                    bits = (rows[:, ids >> 6] >> (ids & 63).astype(np.uint64)) & np.uint64(1)
                    scores[:, c] = bits.astype(np.float64) @ (np.asarray(probs, np.float64) / counts[ids])
            acc[name][e] = 100.0 * _credit(scores, truth).mean()
    boot = np.random.default_rng(np.random.SeedSequence([int(seed), 24, 4])).integers(
        0, int(n_episodes), size=(int(n_boot), int(n_episodes)))
    for name, a in acc.items():
        out["accuracy"][name] = float(a.mean())
        out["interval"][name] = [float(v) for v in np.percentile(a[boot].mean(axis=1), [2.5, 97.5])]
    if "strong" in acc and "weak" in acc:
        d = acc["strong"] - acc["weak"]
        out["gap"] = float(d.mean())
        out["gap_interval"] = [float(v) for v in np.percentile(d[boot].mean(axis=1), [2.5, 97.5])]
    return out


def format_multiclass(results: dict) -> str:
    """Lines for the results of :func:`multiclass_accuracy`, ``{split: result}``: per split the
    number of classes, each learner's accuracy, the gap with its interval and chance."""
    rows = list(results.values())
    if not rows:
        return ""
    names = list(dict.fromkeys(n for r in rows for n in r["accuracy"]))
    r0 = rows[0]
    lines = [f"multi-class form (the seed's task: which of the condition's K concepts a scene shows; "
             f"{r0['shots']} labelled scenes per class, {r0['queries']} queries each, {r0['episodes']:,} episodes; "
             "accuracy %, ideal observers):",
             f"  {'split':<16}{'K':>3}" + "".join(f"{n:>10}" for n in names) + f"{'gap [95% interval]':>26}"
             + f"{'chance':>8}"]
    for r in rows:
        cells = "".join(f"{r['accuracy'][n]:>10.1f}" if n in r["accuracy"] else f"{'-':>10}" for n in names)
        gap = (f"{r['gap']:.1f} [{r['gap_interval'][0]:.1f}, {r['gap_interval'][1]:.1f}]" if "gap" in r else "-")
        lines.append(f"  {r['split']:<16}{r['K']:>3}{cells}{gap:>26}{r['chance']:>8.1f}"
                     + (f"  ({r['note']})" if "note" in r else "")
                     + (f"  (left out: {', '.join(r['excluded'])})" if r["excluded"] else ""))
    return "\n".join(lines)
