"""A slow, obvious reference implementation of the Bayesian oracles.

No bit tricks and no pruning: every quantity is a plain loop / sum over the concepts of
the oracle's concept set, on an unpacked boolean signature matrix ``S`` (H, N) where
``S[h, s]`` says concept ``h`` is true on scene ``s`` of the scene bank.

Used by ``test_oracles.py`` to check the numba kernels of ``bayes_concepts.oracles``.

Conventions:

* prior over the concept set Ω: ``length`` w = exp(-beta * l(h)), ``pcfg`` w = exp(log_pcfg),
  ``uniform`` w = 1; normalised over Ω;
* likelihood of the support (K scenes, the first ``n_pos_slots`` of them are the positive
  *slots*, the others the negative slots):
  ``size``: 0 if h mislabels any support scene, else each positive slot contributes
  -log|ext h| and, when the negatives were hard negatives, each negative slot
  -log(N - |ext h|) (easy negatives are uniform draws: a constant, left out);
  ``consistent``: 1 if h labels every support scene right, else 0;
  ``noisy(eps)``: m*log(eps) + (K - m)*log(1 - eps), m = number of mislabelled scenes;
* no concept of Ω with a non-zero likelihood ("empty"), with policy
  ``zero``: every predictive score is 0, posterior entropy NaN;
  ``prior``: the prior predictive and the prior entropy;
  ``noisy``: the posterior under the noisy likelihood instead;
* predictive p(y=1|u) = sum over concepts (ascending id) of p(h|D) * h(u), clipped at 1;
* CBA on the query (positive iff p > 0.5), AP on the test bank with
  ``sklearn.metrics.average_precision_score`` against the true concept's test-bank labels,
  predictive entropy = mean binary entropy (nats) of the query predictive.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp
from sklearn.metrics import average_precision_score


@dataclass
class RefSpace:
    """What the reference needs of a space, unpacked.

    S:         bool (H, N) signatures on the scene bank (row h = ``space.signature(h)``).
    lengths:   (H,) program lengths.
    log_pcfg:  (H,) PCFG log-probabilities.
    test_ids:  (T,) scene-bank ids of the test-bank scenes.
    """

    S: np.ndarray
    lengths: np.ndarray
    log_pcfg: np.ndarray
    test_ids: np.ndarray

    @classmethod
    def from_space(cls, space) -> "RefSpace":
        S = np.stack([np.asarray(space.signature(i), bool) for i in range(space.n_concepts)])
        return cls(S, np.asarray(space.lengths, np.float64).copy(), np.asarray(space.log_pcfg, np.float64).copy(),
                   np.asarray(space.test_bank.scene_ids, np.int64).copy())

    @property
    def n_concepts(self) -> int:
        return self.S.shape[0]

    @property
    def n_scenes(self) -> int:
        return self.S.shape[1]

    def extension_size(self, h: int) -> int:
        return int(self.S[h].sum())

    def test_labels(self, h: int) -> np.ndarray:
        """bool (T,): concept h on the test-bank scenes."""
        return self.S[h, self.test_ids]


# ----------------------------------------------------------------------------- prior
def log_prior(ref: RefSpace, omega, kind: str, beta: float) -> dict:
    """{concept id: normalised log prior} over Ω."""
    omega = sorted(int(h) for h in omega)
    raw = []
    for h in omega:
        if kind == "length":
            raw.append(-beta * ref.lengths[h])
        elif kind == "pcfg":
            raw.append(ref.log_pcfg[h])
        elif kind == "uniform":
            raw.append(0.0)
        else:
            raise ValueError(kind)
    raw = np.array(raw, np.float64)
    z = logsumexp(raw)
    return {h: float(raw[i] - z) for i, h in enumerate(omega)}


# ------------------------------------------------------------------------ likelihood
def n_mistakes(ref: RefSpace, h: int, scenes, labels) -> int:
    m = 0
    for s, y in zip(scenes, labels):
        if bool(ref.S[h, s]) != bool(y):
            m += 1
    return m


def log_likelihood(ref: RefSpace, h: int, scenes, labels, likelihood: str, epsilon: float, hard: bool,
                   n_pos_slots: int) -> float:
    """log p(support labels | h); -inf for zero."""
    k = len(scenes)
    m = n_mistakes(ref, h, scenes, labels)
    if likelihood == "noisy":
        return m * math.log(epsilon) + (k - m) * math.log(1.0 - epsilon)
    if m > 0:
        return -math.inf
    if likelihood == "consistent":
        return 0.0
    if likelihood == "size":
        size = ref.extension_size(h)
        ll = -n_pos_slots * math.log(size)
        if hard:
            ll -= (k - n_pos_slots) * math.log(ref.n_scenes - size)
        return ll
    raise ValueError(likelihood)


# ------------------------------------------------------------------------- posterior
def posterior(ref: RefSpace, omega, scenes, labels, *, prior="length", beta=0.2, likelihood="size",
              epsilon=0.05, hard=True, n_pos_slots=None):
    """(ids ascending, probabilities, empty) of the posterior over Ω for one support set.

    ``empty``: no concept of Ω has a non-zero likelihood; the returned posterior is then
    the one of the noisy likelihood (the ``noisy`` policy's fallback) -- callers decide.
    """
    if n_pos_slots is None:
        n_pos_slots = int(np.sum(labels))
    lp = log_prior(ref, omega, prior, beta)
    ids = sorted(lp)
    logw = np.array([lp[h] + log_likelihood(ref, h, scenes, labels, likelihood, epsilon, hard, n_pos_slots)
                     for h in ids])
    empty = not np.isfinite(logw).any()
    if empty:
        logw = np.array([lp[h] + log_likelihood(ref, h, scenes, labels, "noisy", epsilon, hard, n_pos_slots)
                         for h in ids])
    probs = np.exp(logw - logsumexp(logw))
    return np.array(ids, np.int64), probs, empty


def entropy(probs) -> float:
    """Entropy (nats) of a distribution; 0·log 0 = 0."""
    return float(-sum(p * math.log(p) for p in probs if p > 0))


def predictive(ref: RefSpace, ids, probs, scene_ids) -> np.ndarray:
    """p(y=1|u) = Σ_h p(h)·h(u) over concepts in ascending id order, clipped at 1."""
    scene_ids = np.asarray(scene_ids, np.int64)
    out = np.zeros(len(scene_ids))
    for h, p in sorted(zip(ids.tolist(), probs.tolist())):
        out = out + p * ref.S[h, scene_ids]
    return np.minimum(out, 1.0)


# --------------------------------------------------------------------------- metrics
def class_balanced_accuracy(probs, labels) -> float:
    pred = np.asarray(probs) > 0.5
    labels = np.asarray(labels).astype(bool)
    accs = []
    for cls in (True, False):
        sel = labels == cls
        if sel.any():
            accs.append(np.mean(pred[sel] == cls))
    return float(np.mean(accs)) if accs else math.nan


def average_precision(scores, labels) -> float:
    labels = np.asarray(labels).astype(int)
    if labels.sum() == 0:
        return math.nan
    return float(average_precision_score(labels, np.asarray(scores, np.float64)))


def binary_entropy(p: float) -> float:
    if p <= 0.0 or p >= 1.0:
        return 0.0
    return -(p * math.log(p) + (1 - p) * math.log(1 - p))


# --------------------------------------------------------------------------- episode
def evaluate_episode(ref: RefSpace, omega, support, support_labels, query, query_labels, concept, *,
                     prior="length", beta=0.2, likelihood="size", epsilon=0.05, weak_empty="zero",
                     hard=True, n_pos_slots=5) -> dict:
    """Every output of ``Oracle.evaluate`` for one episode (plus the posterior itself)."""
    ids, probs, empty = posterior(ref, omega, support, support_labels, prior=prior, beta=beta,
                                  likelihood=likelihood, epsilon=epsilon, hard=hard, n_pos_slots=n_pos_slots)
    truth = ref.test_labels(int(concept))
    if empty and weak_empty == "zero":
        q = np.zeros(len(query))
        t = np.zeros(len(ref.test_ids))
        post_ent = math.nan
        ids, probs = np.zeros(0, np.int64), np.zeros(0)
    else:
        if empty and weak_empty == "prior":
            lp = log_prior(ref, omega, prior, beta)
            ids = np.array(sorted(lp), np.int64)
            probs = np.exp(np.array([lp[h] for h in ids.tolist()]))
        q = predictive(ref, ids, probs, query)
        t = predictive(ref, ids, probs, ref.test_ids)
        post_ent = entropy(probs)
    return {
        "ap": average_precision(t, truth),
        "cba": class_balanced_accuracy(q, query_labels),
        "posterior_entropy": post_ent,
        "predictive_entropy": float(np.mean([binary_entropy(p) for p in q])),
        "empty": bool(empty),
        "query_pred": q,
        "test_pred": t,
        "n_candidates": int(np.count_nonzero(probs > 0)) if not empty or weak_empty == "noisy" else 0,
        "posterior": (ids, probs),
        "ties_robust": ties_robust(ref, ids, probs, ref.test_ids, t),
    }


def evaluate_episodes(ref: RefSpace, omega, episodes, **settings) -> dict:
    """``evaluate_episode`` over a batch; ``hard``/``n_pos_slots`` from ``episodes.meta``."""
    hard = episodes.meta.get("negatives", "hard") == "hard"
    n_pos_slots = int(episodes.meta.get("n_positive", 5))
    rows = [evaluate_episode(ref, omega, episodes.support_scenes[e], episodes.support_labels[e],
                             episodes.query_scenes[e], episodes.query_labels[e], episodes.concept[e],
                             hard=hard, n_pos_slots=n_pos_slots, **settings) for e in range(len(episodes))]
    out = {k: np.array([r[k] for r in rows]) for k in ("ap", "cba", "posterior_entropy", "predictive_entropy",
                                                      "empty", "n_candidates")}
    out["query_pred"] = np.stack([r["query_pred"] for r in rows])
    out["test_pred"] = np.stack([r["test_pred"] for r in rows])
    out["ties_robust"] = np.array([r["ties_robust"] for r in rows])
    out["posterior"] = [r["posterior"] for r in rows]
    return out


# ------------------------------------------------------------------ conditioning checks
def near_tie_clusters(scores, rel: float = 1e-12, abs_tol: float = 0.0) -> list:
    """The distinct values of ``scores``, largest first, grouped into clusters of values that a
    rounding-level perturbation could reorder or merge: consecutive values closer than
    ``rel`` (relative) plus ``2 * abs_tol``; values <= ``abs_tol`` join the cluster of 0.
    Returns a list of lists of values."""
    v = np.unique(np.asarray(scores, np.float64))[::-1]
    clusters = []
    for x in v:
        if clusters:
            prev = clusters[-1][-1]
            if prev - x <= rel * abs(prev) + 2 * abs_tol or (abs(x) <= abs_tol and abs(prev) <= abs_tol):
                clusters[-1].append(x)
                continue
        clusters.append([x])
    return clusters


def ties_robust(ref: RefSpace, ids, probs, scene_ids, scores) -> bool:
    """True when every group of equal non-zero ``scores`` is made of scenes covered by the very
    same concepts (so any implementation sums the same terms in the same order and keeps the
    tie).  Equal sums of *different* concepts (e.g. under a uniform prior) may come out an ulp
    apart elsewhere."""
    scores = np.asarray(scores)
    keep = np.asarray(probs) > 0
    cover = ref.S[np.asarray(ids, np.int64)[keep]][:, np.asarray(scene_ids, np.int64)]  # (n, len(scenes))
    first = {}
    for j, v in enumerate(scores.tolist()):
        if v == 0:
            continue
        key = cover[:, j].tobytes()
        if first.setdefault(v, key) != key:
            return False
    return True


def ap_well_conditioned(scores, rel: float = 1e-12, abs_tol: float = 0.0) -> bool:
    """True when no two distinct scores are near-tied (see :func:`near_tie_clusters`).

    AP treats equal scores as one threshold, so mathematically tied scores that come out an
    ulp apart (sums of the same probabilities in another order, or probabilities an ulp
    apart) change it by a finite amount; ``abs_tol`` covers posteriors whose negligible
    concepts (below exp(-50) of the best) the kernels prune."""
    return all(len(c) == 1 for c in near_tie_clusters(scores, rel, abs_tol))


def average_precision_bounds(scores, labels, rel: float = 1e-12, abs_tol: float = 0.0,
                             split_ties: bool = False) -> tuple:
    """(lowest, highest) AP over every way of ordering or tying the items of each near-tie
    cluster (sklearn's definition).  Single-valued clusters are exact ties, unless
    ``split_ties`` (then any non-zero tie group may be split too: tied sums of different
    concepts may be an ulp apart in another implementation); the group of exact zeros (the
    last threshold) always stays one tie.

    Within a cluster with ``neg`` negatives and ``tp`` positives, after ``T0`` positives
    among ``S0`` items: the lowest total is negatives first, then positives one at a time,
    Σ_i (T0+i)/(S0+neg+i); the highest is every positive in one group before the negatives,
    tp·(T0+tp)/(S0+tp)."""
    scores = np.asarray(scores, np.float64)
    labels = np.asarray(labels).astype(bool)
    n_pos = int(labels.sum())
    if n_pos == 0:
        return math.nan, math.nan
    clusters = near_tie_clusters(scores, rel, abs_tol)
    cluster_of = {v: c for c, values in enumerate(clusters) for v in values}
    which = np.array([cluster_of[v] for v in scores.tolist()], np.int64)
    n_items = np.bincount(which, minlength=len(clusters))
    n_true = np.bincount(which, weights=labels, minlength=len(clusters)).astype(np.int64)
    lo = hi = 0.0
    t0 = s0 = 0
    for c, cluster in enumerate(clusters):
        tp = int(n_true[c])
        neg = int(n_items[c]) - tp
        exact = len(cluster) == 1 and (not split_ties or cluster[0] == 0 or tp + neg == 1)
        if exact:
            value = tp * (t0 + tp) / (s0 + tp + neg) if tp else 0.0
            lo += value
            hi += value
        elif tp:
            lo += sum((t0 + i) / (s0 + neg + i) for i in range(1, tp + 1))
            hi += tp * (t0 + tp) / (s0 + tp)
        t0 += tp
        s0 += tp + neg
    return lo / n_pos, hi / n_pos


def cba_well_conditioned(query_pred, tol: float = 1e-9) -> bool:
    """False when some query prediction is within ``tol`` of the 0.5 threshold."""
    return not bool(np.any(np.abs(np.asarray(query_pred) - 0.5) <= tol))
