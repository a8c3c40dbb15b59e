"""The oracle's candidate concepts and their log weights (``kernels.episode_candidates``)
against a brute-force twin that counts every concept's mistakes one support scene at a time."""
import numpy as np
from hypothesis import given, settings, strategies as st

from bayes_concepts.bits import read_only
from bayes_concepts.oracles import kernels as K
from bayes_concepts.oracles.likelihoods import likelihood_tables


def brute_candidates(member, omega_ids, support, labels, log_prior, first, second, consistent_only):
    """Slow twin: ``member`` bool (scenes, H).  For each concept of omega, ascending: wp = the
    support positives it calls negative, wn = the negatives it calls positive; its log weight
    (log prior + first) + second; kept if finite (and, without consistent_only, within
    exp(-PRUNE) of the best; with it, only concepts with no mistake)."""
    def term(t, h, wp, wn):
        return t[h if t.shape[0] > 1 else 0, wp if t.shape[1] > 1 else 0, wn if t.shape[2] > 1 else 0]
    rows = []
    for h in omega_ids:
        inside = member[support, h]
        wp = int(np.sum(labels.astype(bool) & ~inside))
        wn = int(np.sum(~labels.astype(bool) & inside))
        if consistent_only and wp + wn:
            continue
        lw = (log_prior[h] + term(first, h, wp, wn)) + term(second, h, wp, wn)
        rows.append((h, lw))
    finite = [r for r in rows if r[1] > -np.inf]
    if not finite:
        return [], []
    if not consistent_only:
        best = max(lw for _, lw in finite)
        finite = [r for r in finite if r[1] >= best - K.PRUNE]
    return [h for h, _ in finite], [lw for _, lw in finite]


@settings(max_examples=80, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n_concepts=st.integers(1, 300), k=st.integers(1, 70),
       density=st.floats(0.05, 0.95), omega_share=st.floats(0.1, 1.0),
       likelihood=st.sampled_from(["noisy", "size", "consistent"]))
def test_candidates_equal_brute_force(seed, n_concepts, k, density, omega_share, likelihood):
    """Several 64-concept words, supports up to 70 scenes (counts of up to 7 binary digits),
    concepts outside omega, concepts of prior 0: the same ids in the same order and the same
    log weights, bit for bit."""
    rng = np.random.default_rng(seed)
    n_scenes = 90
    member = rng.random((n_scenes, n_concepts)) < density
    hw = (n_concepts + 63) // 64
    packed = np.zeros((n_scenes, hw), np.uint64)
    for h in range(n_concepts):
        packed[:, h >> 6] |= member[:, h].astype(np.uint64) << np.uint64(h & 63)
    omega_ids = np.flatnonzero(rng.random(n_concepts) < omega_share)
    omega = np.zeros(hw, np.uint64)
    for h in omega_ids:
        omega[h >> 6] |= np.uint64(1) << np.uint64(h & 63)
    log_prior = np.log(rng.dirichlet(np.ones(n_concepts)))
    log_prior[rng.random(n_concepts) < 0.05] = -np.inf
    support = rng.integers(0, n_scenes, k).astype(np.int64)
    labels = (rng.random(k) < 0.4).astype(np.int8)
    counts = np.maximum(member.sum(axis=0), 1).astype(np.int64)

    class Settings:
        epsilon = 0.05
    first, second, consistent_only = likelihood_tables(likelihood, counts, n_scenes, int(labels.sum()), k, True,
                                                       Settings())
    ids = np.empty(n_concepts, np.int64)
    logw = np.empty(n_concepts)
    # the scenes' rows and domains read-only, as the oracles pass them (one compiled kernel: bits.read_only)
    n = K.episode_candidates(support, labels, read_only(packed), omega, log_prior, first, second, consistent_only, ids,
                             logw, read_only(K.no_outside()))
    want_ids, want_logw = brute_candidates(member, omega_ids, support, labels, log_prior, first, second,
                                           consistent_only)
    assert ids[:n].tolist() == want_ids
    assert logw[:n].tolist() == want_logw
