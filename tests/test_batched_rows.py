"""Flat noisy episodes scored 16 at a time (score_rows16, the deferred kernel's pass) against
each posterior's own scene_score (the slow twin), bit for bit."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from bayes_concepts.bits import read_only
from bayes_concepts.engine.test_bank import scene_class_lanes
from bayes_concepts.oracles import kernels as K
from conftest import EVERYWHERE


@settings(max_examples=80, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n_classes=st.integers(1, 40), n_scenes=st.integers(1, 60),
       density=st.floats(0.0, 1.0), n_live=st.integers(0, 16))
def test_sixteen_row_sums_equal_scene_score_bit_for_bit(seed, n_classes, n_scenes, density, n_live):
    rng = np.random.default_rng(seed)
    member = rng.random((n_classes, n_scenes)) < density
    ptr = np.concatenate([[0], np.cumsum(member.sum(axis=1))]).astype(np.int64)
    idx = np.concatenate([np.flatnonzero(r) for r in member] + [np.zeros(0, np.int64)]).astype(np.int32)
    lane_ptr, lane_cls = scene_class_lanes(ptr, idx, n_scenes)
    # weights over many binades, some exactly 0, and batches not full (columns past n_live zero)
    w = rng.random((n_classes, 16)) * np.exp(-40 * rng.random((n_classes, 16)))
    w[rng.random(w.shape) < 0.2] = 0.0
    w[:, n_live:] = 0.0
    out = np.empty((16, n_scenes))
    K.score_rows16(lane_ptr, lane_cls, n_scenes, np.ascontiguousarray(w).ravel(), out)
    for j in range(16):
        wj = np.ascontiguousarray(w[:, j])
        assert all(out[j, t] == K.scene_score(lane_ptr, lane_cls, t, wj) for t in range(n_scenes))


def test_deferred_aps_equal_one_by_one_scoring(small_space):
    """score_deferred (16 episodes a pass) gives each episode the AP of its own rows, for a
    number of episodes that leaves the last batch short."""
    lane_ptr, lane_cls = small_space.test_bank_scene_classes()
    n_test = small_space.test_bank.n_scenes
    n_classes = len(small_space.test_bank_index()[0]) - 1
    sig = read_only(small_space.test_bank.signatures)  # as the oracles pass it (one compiled kernel)
    rng = np.random.default_rng(5)
    e = 37
    class_w = rng.random((e, n_classes)) * np.exp(-30 * rng.random((e, n_classes)))
    concept = rng.integers(0, small_space.n_concepts, e)
    got = np.full(e, K.DEFERRED)
    K.score_deferred(class_w, np.arange(e), lane_ptr, lane_cls, n_test, sig, concept, got)
    for i in range(e):
        scores = np.array([K.scene_score(lane_ptr, lane_cls, t, np.ascontiguousarray(class_w[i]))
                           for t in range(n_test)])
        assert got[i] == K.average_precision_every_score(scores, sig[concept[i]], EVERYWHERE)
