"""Prototype learners: score a scene by its distance to the support's two class means.

For an embedding f (float32 (n, D)) the positive and negative prototypes of a support
set are c_p and c_n, the means of the positives' and the negatives' embeddings, and a
scene u scores (CURI eq. 1, Snell et al. 2017)

    logit(u) = ||f(u) − c_n||² − ||f(u) − c_p||² = 2 f(u)·(c_p − c_n) + ||c_n||² − ||c_p||²,
    p(y = 1 | u) = sigmoid(logit(u)).

:class:`PrototypeLearner` implements the learner protocol and the fast batch path
for any fixed embedding: ``evaluate(episodes)`` embeds each distinct support/query
scene once and each test-bank scene once per embedding (kept until the weights
change), then every episode is one matrix product against the test bank's
embeddings.  Subclasses define :meth:`PrototypeLearner.embed_codes`; one whose embedding
reads more of a scene than its codes (its relations, its positions) also overrides
:meth:`PrototypeLearner.embed_ids` and :meth:`PrototypeLearner.embed`.
"""
from __future__ import annotations

import numba
import numpy as np
from scipy.special import expit

from .features import check_learner_space, scene_codes
from .protocol import LearnerError, check_labels
from .scoring import ap_on_test_bank, query_metrics

#: episodes per block of the test-bank score matrix (block × T float32 in memory)
EPISODE_BLOCK = 256
#: episodes whose support and query scenes are embedded together (distinct scenes once)
EPISODE_CHUNK = 4096
_TILE = 1024  # scenes per tile of the logit kernel (its accumulators stay in L1/L2)
_ROWS = 8  # support sets per work item of the logit kernel


@numba.njit(parallel=True, cache=True)
def _logits_kernel(emb_t, w, b, scale, out):
    """out[e, t] = (Σ_d w[e, d]·emb_t[d, t] + b[e]) / scale[e], the sum taken in order d = 0, 1, ...
    for every element (vectorised across t only), so a scene's logit does not depend on
    which other scenes or support sets share the call."""
    n_dim, n = emb_t.shape
    n_rows = w.shape[0]
    n_tiles = (n + _TILE - 1) // _TILE
    n_groups = (n_rows + _ROWS - 1) // _ROWS
    for job in numba.prange(n_tiles * n_groups):
        t0 = (job % n_tiles) * _TILE
        m = min(n, t0 + _TILE) - t0
        e0 = (job // n_tiles) * _ROWS
        k = min(n_rows, e0 + _ROWS) - e0
        acc = np.zeros((_ROWS, _TILE), out.dtype)  # a private buffer: no aliasing, so the t loop vectorises
        for d in range(n_dim):
            src = emb_t[d, t0: t0 + m]
            for i in range(k):
                wd = w[e0 + i, d]
                a = acc[i]
                for t in range(m):
                    a[t] += wd * src[t]
        for i in range(k):
            for t in range(m):
                out[e0 + i, t0 + t] = (acc[i, t] + b[e0 + i]) / scale[e0 + i]


@numba.njit(parallel=True, cache=True)
def _episode_logits_kernel(query, w, b, scale, out):
    """out[e, j] = (Σ_d w[e, d]·query[e, j, d] + b[e]) / scale[e], summed in the same order as
    :func:`_logits_kernel` (so both give identical values for identical inputs)."""
    for e in numba.prange(query.shape[0]):
        for j in range(query.shape[1]):
            out[e, j] = 0.0  # accumulate in out's dtype, as the other kernel does
            for d in range(query.shape[2]):
                out[e, j] += w[e, d] * query[e, j, d]
            out[e, j] = (out[e, j] + b[e]) / scale[e]


def prototype_logits(emb: np.ndarray, w: np.ndarray, b: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Logits of scenes with embeddings ``emb`` (n, D) under support sets (w (E, D), b, scale (E,)):
    (E, n) in the dtype of ``w``, each a sum in a fixed order (batch-independent)."""
    dtype = w.dtype
    out = np.empty((len(w), len(emb)), dtype)
    if len(w) and len(emb):
        _logits_kernel(np.ascontiguousarray(emb.T, dtype), np.ascontiguousarray(w), b.astype(dtype),
                       scale.astype(dtype), out)
    return out


def episode_logits(query: np.ndarray, w: np.ndarray, b: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Logits of each episode's own scenes: query (E, Q, D) -> (E, Q), as :func:`prototype_logits`."""
    dtype = w.dtype
    out = np.empty(query.shape[:2], dtype)
    if out.size:
        _episode_logits_kernel(np.ascontiguousarray(query, dtype), np.ascontiguousarray(w), b.astype(dtype),
                               scale.astype(dtype), out)
    return out


def prototypes(support: np.ndarray, labels: np.ndarray):
    """Class means of support embeddings.

    support: float32 (E, K, D); labels: 0/1 (E, K).  Returns (c_p, c_n), float32 (E, D) each.
    Every episode needs at least one positive and one negative.
    """
    y = np.asarray(labels, np.float32)[..., None]
    n_pos, n_neg = y.sum(axis=1), (1 - y).sum(axis=1)
    if (n_pos == 0).any() or (n_neg == 0).any():
        raise LearnerError("a prototype learner needs at least one positive and one negative support scene")
    c_p = (support * y).sum(axis=1) / n_pos
    c_n = (support * (1 - y)).sum(axis=1) / n_neg
    return c_p.astype(np.float32), c_n.astype(np.float32)


def logit_weights(c_p: np.ndarray, c_n: np.ndarray):
    """(w, b) with logit(u) = f(u)·w + b: w = 2 (c_p − c_n) float32 (E, D), b = ||c_n||² − ||c_p||²
    float32 (E,)."""
    w = 2.0 * (c_p - c_n)
    b = (np.einsum("ed,ed->e", c_n.astype(np.float64), c_n) - np.einsum("ed,ed->e", c_p.astype(np.float64), c_p))
    return w.astype(np.float32), b.astype(np.float32)


class PrototypeLearner:
    """Base of the prototype learners of a space (see the module docstring).

    Parameters
    ----------
    space : HypothesisSpace
        The space whose scene ids the learner reads (scene dicts are accepted too).
    name : str
        The learner's name in results.
    """

    def __init__(self, space, name: str = "prototype"):
        check_learner_space(space)
        self.space = space
        self.name = name
        self._embedding_version = 0
        self._bank = None
        self._weights = None

    # ------------------------------------------------------------ embedding
    def embed_codes(self, codes: np.ndarray) -> np.ndarray:
        """Embeddings of scenes given as codes int8 (n, S, A): float32 (n, D)."""
        raise NotImplementedError

    def embed(self, scenes) -> np.ndarray:
        """Embeddings of scenes (bank ids or dicts): float32 (n, D)."""
        return self.embed_codes(scene_codes(self.space, scenes))

    def embed_ids(self, ids) -> np.ndarray:
        """Embeddings of scene-bank ids int (n,) of the learner's space: float32 (n, D)."""
        return self.embed_codes(np.asarray(self.space.scene_codes[np.asarray(ids, np.int64)]))

    def weights_changed(self):
        """Forget cached embeddings (call after changing the embedding's parameters)."""
        self._embedding_version += 1
        self._bank = None

    def bank_embedding(self) -> np.ndarray:
        """Embeddings of the test bank, float32 (T, D), computed once per embedding version."""
        if self._bank is None or self._bank[0] != self._embedding_version:
            ids = np.asarray(self.space.test_bank.scene_ids, np.int64)
            self._bank = (self._embedding_version, np.ascontiguousarray(self.embed_ids(ids)))
        return self._bank[1]

    # ------------------------------------------------------ learner protocol
    def fit(self, scenes, labels) -> "PrototypeLearner":
        """Prototypes of a support set: ``scenes`` (ids or dicts), 0/1 ``labels`` (n,)."""
        emb = self.embed(scenes)
        y = check_labels(labels, len(emb))
        self._weights = self.weights(emb[None], y[None])
        return self

    def weights(self, support: np.ndarray, labels: np.ndarray) -> tuple:
        """(w, b, scale) of support embeddings (E, K, D) and labels (E, K): logit(u) =
        (f(u)·w + b) / scale, with w float (E, D), b and scale float (E,)."""
        w, b = logit_weights(*prototypes(support, labels))
        return w, b, np.ones(len(w), np.float32)

    def logits(self, emb: np.ndarray, w: np.ndarray, b: np.ndarray, scale: np.ndarray) -> np.ndarray:
        """logit of every scene under every support set: float (E, n) from embeddings (n, D)."""
        return prototype_logits(emb, w, b, scale)

    def decision_function(self, scenes) -> np.ndarray:
        """logit p(y = 1 | u, support) per scene: float64 (n,)."""
        if self._weights is None:
            raise LearnerError(f"learner {self.name!r}: call fit() before predicting")
        w, b, scale = self._weights
        return self.logits(self.embed(scenes), w, b, scale)[0].astype(np.float64)

    def predict_proba(self, scenes) -> np.ndarray:
        """p(y = 1 | u, support) per scene: float64 (n,)."""
        return expit(self.decision_function(scenes))

    # ---------------------------------------------------------------- batch
    def episode_predictions(self, support_scenes, support_labels, query_scenes):
        """The batch path's predictions of episodes given as arrays, block by block: yields
        ``(lo, hi, query_pred, scores)`` for episodes ``lo:hi``, ``query_pred`` float64
        (hi - lo, Kq) the query probabilities and ``scores`` float (hi - lo, T) the logits of
        every test-bank scene (the space's test bank, in its order; float32 for the neural
        learners).  Each distinct support/query scene is embedded once per chunk of
        :data:`EPISODE_CHUNK` episodes and the test bank once per embedding version.
        :meth:`evaluate` scores exactly these numbers; a predictions file written from them
        (:mod:`bayes_concepts.predictions`) scores the same."""
        support_scenes, query_scenes = np.asarray(support_scenes, np.int64), np.asarray(query_scenes, np.int64)
        e_count, k = support_scenes.shape
        kq = query_scenes.shape[1]
        bank_t = None
        for lo in range(0, e_count, EPISODE_CHUNK):  # bounds the memory of the scenes' embeddings
            hi = min(lo + EPISODE_CHUNK, e_count)
            ids = np.concatenate([support_scenes[lo:hi].ravel(), query_scenes[lo:hi].ravel()])
            unique, inverse = np.unique(ids, return_inverse=True)
            emb = self.embed_ids(unique)
            support = emb[inverse[: (hi - lo) * k]].reshape(hi - lo, k, -1)
            query = emb[inverse[(hi - lo) * k:]].reshape(hi - lo, kq, -1)
            w, b, scale = self.weights(support, np.asarray(support_labels)[lo:hi])
            query_pred = expit(episode_logits(query, w, b, scale).astype(np.float64))
            if bank_t is None:
                bank_t = np.ascontiguousarray(self.bank_embedding().T, w.dtype)
            for a in range(0, hi - lo, EPISODE_BLOCK):
                z = min(a + EPISODE_BLOCK, hi - lo)
                scores = np.empty((z - a, bank_t.shape[1]), w.dtype)
                _logits_kernel(bank_t, np.ascontiguousarray(w[a:z]), b[a:z].astype(w.dtype),
                               scale[a:z].astype(w.dtype), scores)
                yield lo + a, lo + z, query_pred[a:z], scores

    def evaluate(self, episodes) -> dict:
        """Score a batch of episodes: each distinct support/query scene embedded once, the
        test bank once per embedding version, then prototype distances only
        (:meth:`episode_predictions`).  Returns float arrays (E,) ``ap``, ``cba``,
        ``predictive_entropy``, NaN ``posterior_entropy``, bool ``empty`` and ``query_pred``
        float64 (E, K)."""
        e_count = len(episodes.support_scenes)
        query_pred = np.empty((e_count, episodes.query_scenes.shape[1]))
        ap = np.empty(e_count)
        concepts = np.asarray(episodes.concept, np.int64)
        for lo, hi, q, scores in self.episode_predictions(episodes.support_scenes, episodes.support_labels,
                                                          episodes.query_scenes):
            query_pred[lo:hi] = q
            ap[lo:hi] = ap_on_test_bank(self.space, scores, concepts[lo:hi])
        cba, entropy = np.empty(e_count), np.empty(e_count)
        query_metrics(query_pred, np.ascontiguousarray(episodes.query_labels), cba, entropy)
        return {"ap": ap, "cba": cba, "predictive_entropy": entropy, "posterior_entropy": np.full(e_count, np.nan),
                "empty": np.zeros(e_count, bool), "query_pred": query_pred}

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r})"
