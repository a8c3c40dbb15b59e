"""The test-bank AP for posteriors spread over many classes (noisy likelihood) equals
scikit-learn's AP of the full score vector, whatever weights it is given."""
import numpy as np
from hypothesis import given, settings, strategies as st
from sklearn.metrics import average_precision_score

from bayes_concepts.bits import read_only, unpack_bits
from bayes_concepts.oracles import kernels as K
from conftest import EVERYWHERE


def full_scores(signatures, reps, class_w, n_test):
    """Slow twin: every test scene's score from its classes c in ascending order, weight of c
    added to running sum c % 4, the sums added as (s0 + s1) + (s2 + s3) -- the float
    computation the kernel promises, so ties are the same ties."""
    member = unpack_bits(np.asarray(signatures)[reps], n_test).T  # (T, n_classes) bool
    out = np.zeros(n_test)
    for t in range(n_test):
        lanes = [0.0, 0.0, 0.0, 0.0]
        for c in np.flatnonzero(member[t]):
            lanes[c % 4] += class_w[c]
        out[t] = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
    return out


def test_scene_classes_are_the_transpose(small_space):
    """The per-scene class lanes are the per-class scene lists transposed: lane j of scene t
    holds, ascending, the classes c % 4 == j true on t."""
    ptr, idx = small_space.test_bank_index()
    lane_ptr, lane_cls = small_space.test_bank_scene_classes()
    n_test = small_space.test_bank.n_scenes
    assert len(lane_ptr) == 4 * n_test + 1 and len(lane_cls) == len(idx)
    pairs = {(int(c), int(t)) for c in range(len(ptr) - 1) for t in idx[ptr[c]:ptr[c + 1]]}
    back = set()
    for t in range(n_test):
        for j in range(4):
            lane = lane_cls[lane_ptr[4 * t + j]:lane_ptr[4 * t + j + 1]].astype(int)
            assert np.all(lane % 4 == j) and np.all(np.diff(lane) > 0)
            back |= {(int(c), t) for c in lane}
    assert pairs == back


@settings(max_examples=120, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n_active=st.integers(1, 400), spread=st.floats(0.0, 30.0),
       tie_share=st.floats(0.0, 0.8), boost=st.sampled_from([1.0, 1.0, 30.0, 1e4]),
       speculative_share=st.sampled_from([0.0, 0.25, 1e9]))
def test_wide_ap_equals_sklearn(small_space, seed, n_active, spread, tie_share, boost, speculative_share):
    """``boost`` multiplies the true class's weight: a posterior peaked on it (AP 1, positives
    that outrank every negative) as well as spread ones (every scene in doubt).
    ``speculative_share`` 0 scores every scene from its row at once, 1e9 never does."""
    space = small_space
    rng = np.random.default_rng(seed)
    ptr, idx = space.test_bank_index()
    scene_ptr, scene_cls = space.test_bank_scene_classes()
    n_cls, n_test = len(ptr) - 1, space.test_bank.n_scenes
    truth_concept = int(rng.integers(space.n_concepts))
    truth = read_only(space.test_bank.signatures[truth_concept])
    n_pos = int(np.bitwise_count(truth).sum())
    active = rng.choice(n_cls, size=min(n_active, n_cls), replace=False)
    if rng.random() < 0.8:  # the true concept's class usually carries weight, as in a real posterior
        active = np.union1d(active, [space.synonym_classes[truth_concept]])
    w = np.exp(-spread * rng.random(len(active)))
    ties = rng.random(len(active)) < tie_share
    w[ties] = w[0]
    w[active == space.synonym_classes[truth_concept]] *= boost
    w /= w.sum()
    class_w = np.zeros(n_cls)
    class_w[active] = w
    cls_list = rng.permutation(active).astype(np.int64)
    scores = np.zeros(n_test)
    mark = np.zeros(n_test, bool)
    touched = np.empty(n_test, np.int64)
    ap = K.test_bank_ap_wide(cls_list, class_w, ptr, idx, scene_ptr, scene_cls, truth, n_pos, n_test, scores, mark,
                             touched, speculative_share, False, EVERYWHERE)
    labels = unpack_bits(truth, n_test)
    full = full_scores(space.test_bank.signatures, space.class_representatives(), class_w, n_test)
    expected = average_precision_score(labels, full) if n_pos else np.nan
    assert (np.isnan(ap) and np.isnan(expected)) or abs(ap - expected) < 1e-12
    assert not scores.any() and not mark.any()  # work arrays restored


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n_episodes=st.integers(1, 19), n_active=st.integers(1, 400),
       spread=st.floats(0.0, 30.0), tie_share=st.floats(0.0, 0.8))
def test_deferred_episodes_get_the_ap_of_scoring_every_row(small_space, seed, n_episodes, n_active, spread,
                                                           tie_share):
    """:func:`score_deferred` (ROW_BATCH episodes per pass over the rows, compiled with the
    vectorizer on) gives each deferred episode exactly the AP that test_bank_ap_wide gives it
    when it scores every scene from its row (speculative share 0), full batches or not; the
    episodes not deferred are left alone."""
    space = small_space
    rng = np.random.default_rng(seed)
    ptr, idx = space.test_bank_index()
    scene_ptr, scene_cls = space.test_bank_scene_classes()
    sig = read_only(space.test_bank.signatures)
    n_cls, n_test = len(ptr) - 1, space.test_bank.n_scenes
    class_w = np.zeros((n_episodes, n_cls))
    lists = []
    for e in range(n_episodes):
        active = rng.choice(n_cls, size=min(n_active, n_cls), replace=False)
        w = np.exp(-spread * rng.random(len(active)))
        w[rng.random(len(active)) < tie_share] = w[0]
        class_w[e, active] = w / w.sum()
        lists.append(active.astype(np.int64))
    concept = rng.integers(space.n_concepts, size=n_episodes).astype(np.int64)
    deferred = np.flatnonzero(rng.random(n_episodes) < 0.7)
    out = np.full(n_episodes, K.DEFERRED)
    K.score_deferred(class_w, deferred, scene_ptr, scene_cls, n_test, sig, concept, out)
    scores, mark, touched = np.zeros(n_test), np.zeros(n_test, bool), np.empty(n_test, np.int64)
    for e in range(n_episodes):
        if e not in deferred:
            assert out[e] == K.DEFERRED
            continue
        truth = sig[concept[e]]
        n_pos = int(np.bitwise_count(truth).sum())
        one = K.test_bank_ap_wide(lists[e], np.ascontiguousarray(class_w[e]), ptr, idx, scene_ptr, scene_cls, truth,
                                  n_pos, n_test, scores, mark, touched, 0.0, False, EVERYWHERE)
        assert (np.isnan(one) and np.isnan(out[e])) or one == out[e]
        if n_pos:
            full = full_scores(sig, space.class_representatives(), class_w[e], n_test)
            assert abs(out[e] - average_precision_score(unpack_bits(truth, n_test), full)) < 1e-12


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n_classes=st.integers(1, 40), n_scenes=st.integers(1, 60),
       density=st.floats(0.0, 1.0))
def test_eight_row_sums_equal_scene_score_bit_for_bit(seed, n_classes, n_scenes, density):
    """score_rows8 sums 8 posteriors' rows at once, each float exactly scene_score's."""
    from bayes_concepts.engine.test_bank import scene_class_lanes
    rng = np.random.default_rng(seed)
    member = rng.random((n_classes, n_scenes)) < density
    ptr = np.concatenate([[0], np.cumsum(member.sum(axis=1))]).astype(np.int64)
    idx = np.concatenate([np.flatnonzero(r) for r in member] + [np.zeros(0, np.int64)]).astype(np.int32)
    lane_ptr, lane_cls = scene_class_lanes(ptr, idx, n_scenes)
    w = rng.random((n_classes, K.ROW_BATCH)) * np.exp(-40 * rng.random((n_classes, K.ROW_BATCH)))
    out = np.empty((K.ROW_BATCH, n_scenes))
    K.score_rows8(lane_ptr, lane_cls, n_scenes, np.ascontiguousarray(w).ravel(), out)
    for j in range(K.ROW_BATCH):
        wj = np.ascontiguousarray(w[:, j])
        assert all(out[j, t] == K.scene_score(lane_ptr, lane_cls, t, wj) for t in range(n_scenes))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), zero_share=st.floats(0.0, 1.0),
       n_values=st.integers(1, 50), scale=st.floats(-300.0, 0.0))
def test_dense_ap_is_the_sparse_ap_bit_for_bit(seed, n, zero_share, n_values, scale):
    """average_precision_every_score (every item, levels found by key) returns the float that
    average_precision_sparse returns for the items scoring above 0; few distinct values make
    ties, ``scale`` puts scores anywhere from 1 down to 1e-300."""
    from bayes_concepts.bits import pack_bits
    from bayes_concepts.metrics import average_precision_sparse
    rng = np.random.default_rng(seed)
    values = rng.random(n_values) * 10.0 ** (scale * rng.random(n_values))
    scores = values[rng.integers(n_values, size=n)]
    scores[rng.random(n) < zero_share] = 0.0
    labels = rng.random(n) < rng.uniform(0.05, 0.9)
    truth = read_only(pack_bits(labels))
    n_pos = int(labels.sum())
    touched = np.flatnonzero(scores > 0).astype(np.int64)
    dense = K.average_precision_every_score(scores, truth, EVERYWHERE)
    sparse = average_precision_sparse(touched, scores, truth, n, n_pos)
    assert (np.isnan(dense) and np.isnan(sparse)) or dense == sparse
    if n_pos:
        assert abs(dense - average_precision_score(labels, scores)) < 1e-12
