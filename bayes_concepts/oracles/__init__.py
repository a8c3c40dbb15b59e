"""Bayesian oracles: priors, likelihoods, posterior and predictive kernels, Oracle objects."""
from .oracle import EMPTY_POLICIES, LIKELIHOODS, PRIORS, Oracle, OracleSettings, strong_and_weak

__all__ = ["Oracle", "OracleSettings", "strong_and_weak", "PRIORS", "LIKELIHOODS", "EMPTY_POLICIES"]
