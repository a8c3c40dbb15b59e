"""A conformance check for learners, in the manner of scikit-learn's ``check_estimator``.

>>> report = check_learner(MyLearner(space), space)        # doctest: +SKIP
>>> report["accepts_dicts"], report["batch_method"]          # doctest: +SKIP

:func:`check_learner` runs a learner through the protocol on real episodes of the
space and raises :class:`LearnerCheckError` naming the first check that fails:

1. ``fit`` and ``predict_proba`` exist; ``fit`` returns the learner itself;
2. ``predict_proba`` returns one finite probability in [0, 1] per scene (float (n,));
3. scene ids work as an int64 array and as a list of Python ints, alike;
4. predictions do not depend on the other scenes of the call (one scene alone,
   the scenes permuted) nor on earlier fits (fit A, fit B equals fit B);
5. ``fit`` leaves its inputs unchanged;
6. ``decision_function``, if present, ranks scenes as ``predict_proba`` does;
7. scene dicts, if accepted, predict like the same scenes given by id (a learner
   may refuse dicts with an error; the report says so);
8. the scorer gives finite AP and CBA on episodes, and a batch ``evaluate``, if
   present, agrees with fit/predict_proba episode by episode.

Comparisons allow ``atol`` (absolute, on probabilities and AP): float32 and bfloat16
networks round differently when the batch around a scene changes.
"""
from __future__ import annotations

import numpy as np

from ..episodes import EpisodeSampler
from .protocol import LearnerError, learner_name
from .scoring import evaluate_by_protocol, score_learner


class LearnerCheckError(LearnerError):
    """A learner that breaks the learner protocol; the message names the check."""


def _episodes(space, split, n, seed):
    ids = np.arange(space.n_concepts) if split is None else split.ids("test")
    return EpisodeSampler(space).sample(ids, n, "hard", seed=seed, meta={"side": "conformance"})


def check_learner(learner, space, *, split=None, n_episodes: int = 4, seed: int = 0, atol: float = 1e-6) -> dict:
    """Check that ``learner`` keeps the learner protocol on ``space`` (episodes drawn from
    ``split``'s test concepts, or from every concept).  Returns a report dict (what was
    checked, whether dicts are accepted, whether a batch method was compared, the largest
    differences seen); raises :class:`LearnerCheckError` on the first failure."""
    name = learner_name(learner, type(learner).__name__)

    def fail(check, message):
        raise LearnerCheckError(f"learner {name!r} fails '{check}': {message}")

    for method in ("fit", "predict_proba"):
        if not callable(getattr(learner, method, None)):
            fail("protocol", f"it has no {method}() method")
    eps = _episodes(space, split, n_episodes, seed)
    report = {"learner": name, "checks": [], "accepts_dicts": None, "batch_method": False, "max_abs_diff": 0.0}

    def passed(check):
        report["checks"].append(check)

    def predict(scenes, check):
        try:
            p = learner.predict_proba(scenes)
        except LearnerError:
            raise
        except Exception as exc:  # a user learner may raise anything; name the check
            fail(check, f"predict_proba raised {type(exc).__name__}: {exc}")
        p = np.asarray(p)
        n = len(scenes)
        if p.shape != (n,):
            fail(check, f"predict_proba returned shape {p.shape} for {n} scenes (expected ({n},))")
        if not np.issubdtype(p.dtype, np.floating):
            fail(check, f"predict_proba returned dtype {p.dtype}, not floats")
        if not np.isfinite(p).all() or (p < 0).any() or (p > 1).any():
            fail(check, "predict_proba returned values that are not probabilities in [0, 1]")
        return p.astype(np.float64)

    def close(a, b, check, what):
        diff = float(np.max(np.abs(a - b))) if len(a) else 0.0
        report["max_abs_diff"] = max(report["max_abs_diff"], diff)
        if diff > atol:
            fail(check, f"{what} (largest difference {diff:.3g} > atol {atol:g})")

    support, labels = eps.support_scenes[0].copy(), eps.support_labels[0].copy()
    query = np.concatenate([eps.query_scenes[0], eps.support_scenes[1][:7]])
    fitted = learner.fit(support, labels)
    if fitted is not learner:
        fail("fit returns self", f"fit returned {type(fitted).__name__}, not the learner")
    if not (np.array_equal(support, eps.support_scenes[0]) and np.array_equal(labels, eps.support_labels[0])):
        fail("inputs unchanged", "fit modified the support scenes or labels it was given")
    passed("fit returns self")
    passed("inputs unchanged")
    p = predict(query, "probabilities")
    passed("probabilities")
    close(predict([int(s) for s in query], "ids as a list"), p, "ids as a list",
          "a list of Python ints predicts differently from the int64 array")
    passed("ids as a list")
    close(np.array([predict(query[j: j + 1], "one scene at a time")[0] for j in (0, 5, len(query) - 1)]),
          p[[0, 5, len(query) - 1]], "one scene at a time", "a scene alone predicts differently than in a batch")
    passed("one scene at a time")
    perm = np.random.default_rng(seed).permutation(len(query))
    close(predict(query[perm], "permutation"), p[perm], "permutation", "permuting the scenes changes their predictions")
    passed("permutation")
    learner.fit(eps.support_scenes[1], eps.support_labels[1])
    learner.fit(support, labels)
    close(predict(query, "no memory between fits"), p, "no memory between fits",
          "predictions after fit(A), fit(B) differ from those after fit(B)")
    passed("no memory between fits")

    decision = getattr(learner, "decision_function", None)
    if callable(decision):
        d = np.asarray(decision(query), np.float64)
        if d.shape != p.shape or not np.isfinite(d).all():
            fail("decision_function", f"returned shape {d.shape} or non-finite values for {len(query)} scenes")
        order = np.argsort(d, kind="stable")
        if (np.diff(p[order]) < -atol).any():
            fail("decision_function", "ranks scenes differently from predict_proba")
        passed("decision_function")

    try:
        p_dicts = learner.predict_proba([space.scene(int(s)) for s in query])
    except (LearnerError, TypeError, ValueError, NotImplementedError, KeyError):
        report["accepts_dicts"] = False
    else:
        report["accepts_dicts"] = True
        close(np.asarray(p_dicts, np.float64), p, "dicts", "scene dicts predict differently from the same scenes by id")
    passed("dicts")

    slow = evaluate_by_protocol(learner, space, eps, name)
    if not (np.isfinite(slow["ap"]).all() and np.isfinite(slow["cba"]).all()):
        fail("scored", "AP or CBA is not finite on episodes")
    passed("scored")
    if callable(getattr(learner, "evaluate", None)):
        report["batch_method"] = True
        fast = score_learner(learner, space, eps, name)
        close(fast["query_pred"].ravel(), slow["query_pred"].ravel(), "batch method",
              "evaluate(episodes) gives other query predictions than fit/predict_proba")
        close(fast["ap"], slow["ap"], "batch method", "evaluate(episodes) gives another AP than fit/predict_proba")
        sure = np.abs(slow["query_pred"] - 0.5) > max(atol, 1e-9)
        if sure.all() and not np.allclose(fast["cba"], slow["cba"]):
            fail("batch method", "evaluate(episodes) gives another CBA than fit/predict_proba")
        passed("batch method")
    return report
