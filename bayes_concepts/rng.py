"""Explicit random-number state for numba kernels.

A kernel gets a ``uint64`` array of length 1 as its state and advances it with
:func:`next_uniform` / :func:`next_below` (splitmix64).  Seeds come from
``numpy.random.SeedSequence(seed).generate_state(n, np.uint64)``, one per block of
independent work, so results do not depend on the number of threads.
"""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(inline="always")
def next_u64(state):
    """Advance the splitmix64 ``state`` (uint64[1]) and return a 64-bit value."""
    state[0] += np.uint64(0x9E3779B97F4A7C15)
    z = state[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(inline="always")
def next_uniform(state):
    """A float in [0, 1) with 53 random bits."""
    return (next_u64(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@numba.njit(inline="always")
def next_below(state, n):
    """An int in [0, n) (n >= 1), by rejection so every value is equally likely."""
    bound = np.uint64(n)
    limit = np.uint64(0xFFFFFFFFFFFFFFFF) - (np.uint64(0xFFFFFFFFFFFFFFFF) % bound)
    while True:
        v = next_u64(state)
        if v < limit:
            return np.int64(v % bound)


def block_seeds(seed: int, n: int) -> np.ndarray:
    """``n`` independent uint64 seeds derived from ``seed``."""
    return np.random.SeedSequence(seed).generate_state(max(n, 1), np.uint64)[:n]
