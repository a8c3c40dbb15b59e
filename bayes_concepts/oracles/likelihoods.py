"""Likelihoods of a support set: the registry :data:`likelihoods` and the built-in ``size``,
``consistent``, ``noisy`` and ``size_release`` likelihoods.

A support set of ``k`` scenes, ``n_drawn`` of them drawn from the true concept's extension,
is scored by every concept h through two numbers: ``wp``, the support positives h calls
negative, and ``wn``, the support negatives h calls positive.  A likelihood is one registered
function that tabulates log p(labels | h) over (h, wp, wn)::

    @likelihoods.register("my_noise", consistent_only=False)
    def my_noise(counts, n_scenes, n_drawn, k, hard, settings):
        '''asymmetric noise: a missed positive costs more than a false alarm'''
        wp = np.arange(k + 1)[None, :, None]
        wn = np.arange(k + 1)[None, None, :]
        return wp * np.log(0.01) + wn * np.log(0.1), np.zeros((1, 1, 1))

Arguments: ``counts`` int64 (H,) extension sizes |ext h| on the scene bank of N =
``n_scenes`` scenes; ``n_drawn`` positives drawn from ext(h); ``k`` support size; ``hard``
whether the negatives were hard negatives; ``settings`` the OracleSettings (``epsilon``...).
It returns two float64 arrays ``(first, second)``, each of shape (H or 1, k+1 or 1, k+1 or
1) (axes of length 1 broadcast); the log weight of h is ``(log_prior + first) + second``,
summed in that order.  (Two terms rather than one so the built-ins keep their exact
floating-point sums: positives then negatives, or mistakes then agreements.)
``consistent_only=True`` declares that any mistake has likelihood 0; the oracle then finds
the candidates by bitset AND/AND-NOT instead of visiting every concept, and reads only
entry [h, 0, 0].
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numba
import numpy as np

from ..registry import Registry, describe


@dataclass(frozen=True)
class Likelihood:
    """A registered likelihood: its table function and whether it is 0 after any mistake."""

    terms: Callable
    consistent_only: bool

    @property
    def summary(self) -> str:
        """The first paragraph of the table function's docstring, on one line (help texts)."""
        return describe(self.terms)


class LikelihoodRegistry(Registry):
    """Likelihoods of a support set; a new one is a registered table function (see
    :mod:`bayes_concepts.oracles.likelihoods`)."""

    def register(self, name, obj=None, *, consistent_only: bool = False, replace: bool = False):
        """Register a table function ``(counts, n_scenes, n_drawn, k, hard, settings) -> (first,
        second)`` as likelihood ``name`` (see the module docstring)."""
        def add(fn):
            super(LikelihoodRegistry, self).register(name, Likelihood(fn, bool(consistent_only)), replace=replace)
            return fn
        return add if obj is None else add(obj)


likelihoods = LikelihoodRegistry("likelihood")


@numba.njit(cache=True)
def _size_terms(counts, n_scenes, n_drawn, k, hard, first, second):
    for h in range(counts.shape[0]):
        c = counts[h]
        first[h, 0, 0] = -(n_drawn * np.log(c))
        second[h, 0, 0] = -((k - n_drawn) * np.log(n_scenes - c)) if hard else 0.0


@likelihoods.register("size", consistent_only=True)
def size_likelihood(counts, n_scenes, n_drawn, k, hard, settings):
    """Strong sampling (the released code's): each drawn positive 1/|ext h|, each hard negative
    1/(N - |ext h|), each easy negative 1/N (a constant); 0 if h mislabels a support scene."""
    counts = np.asarray(counts, np.int64)
    first, second = np.empty((len(counts), 1, 1)), np.empty((len(counts), 1, 1))
    _size_terms(counts, int(n_scenes), int(n_drawn), int(k), bool(hard), first, second)
    # an empty extension (a concept with no item of an image-level split's test set) draws no
    # positive, a full one no hard negative: probability 0 (log -inf), or 1 when none is drawn.
    # Such a concept never fits a support holding one, so the entry is never read; the
    # table holds the exact value instead of log 0's +inf or 0·log 0's NaN.
    empty, full = counts == 0, counts == int(n_scenes)
    if empty.any():
        first[empty, 0, 0] = -np.inf if n_drawn > 0 else 0.0
    if hard and full.any():
        second[full, 0, 0] = -np.inf if k > n_drawn else 0.0
    return first, second


@likelihoods.register("consistent", consistent_only=True)
def consistent_likelihood(counts, n_scenes, n_drawn, k, hard, settings):
    """The paper's deterministic likelihood: 1 if h labels every support scene right, else 0."""
    return np.zeros((1, 1, 1)), np.zeros((1, 1, 1))


@numba.njit(cache=True)
def _noisy_terms(k, epsilon, first, second):
    log_eps, log_ok = np.log(epsilon), np.log1p(-epsilon)
    for wp in range(k + 1):
        for wn in range(k + 1):
            wrong = wp + wn
            first[0, wp, wn] = wrong * log_eps
            second[0, wp, wn] = (k - wrong) * log_ok


@likelihoods.register("noisy")
def noisy_likelihood(counts, n_scenes, n_drawn, k, hard, settings):
    """Each support label is right with probability 1 - epsilon, independently."""
    first, second = np.empty((1, k + 1, k + 1)), np.empty((1, k + 1, k + 1))
    _noisy_terms(int(k), float(settings.epsilon), first, second)
    return first, second


@likelihoods.register("size_release", consistent_only=True)
def size_release_likelihood(counts, n_scenes, n_drawn, k, hard, settings):
    """The release's size likelihood as it ran: it counted the support's positives with
    ``labels == 1`` on a Python list, which is 0, so all k support scenes are scored as
    negatives: -k·log(N - |ext h|) with hard negatives, a constant with random ones (then
    the posterior is the prior on the consistent concepts); 0 if h mislabels a scene."""
    counts = np.asarray(counts, np.float64)
    first = np.zeros((len(counts), 1, 1))
    if hard:
        first[:, 0, 0] = -k * np.log(float(n_scenes) - counts)
    return first, np.zeros((1, 1, 1))


def likelihood_tables(name, counts, n_scenes, n_drawn, k, hard, settings) -> tuple:
    """``(first, second, consistent_only)`` of likelihood ``name``: the two float64 C-contiguous
    3-d tables (checked: 3-d, each axis 1 or full length, no NaN or +inf)."""
    lik = likelihoods.get(name)
    n = len(counts)
    full = (n, k + 1, k + 1)
    tables = []
    for t in lik.terms(counts, n_scenes, n_drawn, k, hard, settings):
        t = np.asarray(t, np.float64)
        if t.ndim != 3 or any(s not in (1, f) for s, f in zip(t.shape, full)):
            raise ValueError(f"likelihood {name!r} returned a table of shape {t.shape}; expected 3 axes of "
                             f"length 1 or {full}")
        if np.isnan(t).any() or np.isposinf(t).any():
            raise ValueError(f"likelihood {name!r} returned NaN or +inf log terms")
        tables.append(np.ascontiguousarray(t))
    if len(tables) != 2:
        raise ValueError(f"likelihood {name!r} must return two tables (first, second)")
    return tables[0], tables[1], lik.consistent_only
