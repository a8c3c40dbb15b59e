"""What an ideal observer needs to know about a batch of episodes, computed once.

The ideal observer is the Bayesian oracle (:mod:`bayes_concepts.oracles`) with the ``length``
prior and the ``noisy`` likelihood:

    w(h | D) ∝ exp(-β·l(h)) · ε^m(h) · (1 - ε)^(K - m(h)),
    p(y = 1 | u, D) = Σ_h w(h | D)·h(u) / Σ_h w(h | D),

where K is the size of the support set and m(h) the number of support scenes that h
labels differently from the support labels.  β and ε enter only through l(h) and m(h),
so for a fixed batch of episodes everything that depends on the scenes (the per-episode
mistakes m(h) of every concept and its truth values h(u) on the query scenes) is
computed **once** with numpy (:func:`prepare_observer_data`); a model fitting β and ε
then only re-evaluates the cheap, differentiable :func:`oracle_predictive` in torch.
(The prior's normaliser Σ_h exp(-β·l(h)) is the same for every concept and cancels.)

Representation: per episode a set of *cells* c, each with a length l_c, a number of
mistakes m_c, a multiplicity n_c (how many concepts it stands for) and, per query
scene, the fraction f_c(u) of those concepts true on u.  Then

    log w_c = log n_c - β·l_c + m_c·log ε + (K - m_c)·log(1 - ε),
    p(y = 1 | u, D) = Σ_c softmax(log w)_c · f_c(u).

* ``group=True`` (default): one cell per (length, mistakes) pair.  Concepts with equal
  l and m have equal posterior weight, so summing them is **exact** (no approximation),
  and the tensors no longer grow with the number of concepts: (E, C, Q) with C the
  largest number of non-empty cells of an episode, ≤ (#distinct lengths) × (K + 1)
  (each episode's cells come first, the rest is padding with n_c = 0).
* ``group=False``: one cell per concept (n_c = 1, f_c(u) = h(u) ∈ {0, 1}): the literal
  (l(h), m(h), h(u)) arrays; (E, H, Q) floats, which is large for CURI-size spaces.

Pruning (``max_extra_mistakes=d``, default None = keep every concept): per episode, drop
the concepts with m(h) > m_min + d, m_min the fewest mistakes any concept of the set
makes.  Bound: let h* be the shortest concept with m_min mistakes (it is kept) and
ρ = ε/(1 - ε) < 1.  A dropped concept has weight, relative to h*,

    w(h)/w(h*) = exp(-β·(l(h) - l*)) · ρ^(m(h) - m_min)
               ≤ max(1, exp(β_max·(l* - l(h)))) · ρ_max^(m(h) - m_min),     l* = l(h*),

for every β ≤ β_max and ε ≤ ε_max, and with W_dropped / W_kept ≤ δ := Σ_dropped w(h)/w(h*)
every predictive probability changes by at most δ (|A_k/W_k - (A_k + A_d)/(W_k + W_d)|
≤ W_d/(W_k + W_d)).  :meth:`ObserverData.pruning_bound` evaluates δ per episode from the
histogram of the dropped concepts, which is kept for this purpose.  As ε → 0.5, ρ → 1 and
no pruning is safe: only prune when the fitted ε stays well below 0.5 (the fit records the
bound at the largest posterior draws of β and ε).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..scenes.bank import unpack_bits

DTYPE = torch.float64


@dataclass
class ObserverData:
    """Per-episode sufficient statistics of the ideal observer (see the module docstring).

    Torch tensors (float64), E episodes, C cells, Q query scenes:
      length (E, C), mistakes (E, C), log_count (E, C) (``-inf`` for empty / padding cells),
      frac (E, C, Q) fraction of the cell's concepts true on each query scene,
      n_support (E, 1) support size K (it cancels from the posterior; kept for reference).
    numpy bookkeeping:
      concepts (H,) the concept ids used; min_mistakes (E,); n_kept (E,) concepts kept;
      dropped (E, L, K + 1) histogram of the pruned concepts over (length index, mistakes);
      length_values (L,) the distinct lengths; best_length (E,) l(h*) of the shortest concept
      with the fewest mistakes.
    """

    length: torch.Tensor
    mistakes: torch.Tensor
    log_count: torch.Tensor
    frac: torch.Tensor
    n_support: torch.Tensor
    concepts: np.ndarray
    min_mistakes: np.ndarray
    n_kept: np.ndarray
    dropped: np.ndarray
    length_values: np.ndarray
    best_length: np.ndarray
    group: bool
    max_extra_mistakes: int | None

    @property
    def n_episodes(self) -> int:
        return int(self.frac.shape[0])

    @property
    def n_cells(self) -> int:
        return int(self.frac.shape[1])

    @property
    def n_query(self) -> int:
        return int(self.frac.shape[2])

    def pruning_bound(self, beta_max: float, epsilon_max: float) -> np.ndarray:
        """(E,) upper bound δ on |p_pruned(y=1|u) - p_exact(y=1|u)| for every query scene,
        valid for all 0 ≤ β ≤ beta_max and 0 < ε ≤ epsilon_max (< 0.5).  Zeros without pruning."""
        if not 0.0 < epsilon_max < 0.5:
            raise ValueError(f"epsilon_max must be in (0, 0.5), got {epsilon_max}")
        if not self.dropped.any():
            return np.zeros(self.n_episodes)
        rho = epsilon_max / (1.0 - epsilon_max)
        k = self.dropped.shape[2]
        extra = np.arange(k)[None, :] - self.min_mistakes[:, None]            # (E, K+1)
        lik = np.where(extra > 0, rho ** np.maximum(extra, 0), 0.0)           # dropped ones have extra > 0
        gap = self.best_length[:, None] - self.length_values[None, :]         # (E, L)
        pri = np.maximum(1.0, np.exp(float(beta_max) * gap))
        return np.einsum("elm,el,em->e", self.dropped.astype(np.float64), pri, lik)


def concept_bits(space, scene_ids, concepts=None) -> np.ndarray:
    """bool (*scene_ids.shape, H): truth value of each concept (default all) on each scene id."""
    scene_ids = np.asarray(scene_ids, np.int64)
    rows = space.scene_concepts()[scene_ids.ravel()]
    bits = unpack_bits(rows, space.n_concepts)
    if concepts is not None:
        bits = bits[:, np.asarray(concepts, np.int64)]
    return bits.reshape(*scene_ids.shape, bits.shape[-1])


def prepare_observer_data(space, episodes, concepts=None, *, group: bool = True,
                          max_extra_mistakes: int | None = None, chunk: int = 64) -> ObserverData:
    """Compute the ideal observer's per-episode arrays once (numpy), return them as torch tensors.

    space: a HypothesisSpace; episodes: an :class:`~bayes_concepts.episodes.Episodes` batch
    (its support scenes/labels and query scenes are used, not its true concepts);
    concepts: the observer's concept set (ids; default every concept of the space, i.e. the
    strong oracle of Instance IID); group: merge concepts with equal (length, mistakes) into
    one cell (exact; default); max_extra_mistakes: prune concepts with more than
    ``m_min + max_extra_mistakes`` support mistakes (None: no pruning; see the module
    docstring for the bound); chunk: episodes unpacked at a time (memory ∝ chunk·K·H bits).
    """
    concepts = np.arange(space.n_concepts) if concepts is None else np.unique(np.asarray(concepts, np.int64))
    if len(concepts) == 0:
        raise ValueError("the concept set is empty")
    if max_extra_mistakes is not None and int(max_extra_mistakes) < 0:
        raise ValueError(f"max_extra_mistakes must be >= 0 or None, got {max_extra_mistakes}")
    support = np.asarray(episodes.support_scenes, np.int64)
    labels = np.asarray(episodes.support_labels).astype(bool)
    query = np.asarray(episodes.query_scenes, np.int64)
    n_ep, k = support.shape
    q = query.shape[1]
    if (support < 0).any() or (query < 0).any():
        raise ValueError("episodes contain unfilled scene slots (-1)")
    lengths = np.asarray(space.lengths, np.int64)[concepts]
    length_values, len_idx = np.unique(lengths, return_inverse=True)
    n_len = len(length_values)
    r = k + 1 if max_extra_mistakes is None else min(int(max_extra_mistakes), k) + 1   # slack values 0..r-1

    min_mistakes = np.empty(n_ep, np.int64)
    best_length = np.empty(n_ep, np.int64)
    n_kept = np.empty(n_ep, np.int64)
    dropped = np.zeros((n_ep, n_len, k + 1), np.int64)
    if group:
        count = np.zeros((n_ep, n_len * r))
        hits = np.zeros((n_ep, n_len * r, q))
    else:
        per_episode = []
    for start in range(0, n_ep, chunk):
        sl = slice(start, min(start + chunk, n_ep))
        ne = sl.stop - sl.start
        sup_bits = concept_bits(space, support[sl], concepts)                # (ne, K, H)
        m = (sup_bits != labels[sl][:, :, None]).sum(axis=1)                 # (ne, H)
        del sup_bits
        mmin = m.min(axis=1)
        min_mistakes[sl] = mmin
        best_length[sl] = np.where(m == mmin[:, None], lengths[None, :], np.iinfo(np.int64).max).min(axis=1)
        slack = m - mmin[:, None]
        keep = slack < r
        n_kept[sl] = keep.sum(axis=1)
        e_local = np.broadcast_to(np.arange(ne)[:, None], m.shape)
        if (~keep).any():
            flat = (e_local * n_len + len_idx[None, :]) * (k + 1) + m
            dropped[sl] = np.bincount(flat[~keep], minlength=ne * n_len * (k + 1)).reshape(ne, n_len, k + 1)
        q_bits = concept_bits(space, query[sl], concepts).transpose(0, 2, 1)  # (ne, H, Q)
        if group:
            flat = (e_local * n_len + len_idx[None, :]) * r + slack
            fk = flat[keep]
            size = ne * n_len * r
            count[sl] = np.bincount(fk, minlength=size).reshape(ne, n_len * r)
            qk = q_bits[keep]                                                # (n_kept_total, Q)
            h = np.empty((size, q))
            for j in range(q):
                h[:, j] = np.bincount(fk, weights=qk[:, j], minlength=size)
            hits[sl] = h.reshape(ne, n_len * r, q)
        else:
            for i in range(ne):
                ids = np.flatnonzero(keep[i])
                per_episode.append((lengths[ids], m[i, ids], q_bits[i, ids]))

    if group:
        # compact: each episode's non-empty cells first, padded to the largest such number
        c = int((count > 0).sum(axis=1).max())
        cols = np.argsort(count == 0, axis=1, kind="stable")[:, :c]            # (E, C) cell ids
        count = np.take_along_axis(count, cols, axis=1)
        hits = np.take_along_axis(hits, cols[:, :, None], axis=1)
        full = count > 0
        length = np.where(full, length_values[cols // r], 0).astype(np.float64)
        mistakes = np.where(full, min_mistakes[:, None] + cols % r, 0).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(full[:, :, None], hits / count[:, :, None], 0.0)
            log_count = np.where(full, np.log(count), -np.inf)
    else:
        c = max(len(p[0]) for p in per_episode)
        length = np.zeros((n_ep, c))
        mistakes = np.zeros((n_ep, c))
        log_count = np.full((n_ep, c), -np.inf)
        frac = np.zeros((n_ep, c, q))
        for i, (ls, ms, qb) in enumerate(per_episode):
            n = len(ls)
            length[i, :n], mistakes[i, :n], log_count[i, :n], frac[i, :n] = ls, ms, 0.0, qb
    t = lambda a: torch.as_tensor(np.ascontiguousarray(a), dtype=DTYPE)  # noqa: E731
    return ObserverData(length=t(length), mistakes=t(mistakes), log_count=t(log_count), frac=t(frac),
                        n_support=torch.full((n_ep, 1), float(k), dtype=DTYPE), concepts=concepts,
                        min_mistakes=min_mistakes, n_kept=n_kept, dropped=dropped, length_values=length_values,
                        best_length=best_length, group=bool(group),
                        max_extra_mistakes=None if max_extra_mistakes is None else int(max_extra_mistakes))


def _as_param(x, like: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(x, dtype=like.dtype, device=like.device)


def log_posterior_cells(beta, epsilon, data: ObserverData) -> torch.Tensor:
    """Normalised log posterior weight of every cell: (..., E, C) for β, ε of shape (...).

    The support's likelihood ε^m (1 - ε)^(K - m) is written (1 - ε)^K · (ε / (1 - ε))^m; the
    factor (1 - ε)^K is the same for every concept of an episode and cancels."""
    beta = _as_param(beta, data.length)[..., None, None]
    eps = _as_param(epsilon, data.length)[..., None, None].clamp_min(1e-300)   # log ε finite: 0·log ε = 0
    logw = data.log_count - beta * data.length + (torch.log(eps) - torch.log1p(-eps)) * data.mistakes
    return torch.log_softmax(logw, dim=-1)


def oracle_predictive(beta, epsilon, data: ObserverData) -> torch.Tensor:
    """p(y = 1 | u, support) of the ideal observer for every query scene: (..., E, Q).

    Differentiable in ``beta`` (length-prior rate, ≥ 0) and ``epsilon`` (label-noise rate,
    in (0, 0.5)); either may be a tensor of shape (...) to evaluate several parameter
    values at once.  Equals ``Oracle(space, concepts, OracleSettings(prior="length",
    beta=beta, likelihood="noisy", epsilon=epsilon)).fit(support, labels).predict_proba(query)``
    (the Oracle additionally drops concepts with weight < e^-50 of the best one).
    """
    post = torch.exp(log_posterior_cells(beta, epsilon, data))
    return torch.einsum("...ec,ecq->...eq", post, data.frac)
