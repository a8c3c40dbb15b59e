"""Reference learners that need no training.

``random`` (:class:`RandomLearner`)
    CURI's random baseline: every scene gets a uniform random score, a fixed function
    of (seed, support set, scene content), so repeated calls agree.  Its expected AP is
    about the share of the test bank on which the concept is true; its CBA about 0.5.
``prototype`` (:class:`NearestPrototype`)
    nearest class mean on the bag of attribute values (for every attribute value, how
    many objects of the scene take it): a prototypical network whose embedding is fixed
    rather than learned.

>>> learner = reference_learners.get("random")(space, seed=0)       # doctest: +SKIP
>>> learner.fit([3, 9, 12], [1, 1, 0]).predict_proba([5, 6])        # doctest: +SKIP
"""
from __future__ import annotations

import zlib

import numpy as np

from ..registry import Registry
from .features import bag_of_values, check_learner_space, scene_codes, scene_ids
from .protocol import LearnerError, check_labels, split_scene_input
from .prototype import PrototypeLearner

#: Learners that need no training, by name: ``factory(space, seed=0) -> learner``.
reference_learners = Registry("reference learner")

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64 arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def scene_hashes(codes: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each scene's content: codes int8 (n, S, A) -> uint64 (n,)."""
    flat = np.ascontiguousarray(codes, np.int8).reshape(len(codes), -1).view(np.uint8).astype(np.uint64)
    h = np.zeros(len(codes), np.uint64)
    with np.errstate(over="ignore"):
        for j in range(flat.shape[1]):
            h = _mix(h + _GOLDEN + flat[:, j])
    return h


@reference_learners.register("random")
class RandomLearner:
    """Uniform random scores, seeded by ``seed``, the support set and the scene itself.

    Parameters
    ----------
    space : HypothesisSpace
        Scene ids are read from its scene bank (dicts are accepted too and score like
        the same scene given by id).
    seed : int
    name : str
    """

    def __init__(self, space, seed: int = 0, name: str = "random"):
        check_learner_space(space)
        self.space = space
        self.seed = int(seed)
        self.name = name
        self._key = None
        self._bank_hashes = None

    def _hashes(self, scenes) -> np.ndarray:
        kind, items = split_scene_input(scenes)
        if kind == "dicts":
            return scene_hashes(scene_codes(self.space, items))
        if self._bank_hashes is None:  # every bank scene hashed once
            self._bank_hashes = scene_hashes(np.asarray(self.space.scene_codes))
        return self._bank_hashes[scene_ids(self.space, items)]

    def fit(self, scenes, labels) -> "RandomLearner":
        hashes = self._hashes(scenes)
        y = check_labels(labels, len(hashes))
        support = np.sort(hashes ^ (y.astype(np.uint64) * _GOLDEN))
        crc = zlib.crc32(support.tobytes())
        self._key = np.random.SeedSequence([self.seed, crc]).generate_state(1, np.uint64)[0]
        return self

    def predict_proba(self, scenes) -> np.ndarray:
        """Uniform scores in [0, 1): float64 (n,)."""
        if self._key is None:
            raise LearnerError(f"learner {self.name!r}: call fit() before predicting")
        with np.errstate(over="ignore"):
            z = _mix(self._hashes(scenes) ^ self._key)
        return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)

    def __repr__(self):
        return f"RandomLearner(seed={self.seed})"


@reference_learners.register("prototype")
class NearestPrototype(PrototypeLearner):
    """Nearest class mean on each scene's bag of attribute values (counts of objects per
    value of every attribute; float32 (Σ n_values,)).  Needs no training."""

    def __init__(self, space, seed: int = 0, name: str = "prototype"):
        super().__init__(space, name)
        self.seed = int(seed)  # unused: the learner is deterministic

    def embed_codes(self, codes: np.ndarray) -> np.ndarray:
        return bag_of_values(codes, self.space.schema).astype(np.float64)

    def weights(self, support: np.ndarray, labels: np.ndarray) -> tuple:
        """The logit in exact integer arithmetic: with S_p, S_n the class sums and n_p, n_n
        the class sizes, (n_p n_n)² · logit(u) = 2 n_p n_n f(u)·(n_n S_p − n_p S_n)
        + n_p² ||S_n||² − n_n² ||S_p||², every term an integer far below 2**53, so any
        summation order gives the same float64 result (ties among scenes with equal bags
        stay ties in every scoring path)."""
        y = np.asarray(labels, np.float64)[..., None]
        n_p, n_n = y.sum(axis=1)[:, 0], (1 - y).sum(axis=1)[:, 0]
        if (n_p == 0).any() or (n_n == 0).any():
            raise LearnerError("a prototype learner needs at least one positive and one negative support scene")
        s_p, s_n = (support * y).sum(axis=1), (support * (1 - y)).sum(axis=1)
        w = 2 * (n_p * n_n)[:, None] * (n_n[:, None] * s_p - n_p[:, None] * s_n)
        b = n_p ** 2 * (s_n * s_n).sum(axis=1) - n_n ** 2 * (s_p * s_p).sum(axis=1)
        return w, b, (n_p * n_n) ** 2
