"""The test-bank AP for posteriors spread over many classes (noisy likelihood) equals
scikit-learn's AP of the full score vector, whatever weights it is given."""
import numpy as np
from hypothesis import given, settings, strategies as st
from sklearn.metrics import average_precision_score

from bayes_concepts.bits import unpack_bits
from bayes_concepts.oracles import kernels as K


def full_scores(class_rows, class_w, n_test):
    """Slow twin: every test scene's score, its classes' weights summed in ascending class
    order (the float computation the kernel promises, so ties are the same ties)."""
    member = unpack_bits(class_rows, len(class_w))  # (T, n_classes) bool
    out = np.zeros(n_test)
    for t in range(n_test):
        for c in np.flatnonzero(member[t]):
            out[t] += class_w[c]
    return out


@settings(max_examples=120, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n_active=st.integers(1, 400), spread=st.floats(0.0, 30.0),
       tie_share=st.floats(0.0, 0.8), boost=st.sampled_from([1.0, 1.0, 30.0, 1e4]))
def test_wide_ap_equals_sklearn(small_space, seed, n_active, spread, tie_share, boost):
    """``boost`` multiplies the true class's weight: a posterior peaked on it (AP 1, positives
    that outrank every negative) as well as spread ones (every scene in doubt)."""
    space = small_space
    rng = np.random.default_rng(seed)
    ptr, idx = space.test_bank_index()
    class_rows = space.test_bank_class_rows()
    n_cls, n_test = len(ptr) - 1, space.test_bank.n_scenes
    truth_concept = int(rng.integers(space.n_concepts))
    truth = np.ascontiguousarray(space.test_bank.signatures[truth_concept])
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
    ap = K.test_bank_ap_wide(cls_list, class_w, ptr, idx, class_rows, truth, n_pos, n_test, scores, mark, touched)
    labels = unpack_bits(truth, n_test)
    expected = average_precision_score(labels, full_scores(class_rows, class_w, n_test)) if n_pos else np.nan
    assert (np.isnan(ap) and np.isnan(expected)) or abs(ap - expected) < 1e-12
    assert not scores.any() and not mark.any()  # work arrays restored
