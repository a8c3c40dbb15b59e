"""Priors over concepts: the registry :data:`priors` and the built-in ``length``, ``pcfg``,
``uniform`` and ``pcfg_release`` priors.

A prior is one registered function ``prior(space, concepts, settings) -> log_weights``:
``concepts`` int64 (n,) ids of the space, ``settings`` the
:class:`~bayes_concepts.oracles.OracleSettings`; it returns float64 (n,) unnormalised log
weights (``-inf`` excludes a concept).  :func:`log_prior` normalises them::

    @priors.register("short_only")
    def short_only(space, concepts, settings):
        '''log weight 0 for programs of at most 8 tokens, -inf for longer ones'''
        return np.where(space.lengths[concepts] <= 8, 0.0, -np.inf)

A prior that needs a program length uses ``space.lengths`` (every kind of space provides a
description length there).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from ..registry import Registry

priors = Registry("prior")


@priors.register("length")
def length_prior(space, concepts, settings):
    """w(h) = exp(-beta * l(h)), l = program length in tokens (the paper's prior, beta = 0.2)."""
    return -float(settings.beta) * np.asarray(space.lengths)[concepts].astype(np.float64)


@priors.register("pcfg")
def pcfg_prior(space, concepts, settings):
    """w(h) = the grammar's derivation probability (what CURI's released code used)."""
    return np.asarray(space.log_pcfg)[concepts].astype(np.float64)


@priors.register("uniform")
def uniform_prior(space, concepts, settings):
    """w(h) = 1 for every concept."""
    return np.zeros(len(concepts))


@priors.register("pcfg_release")
def pcfg_release_prior(space, concepts, settings):
    """The release's prior: the sampler's log-probability of one derivation; an x-free concept
    keeps that of one of its two quantifiers (``pcfg`` sums both)."""
    lp = np.asarray(space.log_pcfg)[concepts].astype(np.float64)
    x_free = np.fromiter((not ({"x", "non-x-S"} & set(space.programs[i].split())) for i in concepts), bool,
                         len(concepts))
    return lp - math.log(2.0) * x_free


def log_prior(space, concepts, settings) -> np.ndarray:
    """Normalised log prior of ``settings.prior`` over ``concepts`` (int (n,)): float64 (n,).

    An error names the prior if its function returns the wrong shape, NaN, +inf, or gives
    every concept weight 0.
    """
    concepts = np.asarray(concepts, np.int64)
    if len(concepts) == 0:
        return np.zeros(0)
    w = np.asarray(priors.get(settings.prior)(space, concepts, settings), np.float64)
    if w.shape != concepts.shape:
        raise ValueError(f"prior {settings.prior!r} returned shape {w.shape}, expected {concepts.shape}")
    if np.isnan(w).any() or np.isposinf(w).any():
        raise ValueError(f"prior {settings.prior!r} returned NaN or +inf log weights")
    if np.isneginf(w).all():
        raise ValueError(f"prior {settings.prior!r} gives every one of the {len(w):,} concepts weight 0")
    return w - logsumexp(w)


def normalised_log_weights(log_weights, concepts, n_concepts: int, what: str = "oracle") -> np.ndarray:
    """``log_weights`` (float (n_concepts,), indexed by concept id) at ``concepts`` (int (n,)),
    normalised over them: float64 (n,).  A wrong shape, NaN, +inf, or weight 0 on every one of
    ``concepts`` is a one-line ValueError naming ``what``."""
    w = np.asarray(log_weights, np.float64)
    if w.shape != (int(n_concepts),):
        raise ValueError(f"{what}: log weights need one entry per concept of the space ({n_concepts:,}), "
                         f"got shape {w.shape}")
    w = w[np.asarray(concepts, np.int64)]
    if np.isnan(w).any() or np.isposinf(w).any():
        raise ValueError(f"{what}: log weights hold NaN or +inf")
    if len(w) and np.isneginf(w).all():
        raise ValueError(f"{what}: the log weights give every one of the {len(w):,} concepts weight 0")
    return w - logsumexp(w) if len(w) else w
