"""Oracle objects: the strong and the weak Bayesian oracle of a split.

An :class:`Oracle` is a Bayesian learner whose hypotheses are a set of concepts
of a space: the strong oracle of a split knows H_train ∪ H_test, the weak one only
H_train.  It implements the learner protocol (``fit`` on a support set,
``predict_proba`` on scenes) and scores whole batches of episodes with the numba
kernels of :mod:`.kernels`.

>>> strong, weak = strong_and_weak(space, split, OracleSettings())        # doctest: +SKIP
>>> weak.fit([12, 40, 7], [1, 1, 0]).predict_proba([3, 99])              # doctest: +SKIP
"""
from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass

import numba
import numpy as np

from ..bits import pack_bits, pop_lowest_bit, read_only
from ..engine.rows import RowFile
from . import kernels as K
from .empty_policies import empty_policies
from .likelihoods import likelihood_tables, likelihoods
from .priors import log_prior, normalised_log_weights, priors

#: Episodes whose scenes' rows are read into memory at a time when the space's per-scene
#: concept index is on disk (512 episodes of 50 scenes: ~64 MB at CURI's 20,000 concepts).
EVALUATE_SLICE = 512

#: The AP tolerance of likelihoods that are not consistent-only (``noisy``) unless one is given:
#: a gap's bootstrap interval over thousands of episodes is ~1e-3 wide or more, so 1e-4 per
#: episode (at most 1e-4 on a mean) is out of sight in every table.
DEFAULT_AP_TOLERANCE = 1e-4


@dataclass(frozen=True)
class OracleSettings:
    """How an oracle weighs its concepts.  Every choice is a name in a registry, so a
    registered extension is chosen the same way as a built-in.

    prior: a name in :data:`~bayes_concepts.oracles.priors` (``length``: w = exp(-beta·l),
    the paper's; ``pcfg``; ``uniform``); beta: the ``length`` prior's rate (per token, >= 0);
    likelihood: a name in :data:`~bayes_concepts.oracles.likelihoods` (``size``: strong
    sampling, the released code's; ``consistent``: the paper's deterministic one; ``noisy``:
    each label right with 1 - epsilon); epsilon: the label-noise rate, in (0, 0.5);
    weak_empty: a name in :data:`~bayes_concepts.oracles.empty_policies`, what an oracle does
    when no concept fits the support (``zero``: all scores 0, the released behaviour;
    ``prior``: the prior predictive; ``noisy``: the noisy likelihood).

    ap_tolerance: the largest error allowed in an episode's AP on the test bank (a fraction;
    >= 0), certified per episode: results hold each episode's bound beside its AP
    (``ap_bound``).  It speeds up the AP of posteriors spread over many concepts (those of a
    likelihood that is not consistent-only, e.g. ``noisy``, and the ``noisy`` weak-empty
    policy's refit); 0 computes AP exactly.  None (the default) means the likelihood's
    default, :data:`DEFAULT_AP_TOLERANCE` for a likelihood that is not consistent-only and 0
    for the others; :meth:`as_dict` records the number.  A consistent-only likelihood
    (``size``, ``consistent``) gives exact APs anyway: a tolerance above 0 holds there
    trivially (bound 0) and only applies to the episodes a weak-empty policy refits with a
    spread likelihood."""

    prior: str = "length"
    beta: float = 0.2
    likelihood: str = "size"
    epsilon: float = 0.05
    weak_empty: str = "zero"
    ap_tolerance: float | None = None

    def __post_init__(self):
        priors.get(self.prior)
        likelihoods.get(self.likelihood)
        empty_policies.get(self.weak_empty)
        for name in ("beta", "epsilon"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not np.isfinite(v):
                raise ValueError(f"{name} must be a finite number, got {v!r}")
        if not 0.0 < self.epsilon < 0.5:
            raise ValueError(f"epsilon must be in (0, 0.5), got {self.epsilon}")
        if not 0 <= self.beta <= 1e6:
            raise ValueError(f"beta must be in [0, 1e6], got {self.beta}")
        t = self.ap_tolerance
        if t is not None:
            if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) or not np.isfinite(t):
                raise ValueError(f"ap_tolerance must be a finite number, got {t!r}")
            if not 0.0 <= t <= 1.0:
                raise ValueError(f"ap_tolerance must be in [0, 1] (0: exact AP), got {t}")

    @property
    def tolerance(self) -> float:
        """The AP tolerance that applies: ``ap_tolerance``, or the likelihood's default when None
        (:data:`DEFAULT_AP_TOLERANCE` for a likelihood that is not consistent-only, else 0)."""
        if self.ap_tolerance is not None:
            return float(self.ap_tolerance)
        return 0.0 if likelihoods.get(self.likelihood).consistent_only else DEFAULT_AP_TOLERANCE

    def as_dict(self) -> dict:
        """The settings as a dict, with the AP tolerance that applies (never None)."""
        return {**asdict(self), "ap_tolerance": self.tolerance}


@numba.njit(parallel=True, cache=True)
def _mixture_predictive(signatures, ids, probs, n_scenes, out):
    """out[s] += Σ_i probs[i]·[concept ids[i] is true on scene s], for every scene s < n_scenes."""
    # one pass per concept; threads split the scene words, so no two write the same entry
    n_words = signatures.shape[1]
    for w in numba.prange(n_words):
        for i in range(ids.shape[0]):
            word = signatures[ids[i], w]
            while word:
                b, word = pop_lowest_bit(word)
                s = w * 64 + b
                if s < n_scenes:
                    out[s] += probs[i]


def test_bank_tables(space, wide: bool = True) -> K.TestBankTables:
    """The test bank of ``space`` as the kernels read it; ``wide`` False leaves out the classes
    of each scene (only spread posteriors read them)."""
    scene_classes = (space.test_bank_scene_classes() if wide else (np.zeros(1, np.int64), np.zeros(1, np.uint16)))
    return K.TestBankTables(read_only(space.test_bank.signatures), int(space.test_bank.n_scenes),
                            np.asarray(space.synonym_classes, np.int64), *space.test_bank_index(),
                            space.class_representatives(), *scene_classes, *space.index.test_domain_rows())


class _SameObject:
    """An object as a part of a dict key, equal only to itself (kept alive by the key, so its id
    is never reused while the key exists)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self):
        return id(self.obj)

    def __eq__(self, other):
        return isinstance(other, _SameObject) and other.obj is self.obj


class Oracle:
    """A Bayesian oracle over ``concepts`` (ids of ``space``) with ``settings``.

    Learner protocol: ``fit(scenes, labels, hard=True)`` then ``predict_proba(scenes)``;
    scenes are scene-bank ids (ints) or scene dicts.  ``evaluate(episodes)`` scores a
    whole :class:`~bayes_concepts.episodes.Episodes` batch with the numba kernels.

    Parameters
    ----------
    space : HypothesisSpace
    concepts : int array (n,)
        The oracle's hypotheses (concept ids of ``space``).
    settings : OracleSettings
        Prior, likelihood and weak-empty policy, by registered name.
    name : str
        The learner's name in results (``strong``, ``weak``, ...).
    log_weights : float64 array (n_concepts,) or None
        Unnormalised log prior weights indexed by concept id (only the entries of ``concepts``
        are read; ``-inf`` excludes a concept), in place of ``settings.prior``: a prior that
        depends on more than the space, e.g. one learned from a split's training concepts
        (:mod:`bayes_concepts.rungs`).  None: ``settings.prior``.
    """

    def __init__(self, space, concepts, settings: OracleSettings | None = None, name: str = "oracle",
                 log_weights=None):
        self.space = space
        self.settings = settings or OracleSettings()
        self.name = name
        self.concepts = np.unique(np.asarray(concepts, np.int64))
        member = np.zeros(space.n_concepts, bool)
        member[self.concepts] = True
        self.omega = pack_bits(member)
        self.log_prior = np.full(space.n_concepts, -np.inf)
        if len(self.concepts) and log_weights is None:
            self.log_prior[self.concepts] = log_prior(space, self.concepts, self.settings)
        elif len(self.concepts):
            self.log_prior[self.concepts] = normalised_log_weights(log_weights, self.concepts, space.n_concepts, name)
        self._posterior = None
        self._fixed = None

    # ---------------------------------------------------------------- priors
    def prior_entropy(self) -> float:
        """Entropy of the prior over the oracle's concepts (nats)."""
        lp = self.log_prior[self.concepts]
        return float(-(np.exp(lp) * lp).sum())

    def mixture_predictive(self, ids, probs):
        """Σ_h probs[h]·h(u) for every scene u: float64 (n_scenes,) over the bank and
        float64 (T,) over the test bank."""
        bank = np.zeros(self.space.n_scenes)
        _mixture_predictive(read_only(self.space.signatures), np.asarray(ids, np.int64),
                            np.asarray(probs, np.float64), self.space.n_scenes, bank)
        return bank, bank[np.asarray(self.space.test_bank.scene_ids)]

    def prior_predictive(self):
        """(per scene of the bank, per test-bank scene): Σ_h p(h)·h(u)."""
        return self.mixture_predictive(self.concepts, np.exp(self.log_prior[self.concepts]))

    def _fallback(self):
        """The weak-empty policy's fallback, with the predictive of a fixed posterior (cached)."""
        if self._fixed is None:
            fb = empty_policies.get(self.settings.weak_empty)(self)
            if fb.likelihood is not None:
                likelihoods.get(fb.likelihood)
                self._fixed = (fb, None, None)
            else:
                self._fixed = (fb, *self.mixture_predictive(fb.concepts, fb.probs))
        return self._fixed

    def _tables(self, name, n_drawn, k, hard):
        return likelihood_tables(name, np.asarray(self.space.counts, np.int64), self.space.n_scenes, n_drawn, k,
                                 hard, self.settings)

    # ------------------------------------------------------------- episodes
    def evaluate(self, episodes, hard_support: bool | None = None, wide: bool = True, defer: bool = True) -> dict:
        """Score a batch of episodes.

        Returns float/bool arrays (E,): ``ap`` (test bank), ``ap_bound`` (a certified bound on
        |ap - exact AP|: <= the settings' AP tolerance, 0 where AP is exact), ``cba`` (query),
        ``posterior_entropy``, ``predictive_entropy`` (nats), ``empty`` (no concept fits the
        support), ``n_candidates``; and ``query_pred`` (E, K).  ``wide=False`` scores
        spread-out (noisy) posteriors with the path made for a few candidates (exact AP: the
        same numbers as the wide path at AP tolerance 0, up to float summation order; for
        benchmarks).  ``defer=False`` scores the episodes too wide to prune one by one instead
        of :data:`~bayes_concepts.oracles.kernels.ROW_BATCH` at a time after the others
        (:func:`~bayes_concepts.oracles.kernels.score_deferred`: the same numbers; for tests
        and benchmarks).
        """
        space, st = self.space, self.settings
        if hard_support is None:
            hard_support = episodes.meta.get("negatives", "hard") == "hard"
        n_drawn = int(episodes.meta.get("n_positive", 5))
        k = episodes.support_scenes.shape[1]
        e = len(episodes)
        out = {k: np.empty(e) for k in ("ap", "ap_bound", "cba", "posterior_entropy", "predictive_entropy")}
        out["empty"] = np.zeros(e, bool)
        out["n_candidates"] = np.zeros(e, np.int64)
        out["query_pred"] = np.zeros(episodes.query_scenes.shape)
        likelihood = K.LikelihoodTables(*self._tables(st.likelihood, n_drawn, k, bool(hard_support)))
        fb, fixed_bank, fixed_test = self._fallback()
        wide = wide and (not likelihood.consistent_only or (
            fb.likelihood is not None and not likelihoods.get(fb.likelihood).consistent_only))
        if fb.likelihood is not None:
            refit = K.LikelihoodTables(*self._tables(fb.likelihood, n_drawn, k, bool(hard_support)))
            fixed_bank = fixed_test = np.zeros(1)
        else:
            refit = K.LikelihoodTables(np.zeros((1, 1, 1)), np.zeros((1, 1, 1)), True)
        support = np.ascontiguousarray(episodes.support_scenes)
        support_labels = np.ascontiguousarray(episodes.support_labels)
        query = np.ascontiguousarray(episodes.query_scenes)
        query_labels = np.ascontiguousarray(episodes.query_labels)
        concept = np.asarray(episodes.concept, np.int64)
        scene_concepts = space.scene_concepts()
        scene_outside = space.index.scene_outside()  # question domains (None: every concept everywhere)
        no_outside = K.no_outside()
        bank = test_bank_tables(space, wide)
        # an index on disk is read through its mapping (engine.rows.RowFile.through_mapping), or the rows
        # of each slice's support and query scenes are read into memory (scenes renumbered into
        # them), a slice at a time
        # deferred episodes keep their class weights (a row of C floats each) until their slice
        # is scored, so deferring also goes a slice at a time
        defer = bool(wide and defer)
        read_slices = isinstance(scene_concepts, RowFile) and not scene_concepts.through_mapping()
        if isinstance(scene_concepts, RowFile) and not read_slices:
            scene_concepts = scene_concepts.mapped()
        step = EVALUATE_SLICE if read_slices or defer else max(e, 1)
        n_classes = len(bank.cls_ptr) - 1
        options = K.EvaluateOptions(bool(wide), float(st.tolerance), defer,
                                    K.DEFERRED_SPECULATIVE_SHARE if defer else K.SPECULATIVE_SHARE)
        for lo in range(0, e, step):
            sl = slice(lo, min(lo + step, e))
            rows, sup, qry = scene_concepts, support[sl], query[sl]
            outside = no_outside if scene_outside is None else scene_outside
            if read_slices:
                scenes = np.unique(np.concatenate([sup.ravel(), qry.ravel()]))
                rows = scene_concepts[scenes]
                outside = no_outside if scene_outside is None else scene_outside[scenes]
                sup, qry = np.searchsorted(scenes, sup), np.searchsorted(scenes, qry)
            # the space's rows read-only, as the kernel reads them whatever their source (bits.read_only)
            tables = K.OracleTables(read_only(rows), self.omega, self.log_prior, likelihood, fb.likelihood is not None,
                                    refit, fixed_bank, fixed_test, float(fb.entropy), read_only(outside))
            results = K.EpisodeResults(*(out[k][sl] for k in K.EpisodeResults._fields))
            # zeros from calloc: only the rows of deferred episodes are ever written, and paged in
            defer_w = np.zeros((sl.stop - sl.start, n_classes) if defer else (1, 1))
            K.evaluate_episodes(K.EpisodeArrays(sup, support_labels[sl], qry, query_labels[sl], concept[sl]), tables,
                                bank, options, results, defer_w)
            if defer:
                K.score_deferred(defer_w, np.flatnonzero(out["ap"][sl] == K.DEFERRED), bank.scene_ptr,
                                 bank.scene_cls, bank.n_test, bank.signatures, concept[sl], out["ap"][sl],
                                 bank.test_domains, bank.domain_row)
        return out

    def scoring_key(self) -> tuple:
        """What :meth:`evaluate`'s numbers depend on besides the episodes: the space (this
        object), the evaluating method, the settings, the concept set and the log prior.  Two
        oracles with one key score every batch of episodes to the same bits, so a scorer of many
        learners (:func:`bayes_concepts.learners.scoring.score_learners`) scores them once."""
        digest = hashlib.sha1(np.ascontiguousarray(self.omega).tobytes())
        digest.update(np.ascontiguousarray(self.log_prior).tobytes())
        return ("oracle", _SameObject(self.space), type(self).evaluate, self.settings, digest.hexdigest())

    # ------------------------------------------------------ learner protocol
    def _outside_rows(self, scenes) -> np.ndarray:
        """uint64 (n, Hw): the concepts whose domain excludes each of ``scenes`` (bank ids; a
        scene given as a dict is taken to be in every concept's domain), or (0, 1) when the
        space has no question domains."""
        outside = self.space.index.scene_outside()
        scenes = list(scenes)
        if outside is None or not all(isinstance(s, (int, np.integer)) for s in scenes):
            return K.no_outside()
        return np.ascontiguousarray(outside[np.asarray(scenes, np.int64)])

    def _scene_rows(self, scenes) -> np.ndarray:
        """Per-scene concept bitsets (n, Hw) for scene ids or scene dicts (the space decides
        how its kind of scene is read)."""
        return self.space.scene_rows(scenes)

    def fit(self, scenes, labels, hard: bool = True, positives_drawn: int | None = None) -> "Oracle":
        """Condition on a support set: ``scenes`` (ids or dicts) with 0/1 ``labels``.

        hard: the negatives were chosen as hard negatives (matters for the ``size``
        likelihood: each negative has probability 1/(N - |h|) instead of 1/N).
        positives_drawn: how many scenes were drawn from the concept's extension (each has
        probability 1/|h| under ``size``); default: the number of positive labels.  An
        episode with easy negatives has 5, even when a random negative was relabelled
        positive (that scene was drawn uniformly, 1/N).
        """
        labels = np.asarray(labels, np.int8)
        rows = read_only(self._scene_rows(scenes))
        k = len(labels)
        h = self.space.n_concepts
        ids, logw = np.empty(h, np.int64), np.empty(h)
        n_drawn = int(labels.sum()) if positives_drawn is None else int(positives_drawn)
        support = np.arange(k, dtype=np.int64)
        tables = self._tables(self.settings.likelihood, n_drawn, k, bool(hard))
        outside = read_only(self._outside_rows(scenes))
        n = K.episode_candidates(support, labels, rows, self.omega, self.log_prior, *tables, ids, logw, outside)
        self.empty_ = n == 0
        if n == 0:
            fb = self._fallback()[0]
            if fb.likelihood is None:
                self._posterior = (fb.concepts.copy(), fb.probs.copy())
                return self
            tables = self._tables(fb.likelihood, n_drawn, k, bool(hard))
            n = K.episode_candidates(support, labels, rows, self.omega, self.log_prior, *tables, ids, logw, outside)
        probs = np.empty(n)
        K.normalise(logw[:n], n, probs)
        order = np.argsort(-probs, kind="stable")
        self._posterior = (ids[:n][order], probs[order])
        return self

    def posterior(self):
        """(concept ids, probabilities), most probable first; empty if nothing fits."""
        if self._posterior is None:
            raise RuntimeError("call fit() first")
        return self._posterior

    def predict_proba(self, scenes) -> np.ndarray:
        """p(y = 1 | u, support) for each scene (ids or dicts): float64 (n,)."""
        ids, probs = self.posterior()
        rows = self._scene_rows(scenes)
        if len(ids) == 0:
            return np.zeros(len(rows))
        bits = (rows[:, ids >> 6] >> (ids & 63).astype(np.uint64)) & np.uint64(1)
        return np.minimum(bits.astype(np.float64) @ probs, 1.0)

    def __repr__(self):
        return f"Oracle({self.name!r}, {len(self.concepts):,} concepts, {self.settings})"


def strong_and_weak(space, split, settings: OracleSettings | None = None):
    """The strong (H_train ∪ H_test) and weak (H_train) oracles of ``split``.

    A split with a ``strong_concepts`` attribute (int ids; set by a protocol, e.g. CURI's
    release, whose strong oracle knew every concept: :mod:`bayes_concepts.protocols`) gives
    the strong oracle those concepts instead.

    A by-set split (spec ``items = "by-set"``) is scored on its test-set items: ``space`` must
    be its test-set space, :func:`bayes_concepts.splits.side_space` (the gap and the audit make
    it), whose counts |ext h| the size likelihood reads; the whole space is a one-line
    :class:`~bayes_concepts.errors.BayesConceptsError`, not oracles counting every item."""
    from ..splits import by_set
    if by_set(split) and "item_subset" not in (space.params or {}):
        from ..errors import BayesConceptsError
        raise BayesConceptsError(f"split {split.name} draws its episodes by set (items = 'by-set'): make its oracles "
                                 "on its test-set items, splits.side_space(space, split), where its episodes and "
                                 "the size likelihood's counts are (gap and audit do)")
    settings = settings or OracleSettings()
    strong_ids = getattr(split, "strong_concepts", None)
    strong_ids = np.union1d(split.train, split.test) if strong_ids is None else strong_ids
    strong = Oracle(space, strong_ids, settings, "strong")
    weak = Oracle(space, split.train, settings, "weak")
    return strong, weak
