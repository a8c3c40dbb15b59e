"""Split search: the held-out set that maximises an objective under constraints.

A user with a benchmark asks for "the hardest fair split": the test concepts that make the
comp gap (or the compound divergence) as large as it can be while the split stays fair --
a given share of the concepts on the test side, the atom distributions of the two sides
close (atom divergence at most a bound), and every synonym class whole on one side.  As
maximum-compound-divergence splits are built (Keysers et al. 2020, "Measuring compositional
generalization"), :func:`search_split` moves whole synonym classes between train and test,
one swap at a time, by simulated annealing (``method="anneal"``) or greedy ascent
(``method="greedy"``: annealing at temperature 0), and keeps the best split that meets
every constraint.

Objectives
==========

``compound-divergence``
    1 − C_0.1(P_train ‖ P_test) over compounds (:mod:`bayes_concepts.divergence`), exact at
    every step: per synonym class the episode-weighted atom and compound counts are summed
    once, and a swap moves a class's mass from one side to the other.
``gap:RUNG``
    the hard-negative mAP gap of any rung of the oracle ladder (:mod:`bayes_concepts.rungs`;
    strong − rung, percentage points; ``gap:atom`` finds the split hardest for a learner
    that recombines seen atoms, ``gap:learned_prior`` for one with a prior learned from
    training).  The rung's concepts or prior depend on the whole train side, so every swap
    re-scores the whole pool (``pool_episodes`` sets the cost); ``gap:memoriser`` is ``gap``.
``gap``
    the hard-negative mAP gap of the weak oracle (strong − weak, percentage points).  Inside
    the loop it is a proxy with common random numbers: one pool of episodes is drawn once from
    every concept (weights exp(−β·l) as episodes draw them); the strong oracle of a split with
    no val side knows every concept, so its AP on each pool episode is computed once; the weak
    oracle's AP on an episode depends on the train side only through the concepts consistent
    with the episode's support, so a swap re-scores only the episodes whose consistent set
    meets a moved class (:class:`GapProxy`; :meth:`GapProxy.full` recomputes every episode, the
    slow twin).  The proxy of a split is the mean strong − weak AP over the pool episodes of
    its test concepts.  The best split is then evaluated properly on fresh episodes
    (:func:`bayes_concepts.gap.audit`), as ``gap --spec`` would.

The result is a split spec (:func:`spec_toml`): ``kind = "held_out"``, ``synonym_aware =
true``, no val side, and one program per held-out synonym class in ``[held_out] programs``,
so ``gap --spec`` makes the same split again (same concepts, same hash).

>>> result = search_split(space, "compound-divergence", test_share=0.2,              # doctest: +SKIP
...                       constraints=["atom-divergence<=0.02"], iterations=2000)
>>> result.split.sizes(), result.divergences                                        # doctest: +SKIP
"""
from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .divergence import ATOM_ALPHA, COMPOUND_ALPHA, concept_structure, episode_weights
from .episodes import Episodes, ARRAY_FIELDS, EpisodeShape, sampler_for
from .errors import BayesConceptsError
from .params import SEARCH_PARAMS, validate_params
from .oracles import Oracle, OracleSettings
from .oracles.likelihoods import likelihoods
from .rungs import RungError, check_rung, parse_rung_text, rung_learner
from .splits import Split, make_split

__all__ = ["SearchError", "OBJECTIVES", "CONSTRAINT_NAMES", "parse_constraint", "SideMasses", "GapProxy",
           "SearchResult", "search_split", "split_spec", "spec_toml"]

#: what a search can maximise (and ``gap:RUNG`` for any registered rung of the ladder)
OBJECTIVES = ("gap", "compound-divergence")
#: what a constraint can bound (``NAME<=VALUE`` or ``NAME>=VALUE``)
CONSTRAINT_NAMES = ("atom-divergence", "compound-divergence")
_CONSTRAINT = re.compile(r"^\s*([a-z-]+)\s*(<=|>=)\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*$")


class SearchError(BayesConceptsError):
    """A split search that cannot run as asked (a bad objective, constraint or share)."""


def parse_constraint(text) -> tuple:
    """``"atom-divergence<=0.02"`` -> ``("atom-divergence", "<=", 0.02)``; anything else is a
    one-line :class:`SearchError`."""
    if isinstance(text, tuple) and len(text) == 3:
        text = f"{text[0]}{text[1]}{text[2]}"
    m = _CONSTRAINT.match(str(text))
    if not m or m.group(1) not in CONSTRAINT_NAMES:
        raise SearchError(f"constraint {text!r}: expected NAME<=VALUE or NAME>=VALUE with NAME one of "
                          f"{', '.join(CONSTRAINT_NAMES)}, e.g. atom-divergence<=0.02")
    value = float(m.group(3))
    if not 0.0 <= value <= 1.0:
        raise SearchError(f"constraint {text!r}: a divergence is in [0, 1], got {value:g}")
    return m.group(1), m.group(2), value


# ===================================================================== the two sides' masses
def _chernoff_divergence(p_mass: np.ndarray, q_mass: np.ndarray, alpha: float) -> float:
    """1 − Σ p^α q^(1−α) of two unnormalised mass vectors, clipped to [0, 1]; NaN when either
    side has no mass (as :func:`~bayes_concepts.divergence.split_divergence`)."""
    sp_, sq = float(p_mass.sum()), float(q_mass.sum())
    if sp_ <= 0 or sq <= 0:
        return float("nan")
    p, q = p_mass / sp_, q_mass / sq
    both = (p > 0) & (q > 0)
    c = float(np.sum(p[both] ** alpha * q[both] ** (1.0 - alpha)))
    return float(np.clip(1.0 - c, 0.0, 1.0))


class SideMasses:
    """Episode-weighted atom and compound masses per synonym class, and the divergences of any
    assignment of the classes to train and test.

    units : int64 (n_concepts,), the synonym class (unit) of each concept, 0..U-1
    atoms, compounds : float64 (U, n_atom_types), (U, n_compound_types): Σ over a class's
    concepts of w(h)·count_h, w(h) = exp(−β·l(h)) for concepts that can fill an episode (0
    for the others), as :func:`~bayes_concepts.divergence.split_divergence` weighs them.
    """

    def __init__(self, space, structure=None, beta: float = 0.2, n_positive: int = 5,
                 n_query_positive: int | None = None):
        st = structure if structure is not None else concept_structure(space)
        classes = np.asarray(space.synonym_classes, np.int64)
        _, self.units = np.unique(classes, return_inverse=True)
        self.units = self.units.astype(np.int64).ravel()
        self.n_units = int(self.units.max()) + 1 if len(self.units) else 0
        self.sizes = np.bincount(self.units, minlength=self.n_units).astype(np.int64)
        w = episode_weights(space, np.arange(space.n_concepts), beta, n_positive,  # one normalising constant
                            n_query_positive)
        member = sp.csr_matrix((w, (self.units, np.arange(space.n_concepts))),
                               shape=(self.n_units, space.n_concepts))
        has = sp.csr_matrix(((w > 0).astype(np.float64), (self.units, np.arange(space.n_concepts))),
                            shape=(self.n_units, space.n_concepts))
        self.mass = [np.asarray((member @ m).todense(), np.float64) for m in (st.atoms, st.compounds)]
        # how many weighted concepts of a class have each type: exact integers, so that a type
        # gone from a side has mass exactly 0 there (α = 0.1 magnifies any rounding left over)
        self.presence = [np.rint(np.asarray((has @ (m > 0).astype(np.float64)).todense())).astype(np.int64)
                         for m in (st.atoms, st.compounds)]
        self.total_mass = [m.sum(axis=0) for m in self.mass]
        self.total_presence = [c.sum(axis=0) for c in self.presence]

    def side(self, test_units: np.ndarray) -> tuple:
        """The test side of the bool assignment ``test_units`` (U,): ``(atom mass, compound mass,
        atom presence, compound presence)``, summed afresh."""
        return (*(m[test_units].sum(axis=0) for m in self.mass), *(c[test_units].sum(axis=0) for c in self.presence))

    def moved(self, side: tuple, out_unit: int = -1, in_unit: int = -1) -> tuple:
        """``side`` after unit ``out_unit`` left the test side and ``in_unit`` joined it (-1: none)."""
        am, cm, ap, cp = (x.copy() for x in side)
        for u, sign in ((out_unit, -1), (in_unit, 1)):
            if u >= 0:
                am += sign * self.mass[0][u]
                cm += sign * self.mass[1][u]
                ap += sign * self.presence[0][u]
                cp += sign * self.presence[1][u]
        return am, cm, ap, cp

    def divergences(self, side: tuple) -> dict:
        """``{"atom-divergence": d, "compound-divergence": d}`` of the split whose test side is
        ``side`` (:meth:`side`; train: the rest)."""
        out = {}
        for k, (name, alpha) in enumerate((("atom-divergence", ATOM_ALPHA), ("compound-divergence", COMPOUND_ALPHA))):
            test_mass, test_n = side[k], side[2 + k]
            train_mass = np.where(self.total_presence[k] - test_n > 0, self.total_mass[k] - test_mass, 0.0)
            out[name] = _chernoff_divergence(np.maximum(train_mass, 0.0),
                                             np.where(test_n > 0, np.maximum(test_mass, 0.0), 0.0), alpha)
        return out


# ============================================================================== the gap proxy
def _subset(eps: Episodes, idx) -> Episodes:
    return Episodes(**{f: getattr(eps, f)[idx] for f in ARRAY_FIELDS}, meta=dict(eps.meta))


def _consistent_sets(space, eps: Episodes, chunk: int = 2000) -> sp.csr_matrix:
    """bool CSR (E, n_concepts): the concepts that label every support scene of each episode
    right (true on every positive, false on every negative)."""
    n, hw = space.n_concepts, (space.n_concepts + 63) // 64
    full = np.uint64(0xFFFFFFFFFFFFFFFF)
    rows_out = []
    for lo in range(0, len(eps), chunk):
        scenes = eps.support_scenes[lo:lo + chunk]
        labels = eps.support_labels[lo:lo + chunk].astype(bool)
        rows = np.asarray(space.scene_rows(scenes.ravel()), np.uint64).reshape(scenes.shape + (hw,))
        on_positives = np.bitwise_and.reduce(np.where(labels[..., None], rows, full), axis=1)
        on_negatives = np.bitwise_or.reduce(np.where(labels[..., None], np.uint64(0), rows), axis=1)
        bits = on_positives & ~on_negatives
        unpacked = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")[:, :n].astype(bool)
        rows_out.append(sp.csr_matrix(unpacked))
    return sp.vstack(rows_out).tocsr() if rows_out else sp.csr_matrix((0, n), dtype=bool)


class GapProxy:
    """The hard-negative (or easy) mAP gap of any assignment of synonym classes to train and
    test, on one fixed pool of episodes (common random numbers across splits).

    pool : Episodes (E,) drawn once from every concept that can fill an episode;
    strong_ap : float64 (E,), the AP of the oracle that knows every concept (the strong oracle
    of a split without val);  weak_ap : float64 (E,), the weak oracle's AP under the current
    train side;  unit_of_episode : int64 (E,), the synonym class of each episode's concept;
    episodes_of_unit : CSR (U, E), the episodes whose consistent set meets each class.

    :meth:`propose` re-scores only the episodes a move can change (exact when the likelihood is
    consistent-only and the weak-empty policy is ``zero``; otherwise every episode), and
    :meth:`full` re-scores every episode (the slow twin the tests compare it with).
    """

    def __init__(self, space, units: np.ndarray, n_units: int, n_episodes: int = 20_000, seed: int = 0,
                 negatives: str = "hard", settings: OracleSettings | None = None, hard_mode: str = "union",
                 episode_shape=None, rung: str | None = None, rung_knobs: dict | None = None):
        self.space = space
        #: the rung whose gap is measured (None or "memoriser": the weak oracle)
        self.rung = None if rung in (None, "memoriser") else rung
        self.rung_knobs = dict(rung_knobs or {})
        shape = EpisodeShape.parse(episode_shape)
        self.settings = settings or OracleSettings()
        self.units, self.n_units = np.asarray(units, np.int64), int(n_units)
        self.pool = sampler_for(space).sample(np.arange(space.n_concepts), int(n_episodes), negatives, seed=int(seed),
                                              hard_mode=hard_mode, meta={"split": "search pool", "side": "all"},
                                              n_positive=shape.positives, n_negative=shape.negatives,
                                              n_query_positive=shape.query_positives,
                                              n_query_negative=shape.query_negatives)
        everything = Oracle(space, np.arange(space.n_concepts), self.settings, "strong")
        self.strong_ap = everything.evaluate(self.pool)["ap"]
        self.unit_of_episode = self.units[np.asarray(self.pool.concept, np.int64)]
        local = (likelihoods.get(self.settings.likelihood).consistent_only and self.settings.weak_empty == "zero"
                 and self.rung is None)
        self.local = bool(local)
        if self.local:
            consistent = _consistent_sets(space, self.pool)  # (E, H)
            unit_matrix = sp.csr_matrix((np.ones(space.n_concepts), (np.arange(space.n_concepts), self.units)),
                                        shape=(space.n_concepts, self.n_units))
            self.episodes_of_unit = ((consistent.astype(np.float64) @ unit_matrix).T > 0).tocsr()
        else:
            self.episodes_of_unit = None
        self.weak_ap = np.zeros(len(self.pool))

    def _train_ids(self, test_units: np.ndarray) -> np.ndarray:
        return np.flatnonzero(~test_units[self.units])

    def _score(self, test_units: np.ndarray, idx) -> np.ndarray:
        """The weak oracle's (or the rung's) AP on pool episodes ``idx`` with train = the units not
        in test."""
        if len(idx) == 0:
            return np.zeros(0)
        if self.rung is not None:
            train = self._train_ids(test_units)
            split = Split("search", train, np.zeros(0, np.int64), np.setdiff1d(np.arange(self.space.n_concepts), train),
                          {}, n_concepts=self.space.n_concepts)
            weak = rung_learner(self.rung, self.space, split, self.settings, **self.rung_knobs)
        else:
            weak = Oracle(self.space, self._train_ids(test_units), self.settings, "weak")
        return weak.evaluate(_subset(self.pool, idx))["ap"]

    def full(self, test_units: np.ndarray) -> np.ndarray:
        """float64 (E,): the weak oracle's AP on every pool episode under ``test_units`` (bool (U,))."""
        return self._score(test_units, np.arange(len(self.pool)))

    def reset(self, test_units: np.ndarray) -> float:
        """Score every episode for ``test_units``; returns the proxy gap."""
        self.weak_ap = self.full(test_units)
        return self.value(test_units, self.weak_ap)

    def value(self, test_units: np.ndarray, weak_ap: np.ndarray) -> float:
        """Mean strong − weak AP (percentage points) over the pool episodes of test concepts;
        0 when the test side has none."""
        on_test = test_units[self.unit_of_episode]
        if not on_test.any():
            return 0.0
        return float(100 * np.mean(self.strong_ap[on_test] - weak_ap[on_test]))

    def affected(self, moved: np.ndarray) -> np.ndarray:
        """The pool episodes a move of the units ``moved`` can change (all, for a non-local oracle)."""
        if not self.local:
            return np.arange(len(self.pool))
        return np.unique(self.episodes_of_unit[np.asarray(moved, np.int64)].indices)

    def propose(self, test_units: np.ndarray, moved: np.ndarray) -> tuple:
        """(proxy gap, (episode ids, their weak AP)) of the assignment ``test_units`` that differs
        from the current one in the units ``moved``; :meth:`commit` keeps it."""
        idx = self.affected(moved)
        ap = self._score(test_units, idx)
        weak = self.weak_ap.copy()
        weak[idx] = ap
        return self.value(test_units, weak), (idx, ap)

    def commit(self, change: tuple):
        idx, ap = change
        self.weak_ap[idx] = ap


# ===================================================================================== search
@dataclass
class SearchResult:
    """What :func:`search_split` found.

    split: the best split met (train, test; no val); spec: its spec dict (:func:`split_spec`);
    objective, value: the objective's name and its value in the loop (gap: the proxy, in
    percentage points; compound divergence: exact); divergences: atom and compound divergence
    of the split; test_share: test concepts / all; iterations, accepted, infeasible: steps
    taken, moves accepted, moves refused by a constraint or the share; seconds; history:
    ``[(iteration, seconds, current value, best value)]`` at each progress line; settings:
    what the search was asked (objective, constraints, share, seed, method, ...)."""

    split: Split
    spec: dict
    objective: str
    value: float
    divergences: dict
    test_share: float
    iterations: int
    accepted: int
    infeasible: int
    seconds: float
    history: list = field(default_factory=list)
    settings: dict = field(default_factory=dict)


def objective_rung(objective: str, space=None) -> tuple:
    """``(rung name, knobs)`` of a ``gap:RUNG`` objective (``gap`` is ``gap:memoriser``), None
    for ``compound-divergence``; an objective that is neither, or names a rung that is unknown,
    takes bad knobs or cannot apply to ``space``, is a one-line :class:`SearchError`."""
    if objective == "compound-divergence":
        return None
    if objective == "gap":
        return ("memoriser", {})
    if not isinstance(objective, str) or not objective.startswith("gap:"):
        raise SearchError(f"objective must be one of {', '.join(OBJECTIVES)} or gap:RUNG, got {objective!r}")
    try:
        name, knobs = parse_rung_text(objective[4:])
        if name == "strong":
            raise RungError("the strong oracle's gap to itself is 0: name a rung below it")
        check_rung(name, space, knobs)
    except RungError as e:
        raise SearchError(f"objective {objective!r}: {e}") from None
    return (name, knobs)


def _check_search_input(iterations, budget_s):
    """The search's stopping rule (each value is checked by its declaration, :data:`SEARCH_PARAMS`)."""
    if iterations is None and budget_s is None:
        raise SearchError("give iterations or budget_s (or both): the search needs a stopping rule")


def _feasible(div: dict, constraints: list) -> bool:
    for name, op, bound in constraints:
        v = div[name]
        if not np.isfinite(v) or (v > bound if op == "<=" else v < bound):
            return False
    return True


def _violation(div: dict, constraints: list) -> float:
    """How far ``div`` is from meeting the constraints (0 when it meets them)."""
    out = 0.0
    for name, op, bound in constraints:
        v = div[name]
        if not np.isfinite(v):
            return float("inf")
        out += max(0.0, v - bound) if op == "<=" else max(0.0, bound - v)
    return out


def _typical_change(masses, proxy, test, size, value, lo_size, hi_size, n, rng, tries: int = 60) -> float:
    """The mean |change of the objective| of up to ``tries`` random swaps from ``test`` that
    keep the share (the annealing's starting temperature: a typical worse move is accepted
    with probability 1/e at first); 1e-6 when none is found."""
    test_ids, train_ids = np.flatnonzero(test), np.flatnonzero(~test)
    changes = []
    for _ in range(tries * 5):
        if len(changes) >= tries or not len(test_ids) or not len(train_ids):
            break
        a, b = int(test_ids[rng.integers(len(test_ids))]), int(train_ids[rng.integers(len(train_ids))])
        new_size = size - masses.sizes[a] + masses.sizes[b]
        if not lo_size <= new_size <= hi_size:
            continue
        new_test = test.copy()
        new_test[[a, b]] = ~new_test[[a, b]]
        if proxy is not None:
            new_value = proxy.propose(new_test, np.array([a, b]))[0]
        else:
            new_value = masses.divergences(masses.side(new_test))["compound-divergence"]
        changes.append(abs(new_value - value))
    return float(np.mean(changes)) if changes and np.mean(changes) > 0 else 1e-6


def _initial(masses: SideMasses, target: int, rng) -> np.ndarray:
    """A random assignment: classes in a seeded order join the test side while it stays at or
    below ``target`` concepts."""
    test = np.zeros(masses.n_units, bool)
    size = 0
    for u in rng.permutation(masses.n_units):
        if size + masses.sizes[u] <= target:
            test[u] = True
            size += int(masses.sizes[u])
    return test


@validate_params(SEARCH_PARAMS, error=SearchError)
def search_split(space, objective: str = "compound-divergence", *, test_share: float = 0.2,
                 share_tolerance: float = 0.01, constraints=("atom-divergence<=0.02",), seed: int = 0,
                 iterations: int | None = None, budget_s: float | None = 300.0, method: str = "anneal",
                 pool_episodes: int = 20_000, negatives: str = "hard", settings: OracleSettings | None = None,
                 hard_mode: str = "union", name: str = "searched", structure=None, log=None,
                 log_every_s: float = 10.0, episode_shape=None) -> SearchResult:
    """Search the held-out set that maximises ``objective`` (``"gap"`` or
    ``"compound-divergence"``) under ``constraints`` (``"atom-divergence<=0.02"``-style texts or
    ``(name, op, value)`` tuples), with test concepts / all concepts within ``test_share`` ±
    ``share_tolerance`` and whole synonym classes on one side (no val side).

    Steps swap a test class with a train class (or move one class, when the share allows);
    a move that breaks a constraint or the share is refused.  ``method="anneal"`` accepts a
    worse split with probability exp(Δ/T), T cooling geometrically over the run from the mean
    |Δ| of a few random swaps from the start to a thousandth of it;
    ``"greedy"`` only accepts improvements.  The run stops after ``iterations`` steps or
    ``budget_s`` seconds, whichever comes first; the schedule follows ``iterations`` when
    given (then the result depends only on the seed), else the clock.  A start that breaks a
    constraint is first repaired by the same moves, minimising the violation.  ``log(str)``
    gets a progress line every ``log_every_s`` seconds.  ``pool_episodes``, ``negatives``,
    ``settings``, ``hard_mode``: the gap proxy's pool (:class:`GapProxy`).  ``episode_shape``
    (an :class:`~bayes_concepts.episodes.EpisodeShape`, its dict or ``"P,N[,QP,QN]"``; None: 5+20
    each) shapes the pool's episodes and the divergences' weights, and is written into the spec
    as its ``[episodes]`` table when given.

    Returns a :class:`SearchResult`; a search that never meets the constraints is a
    :class:`SearchError`."""
    rung = objective_rung(objective, space)  # (name, knobs) of the rung whose gap is searched; None: divergence
    _check_search_input(iterations, budget_s)
    constraints = [parse_constraint(c) for c in (constraints or ())]
    log = log or (lambda line: None)
    t0 = time.perf_counter()
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x5EA2C4]))
    shape = EpisodeShape.parse(episode_shape)
    masses = SideMasses(space, structure, n_positive=shape.positives, n_query_positive=shape.query_positives)
    n = space.n_concepts
    lo_size = int(math.ceil((test_share - share_tolerance) * n))
    hi_size = int(math.floor((test_share + share_tolerance) * n))
    target = int(round(test_share * n))
    if hi_size < max(lo_size, 1) or n < 2:
        raise SearchError(f"test_share {test_share:g} ± {share_tolerance:g} of {n:,} concepts leaves no room")
    test = _initial(masses, min(hi_size, target), rng)
    size = int(masses.sizes[test].sum())
    side = masses.side(test)
    div = masses.divergences(side)
    proxy = GapProxy(space, masses.units, masses.n_units, pool_episodes, seed, negatives, settings, hard_mode,
                     shape, rung=rung[0], rung_knobs=rung[1]) \
        if rung is not None else None
    if proxy is not None:
        log(f"gap proxy: {len(proxy.pool):,} pool episodes ({negatives} negatives) scored in "
            f"{time.perf_counter() - t0:.1f} s")
    value = proxy.reset(test) if proxy is not None else div["compound-divergence"]
    t_hi = _typical_change(masses, proxy, test, size, value, lo_size, hi_size, n, rng) if method == "anneal" else 0.0
    t_lo = t_hi * 1e-3
    best = (value if _feasible(div, constraints) else -np.inf, test.copy(), dict(div), size)
    it = accepted = infeasible = 0
    history = []
    last_log = time.perf_counter()
    test_ids, train_ids = np.flatnonzero(test), np.flatnonzero(~test)

    def fraction() -> float:
        if iterations is not None:
            return it / iterations
        return (time.perf_counter() - t0) / budget_s

    while True:
        if iterations is not None and it >= iterations:
            break
        if budget_s is not None and time.perf_counter() - t0 >= budget_s:
            break
        it += 1
        repairing = not _feasible(div, constraints)
        # a move: swap a test class with a train class, or move one class alone
        kind = rng.random()
        out_u = int(test_ids[rng.integers(len(test_ids))]) if len(test_ids) and kind < 0.85 else -1
        in_u = int(train_ids[rng.integers(len(train_ids))]) if len(train_ids) and (kind < 0.85 or kind >= 0.925) \
            else -1
        if out_u < 0 and in_u < 0:
            continue
        new_size = size - (masses.sizes[out_u] if out_u >= 0 else 0) + (masses.sizes[in_u] if in_u >= 0 else 0)
        if not lo_size <= new_size <= hi_size or new_size == 0 or new_size == n:
            infeasible += 1
            continue
        moved = np.array([u for u in (out_u, in_u) if u >= 0], np.int64)
        new_side = masses.moved(side, out_u, in_u)
        new_div = masses.divergences(new_side)
        if repairing:
            if _violation(new_div, constraints) >= _violation(div, constraints):
                continue
        elif not _feasible(new_div, constraints):
            infeasible += 1
            continue
        new_test = test.copy()
        new_test[moved] = ~new_test[moved]
        change = None
        if proxy is not None:
            new_value, change = proxy.propose(new_test, moved)
        else:
            new_value = new_div["compound-divergence"]
        if not repairing:
            delta = new_value - value
            temp = 0.0 if method == "greedy" else t_hi * (t_lo / t_hi) ** min(1.0, fraction())
            if delta < 0 and (temp <= 0 or rng.random() >= math.exp(delta / temp)):
                continue
        # accept
        accepted += 1
        test, size, side, div, value = new_test, int(new_size), new_side, new_div, new_value
        if accepted % 1000 == 0:  # sums kept by additions drift: start them afresh now and then
            side = masses.side(test)
        test_ids, train_ids = np.flatnonzero(test), np.flatnonzero(~test)
        if change is not None:
            proxy.commit(change)
        if _feasible(div, constraints) and value > best[0]:
            best = (value, test.copy(), dict(div), size)
        now = time.perf_counter()
        if now - last_log >= log_every_s:
            last_log = now
            history.append((it, now - t0, value, best[0]))
            log(f"step {it:,}: {objective} {value:.4g} (best {best[0]:.4g}), atom divergence "
                f"{div['atom-divergence']:.4f}, compound divergence {div['compound-divergence']:.4f}, test share "
                f"{size / n:.3f}; {accepted:,} moves accepted, {infeasible:,} refused; {now - t0:.0f} s")
    seconds = time.perf_counter() - t0
    history.append((it, seconds, value, best[0]))
    if not np.isfinite(best[0]):
        raise SearchError(f"no split met the constraints ({', '.join(f'{a}{b}{c:g}' for a, b, c in constraints)}) "
                          f"in {it:,} steps; loosen them or give more iterations")
    value, best_test, best_div, best_size = best
    held = np.flatnonzero(best_test[masses.units])
    settings_rec = {"objective": objective, "constraints": [f"{a}{b}{c:g}" for a, b, c in constraints],
                    "test_share": float(test_share), "share_tolerance": float(share_tolerance), "seed": int(seed),
                    "method": method, "iterations": iterations, "budget_s": budget_s,
                    **({"pool_episodes": int(pool_episodes), "negatives": negatives, "hard_mode": hard_mode}
                       if proxy is not None else {}),
                    **({"episodes": shape.as_dict()} if episode_shape is not None else {})}
    spec = split_spec(space, held, name, description=_description(objective, value, best_div, settings_rec))
    if episode_shape is not None:
        spec["episodes"] = shape.as_dict()
    split = make_split(space, spec)
    log(f"best: {objective} {value:.4g} after {it:,} steps ({accepted:,} accepted) in {seconds:.0f} s")
    return SearchResult(split, spec, objective, float(value),
                        {k.replace("-", "_"): float(v) for k, v in best_div.items()}, best_size / n, it, accepted,
                        infeasible, seconds, history, settings_rec)


def _description(objective, value, div, settings) -> str:
    what = "compound divergence" if objective == "compound-divergence" else f"hard-negative mAP {objective} proxy"
    return (f"found by split search: {what} {value:.4g}, atom divergence {div['atom-divergence']:.4f}, compound "
            f"divergence {div['compound-divergence']:.4f} (constraints {', '.join(settings['constraints']) or 'none'}; "
            f"test share {settings['test_share']:g}; seed {settings['seed']})")


def split_spec(space, held_out, name: str = "searched", description: str = "") -> dict:
    """The spec dict of the split holding out the concepts ``held_out`` (int ids; whole synonym
    classes): ``kind = "held_out"``, ``synonym_aware = true``, no val, and the program of the
    first held-out concept of each class in ``[held_out] programs`` (a class's other members
    follow it)."""
    held_out = np.asarray(held_out, np.int64)
    if len(held_out) == 0:
        raise SearchError("the held-out side is empty")
    classes = np.asarray(space.synonym_classes, np.int64)
    _, first = np.unique(classes[held_out], return_index=True)
    reps = np.sort(held_out[first])
    return {"name": name, "description": description, "kind": "held_out", "synonym_aware": True,
            "val_fraction": 0.0, "held_out": {"programs": [space.programs[int(i)] for i in reps]}}


def _toml_string(s: str) -> str:
    return json.dumps(str(s), ensure_ascii=False)


def spec_toml(spec: dict, header_lines=()) -> str:
    """A spec dict of :func:`split_spec` as the text of a TOML spec file, with ``header_lines``
    (e.g. the audit of the split) as comments on top."""
    out = [f"# {line}".rstrip() for text in header_lines for line in str(text).splitlines()]
    if out:
        out.append("")
    for key in ("name", "description", "kind"):
        out.append(f"{key} = {_toml_string(spec[key])}")
    out.append(f"synonym_aware = {'true' if spec['synonym_aware'] else 'false'}")
    out.append(f"val_fraction = {float(spec['val_fraction'])!r}")
    if spec.get("episodes"):
        out += ["", "[episodes]"] + [f"{k} = {int(v)}" for k, v in spec["episodes"].items() if v is not None]
    out += ["", "[held_out]", "programs = ["]
    out += [f"  {_toml_string(p)}," for p in spec["held_out"]["programs"]]
    out.append("]")
    return "\n".join(out) + "\n"
