"""What an oracle does when no concept of its hypothesis set fits the support: the registry
:data:`empty_policies` and the built-in ``zero``, ``prior`` and ``noisy`` policies (the
share of such episodes is the weak oracle's *coverage* gap).

A policy is one registered function ``policy(oracle) -> Fallback``.  A fallback is either
another likelihood to condition on (:meth:`Fallback.refit`) or a fixed posterior
(:meth:`Fallback.fixed`), whose predictive the oracle computes once and reuses::

    @empty_policies.register("shortest")
    def shortest(oracle):
        '''all weight on the oracle's shortest concept'''
        best = oracle.concepts[np.argmin(oracle.space.lengths[oracle.concepts])]
        return Fallback.fixed([best], [1.0], entropy=0.0)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..registry import Registry

empty_policies = Registry("weak-empty policy")


@dataclass(frozen=True)
class Fallback:
    """likelihood: condition again with this likelihood (a name), or None;
    concepts / probs: int64 (n,) / float64 (n,) a fixed posterior, used when ``likelihood`` is
    None; entropy: the posterior entropy to report for it (nats; NaN: undefined)."""

    likelihood: str | None = None
    concepts: np.ndarray | None = None
    probs: np.ndarray | None = None
    entropy: float = float("nan")

    @classmethod
    def refit(cls, likelihood: str) -> "Fallback":
        return cls(likelihood=likelihood)

    @classmethod
    def fixed(cls, concepts, probs, entropy: float = float("nan")) -> "Fallback":
        return cls(None, np.asarray(concepts, np.int64), np.asarray(probs, np.float64), float(entropy))


@empty_policies.register("zero")
def zero_policy(oracle):
    """Every scene scores 0 (the released behaviour); the posterior entropy is undefined."""
    return Fallback.fixed(np.zeros(0, np.int64), np.zeros(0))


@empty_policies.register("prior")
def prior_policy(oracle):
    """The prior predictive: the oracle falls back on its prior."""
    return Fallback.fixed(oracle.concepts, np.exp(oracle.log_prior[oracle.concepts]), oracle.prior_entropy())


@empty_policies.register("noisy")
def noisy_policy(oracle):
    """Condition again with the ``noisy`` likelihood (each label right with 1 - epsilon)."""
    return Fallback.refit("noisy")
