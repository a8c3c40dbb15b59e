"""The roofline benchmark's staged kernel computes what the oracles compute: its per-stage
path gives the APs of :meth:`Oracle.evaluate` on the episodes some concept fits (bit for bit with the size likelihood; to the
summation order, 1e-12, with the noisy one, whose stages score every test scene), and its
time-stamp counter advances."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import roofline  # noqa: E402

from bayes_concepts.episodes import EpisodeSampler  # noqa: E402
from bayes_concepts.oracles import OracleSettings, strong_and_weak  # noqa: E402
from bayes_concepts.splits import load_splits  # noqa: E402


@pytest.mark.parametrize("likelihood,negatives", [("size", "hard"), ("size", "easy"), ("noisy", "hard")])
def test_staged_stages_give_the_oracles_aps(small_space, likelihood, negatives):
    split = load_splits(small_space, ["counting"])["counting"]
    eps = EpisodeSampler(small_space).sample(split.test, 60, negatives, seed=2)
    for oracle in strong_and_weak(small_space, split, OracleSettings(likelihood=likelihood, ap_tolerance=0)):
        args, _, _ = roofline._oracle_inputs(oracle, eps)
        ap = np.empty(len(eps))
        work = np.zeros((len(roofline.STAGES), 3))
        ticks = np.zeros(len(roofline.STAGES), np.uint64)
        roofline._staged(len(roofline.STAGES), *args, ap, work, ticks)
        res = oracle.evaluate(eps, defer=False)
        fits = ~res["empty"]  # the stages time episodes some concept fits (no weak-empty policy)
        assert fits.sum() >= 10 and np.isnan(ap[~fits]).all()
        if likelihood == "size":
            assert np.array_equal(ap[fits], res["ap"][fits], equal_nan=True)
        else:
            assert np.allclose(ap[fits], res["ap"][fits], rtol=0, atol=1e-12, equal_nan=True)
        assert ticks.sum() > 0 and work[3, 1] > 0  # the counter ran and the scoring was counted
