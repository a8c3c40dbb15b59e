"""Bayesian oracles: priors, likelihoods and weak-empty policies (each a registry), the
numba kernels, and :class:`Oracle` objects (the strong and weak oracle of a split)."""
from .empty_policies import Fallback, empty_policies
from .likelihoods import likelihoods
from .oracle import Oracle, OracleSettings, strong_and_weak
from .priors import log_prior, priors

__all__ = ["Oracle", "OracleSettings", "strong_and_weak", "priors", "likelihoods", "empty_policies", "Fallback",
           "log_prior"]
