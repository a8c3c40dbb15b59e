"""The learner protocol: anything scored beside the oracles.

A **learner** is an object with

``fit(scenes, labels) -> self``
    condition on a support set: ``scenes`` a sequence of scene-bank ids (ints) or
    scene dicts (``{"objects": [...]}``), ``labels`` the 0/1 labels, int (n,);
``predict_proba(scenes) -> float64 (n,)``
    p(y = 1 | scene, support) for each scene, in [0, 1].

Optional, used when present:

``decision_function(scenes) -> float64 (n,)``
    a score that ranks scenes like ``predict_proba`` but without saturating (a
    logit); average precision on the test bank ranks by it, as scikit-learn's
    scorers prefer ``decision_function`` over ``predict_proba``;
``evaluate(episodes) -> dict``
    a batch method scoring a whole :class:`~bayes_concepts.episodes.Episodes`
    batch at once, returning float arrays (E,) ``ap`` and ``cba``, ``query_pred``
    (E, K) and optionally ``posterior_entropy``, ``predictive_entropy`` and bool
    ``empty``; a learner with it must be bound to the space it is scored on
    (attribute ``space``);
``train(space, split, ...)``
    meta-training (a meta-learner), see :mod:`bayes_concepts.learners.training`.

The oracles (:class:`bayes_concepts.oracles.Oracle`) are learners with
``evaluate``; the scorer (:func:`bayes_concepts.learners.scoring.score_learners`)
calls ``evaluate`` where it exists and ``fit``/``predict_proba`` per episode
otherwise.  :func:`bayes_concepts.learners.conformance.check_learner` checks that an
object keeps the protocol.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from ..errors import BayesConceptsError


class LearnerError(BayesConceptsError):
    """A learner that cannot be used as asked (bad support, unknown name, wrong space, ...)."""


@runtime_checkable
class Learner(Protocol):
    """Structural type of a learner: ``fit`` and ``predict_proba``."""

    def fit(self, scenes, labels) -> "Learner":
        ...

    def predict_proba(self, scenes) -> np.ndarray:
        ...


@runtime_checkable
class MetaLearner(Learner, Protocol):
    """A learner that is meta-trained on episodes before it is scored."""

    def train(self, *args, **kwargs):
        ...


def is_learner(obj) -> bool:
    """Whether ``obj`` has callable ``fit`` and ``predict_proba``."""
    return callable(getattr(obj, "fit", None)) and callable(getattr(obj, "predict_proba", None))


def learner_name(obj, default: str = "learner") -> str:
    """The name a learner has in results: its ``name`` attribute, else ``default``."""
    name = getattr(obj, "name", None)
    return str(name) if isinstance(name, str) and name else default


def split_scene_input(scenes):
    """Classify a learner's scene input.

    Returns ``("ids", int64 (n,))`` for scene-bank ids (a sequence or array of
    integers) or ``("dicts", list)`` for scene dicts.  Anything else (a mix, a
    float array, a string) is a :class:`LearnerError`.
    """
    if isinstance(scenes, np.ndarray):
        if scenes.ndim == 1 and (np.issubdtype(scenes.dtype, np.integer) or scenes.size == 0):
            return "ids", scenes.astype(np.int64, copy=False)
        if scenes.dtype != object:
            raise LearnerError(f"scenes: expected scene-bank ids (integers) or scene dicts, got an array of "
                               f"dtype {scenes.dtype} and shape {scenes.shape}")
    if isinstance(scenes, (str, bytes, dict)):
        raise LearnerError("scenes: expected a sequence of scene-bank ids or scene dicts, got a single "
                           f"{type(scenes).__name__}")
    items = list(scenes)
    if all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in items):
        return "ids", np.asarray(items, np.int64).reshape(-1)
    if all(isinstance(s, dict) for s in items):
        return "dicts", items
    kinds = sorted({type(s).__name__ for s in items})
    raise LearnerError(f"scenes: expected all scene-bank ids or all scene dicts, got {', '.join(kinds)}")


def check_labels(labels, n: int) -> np.ndarray:
    """Support labels as int8 (n,) of 0/1; a :class:`LearnerError` otherwise."""
    y = np.asarray(labels)
    if y.shape != (n,):
        raise LearnerError(f"labels: expected {n} labels (one per support scene), got shape {y.shape}")
    if y.size and not np.isin(y, (0, 1)).all():
        raise LearnerError("labels: expected 0/1 labels")
    return y.astype(np.int8)
