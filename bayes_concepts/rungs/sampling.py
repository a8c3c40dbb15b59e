"""The sampling rungs: a learner that considers only ``n`` hypotheses per episode.

Definition (``sampling``; ``sampling_learned`` is the same with the learned prior in place of
the oracles' prior, in the draws and in the posterior):

* for each episode, ``n`` concept ids are drawn i.i.d. from the prior over the strong
  oracle's concepts (:func:`~bayes_concepts.rungs.strong_concepts`): ``settings.prior`` read
  per concept, or the unigram learned prior of
  :func:`~bayes_concepts.rungs.learned_prior.learned_log_weights` with concentration ``alpha``;
* the learner's hypotheses are the distinct ids drawn;
* it does exact Bayesian inference over them: posterior ∝ prior × likelihood, with the
  oracles' likelihood tables (``settings.likelihood``; hard or easy negatives from the
  episodes' ``meta``, as :meth:`~bayes_concepts.oracles.Oracle.evaluate` reads them), the
  prior renormalised over the drawn set; its predictive on the query set and the test bank is
  the normalised weighted vote Σ_h p(h | D)·h(u);
* when no drawn hypothesis fits the support, the settings' weak-empty policy applies as it
  does for an oracle over the drawn set: ``zero`` (every score 0, ``empty`` True),
  ``prior`` (the prior predictive over the drawn set) or a policy that conditions again with
  another likelihood (``noisy``).  A policy that returns a fixed posterior of its own is
  refused (it could not be evaluated over a different set per episode).

So an episode's numbers are those of ``Oracle(space, drawn_ids, settings)`` fitted on its
support and scored on it (AP exact: ``ap_bound`` is 0), and with every concept drawn the
learner is the strong oracle it samples from.

Random streams: the draws of episode ``i`` (its global index: ``i`` plus the start of
``meta["part"]`` when the episodes are a part of a cell) come from one splitmix64 stream keyed
by (``seed``, the split's name ``meta["split"]`` (else the learner's split's), ``meta["side"]``,
``meta["negatives"]``) and ``i``, so the same seed gives the same numbers however the cell's
episodes are cut into batches or parts, and on any number of threads.  ``fit`` draws from a
stream of its own (keyed by ``seed``), advanced by every call.

>>> learner = rung_learner("sampling", space, split, OracleSettings(), n=100)   # doctest: +SKIP
>>> learner.evaluate(episodes)["ap"]                                           # doctest: +SKIP
"""
from __future__ import annotations

import hashlib
import json

import numpy as np

from ..bits import read_only
from ..engine.rows import RowFile
from ..oracles import Oracle
from ..oracles.empty_policies import empty_policies, prior_policy, zero_policy
from ..oracles.likelihoods import likelihood_tables
from ..oracles.kernels import no_outside
from ..oracles.oracle import EVALUATE_SLICE
from ..oracles.priors import log_prior, normalised_log_weights
from . import sampling_kernels as SK
from .rung import (Rung, RungError, alpha_problem, budget_problem, checked_knobs, first_episode_index, rungs,
                   seed_problem, strong_concepts, whole_number)

__all__ = ["SamplingLearner", "SAMPLING_DEFINITION", "SAMPLING_LEARNED_DEFINITION", "MAX_DRAWS"]

#: the largest budget ``n`` taken (draws per episode; each costs a binary search)
MAX_DRAWS = 10**12

SAMPLING_DEFINITION = (
    "for each episode, draws n concept ids i.i.d. from the oracles' prior over the strong oracle's concepts and "
    "knows only the distinct ids drawn; exact Bayesian inference over them: posterior ∝ prior × likelihood (the "
    "oracles' likelihood) renormalised over the drawn set, predictive the posterior-weighted vote Σ_h p(h|D)·h(u); "
    "when no drawn concept fits the support, the oracles' weak-empty policy over the drawn set")

SAMPLING_LEARNED_DEFINITION = (
    "as sampling, with the learned prior (learned_prior: unigram rule or token-tree probabilities from the "
    "training concepts, concentration "
    "alpha) in place of the oracles' prior, both for the draws and in the posterior: for each episode, n concept "
    "ids i.i.d. from the learned prior over the strong oracle's concepts, exact Bayesian inference over the distinct "
    "ids drawn, predictive the posterior-weighted vote")


def _key_words(*parts) -> list:
    """Four 32-bit words of the SHA-256 of ``parts`` as JSON (a stable hash of names)."""
    digest = hashlib.sha256(json.dumps([str(p) for p in parts]).encode()).digest()
    return np.frombuffer(digest[:16], "<u4").astype(np.int64).tolist()


def stream_key(seed: int, *parts) -> np.uint64:
    """The 64-bit key of the stream named by ``seed`` (int >= 0) and ``parts`` (strings)."""
    return np.random.SeedSequence([int(seed), *_key_words(*parts)]).generate_state(1, np.uint64)[0]


class SamplingLearner:
    """A learner that considers only ``n`` hypotheses drawn from a prior for each episode (see
    :mod:`bayes_concepts.rungs.sampling` for the definition and the random streams).

    Parameters
    ----------
    space : a concept space
    split : the split whose strong oracle's concepts (:func:`~bayes_concepts.rungs.strong_concepts`)
        are drawn from; its ``name`` keys the draws when episodes do not name their split.
    settings : OracleSettings
        Prior (unless ``log_weights``), likelihood and weak-empty policy.
    n : int >= 1
        Draws per episode (the budget N; the hypotheses are the distinct ids drawn).
    seed : int >= 0
        Seed of the draws.
    log_weights : float64 (n_concepts,) or None
        Unnormalised log prior weights by concept id (only the strong oracle's are read;
        ``-inf`` excludes a concept), in place of ``settings.prior`` (the learned prior).
    name : str
        The learner's name in results and messages.
    """

    def __init__(self, space, split, settings, n: int = 1000, seed: int = 0, log_weights=None,
                 name: str = "sampling"):
        self.space, self.settings, self.name = space, settings, name
        self.n, self.seed = int(n), int(seed)
        self.split_name = str(getattr(split, "name", None) or "")
        self.concepts = strong_concepts(split)
        if len(self.concepts) == 0:
            raise RungError(f"rung {name!r}: the split has no concepts to draw hypotheses from")
        try:
            if log_weights is None:
                lw = log_prior(space, self.concepts, settings)
            else:
                lw = normalised_log_weights(log_weights, self.concepts, space.n_concepts, f"rung {name!r}")
        except ValueError as exc:
            raise RungError(str(exc).splitlines()[0]) from None
        #: float64 (H,): log prior of the strong oracle's concepts (normalised over them)
        self.log_w = np.ascontiguousarray(lw, np.float64)
        #: float64 (n_concepts,): the same by concept id, -inf elsewhere (what ``fit``'s oracles get)
        self.log_weights = np.full(space.n_concepts, -np.inf)
        self.log_weights[self.concepts] = self.log_w
        #: float64 (H,): cumulative prior of the strong oracle's concepts (the draws' table)
        self.cum = np.cumsum(np.exp(self.log_w))
        #: int64 (GUIDE_BUCKETS·H,): the table's guide (where the search for a draw starts)
        self.guide = SK.guide_table(self.cum)
        self.last = int(np.flatnonzero(self.log_w > -np.inf)[-1])
        #: positions of ``cum`` a draw can select: an episode's draws stop once all of them are drawn
        self.all_drawn = SK.drawable_positions(self.cum, self.last)
        self.policy, self.refit = self._empty_policy()
        self._fit_state = np.array([stream_key(self.seed, "fit", self.split_name)], np.uint64)
        self._oracle = None

    def _empty_policy(self) -> tuple:
        """(kind, refit likelihood or None) of the settings' weak-empty policy."""
        name = self.settings.weak_empty
        fn = empty_policies.get(name)
        if fn is zero_policy:
            return SK.ZERO, None
        if fn is prior_policy:
            return SK.PRIOR, None
        fallback = fn(Oracle(self.space, self.concepts, self.settings, self.name, log_weights=self.log_weights))
        if fallback.likelihood is None:
            raise RungError(f"rung {self.name!r}: weak-empty policy {name!r} gives a fixed posterior of its own, "
                            "which cannot follow a drawn set per episode (use zero, prior or a refitting policy)")
        return SK.REFIT, fallback.likelihood

    # ------------------------------------------------------------- streams
    def episode_key(self, meta: dict) -> np.uint64:
        """The 64-bit key of a cell's streams: (seed, split, side, negatives) from episodes' ``meta``."""
        return stream_key(self.seed, "episodes", meta.get("split") or self.split_name, meta.get("side") or "",
                          meta.get("negatives", "hard"))

    def draws(self, episodes) -> list:
        """Each episode's hypotheses: the distinct concept ids drawn (int64 (m_e,), ascending),
        exactly those :meth:`evaluate` draws."""
        e = len(episodes)
        width = min(self.n, len(self.concepts))
        ptr, ids = np.zeros(e + 1, np.int64), np.empty(max(e * width, 1), np.int64)
        SK.episode_draws(self.episode_key(episodes.meta), first_episode_index(episodes.meta), e, self.cum, self.guide,
                         self.last, self.n, self.concepts, ptr, ids, self.all_drawn)
        return [ids[ptr[i]: ptr[i + 1]].copy() for i in range(e)]

    # ------------------------------------------------------------- episodes
    def evaluate(self, episodes, hard_support: bool | None = None) -> dict:
        """Score a batch of episodes (:class:`~bayes_concepts.episodes.Episodes`).

        Returns float/bool/int arrays (E,): ``ap`` (test bank, exact), ``ap_bound`` (0),
        ``cba`` (query), ``posterior_entropy``, ``predictive_entropy`` (nats; posterior
        entropy NaN where nothing is left to weigh), ``empty`` (no drawn hypothesis fits the
        support), ``n_candidates`` (drawn hypotheses that fit; after a refit, those it kept),
        ``n_hypotheses`` (distinct ids drawn); and ``query_pred`` float64 (E, Kq).
        ``hard_support``: as :meth:`Oracle.evaluate` (None: from ``meta["negatives"]``)."""
        space, st = self.space, self.settings
        meta = episodes.meta
        if hard_support is None:
            hard_support = meta.get("negatives", "hard") == "hard"
        n_drawn = int(meta.get("n_positive", 5))
        k = episodes.support_scenes.shape[1]
        e = len(episodes)
        counts = np.asarray(space.counts, np.int64)
        first, second, consistent_only = likelihood_tables(st.likelihood, counts, space.n_scenes, n_drawn, k,
                                                           bool(hard_support), st)
        if self.refit is not None:
            refit = likelihood_tables(self.refit, counts, space.n_scenes, n_drawn, k, bool(hard_support), st)
        else:
            refit = (np.zeros((1, 1, 1)), np.zeros((1, 1, 1)), True)
        out = {key: np.empty(e) for key in ("ap", "cba", "posterior_entropy", "predictive_entropy")}
        out["ap_bound"] = np.zeros(e)
        out["empty"] = np.zeros(e, bool)
        out["n_candidates"] = np.zeros(e, np.int64)
        out["n_hypotheses"] = np.zeros(e, np.int64)
        out["query_pred"] = np.zeros(episodes.query_scenes.shape)
        key, start = self.episode_key(meta), first_episode_index(meta)
        support = np.ascontiguousarray(episodes.support_scenes, np.int64)
        support_labels = np.ascontiguousarray(episodes.support_labels)
        query = np.ascontiguousarray(episodes.query_scenes, np.int64)
        query_labels = np.ascontiguousarray(episodes.query_labels)
        concept = np.asarray(episodes.concept, np.int64)
        scene_concepts = space.scene_concepts()
        test = (read_only(space.test_bank.signatures), space.test_bank.n_scenes,
                np.asarray(space.synonym_classes, np.int64), len(space.class_representatives()),
                space.class_representatives(),
                *space.index.test_domain_rows())
        scene_outside = space.index.scene_outside()  # question domains (None: every concept everywhere)
        # as the oracles read it (Oracle.evaluate): an index on disk through its mapping, or the
        # rows of each slice's scenes read into memory (engine.rows.RowFile.through_mapping)
        on_disk = isinstance(scene_concepts, RowFile) and not scene_concepts.through_mapping()
        if isinstance(scene_concepts, RowFile) and not on_disk:
            scene_concepts = scene_concepts.mapped()
        step = EVALUATE_SLICE if on_disk else max(e, 1)
        for lo in range(0, e, step):
            sl = slice(lo, min(lo + step, e))
            rows, sup, qry = scene_concepts, support[sl], query[sl]
            outside = no_outside() if scene_outside is None else scene_outside
            if on_disk:  # the slice's scenes' rows in memory, scenes renumbered into them
                scenes = np.unique(np.concatenate([sup.ravel(), qry.ravel()]))
                rows = scene_concepts[scenes]
                outside = no_outside() if scene_outside is None else np.ascontiguousarray(scene_outside[scenes])
                sup, qry = np.searchsorted(scenes, sup), np.searchsorted(scenes, qry)
            SK.evaluate_sampled(key, start + lo, self.n, self.cum, self.guide, self.last, self.log_w, self.concepts,
                                sup, support_labels[sl], qry, query_labels[sl], concept[sl], read_only(rows),
                                read_only(outside), first, second, consistent_only, self.policy, *refit, *test,
                                *(out[name][sl] for name in ("ap", "cba", "posterior_entropy", "predictive_entropy",
                                                             "empty", "n_candidates", "n_hypotheses",
                                                             "query_pred")), self.all_drawn)
        return out

    # ------------------------------------------------------ learner protocol
    def fit(self, scenes, labels, hard: bool = True, positives_drawn: int | None = None) -> "SamplingLearner":
        """Draw ``n`` hypotheses (from the learner's own ``fit`` stream) and condition on a
        support set: ``scenes`` (ids or dicts) with 0/1 ``labels``; ``hard`` and
        ``positives_drawn`` as :meth:`Oracle.fit`.  Sets ``drawn_`` (int64 (m,), the distinct
        ids drawn) and ``empty_``."""
        self.drawn_ = SK.draw_ids(self._fit_state, self.cum, self.guide, self.last, self.n, self.concepts)
        self._oracle = Oracle(self.space, self.drawn_, self.settings, self.name, log_weights=self.log_weights)
        self._oracle.fit(scenes, labels, hard=hard, positives_drawn=positives_drawn)
        self.empty_ = self._oracle.empty_
        return self

    def posterior(self):
        """(concept ids, probabilities) of the last fit, most probable first."""
        if self._oracle is None:
            raise RuntimeError("call fit() first")
        return self._oracle.posterior()

    def predict_proba(self, scenes) -> np.ndarray:
        """p(y = 1 | u, support) for each scene (ids or dicts): float64 (n,)."""
        if self._oracle is None:
            raise RuntimeError("call fit() first")
        return self._oracle.predict_proba(scenes)

    def __repr__(self):
        return (f"SamplingLearner({self.name!r}, n={self.n:,}, seed={self.seed}, "
                f"{len(self.concepts):,} concepts to draw from, {self.settings})")


# ------------------------------------------------------------------ knobs and rungs
def check_knob(name: str, value) -> str | None:
    """Why a sampling rung refuses ``value`` for knob ``name`` (one line), or None."""
    if name == "n":
        return budget_problem(value, MAX_DRAWS, "draws")
    if name == "seed":
        return seed_problem(value)
    if name == "alpha":
        return alpha_problem(value)
    return None


def _build_sampling(space, split, settings, n=1000, seed=0):
    checked_knobs("sampling", {"n": n, "seed": seed}, check_knob)
    return SamplingLearner(space, split, settings, whole_number(n), whole_number(seed), name="sampling")


def _build_sampling_learned(space, split, settings, n=1000, seed=0, alpha=1.0):
    from .learned_prior import learned_log_weights
    checked_knobs("sampling_learned", {"n": n, "seed": seed, "alpha": alpha}, check_knob)
    weights = learned_log_weights(space, split, float(alpha), variant="unigram")
    return SamplingLearner(space, split, settings, whole_number(n), whole_number(seed), log_weights=weights,
                           name="sampling_learned")


def _learned_applies(space) -> str | None:
    """What the learned prior needs of a space (the ``learned_prior`` rung's answer)."""
    try:
        rung = rungs.get("learned_prior")
    except ValueError:
        return None
    return rung.applies(space)


_BUDGET = (1000, "hypotheses drawn per episode (the budget N; they are the distinct ids drawn)")
_SEED = (0, "seed of the draws (each episode's from the seed, its cell and its index)")

rungs.register("sampling", Rung(
    "sampling", "a learner that considers only n hypotheses drawn from the oracles' prior per episode",
    SAMPLING_DEFINITION, _build_sampling, knobs={"n": _BUDGET, "seed": _SEED}, check_knob=check_knob, position=40, default=True,
    columns=("sampling[n=100]", "sampling[n=1000]", "sampling[n=10000]")))

rungs.register("sampling_learned", Rung(
    "sampling_learned", "a learner that considers only n hypotheses drawn from the learned prior per episode",
    SAMPLING_LEARNED_DEFINITION, _build_sampling_learned,
    knobs={"n": _BUDGET, "seed": _SEED, "alpha": (1.0, "the learned prior's concentration (> 0)")},
    applies=_learned_applies, check_knob=check_knob, position=50))
